// cuda_emu/shared.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
#pragma once

#include <source_location>

namespace cuda_emu {

// ---- __shared__ memory ------------------------------------------------------------------------
// book/launch/rewrite.py rewrites the declarations; each copy is `static thread_local`, one per OS
// thread, i.e. per block in flight:
// Every block's shared arrays start filled with 0xFF bytes, static and dynamic alike (NaN as
// floats, -1 as integers): a GPU's shared memory holds whatever it held, so a histogram never
// zeroed or a read before any write shows in the result here too, not as a lucky zero.
//   * `__shared__ T name[A][B];` becomes shared_array<T, A, B>: its bytes end (to 16 bytes) where
//     an inaccessible page begins, and every index is checked against its dimension (the error
//     names the array, the index and the line). An element is an lvalue of type T (operator[]
//     returns T&), so references, `auto`, struct members, every operator and template deduction
//     work as on a GPU;
//   * `__shared__ T name;` stays a plain T, except in check mode and where it is volatile:
//     shared_scalar<T>;
//   * `extern __shared__ T name[];` becomes dynamic_array<T>: the launch's shared_mem bytes
//     (dynamic_smem: 0xFF bytes before every block, between guard pages), as an array of T;
//   * a `volatile T*` variable or parameter becomes a volatile_ptr<T>;
//   * `sizeof` of such a name gives the GPU's size (gpu_t), `auto x = <init naming one>` a copy
//     of the value (value_of), not a proxy that follows later writes, and a variable or element
//     passed to a function is passed as the C++ object (arg_of: a template deduces as on a GPU).
// Volatile shared memory -- an element of a volatile array or scalar, anything reached through a
// volatile pointer -- lets the block's other threads run before each access (yield_fiber): the
// lanes of a warp running straight-line volatile code advance in lockstep, one access each per
// pass (the warp-synchronous code written for GPUs before Volta gives a GPU's answer), and a
// thread spinning on a flag lets the writer run. (Through a volatile pointer outside shared
// memory, a read yields where it repeats the thread's last one, and at every 64th: a spin on
// a global flag; scheduler.h's yield_if_spinning.)
//
// Check mode (BOOK_EMU_CHECK=1, built with -DCUDA_EMU_CHECK) keeps, for every element (every
// 4-byte word of the dynamic memory), the last thread that wrote it and the last that read it,
// and reports, naming the element and the line:
//   * a race: two threads' accesses to it, one a write, with no __syncthreads() between them
//     (lanes of one warp: nor a warp operation such as __syncwarp(); the message then names the
//     pre-Volta lockstep assumption; a flag that one lane of a warp spins on while another sets
//     it is reported too). Volatile accesses of two different warps are no race: a flag between
//     warps is legal (volatile accesses are relaxed ones in CUDA's memory model), though plain
//     data handed over with it (a fence between) is reported: make it volatile too;
//   * a read of an element no thread of the block has written;
//   * an index past the launch's bytes of dynamic shared memory (static arrays: in both modes).
// It tracks accesses through an array's name (`s[i][j]`, `tile[i]` of an extern array: two extern
// declarations of different types share the bookkeeping), to shared scalars, through volatile
// pointers, through a plain pointer indexed as `p[i]` (an array passed to a __device__
// function's `float* s`, `float* p = s;`: races only, track_through_pointer), and atomics on
// `&s[i]` or `&x` (atomic_address: never a race with each other; a read of an element no thread
// has written, as in a histogram never zeroed, is reported); an element or scalar passed to a
// function is checked as a read when it is passed. It does not track: accesses through `*p`,
// `p->x` or a reference taken from shared memory (`float& r = s[i];`, a float4 cast, what a
// function does through its reference parameter): there only the array's end (a guard page)
// and its start (its bytes before it, checked when the block ends) are guarded; elements of
// class type (float4, __half, a struct: a T&, so that `s[i].x` works); elements under 4 bytes
// of the dynamic memory. Once a pointer or a reference has been taken from an array in a block,
// reads of it are no longer reported as unwritten (the pointer may have written them).
#ifdef CUDA_EMU_CHECK
constexpr bool kCheck = true;
#else
constexpr bool kCheck = false;
#endif

// Whether an element of type T is reached through a proxy (shared_ref) -- in check mode, to be
// tracked; where it is volatile, to yield -- rather than as a plain T&. A class type (float4, a
// struct) never is: its members must be reachable with `.`.
template <class T>
constexpr bool kTracked = (kCheck || std::is_volatile_v<T>) &&
                          std::is_scalar_v<std::remove_cv_t<T>>;

struct Shadow {
    int writer = -1, reader = -1;  // linear thread index of the last writer / reader, or -1
    unsigned write_block = 0, write_warp = 0, read_block = 0, read_warp = 0;  // their epochs
    bool write_volatile = false, read_volatile = false;
    bool write_atomic = false;  // the last write was an atomic (atomics never race each other)
};

struct SharedInfo {
    const char* name;
    const char* declared;  // "float[16][16]"
    std::vector<std::size_t> dims;  // (none: a scalar)
    std::vector<Shadow> shadow;
    bool escaped = false;  // a raw pointer or reference was taken from it in this block
    unsigned char* before = nullptr;  // the bytes before its start (0xFF: check_before_shared)
    std::size_t before_bytes = 0;
    const unsigned char* begin = nullptr;  // its bytes (to find a volatile pointer's target)
    std::size_t bytes = 0, unit = 1;       // and how many of them one shadow entry covers
    bool dynamic = false;                  // the dynamic shared memory (by 4-byte words)
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
        std::memset(const_cast<unsigned char*>(a->begin), 0xFF, a->bytes);  // (a GPU's shared memory starts as what it held)
        if (bytes_written_before(a->before, a->before_bytes))  // (a launch that stopped early)
            std::memset(a->before, 0xFF, a->before_bytes);
    }
}

// The dynamic shared memory of this OS thread's launch (run_grid opens and closes it). Its name
// is that of the extern array indexed last (for a volatile pointer's accesses), at first none.
inline thread_local SharedInfo dynamic_info;
constexpr const char* kUnnamed = "extern __shared__";
inline void begin_dynamic_shared(unsigned char* data, std::size_t bytes) {
    SharedInfo& d = dynamic_info;
    d.name = d.declared = kUnnamed;
    d.dims.assign(1, (bytes + 3) / 4);
    d.shadow.assign(kCheck ? (bytes + 3) / 4 : 0, Shadow{});
    d.begin = data, d.bytes = bytes, d.unit = 4, d.dynamic = true;
    shared_arrays.push_back(&d);
}
inline void end_dynamic_shared() { std::erase(shared_arrays, &dynamic_info); }

// Where one access lands: shadow entries [slot, slot + slots) of info, and how a message names it.
struct Place {
    SharedInfo* info = nullptr;  // null: not tracked
    std::size_t slot = 0, slots = 1;
    const char* name = nullptr;  // the element is name[index] (the dynamic memory); null: by dims
    long long index = 0;
    int line = 0;                // the access's source line (0: not known)
    bool shared = true;          // false: a volatile pointer's target outside shared memory
};

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

// The read-modify-write (`++`, `+=`...) of a tracked element this fiber is in, if any: a clash
// found in one is a lost update, whose way out is an atomic, not a barrier.
inline thread_local const char* updating = nullptr;
inline thread_local const void* updating_at = nullptr;  // the Place of its element

[[noreturn]] inline void report_access(const Place& at, bool write, bool is_volatile,
                                       const char* clash, int other) {
    char element[96], what[900];
    if (at.name == kUnnamed)
        std::snprintf(element, sizeof element, "element %lld of the dynamic shared memory "
                      "(extern __shared__)", at.index);
    else if (at.name) std::snprintf(element, sizeof element, "%s[%lld]", at.name, at.index);
    else element_text(element, sizeof element, *at.info, at.slot);
    char who[64] = "";  // the other thread, by its linear index
    const unsigned bx = block_dim.x, by = block_dim.y;
    if (clash)
        std::snprintf(who, sizeof who, "thread (%u, %u, %u)", unsigned(other) % bx,
                      unsigned(other) / bx % by, unsigned(other) / (bx * by));
    int n;
    if (clash && updating && updating_at == &at && !is_volatile && !std::strcmp(clash, "wrote")) {
        // two threads' `count++`: no barrier can fix it
        n = std::snprintf(what, sizeof what, "lost update on shared memory: this thread's %s of "
                          "%s (a read, then a write) follows %s's write of it with neither a "
                          "barrier nor an atomic between them", updating, element, who);
        if (at.line) n += std::snprintf(what + n, sizeof what - n, " (line %d)", at.line);
        std::snprintf(what + n, sizeof what - n, ": on a GPU, threads that update one element at "
                      "once overwrite each other's updates, and the total comes out short. Make it "
                      "an atomic (atomicAdd(&x, 1) for x++, atomicAdd(&x, v) for x += v; atomicMax, "
                      "atomicOr...), or give each thread its own element and add them up after a "
                      "__syncthreads()");
        updating = nullptr;
        fail_here(what);
    }
    if (clash) {
        n = std::snprintf(what, sizeof what, "race on shared memory: this thread %s %s, which "
                          "%s %s with no __syncthreads() between them", write ? "writes" : "reads",
                          element, who, clash);
    } else {
        n = std::snprintf(what, sizeof what, "reads %s, which no thread of the block has written "
                          "(yet: uninitialized shared memory, or a missing %s)", element,
                          block_dim.x * block_dim.y * block_dim.z <= 32
                              ? "__syncwarp() (or __syncthreads()) between a lane's write and "
                                "another lane's read"
                              : "__syncthreads()");
    }
    if (at.line) n += std::snprintf(what + n, sizeof what - n, " (line %d)", at.line);
    const unsigned warp = worker->current->index / 32;
    if (clash && unsigned(other) / 32 == warp)
        std::snprintf(what + n, sizeof what - n, is_volatile
                      ? ". Both are lanes of warp %u, and since Volta (independent thread "
                        "scheduling) the lanes of a warp do not run in lockstep: warp-synchronous "
                        "code written for older GPUs, which passes values through volatile "
                        "shared memory with no __syncwarp(), assumes they do. Put __syncwarp() "
                        "between its steps"
                      : ". Both are lanes of warp %u: a __syncwarp() between the two accesses "
                        "would order them", warp);
    if (clash && unsigned(other) / 32 == warp && !is_volatile &&
        block_dim.x * block_dim.y * block_dim.z > 32)  // (the other warps may use it too)
        std::snprintf(what + std::strlen(what), sizeof what - std::strlen(what), "; if threads of "
                      "the block's other warps use it too (one thread sets a value all read), "
                      "only __syncthreads() orders them all");
    fail_here(what);
}

// unwritten: whether a read of an element no thread has written is reported (not for an
// element passed to a function, which may be its output). atomic: an atomic read-modify-write
// (checked as a read, recorded as a write): two atomics never race, an atomic and a plain
// access of two threads with no barrier between do.
inline void check_access(const Place& at, bool write, bool is_volatile, bool unwritten = true,
                         bool atomic = false) {
    SharedInfo& a = *at.info;
    const Fiber* f = worker->current;
    const int me = int(f->index);
    const unsigned warp = f->index / 32, wepoch = warp_epoch[warp];
    auto unordered = [&](int other, unsigned block, unsigned warp_at, bool other_volatile) {
        if (other < 0 || other == me || block != block_epoch) return false;  // a barrier between
        if (unsigned(other) / 32 == warp) return warp_at == wepoch;  // no warp operation between
        return !(is_volatile && other_volatile);
    };
    for (std::size_t k = at.slot; k < at.slot + at.slots; ++k) {
        Shadow& s = a.shadow[k];
        if (!(atomic && s.write_atomic) &&
            unordered(s.writer, s.write_block, s.write_warp, s.write_volatile))
            report_access(at, write, is_volatile, "wrote", s.writer);
        if (atomic) {
            if (unordered(s.reader, s.read_block, s.read_warp, s.read_volatile))
                report_access(at, true, is_volatile, "read", s.reader);
            if (unwritten && s.writer < 0 && !a.escaped)
                report_access(at, false, is_volatile, nullptr, -1);
            // (this thread's own plain write in this epoch stays the record: another thread's
            // atomic before a barrier still races with it, `if (t == 0) total = 0;` then atomics)
            if (!(s.writer == me && !s.write_atomic && s.write_block == block_epoch))
                s.writer = me, s.write_block = block_epoch, s.write_warp = wepoch,
                s.write_volatile = false, s.write_atomic = true;
            continue;
        }
        if (write && unordered(s.reader, s.read_block, s.read_warp, s.read_volatile))
            report_access(at, write, is_volatile, "read", s.reader);
        if (!write && unwritten && s.writer < 0 && !a.escaped)
            report_access(at, write, is_volatile, nullptr, -1);
        if (write) s.writer = me, s.write_block = block_epoch, s.write_warp = wepoch,
                   s.write_volatile = is_volatile, s.write_atomic = false;
        // a read keeps an earlier reader it is unordered with: this thread's own write after
        // (`s[t] += s[t + k]` with no barrier) then races with that reader, and is reported
        else if (!unordered(s.reader, s.read_block, s.read_warp, s.read_volatile))
            s.reader = me, s.read_block = block_epoch, s.read_warp = wepoch,
            s.read_volatile = is_volatile;
    }
}

// An index into shared memory, with the source line of the access: operator[] takes one, so that
// the caller's line comes along (std::source_location, in a default argument, is the caller's).
struct Index {
    long long value;
    int line;
    template <class I, class = std::enable_if_t<
                           std::is_integral_v<I> || std::is_enum_v<I> ||
                           (std::is_class_v<I> && std::is_convertible_v<const I&, long long>)>>
    Index(const I& i, std::source_location where = std::source_location::current())
        : value(static_cast<long long>(i)), line(int(where.line())) {}
};

[[noreturn]] inline void index_error(const SharedInfo& a, std::size_t inner, long long i,
                                     std::size_t n, int line) {
    char what[400];
    std::snprintf(what, sizeof what, "index %lld of __shared__ %s is out of bounds: %s is %s (its "
                  "dimension %zu has %zu elements), on line %d", i, a.name, a.name, a.declared,
                  a.dims.size() - inner, n, line);
    fail_here(what);
}

template <class T, std::size_t... D> struct array_of { using type = T; };
template <class T, std::size_t N, std::size_t... R> struct array_of<T, N, R...> {
    using type = typename array_of<T, R...>::type[N];
};

#define CUDA_EMU_COMPOUND_OPS(X) X(+=) X(-=) X(*=) X(/=) X(%=) X(&=) X(|=) X(^=) X(<<=) X(>>=)

// One tracked element (see kTracked): each read and write yields where it is volatile and is
// checked in check mode. It converts to T, and to T& for a reference (`float& r = s[i];`: from
// then on untracked, as a pointer is).
template <class T>
struct shared_ref {
    using value_type = std::remove_cv_t<T>;
    T* p;
    Place at;
    void touch(bool write, bool unwritten = true) const {
        if constexpr (std::is_volatile_v<T>) {
            if (at.shared) yield_fiber();
            else if (!write) yield_if_spinning(p);
        }
        if constexpr (kCheck)
            if (at.info) check_access(at, write, std::is_volatile_v<T>, unwritten);
    }
    void escape() const {
        if constexpr (kCheck)
            if (at.info) at.info->escaped = true;
    }
    value_type get() const {
        touch(false);
        return *p;
    }
    void set(value_type v) const {
        touch(true);
        *p = v;
    }
    operator value_type() const { return get(); }
    template <class U, class = std::enable_if_t<std::is_same_v<U, T>>>
    operator U&() const {  // (a template: where a value will do, the conversion above is chosen)
        escape();
        return *p;
    }
    T* operator&() const {  // a raw pointer: only running past the array's end is caught
        escape();
        return p;
    }
    T& argument() const {  // passed to a function: checked as a read (see arg_of)
        touch(false, false);
        return *p;
    }
    const shared_ref& operator=(value_type v) const { set(v); return *this; }
    const shared_ref& operator=(const shared_ref& o) const { set(o.get()); return *this; }
    struct Update {  // marks the read and write between as one read-modify-write (`updating`)
        Update(const char* op, const Place& at) {
            if constexpr (kCheck) updating = op, updating_at = &at;
        }
        ~Update() { if constexpr (kCheck) updating = nullptr, updating_at = nullptr; }
    };
#define CUDA_EMU_COMPOUND(op)                                                            \
    template <class V> const shared_ref& operator op(const V& v) const {                \
        Update u(#op, at);                                                                   \
        value_type x = get();                                                            \
        x op v;                                                                          \
        set(x);                                                                          \
        return *this;                                                                    \
    }
    CUDA_EMU_COMPOUND_OPS(CUDA_EMU_COMPOUND)
#undef CUDA_EMU_COMPOUND
    const shared_ref& operator++() const { Update u("++", at); value_type x = get(); set(++x); return *this; }
    const shared_ref& operator--() const { Update u("--", at); value_type x = get(); set(--x); return *this; }
    value_type operator++(int) const { Update u("++", at); value_type x = get(), y = x; set(++y); return x; }
    value_type operator--(int) const { Update u("--", at); value_type x = get(), y = x; set(--y); return x; }
    value_type operator->() const requires std::is_pointer_v<value_type> { return get(); }
};

// Element `flat` of an array, at p: a proxy where it is tracked, else the T& itself.
template <class T>
inline decltype(auto) element_at(T* p, SharedInfo* info, std::size_t flat, int line) {
    if constexpr (kTracked<T>) {
        return shared_ref<T>{p, Place{info, flat, 1, nullptr, 0, line, true}};
    } else {
        if constexpr (kCheck) info->escaped = true;  // a class element: a reference, untracked
        return static_cast<T&>(*p);
    }
}

// The array, or a row of it, with N elements along this axis. It converts to a pointer to its
// first element (implicitly, as an array decays; to another pointer type by a cast) and to a
// reference to the C++ array; every such conversion ends the tracking of reads as unwritten.
template <class T, std::size_t... D> struct shared_view;
template <class T, std::size_t N, std::size_t... R>
struct shared_view<T, N, R...> {
    using element = typename array_of<T, R...>::type;
    using whole = typename array_of<T, N, R...>::type;
    element* data;
    SharedInfo* info;
    std::size_t flat;  // index of this row among the rows of its length
    decltype(auto) operator[](Index i) const {
        if (i.value < 0 || i.value >= (long long)N) [[unlikely]]
            index_error(*info, sizeof...(R), i.value, N, i.line);
        const std::size_t at = flat * N + std::size_t(i.value);
        if constexpr (sizeof...(R) > 0) return shared_view<T, R...>{data[i.value], info, at};
        else return element_at(data + i.value, info, at, i.line);
    }
    decltype(auto) operator*() const { return (*this)[0]; }
    element* pointer() const {
        if constexpr (kCheck) info->escaped = true;
        return data;
    }
    whole& array() const { return *reinterpret_cast<whole*>(pointer()); }
    // (templates: the built-in [] is then no candidate beside operator[], and no conversion of
    // the index is ambiguous with this one)
    template <class P, class = std::enable_if_t<std::is_convertible_v<element*, P*>>>
    operator P*() const { return pointer(); }
    template <class P, class = std::enable_if_t<!std::is_convertible_v<element*, P*>>, class = void>
    explicit operator P*() const { return (P*)(pointer()); }  // (float4*)s, (char*)s
    template <class U, class = std::enable_if_t<std::is_same_v<std::remove_const_t<U>, whole>>>
    operator U&() const { return array(); }  // a function's `float (&tile)[16][16]`
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    element* operator+(I k) const { return pointer() + k; }
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    friend element* operator+(I k, const shared_view& v) { return v.pointer() + k; }
    element* begin() const { return pointer(); }  // for (float x : s)
    element* end() const { return pointer() + N; }
    friend bool operator==(const shared_view& v, const volatile void* p) { return v.data == p; }
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

// A static __shared__ array's bytes, guard pages and bookkeeping (a base of shared_array, so
// that they exist before its view of them).
template <class Whole>
struct shared_storage {
    GuardedBytes bytes;  // unmapped after the destructor's body has given back the guard's slot
    int slot;
    SharedInfo record;
    shared_storage(const char* name, const char* declared, std::vector<std::size_t> dims,
                   std::size_t elements, std::size_t unit)
        : bytes(sizeof(Whole)), slot(guard_shared(bytes, name, declared)),
          record{name, declared, std::move(dims), std::vector<Shadow>(kCheck ? elements : 0)} {
        record.before = bytes.map, record.before_bytes = bytes.map ? bytes.pages - bytes.size : 0;
        if (record.before_bytes) std::memset(record.before, 0xFF, record.before_bytes);
        record.begin = bytes.data(), record.bytes = sizeof(Whole), record.unit = unit;
        std::memset(bytes.data(), 0xFF, record.bytes);  // (as each block's start fills it)
        shared_arrays.push_back(&record);
    }
    ~shared_storage() {
        std::erase(shared_arrays, &record);
        if (slot >= 0) shared_guards[slot].page.store(nullptr);
    }
    Whole& whole_array() { return *reinterpret_cast<Whole*>(bytes.data()); }
};

template <class T, std::size_t... D>
struct shared_array : private shared_storage<typename array_of<T, D...>::type>,
                      public shared_view<T, D...> {
    using storage = shared_storage<typename array_of<T, D...>::type>;
    shared_array(const char* name, const char* declared)
        : storage(name, declared, {D...}, (D * ...), sizeof(T)),
          shared_view<T, D...>{storage::whole_array(), &this->record, 0} {}
};

// `__shared__ T name;` in check mode, or volatile: its accesses go through shared_ref.
template <class T, class = void>
struct shared_scalar {
    using value_type = std::remove_cv_t<T>;
    T value{};
    SharedInfo record;
    shared_scalar(const char* name, const char* declared) : record{name, declared} {
        record.shadow.resize(kCheck ? 1 : 0);
        record.begin = (const unsigned char*)(&value), record.bytes = record.unit = sizeof(T);
        shared_arrays.push_back(&record);
    }
    shared_scalar(const shared_scalar&) = delete;
    ~shared_scalar() { std::erase(shared_arrays, &record); }
    shared_ref<T> ref() const {
        return {const_cast<T*>(&value), Place{const_cast<SharedInfo*>(&record)}};
    }
    operator value_type() const { return ref().get(); }
    template <class U, class = std::enable_if_t<std::is_same_v<U, T>>>
    operator U&() const { return ref(); }
    shared_scalar& operator=(const shared_scalar& o) { ref() = o.ref().get(); return *this; }
    shared_scalar& operator=(value_type v) { ref() = v; return *this; }
#define CUDA_EMU_COMPOUND(op) \
    template <class V> shared_scalar& operator op(const V& v) { ref() op v; return *this; }
    CUDA_EMU_COMPOUND_OPS(CUDA_EMU_COMPOUND)
#undef CUDA_EMU_COMPOUND
    shared_scalar& operator++() { ++ref(); return *this; }
    shared_scalar& operator--() { --ref(); return *this; }
    value_type operator++(int) { return ref()++; }
    value_type operator--(int) { return ref()--; }
    T* operator&() const { return &ref(); }
    value_type operator->() const requires std::is_pointer_v<value_type> { return ref().get(); }
};
// A scalar of class type (float4, a struct): the object itself (its members reached with `.`),
// untracked and not volatile.
template <class T>
struct shared_scalar<T, std::enable_if_t<std::is_class_v<T> || std::is_union_v<T>>>
    : std::remove_cv_t<T> {
    using value_type = std::remove_cv_t<T>;
    shared_scalar(const char*, const char*) : value_type() {}
    using value_type::operator=;
};

// `extern __shared__ T name[];`: the launch's dynamic shared memory as an array of T. In check mode
// an index is checked against the launch's bytes and an element of 4 bytes or a multiple of 4
// is tracked by its words; in the normal mode an index past them faults at the guard page.
template <class T>
struct dynamic_array {
    const char* name;
    const char* declared;  // its element type, "float"
    static constexpr bool kProxy = kTracked<T> && (std::is_volatile_v<T> || sizeof(T) % 4 == 0);
    T* data() const { return reinterpret_cast<T*>(dynamic_smem); }
    T* pointer() const {
        if constexpr (kCheck) dynamic_info.escaped = true;
        return data();
    }
    decltype(auto) operator[](Index i) const {
        if constexpr (kCheck) {
            if (i.value < 0 || std::size_t(i.value) >= dynamic_smem_bytes / sizeof(T)) [[unlikely]]
                out_of_bounds(i);
        }
        if constexpr (kProxy) {
            Place at{};
            at.line = i.line;
            if (kCheck && sizeof(T) % 4 == 0) {
                at.info = &dynamic_info, at.slot = std::size_t(i.value) * sizeof(T) / 4;
                at.slots = sizeof(T) / 4, at.name = dynamic_info.name = name, at.index = i.value;
            } else if (kCheck) {
                dynamic_info.escaped = true;  // (a volatile element under 4 bytes: untracked)
            }
            return shared_ref<T>{data() + i.value, at};
        } else {
            if constexpr (kCheck) dynamic_info.escaped = true;  // untracked: a class, or < 4 bytes
            return static_cast<T&>(data()[i.value]);
        }
    }
    [[noreturn]] void out_of_bounds(const Index& i) const {
        char what[512];
        std::snprintf(what, sizeof what, "index %lld of extern __shared__ %s is out of bounds: the "
                      "launch gave %zu bytes of dynamic shared memory (shared_mem=%s), %zu "
                      "elements of %s, on line %d", i.value, name, dynamic_smem_bytes,
                      dynamic_smem_bytes ? "" : ", which was not given",
                      dynamic_smem_bytes / sizeof(T), declared, i.line);
        fail_here(what);
    }
    decltype(auto) operator*() const { return (*this)[0]; }
    template <class P, class = std::enable_if_t<std::is_convertible_v<T*, P*>>>
    operator P*() const { return pointer(); }
    template <class P, class = std::enable_if_t<!std::is_convertible_v<T*, P*>>, class = void>
    explicit operator P*() const { return (P*)(pointer()); }
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    T* operator+(I k) const { return pointer() + k; }
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    friend T* operator+(I k, const dynamic_array& a) { return a.pointer() + k; }
    friend bool operator==(const dynamic_array& a, const volatile void* p) { return a.data() == p; }
};

// Whether [at, at + size) lies in this block's shared memory. Where it does and covers whole
// shadow entries, `where` tracks it (check mode).
inline bool locate(const volatile void* at, std::size_t size, Place& where) {
    const auto* a = (const unsigned char*)(at);
    for (SharedInfo* s : shared_arrays) {
        if (a < s->begin || a >= s->begin + s->bytes) continue;
        const std::size_t offset = std::size_t(a - s->begin);
        if (kCheck && offset % s->unit == 0 && size % s->unit == 0 && offset + size <= s->bytes) {
            where.info = s, where.slot = offset / s->unit, where.slots = size / s->unit;
            if (s->dynamic) where.name = s->name, where.index = (long long)(offset / size);
        }
        return true;
    }
    return false;
}

// Check mode: an element of shared memory reached through a plain pointer (memory.h's
// global_index: `p[i]` where p was taken from a __shared__ array, an array passed to a
// __device__ function) is checked for races as an access through the array's name is. access:
// 1 a read, 2 a write, 3 both (`p[i] += x`). (Reads of unwritten elements are not reported
// here: taking the pointer ended that check for its array.)
inline void track_through_pointer(const void* at, std::size_t size, int access, int line) {
    Place where{};
    where.line = line;
    if (!locate(at, size, where)) {  // past the dynamic shared memory (into its guard)?
        const SharedInfo& d = dynamic_info;
        const auto* a = static_cast<const unsigned char*>(at);
        if (d.begin != nullptr && std::find(shared_arrays.begin(), shared_arrays.end(), &d) !=
                                      shared_arrays.end() &&
            a >= d.begin + d.bytes && a < d.begin + d.bytes + kGuardBytes) {
            char what[400];
            std::snprintf(what, sizeof what, "the %s on line %d is %zu bytes past the end of the "
                          "dynamic shared memory (extern __shared__), through a pointer: the launch "
                          "gave %zu bytes (shared_mem= counts bytes, for every array carved from "
                          "it)", access == 1 ? "read" : access == 2 ? "write" : "update", line,
                          std::size_t(a - (d.begin + d.bytes)), d.bytes);
            fail_here(what);
        }
        return;
    }
    if (!where.info) return;
    if (access & 1) check_access(where, false, false);
    if (access & 2) check_access(where, true, false);
}

template <class X> struct is_shared_kind : std::false_type {};  // arrays: they decay to pointers
template <class T, std::size_t... D>
struct is_shared_kind<shared_array<T, D...>> : std::true_type {};
template <class T, std::size_t... D>
struct is_shared_kind<shared_view<T, D...>> : std::true_type {};
template <class T> struct is_shared_kind<dynamic_array<T>> : std::true_type {};
template <class T, std::size_t... D> auto* shared_pointer(const shared_view<T, D...>& v) {
    return v.pointer();
}
template <class T> T* shared_pointer(const dynamic_array<T>& a) { return a.pointer(); }

// `&s[i]` of a __shared__ array (book/launch/rewrite.py's _uses writes `address_of(s, i)`): the
// element's address, where the end of the array (i == its length: `p != &s[64]`) is a legal
// address, not an element to refuse. Any other index is checked as s[i] is.
template <class T, std::size_t N, std::size_t... R>
inline auto* address_of(const shared_view<T, N, R...>& v, const Index& i) {
    if (i.value < 0 || i.value > (long long)N) [[unlikely]]
        index_error(*v.info, sizeof...(R), i.value, N, i.line);
    return v.pointer() + i.value;
}
template <class T>
inline auto* address_of(const dynamic_array<T>& a, const Index& i) {
    if (kCheck && i.value == (long long)(dynamic_smem_bytes / sizeof(T))) return a.pointer() + i.value;
    return &a[i];
}
template <class X>
    requires(!is_shared_kind<std::decay_t<X>>::value)
inline auto* address_of(X&& x, const Index& i) {  // (a shared scalar pointer: &p[i] as written)
    return &x[i.value];
}

// `volatile T*` (T may be const), as book/launch/rewrite.py rewrites a variable or parameter of
// that type: every access through it is volatile (see the top).
template <class T>
struct volatile_ptr {
    using target = volatile T;
    target* p = nullptr;
    volatile_ptr() = default;
    volatile_ptr(target* q) : p(q) {}
    volatile_ptr(std::nullptr_t) {}
    template <class U, class = std::enable_if_t<std::is_convertible_v<volatile U*, target*>>>
    volatile_ptr(const volatile_ptr<U>& q) : p(q.p) {}
    template <class U, std::size_t... D>  // (its accesses are tracked: no escape)
    volatile_ptr(const shared_view<U, D...>& v) : p(v.data) {}
    template <class U>
    volatile_ptr(const dynamic_array<U>& a) : p(a.data()) {}
    static decltype(auto) at(target* q, int line) {
        if constexpr (std::is_class_v<T> || std::is_union_v<T>) {
            return *q;  // (members reached with `.`: untracked)
        } else {
            Place where{};
            where.line = line;
            where.shared = locate(q, sizeof(T), where);
            return shared_ref<target>{q, where};
        }
    }
    decltype(auto) operator[](Index i) const { return at(p + i.value, i.line); }
    decltype(auto) operator*() const { return at(p, 0); }
    target* operator->() const { return p; }
    template <class P, class = std::enable_if_t<std::is_convertible_v<target*, P*>>>
    operator P*() const { return p; }
    template <class P, class = std::enable_if_t<!std::is_convertible_v<target*, P*>>, class = void>
    explicit operator P*() const { return (P*)(p); }
    explicit operator bool() const { return p != nullptr; }
    bool operator==(const volatile_ptr&) const = default;
    auto operator<=>(const volatile_ptr&) const = default;
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    volatile_ptr operator+(I k) const { return p + k; }
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    friend volatile_ptr operator+(I k, const volatile_ptr& q) { return q.p + k; }
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    volatile_ptr operator-(I k) const { return p - k; }
    std::ptrdiff_t operator-(const volatile_ptr& q) const { return p - q.p; }
    template <class I> volatile_ptr& operator+=(I k) { p += k; return *this; }
    template <class I> volatile_ptr& operator-=(I k) { p -= k; return *this; }
    volatile_ptr& operator++() { ++p; return *this; }
    volatile_ptr& operator--() { --p; return *this; }
    volatile_ptr operator++(int) { return p++; }
    volatile_ptr operator--(int) { return p--; }
};
template <class U> volatile_ptr<U> as_volatile_ptr(volatile U* p) { return p; }  // (rewrite.py)
template <class U> volatile_ptr<U> as_volatile_ptr(volatile_ptr<U> p) { return p; }

}  // namespace cuda_emu
