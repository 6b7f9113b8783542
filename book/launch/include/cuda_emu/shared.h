// cuda_emu/shared.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
#pragma once

namespace cuda_emu {

// ---- __shared__ arrays that know their name and bounds, and in check mode who touched each word --
// book/launch/worker.py rewrites `__shared__ T name[A][B];` into `static thread_local shared_array<T, A, B>
// name{...}`. Indexing checks every index against its dimension. In check mode (BOOK_EMU_CHECK=1,
// built with -DCUDA_EMU_CHECK) an element read or written through `name[i][j]` is also checked for
// races and for reads of words no thread of the block has written (compute-sanitizer's racecheck
// and initcheck). Accesses through a pointer taken from the array (`&name[i][j]`, float4 loads)
// are checked only at the array's end (a guard page follows it: shared_array), not for races;
// dynamic `extern __shared__` memory likewise ends at a guard page. Once a pointer has been taken
// from an array in a block, reads of it by index are no longer reported as unwritten (the
// pointer may have written them).
#ifdef CUDA_EMU_CHECK
constexpr bool kCheck = true;
#else
constexpr bool kCheck = false;
#endif
struct Shadow {
    int writer = -1, reader = -1;  // linear thread index of the last writer / reader, or -1
    unsigned write_block = 0, write_warp = 0, read_block = 0, read_warp = 0;  // their epochs
};

struct SharedInfo {
    const char* name;
    const char* declared;  // "float[16][16]"
    std::vector<std::size_t> dims;
    std::vector<Shadow> shadow;
    bool escaped = false;  // a raw pointer was taken from it in this block
    unsigned char* before = nullptr;  // the bytes before its start (0xFF: check_before_shared)
    std::size_t before_bytes = 0;
};

// After each block: a write through a pointer to just before a __shared__ array (or the dynamic
// shared memory) lands in the bytes before its start, which hold 0xFF; the first array whose
// bytes changed is reported (which thread wrote them is not known, as with a global array).
// (A pointer run past the end faults at once instead: the guard page after each array.)
inline std::size_t bytes_written_before(const unsigned char* before, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (before[i] != 0xFF) return n - i;  // how far before the start the farthest write was
    return 0;
}
inline void check_before_shared(const unsigned char* dynamic_before, std::size_t dynamic_bytes) {
    char what[512] = "", message[1024];
    std::size_t back = 0;
    for (const SharedInfo* a : shared_arrays)
        if ((back = bytes_written_before(a->before, a->before_bytes))) {
            std::snprintf(what, sizeof what, "the __shared__ array %s (%s)", a->name, a->declared);
            break;
        }
    if (!back && (back = bytes_written_before(dynamic_before, dynamic_bytes)))
        std::snprintf(what, sizeof what, "the dynamic shared memory (extern __shared__)");
    if (!back) return;
    std::snprintf(message, sizeof message, "block (%u, %u, %u): wrote %zu bytes before the start "
                  "of %s, through a pointer taken from it (&s[i], a cast, a row passed to a "
                  "function); found when the block ended, so which thread wrote it is not known",
                  block_idx.x, block_idx.y, block_idx.z, back, what);
    worker->errors->report(message);
    worker->failed = true;
}

inline void reset_shared_checks(unsigned n_threads) {
    block_epoch = 0;
    sync_sum[0] = sync_sum[1] = 0;
    sync_slot = 0;
    warp_epoch.assign((n_threads + 31) / 32, 0);
    for (SharedInfo* a : shared_arrays) {
        std::fill(a->shadow.begin(), a->shadow.end(), Shadow{});
        a->escaped = false;
        if (bytes_written_before(a->before, a->before_bytes))  // (a launch that stopped early)
            std::memset(a->before, 0xFF, a->before_bytes);
    }
}

inline int element_text(char* out, std::size_t size, const SharedInfo& a, std::size_t flat) {
    int n = std::snprintf(out, size, "%s", a.name);
    std::size_t stride = a.shadow.size();
    for (std::size_t d : a.dims) {
        stride /= d;
        n += std::snprintf(out + n, size - n, "[%zu]", flat / stride);
        flat %= stride;
    }
    return n;
}

inline void check_index(const SharedInfo& a, std::size_t axis, long long i, std::size_t n) {
    if (i >= 0 && std::size_t(i) < n) return;
    char what[320];
    std::snprintf(what, sizeof what, "index %lld of __shared__ %s is out of bounds: %s is %s (its "
                  "dimension %zu has %zu elements)", i, a.name, a.name, a.declared, axis + 1, n);
    fail_here(what);
}

inline void check_access(SharedInfo& a, std::size_t flat, bool write) {
    const Fiber* f = worker->current;
    const int me = int(f->index);
    const unsigned warp = f->index / 32, wepoch = warp_epoch[warp];
    Shadow& s = a.shadow[flat];
    auto unordered = [&](int other, unsigned block, unsigned warp_at) {  // no barrier between
        return other >= 0 && other != me && block == block_epoch &&
               !(unsigned(other) / 32 == warp && warp_at != wepoch);
    };
    const char* clash = nullptr;
    int other = -1;
    if (unordered(s.writer, s.write_block, s.write_warp)) clash = "wrote", other = s.writer;
    else if (write && unordered(s.reader, s.read_block, s.read_warp)) clash = "read", other = s.reader;
    if (clash || (!write && s.writer < 0 && !a.escaped)) {
        char element[96], what[512];
        element_text(element, sizeof element, a, flat);
        const unsigned bx = block_dim.x, by = block_dim.y;
        if (clash)
            std::snprintf(what, sizeof what, "race on shared memory: this thread %s %s, which "
                          "thread (%u, %u, %u) %s with no __syncthreads() between them",
                          write ? "writes" : "reads", element, unsigned(other) % bx,
                          unsigned(other) / bx % by, unsigned(other) / (bx * by), clash);
        else
            std::snprintf(what, sizeof what, "reads %s, which no thread of the block has written "
                          "(yet: uninitialized shared memory, or a missing __syncthreads())",
                          element);
        fail_here(what);
    }
    if (write) s.writer = me, s.write_block = block_epoch, s.write_warp = wepoch;
    else s.reader = me, s.read_block = block_epoch, s.read_warp = wepoch;
}

template <class T, std::size_t... D> struct array_of { using type = T; };
template <class T, std::size_t N, std::size_t... R> struct array_of<T, N, R...> {
    using type = typename array_of<T, R...>::type[N];
};

template <class T>
struct shared_ref {  // one element: reads and writes go through the checks
    T* p;
    SharedInfo* info;
    std::size_t flat;
    operator T() const {
        if constexpr (kCheck) check_access(*info, flat, false);
        return *p;
    }
    const shared_ref& operator=(T v) const {
        if constexpr (kCheck) check_access(*info, flat, true);
        *p = v;
        return *this;
    }
    const shared_ref& operator=(const shared_ref& o) const { return *this = T(o); }
    const shared_ref& operator+=(T v) const { return *this = T(*this) + v; }
    const shared_ref& operator-=(T v) const { return *this = T(*this) - v; }
    const shared_ref& operator*=(T v) const { return *this = T(*this) * v; }
    const shared_ref& operator/=(T v) const { return *this = T(*this) / v; }
    T* operator&() const {  // a raw pointer: only running past the array's end is caught
        info->escaped = true;
        return p;
    }
};

template <class T, std::size_t... D> struct shared_view;
template <class T, std::size_t N, std::size_t... R>
struct shared_view<T, N, R...> {  // the array, or a row of it, with N elements along this axis
    using element = typename array_of<T, R...>::type;
    element* data;
    SharedInfo* info;
    std::size_t flat;  // index of this row among the rows of its length
    auto operator[](long long i) const {
        check_index(*info, info->dims.size() - 1 - sizeof...(R), i, N);
        if constexpr (sizeof...(R) == 0)
            return shared_ref<T>{data + i, info, flat * N + std::size_t(i)};
        else
            return shared_view<T, R...>{data[i], info, flat * N + std::size_t(i)};
    }
    operator element*() const {
        info->escaped = true;
        return data;
    }
    operator const element*() const {  // a row passed as const float*: the better match
        info->escaped = true;
        return data;
    }
    using whole = typename array_of<T, N, R...>::type;  // as a reference to the (sub)array
    // (a template, so that it binds references only: a pointer target takes the ones above)
    template <class U, class = std::enable_if_t<std::is_same_v<std::remove_const_t<U>, whole>>>
    operator U&() const {
        info->escaped = true;
        return *reinterpret_cast<U*>(data);
    }
};

// Each static __shared__ array ends (to 16 bytes) where an inaccessible page begins, so that a
// pointer taken from it (&s[0], a float4 cast, a row passed to a function) that runs past its
// end faults, and the fault names the array (code -4; book/launch/worker.py reads the declaration left in
// the fault page). Indexes are checked without it; this is for what indexes cannot see.
// The slot of shared_guards that names these bytes' guard page (-1 where all are taken): claimed
// with a placeholder page first, then filled, then published.
inline int guard_shared(const GuardedBytes& bytes, const char* name, const char* declared) {
    if (!bytes.map) throw std::bad_alloc();
    auto* claimed = reinterpret_cast<unsigned char*>(std::uintptr_t{1});
    for (int i = 0; i < 4096; ++i) {
        unsigned char* empty = nullptr;
        if (shared_guards[i].page.compare_exchange_strong(empty, claimed)) {
            shared_guards[i].name = name, shared_guards[i].declared = declared;
            shared_guards[i].lead = bytes.lead();
            shared_guards[i].page.store(bytes.guard());
            return i;
        }
    }
    return -1;
}

template <class T, std::size_t... D>
struct shared_array {
    using whole = typename array_of<T, D...>::type;
    GuardedBytes bytes;  // unmapped after the destructor's body has given back the guard's slot
    int slot;
    whole& data;
    SharedInfo info;
    shared_array(const char* name, const char* declared)
        : bytes(sizeof(whole)), slot(guard_shared(bytes, name, declared)),
          data(*reinterpret_cast<whole*>(bytes.data())),
          info{name, declared, {D...}, std::vector<Shadow>(kCheck ? (D * ...) : 0)} {
        info.before = bytes.map, info.before_bytes = bytes.map ? bytes.pages - bytes.size : 0;
        if (info.before_bytes) std::memset(info.before, 0xFF, info.before_bytes);
        shared_arrays.push_back(&info);
    }
    ~shared_array() {
        std::erase(shared_arrays, &info);
        if (slot >= 0) shared_guards[slot].page.store(nullptr);
    }
    auto operator[](long long i) { return shared_view<T, D...>{data, &info, 0}[i]; }
    operator typename shared_view<T, D...>::element*() {
        info.escaped = true;
        return data;
    }
};

// The start of the array argument whose bytes hold address `at` (the worker writes each one's
// address and bytes into the fault page before the launch: book/launch/worker.py's POINTERS),
// else 0. (Shared memory starts on 16 bytes here, as on a GPU.)
constexpr int kArgumentsAt = 240, kPointersAt = 256;
inline thread_local std::uintptr_t last_start = 1, last_end = 0;  // the argument found last,
inline thread_local unsigned last_launch = 0;                       // in this launch
inline std::uintptr_t argument_start(std::uintptr_t at) {
    if (last_launch == launches && at >= last_start && at < last_end) return last_start;
    last_launch = launches;
    if (!fault_report) return 0;
    const auto* page = reinterpret_cast<const unsigned char*>(fault_report);
    const std::uint64_t n = *reinterpret_cast<const std::uint64_t*>(page + kArgumentsAt);
    const auto* pointers = reinterpret_cast<const std::uint64_t*>(page + kPointersAt);
    for (std::uint64_t i = 0; i < n && kPointersAt + 16 * n <= kSharedNameAt; ++i)
        if (pointers[i] && at >= pointers[i] && at < pointers[i] + pointers[n + i]) {
            last_start = pointers[i], last_end = pointers[i] + pointers[n + i];
            return last_start;
        }
    return 0;
}

// reinterpret_cast<float4*>(p) and the other vector types (emulate_source rewrites such casts
// into this): on a GPU a vector access must sit at a multiple of its size, or the launch fails
// with "misaligned address". The emulator's CPU would read it anyway, so the cast checks.
template <class X> struct is_shared_kind : std::false_type {};
template <class T, std::size_t... D> struct is_shared_kind<shared_array<T, D...>> : std::true_type {};
template <class T, std::size_t... D> struct is_shared_kind<shared_view<T, D...>> : std::true_type {};
template <class T, std::size_t... D> auto* shared_pointer(shared_array<T, D...>& s) {
    return static_cast<typename shared_view<T, D...>::element*>(s);
}
template <class T, std::size_t... D> auto* shared_pointer(const shared_view<T, D...>& v) {
    return static_cast<typename shared_view<T, D...>::element*>(v);
}
template <class T, class P>
inline T vector_cast(const char* type, int line, P&& p) {
    if constexpr (is_shared_kind<std::decay_t<P>>::value) {  // a __shared__ array, or a row of one
        return vector_cast<T>(type, line, shared_pointer(p));  // (as the pointer it decays to)
    } else if constexpr (std::is_pointer_v<std::decay_t<P>>) {
        using V = std::remove_cv_t<std::remove_pointer_t<T>>;
        auto at = reinterpret_cast<std::uintptr_t>(static_cast<const volatile void*>(p));
        at -= argument_start(at);  // on a GPU each array starts on 256 bytes; here, anywhere
        if (at % alignof(V)) {
            char what[512];
            std::snprintf(what, sizeof what, "misaligned address: the reinterpret_cast to %s* on "
                          "line %d gives an address %zu bytes past a %zu-byte boundary (counted "
                          "from its array's start, as a GPU's arrays start on 256 bytes), and a %s "
                          "must start on one: on a GPU the launch fails with 'misaligned address'. "
                          "To cast &x[i] of a float or int array so, i must be a multiple of %zu.",
                          type, line, (std::size_t)(at % alignof(V)), alignof(V), type,
                          alignof(V) / 4 ? alignof(V) / 4 : 1);
            fail_here(what);
        }
        return reinterpret_cast<T>(p);
    } else {
        return reinterpret_cast<T>(p);
    }
}

}  // namespace cuda_emu
