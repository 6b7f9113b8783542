// cuda_emu/memory.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
//
// Global memory: the checks book/launch/rewrite_memory.py writes into a kernel's source.
//   * global_index: every `p[i]` where p is a pointer (or array) parameter of a __global__ or
//     __device__ function, or a local pointer; a __device__ or __constant__ array's index is
//     checked against its extent. Where p points into an array argument of the launch, the element
//     p[i] must lie inside that argument: an index before its start (in[-1]) or past its end is
//     an error naming the expression, its line, the index and the argument. (The worker's guard
//     regions catch accesses far outside an array without this; this finds those next to it,
//     which land in the page the array shares with its guard bytes, and names the expression.)
//     A pointer into anything else -- shared memory, a thread's local array -- is left to the
//     other checks (in check mode, p[i] in shared memory is checked for races: shared.h). (A pointer to volatile memory is rewrite.py's volatile_ptr, which lets the
//     block's other threads run before each access: shared.h.)
//   * note_update (check mode): `p[i] += v` or `p[i]++` on an array argument by two threads of
//     one launch with no barrier between them -- a lost update on a GPU (a histogram in global
//     memory without atomicAdd) -- names both threads and the element.
//   * track_global (check mode): other races on an array argument's elements -- a read of
//     another thread's write, a write over another's read, with no barrier between them (block
//     b reading block b - 1's result in the same launch; an in-place stencil), and two threads'
//     writes of different values to one element -- named with both threads and lines.
//   * checked_cast: a cast to a pointer type, however written (reinterpret_cast, static_cast,
//     a C-style cast; through a type alias or a template parameter too): on a GPU an access
//     through a pointer must sit on a multiple of its type's alignment (16 bytes for float4,
//     8 for double or float2), or the launch fails with "misaligned address". The emulator's CPU
//     would read it anyway, so the cast checks, counting from the array's start as a GPU's
//     arrays start on 256 bytes.
#pragma once

namespace cuda_emu {

// A pointer type without __restrict__ (nor a top-level const or volatile): g++ keeps the qualifier in the type, where
// std::is_pointer is false (for `const float* __restrict__ x` the checks below were skipped), so
// every check sees through it.
template <class T> struct unrestrict { using type = T; };
template <class T> struct unrestrict<T* __restrict__> { using type = T*; };
template <class T> struct unrestrict<T* const __restrict__> { using type = T*; };
template <class T> struct unrestrict<T* volatile __restrict__> { using type = T*; };
template <class T> struct unrestrict<T* const volatile __restrict__> { using type = T*; };
template <class T> using unrestrict_t = std::remove_cv_t<typename unrestrict<T>::type>;

// Where the worker writes the number of arguments and each one's address and bytes, in the fault
// page, before the launch (book/launch/worker.py's ARGUMENTS and POINTERS).
constexpr int kArgumentsAt = 240, kPointersAt = 256;

// The array argument of the launch whose bytes [lo, hi) hold `at` ("within": one past its end
// counts, for a pointer that ran to the end of a loop), or lie within `margin` bytes of them:
// its number (from 1), or 0 where none.
struct ArgumentRange {
    std::uintptr_t lo = 0, hi = 0;
    unsigned number = 0;
};
inline ArgumentRange argument_holding(std::uintptr_t at, std::uint64_t margin = 0) {
    if (!fault_report) return {};  // not in the worker process: no table of arguments
    const auto* page = reinterpret_cast<const unsigned char*>(fault_report);
    const std::uint64_t n = *reinterpret_cast<const std::uint64_t*>(page + kArgumentsAt);
    const auto* pointers = reinterpret_cast<const std::uint64_t*>(page + kPointersAt);
    for (std::uint64_t i = 0; i < n && kPointersAt + 16 * n <= kSharedNameAt; ++i)
        if (pointers[i] && at + margin >= pointers[i] && at <= pointers[i] + pointers[n + i] + margin)
            return {pointers[i], pointers[i] + pointers[n + i], unsigned(i + 1)};
    return {};
}

// The last argument an access was found in (and the launch it belongs to), and the last page
// that held a pointer into no argument: most accesses are decided by these two.
inline thread_local ArgumentRange index_range;
inline thread_local unsigned index_launch = 0;
inline thread_local std::uintptr_t index_miss_page = 0;

template <class T>
[[noreturn]] inline void index_outside(const ArgumentRange& r, std::uintptr_t base,
                                       long long index, const char* text, int line) {
    const std::size_t size = sizeof(T), count = (r.hi - r.lo) / size;
    const long long element = (long long)((base - r.lo) / size) + index;  // from the array's start
    char where[96], what[768];
    const std::uintptr_t at = base + std::uintptr_t(index * (long long)size);
    if (at < r.hi && at + size > r.hi)  // a float4 at x[n - 2]: its last bytes past the end
        std::snprintf(where, sizeof where, "its last %zu bytes past the end", std::size_t(at + size - r.hi));
    else if (element < 0)
        std::snprintf(where, sizeof where, "%lld before its start", -element);
    else
        std::snprintf(where, sizeof where, "%lld past its end", element - (long long)count + 1);
    char elements[96];
    if ((r.hi - r.lo) % size)  // (a float4 read of a float array whose length is no multiple of 4)
        std::snprintf(elements, sizeof elements, "%zu bytes: %zu whole elements of %zu bytes",
                      std::size_t(r.hi - r.lo), count, size);
    else
        std::snprintf(elements, sizeof elements, "%zu elements of %zu bytes", count, size);
    std::snprintf(what, sizeof what, "%s on line %d is element %lld of argument #%u (%s): %s. On a GPU it reads or writes memory outside the array "
                  "(compute-sanitizer reports it); %s", text, line, element, r.number, elements,
                  where, (index >= (1ll << 32) - (1ll << 20) && index < (1ll << 32))
                             ? "an index just below 2^32 is most often an unsigned int that went "
                               "below 0 and wrapped (a loop `for (unsigned i = n - 1; i >= 0; "
                               "--i)` never ends): count with an int"
                         : (element >= (1ll << 30) || element <= -(1ll << 30))
                             ? "an index this far out is most often an int that overflowed (a "
                               "product such as row * n past 2^31): compute it in 64 bits, "
                               "(size_t)row * n + col"
                             : "check the index's bounds");
    fail_here(what);
}

// Check mode: `p[i] += v`, `p[i]++` on an array argument (a read, then a write: not atomic) by
// two threads of one launch with no barrier between them (threads of two blocks never have one)
// lose an update on a GPU -- a histogram in global memory without atomicAdd. Each element's last
// such update is kept (its launch, block, thread and barrier epoch), under a lock: blocks run
// on several OS threads.
struct Update {
    unsigned launch, block, epoch;
    int thread, line;
    bool locked;  // made while its thread held a spin lock (builtins.h's atomicCAS)
};
inline std::mutex updates_lock;
inline std::unordered_map<std::uintptr_t, Update> updates;
inline unsigned updates_launch = 0;

// "thread (x, y, z) of block (a, b, c)": the thread that made update u.
inline std::string updater(const Update& u) {
    const unsigned bx = block_dim.x, by = block_dim.y, gx = grid_dim.x, gy = grid_dim.y;
    char who[96];
    std::snprintf(who, sizeof who, "thread (%u, %u, %u) of block (%u, %u, %u)",
                  unsigned(u.thread) % bx, unsigned(u.thread) / bx % by,
                  unsigned(u.thread) / (bx * by), u.block % gx, u.block / gx % gy,
                  u.block / (gx * gy));
    return who;
}

// " (threads of two blocks never have one)" where update u was another block's, else "".
inline const char* across_blocks(const Update& u) {
    const unsigned block = block_idx.x + grid_dim.x * (block_idx.y + grid_dim.y * block_idx.z);
    return u.block != block ? " (threads of two blocks never have one)" : "";
}

// `element`: "element 3 of argument #2", "element 3 of a __device__ array".
[[noreturn]] inline void lost_update(const Update& u, const char* element, const char* text,
                                     int line) {
    char what[900];
    std::snprintf(what, sizeof what, "lost update: %s on line %d reads and writes %s, which %s "
                  "also updated (line %d) in this launch with no barrier between them%s: on a GPU "
                  "the two read-modify-writes interleave and one update is lost. Use an atomic "
                  "(atomicAdd(&...)), or give each thread its own element", text, line, element,
                  updater(u).c_str(), u.line, across_blocks(u));
    fail_here(what);
}

// The update before this thread's of the same address where the two lose one (another thread,
// no barrier between), else nullopt; this thread's is kept as the last.
inline std::optional<Update> clashing_update(std::uintptr_t at, int line) {
    const unsigned block = block_idx.x + grid_dim.x * (block_idx.y + grid_dim.y * block_idx.z);
    const Update mine{launches, block, block_epoch, int(worker->current->index), line,
                      worker->current->locks > 0};
    std::lock_guard<std::mutex> hold(updates_lock);
    if (updates_launch != launches) updates.clear(), updates_launch = launches;
    auto [it, fresh] = updates.try_emplace(at, mine);
    if (fresh) return std::nullopt;
    const Update u = it->second;
    it->second = mine;
    if (u.locked && mine.locked) return std::nullopt;  // (one lock, presumably, orders them)
    if (u.block != block || (u.thread != mine.thread && u.epoch == block_epoch)) return u;
    return std::nullopt;
}

inline void note_update(std::uintptr_t at, std::size_t size, const char* text, int line) {
    const ArgumentRange r = argument_holding(at);
    if (!r.number) {  // (a thread's own memory; shared memory, reached through a reference: raced)
        track_through_pointer(reinterpret_cast<const void*>(at), size, 3, line);
        return;
    }
    if (const auto u = clashing_update(at, line)) {
        char element[64];
        std::snprintf(element, sizeof element, "element %zu of argument #%u",
                      (std::size_t)((at - r.lo) / size), r.number);
        lost_update(*u, element, text, line);
    }
}

// ---- check mode: races on global memory -------------------------------------------------------
// Each 4-byte word of an array argument keeps, for the launch, the last thread that wrote it and
// the last that read it (block, thread, barrier epochs, line), as shared memory's words do
// (shared.h). A read of another thread's write, or a write over another's read, with nothing
// between them to order the two is a race: threads of one block with no __syncthreads() between
// them (lanes of one warp: nor a warp operation), threads of two blocks always -- unless this
// thread (or one of its block's before a barrier they both passed) has made an atomic, a fence
// or a volatile access in the launch (Fiber::synced: a flag, a lock, the last block of a
// threadfence reduction, which is how blocks do order their accesses on a GPU). Two threads' plain writes of one word are reported when the block ends, if the
// second changed its value (`*found = 1` by many threads is left alone). Elements of under 4
// bytes or of class type (float4), and arguments over 1 MiB (80 bytes of records a word), are
// not tracked.
struct GlobalAccess {
    unsigned launch = 0, block = 0, epoch = 0, warp_at = 0;
    int thread = -1, line = 0;
    bool update = false;  // a write of a read-modify-write (p[i] += v; *t = *t + v)
    const char* text = nullptr;  // the expression ("x[i]")
};
struct GlobalWord { GlobalAccess writer, reader; };
struct ShadowSlot {  // one array argument's words, (re)made at the launch's first access to it
    std::atomic<unsigned> launch{0};
    std::uintptr_t lo = 0, hi = 0;
    std::vector<GlobalWord> words;
};
inline ShadowSlot shadow_slots[64];
inline std::mutex shadow_made, shadow_stripes[64];
struct SecondWrite {  // a write over another thread's unordered one: checked when the block ends
    std::uintptr_t at;
    std::size_t size;
    unsigned long long before;  // the word's bits before this write (the other thread's value)
    GlobalAccess other, mine;
    const char* text;
    unsigned number;
    std::uintptr_t lo;
};
inline thread_local std::vector<SecondWrite> second_writes;

inline std::string accessor(const GlobalAccess& a) {
    return updater(Update{a.launch, a.block, a.epoch, a.thread, a.line, false});
}

[[noreturn]] inline void global_race(const GlobalAccess& other, bool write, std::size_t element,
                                     unsigned number, const char* text, int line) {
    const unsigned block = block_idx.x + grid_dim.x * (block_idx.y + grid_dim.y * block_idx.z);
    const bool across = other.block != block;
    char what[1200];
    int n = std::snprintf(what, sizeof what, "race on global memory: this thread %s %s on line "
                          "%d (element %zu of argument #%u), which %s %s on line %d in this "
                          "launch%s: on a GPU the %s may come before or after the %s. ",
                          write ? "writes" : "reads", text, line, element, number,
                          accessor(other).c_str(), write ? "read" : "wrote", other.line,
                          across ? ", and threads of two blocks are never ordered within a launch"
                                 : " with no __syncthreads() between them",
                          write ? "read" : "write", write ? "write" : "read");
    if (other.text && !std::strcmp(other.text, text))  // (check-then-write: `if (v > *best) *best = v`)
        std::snprintf(what + n, sizeof what - n, "Threads read and write this one element: make "
                      "the update one atomic (atomicMax(p, v) for `if (v > *p) *p = v`, atomicAdd "
                      "for a sum), or combine the values within each block first");
    else if (across)
        std::snprintf(what + n, sizeof what - n, write
                      ? "Write the results to a second array (out of place), or split the kernel "
                        "into two launches where one block's reads must see another's writes"
                      : "A block cannot wait for another's results within a launch: read them in a "
                        "second launch (end the kernel where the dependency is), or let the last "
                        "block to finish do it (__threadfence() after the writes, then an atomicAdd "
                        "on a counter: the block that finds it at gridDim - 1 reads them all)");
    else if (other.line == line)  // (one statement: an in-place stencil, a shift, a scan step)
        std::snprintf(what + n, sizeof what - n, "The statement reads elements that the same "
                      "statement of other threads writes: read them into a variable, "
                      "__syncthreads(), then write (or write to a second array)");
    else if (unsigned(other.thread) / 32 == worker->current->index / 32)
        std::snprintf(what + n, sizeof what - n, "Both are lanes of warp %u: a __syncwarp() (or a "
                      "__syncthreads()) between the two accesses orders them",
                      worker->current->index / 32);
    else
        std::snprintf(what + n, sizeof what - n, "Put a __syncthreads() between them");
    fail_here(what);
}

// p[i] of an array argument (r), in check mode: the races above.
inline void track_global(const ArgumentRange& r, std::uintptr_t at, std::size_t size, int access,
                         const char* text, int line) {
    Fiber* f = worker ? worker->current : nullptr;
    if (!f || f->synced || r.number > 63 || r.hi - r.lo > (std::uintptr_t(1) << 20) ||
        at < r.lo || at + size > r.hi)
        return;
    ShadowSlot& slot = shadow_slots[r.number];
    if (slot.launch.load(std::memory_order_acquire) != launches) {
        std::lock_guard<std::mutex> hold(shadow_made);
        if (slot.launch.load() != launches) {  // (records of earlier launches name them: kept)
            if (slot.words.size() != (r.hi - r.lo + 3) / 4)
                slot.words.assign((r.hi - r.lo + 3) / 4, GlobalWord{});
            slot.lo = r.lo, slot.hi = r.hi;
            slot.launch.store(launches, std::memory_order_release);
        }
    }
    if (slot.lo != r.lo || at + size > slot.hi) return;  // (one array passed twice, as two ranges)
    const unsigned block = block_idx.x + grid_dim.x * (block_idx.y + grid_dim.y * block_idx.z);
    const int me = int(f->index);
    const unsigned wepoch = warp_epoch[f->index / 32];
    const GlobalAccess mine{launches, block, block_epoch, wepoch, me, line, access == 3, text};
    auto unordered = [&](const GlobalAccess& a) {
        if (a.launch != launches || a.thread < 0) return false;
        if (a.block != block) return true;
        if (a.thread == me || a.epoch != block_epoch) return false;
        return unsigned(a.thread) / 32 != f->index / 32 || a.warp_at == wepoch;
    };
    const std::size_t first = (at - r.lo) / 4, element = (at - r.lo) / size;
    for (std::size_t k = first; k < first + size / 4; ++k) {
        GlobalAccess writer, reader;
        bool second = false;
        {
            std::lock_guard<std::mutex> hold(shadow_stripes[k % 64]);
            GlobalWord& w = slot.words[k];
            writer = w.writer, reader = w.reader;
            // (a read keeps an earlier reader it is unordered with, as shared memory's words do)
            if ((access & 1) && !unordered(reader)) w.reader = mine;
            if (access & 2) {
                second = unordered(writer);
                w.writer = mine;
            }
        }
        if ((access & 1) && unordered(writer)) {
            if (writer.update && writer.line == line && writer.text && !std::strcmp(writer.text, text)) {
                // (`*t = *t + v`: its read comes first)
                char what[64];
                std::snprintf(what, sizeof what, "element %zu of argument #%u", element, r.number);
                lost_update(Update{writer.launch, writer.block, writer.epoch, writer.thread,
                                   writer.line, false}, what, text, line);
            }
            global_race(writer, false, element, r.number, text, line);
        }
        if ((access & 2) && unordered(reader))
            global_race(reader, true, element, r.number, text, line);
        if (second && k == first) {
            unsigned long long before = 0;
            std::memcpy(&before, reinterpret_cast<const void*>(at), size < 8 ? size : 8);
            second_writes.push_back({at, size, before, writer, mine, text, r.number, r.lo});
        }
    }
}

// At each barrier of a block and at its end: the second of two unordered writes of a word that
// changed its value (a later write ordered after both may change it again: checked before it).
inline void check_global_writes() {
    for (const SecondWrite& s : second_writes) {
        unsigned long long now = 0;
        std::memcpy(&now, reinterpret_cast<const void*>(s.at), s.size < 8 ? s.size : 8);
        if (now == s.before) continue;
        char what[1000];
        std::snprintf(what, sizeof what, "race on global memory: %s wrote %s on line %d (element "
                      "%zu of argument #%u), and %s wrote a different value there (%s, line %d) "
                      "in this launch%s: on a GPU which write lands last is not defined. Give each "
                      "thread its own element (out[i], not out[i / 2]), or combine the values "
                      "with an atomic (atomicAdd, atomicMax)",
                      accessor(s.other).c_str(), s.other.text ? s.other.text : s.text,
                      s.other.line, (std::size_t)((s.at - s.lo) / s.size), s.number,
                      accessor(s.mine).c_str(), s.text, s.mine.line, s.other.block != s.mine.block
                          ? " (threads of two blocks are never ordered within a launch)"
                          : " with no __syncthreads() between the two writes");
        second_writes.clear();
        worker->errors->report(what);
        worker->failed = true;
        return;
    }
    second_writes.clear();
}
inline void clear_global_writes() { second_writes.clear(); }  // (as each block starts)

// `count++` (`count += x`...) of a scalar __device__ variable, in check mode (rewrite_memory's
// device_updates writes the call): the same check as note_update's, the variable named.
template <class T>
inline void note_device_update(T* at, const char* name, int line) {
    const auto u = clashing_update(reinterpret_cast<std::uintptr_t>(at), line);
    if (!u) return;
    char what[900];
    std::snprintf(what, sizeof what, "lost update: the __device__ variable %s is read and written "
                  "on line %d by this thread and (line %d) by %s in this launch with no barrier "
                  "between them%s: on a GPU the two "
                  "read-modify-writes interleave and one update is lost. Use an atomic: "
                  "atomicAdd(&%s, 1)", name, line, u->line, updater(*u).c_str(), across_blocks(*u),
                  name);
    fail_here(what);
}

// access: how the rewrite saw p[i] used (1 read, 2 write, 3 both, 4 its address taken, &p[i],
// where the end of the array is legal; 0 not known: a member, a further index): in check mode,
// an element of shared memory reached through a pointer (an array passed to a __device__
// function, `float* p = s;`) is checked for races as `s[i]` is.
template <class P, class I>
inline I global_index(const P& p, int line, const char* text, I i, int access = 0) {
    if constexpr (std::is_array_v<P> && std::is_integral_v<I>) {  // a __device__/__constant__ array
        constexpr std::size_t n = std::extent_v<P>;
        const long long index = std::is_signed_v<I> ? (long long)i : (long long)(unsigned long long)i;
        if (index < 0 || index > (long long)n - (access != 4)) {  // (&a[n]: its end, legal)
            char what[512];
            std::snprintf(what, sizeof what, "%s on line %d: index %lld is outside the array, "
                          "which has %zu elements. On a GPU it reads or writes other memory "
                          "(compute-sanitizer reports it); check the index's bounds", text, line,
                          index, n);
            fail_here(what);
        }
        // hist[k]++ of a __device__ array: as a __device__ scalar's count++ (not a thread's own
        // array, on its stack within 16 MiB of `here`, whose name a parameter's may shadow)
        if constexpr (kCheck && std::is_scalar_v<std::remove_all_extents_t<P>>) {
            const char here = 0;
            if (access == 3 && std::uintptr_t(&p[0]) - std::uintptr_t(&here) + (1u << 24) >= (1u << 25))
                if (const auto u = clashing_update(std::uintptr_t(&p[index]), line)) {
                    char element[64];
                    std::snprintf(element, sizeof element, "element %lld of a __device__ array",
                                  index);
                    lost_update(*u, element, text, line);
                }
        }
        return i;
    }
    using U = unrestrict_t<P>;
    if constexpr (std::is_pointer_v<U> && std::is_integral_v<I> &&
                  !std::is_void_v<std::remove_pointer_t<U>>) {
        using T = std::remove_cv_t<std::remove_pointer_t<U>>;
        const auto base = reinterpret_cast<std::uintptr_t>(p);
        const long long index = std::is_signed_v<I> ? (long long)i : (long long)(unsigned long long)i;
        const std::uintptr_t at = base + std::uintptr_t(index) * sizeof(T);
        constexpr bool kRaces = kCheck && std::is_scalar_v<T> && sizeof(T) >= 4;
        if constexpr (kCheck && std::is_scalar_v<T>) {
            if (access == 3) note_update(at, sizeof(T), text, line);
            if (access && access < 4 && !(index_launch == launches && at >= index_range.lo &&
                            at + sizeof(T) <= index_range.hi))
                track_through_pointer((const void*)at, sizeof(T), access, line);
        }
        const std::size_t reach = access == 4 ? 0 : sizeof(T);  // &p[i]: its end is legal
        if (index_launch == launches && base >= index_range.lo && base <= index_range.hi &&
            at >= index_range.lo && at + reach <= index_range.hi) {
            if constexpr (kRaces)
                if (access && access < 4) track_global(index_range, at, sizeof(T), access, text, line);
            return i;  // inside the argument found last
        }
        if (index_launch == launches && (base >> 12) == index_miss_page) return i;
        index_launch = launches;
        const ArgumentRange r = argument_holding(base);
        if (!r.number) {  // shared memory, a local array, a pointer of the caller's own
            if (base < 4096) {  // (the null page: no array starts there)
                char what[512];
                std::snprintf(what, sizeof what, "%s on line %d goes through a null pointer "
                              "(address 0x%llx): it was never set to an array -- a nullptr that "
                              "a branch not taken left, or a pointer variable never assigned",
                              text, line, (unsigned long long)base);
                fail_here(what);
            }
            index_miss_page = base >> 12;
            return i;
        }
        // Arguments that overlap (one array passed twice) may hold it where the first does not.
        if (at < r.lo || at + reach > r.hi) {
            const ArgumentRange other = argument_holding(at);
            if (!other.number || at + reach > other.hi)
                index_outside<T>(r, base, index, text, line);
            index_range = other;
        } else {
            index_range = r;
        }
        if constexpr (kRaces)
            if (access && access < 4) track_global(index_range, at, sizeof(T), access, text, line);
    }
    return i;
}

// `*p`, `*(p + i)` of a pointer parameter or local pointer (book/launch/rewrite_memory.py's
// derefs writes `(*deref(p, line, "*p", access))`): checked as p[0] is, so that running past an
// array is named with its line, and in check mode shared memory reached this way is tracked.
// A pointer already outside every argument is named where it lies in one's guard bytes (the
// unmapped space around each array, book/launch/worker.py's GUARD_AT): there it would fault,
// and the fault names no line.
constexpr int kGuardAt = 232;

inline ArgumentRange argument_guarding(std::uintptr_t at) {
    if (!fault_report) return {};
    const std::uint64_t guard = *reinterpret_cast<const std::uint64_t*>(
        reinterpret_cast<const unsigned char*>(fault_report) + kGuardAt);
    return argument_holding(at, guard ? guard : std::uint64_t(1) << 28);
}

template <class P>
inline P&& deref(P&& p, int line, const char* text, int access) {
    using U = unrestrict_t<std::remove_reference_t<P>>;
    if constexpr (std::is_pointer_v<U> && !std::is_void_v<std::remove_pointer_t<U>>) {
        using T = std::remove_cv_t<std::remove_pointer_t<U>>;
        const auto at = reinterpret_cast<std::uintptr_t>(p);
        if (!(index_launch == launches && at >= index_range.lo && at < index_range.hi) &&
            !argument_holding(at).number)
            if (const ArgumentRange r = argument_guarding(at); r.number)
                index_outside<T>(r, r.lo, ((long long)at - (long long)r.lo) / (long long)sizeof(T),
                                 text, line);
        global_index(p, line, text, 0, access);
    }
    return std::forward<P>(p);
}

// The pointer a cast operand gives: a __shared__ array (or a row of one) decays to its data.
template <class P>
inline decltype(auto) cast_operand(P&& p) {
    if constexpr (is_shared_kind<std::decay_t<P>>::value) return shared_pointer(p);
    else return std::forward<P>(p);
}

// kind: 0 reinterpret_cast, 1 static_cast, 2 a C-style cast (which may also cast const away).
template <class T, int kind, class P>
inline T checked_cast(const char* type, int line, P&& operand) {
    decltype(auto) p = cast_operand(std::forward<P>(operand));
    using Q = unrestrict_t<std::decay_t<decltype(p)>>;
    using R = unrestrict_t<T>;
    if constexpr (std::is_pointer_v<R> && std::is_pointer_v<Q>) {
        using V = std::remove_cv_t<std::remove_pointer_t<R>>;
        if constexpr (!std::is_void_v<V> && !std::is_function_v<V>) {
            auto at = reinterpret_cast<std::uintptr_t>((const volatile void*)(p));
            // On a GPU each array starts on 256 bytes; the worker places each where a GPU would
            // modulo 16 (a view's offset in its array kept), so beyond 16 count from its start
            if (alignof(V) > 16) at -= argument_holding(at).lo;  // (0 outside every argument)
            if (at % alignof(V)) {
                char what[640];
                const char* how = kind == 0 ? "reinterpret_cast" : kind == 1 ? "static_cast"
                                                                              : "cast";
                using W = std::remove_cv_t<std::remove_pointer_t<Q>>;  // what the operand points to
                constexpr std::size_t from = std::is_void_v<W> || std::is_function_v<W> ? 1 : sizeof(W);
                const int n = std::snprintf(
                    what, sizeof what, "misaligned address: the %s to %s* on line %d gives an "
                    "address %zu bytes past a %zu-byte boundary (counted from its array's start, "
                    "as a GPU's arrays start on 256 bytes), and every %s* must point to a multiple of "
                    "%zu bytes: on a GPU the launch fails with 'misaligned address'.", how, type,
                    line, (std::size_t)(at % alignof(V)), alignof(V), type, alignof(V));
                if (from < alignof(V))
                    std::snprintf(what + n, sizeof what - n, " The operand points to elements of "
                                  "%zu byte%s: to cast &x[i] so, i must be a multiple of %zu.", from,
                                  from == 1 ? "" : "s", alignof(V) / from);
                fail_here(what);
            }
        }
    }
    if constexpr (kind == 0) return reinterpret_cast<T>(p);
    else if constexpr (kind == 1) return static_cast<T>(p);
    else return (T)(p);
}

// `reinterpret_cast<float4*>(&x[i])[0]` (book/launch/rewrite_memory.py's _cast_elements): the
// element of a cast pointer, checked as p[i] is -- the whole float4 inside its array.
template <class P, class I>
inline decltype(auto) cast_element(P p, int line, const char* text, I i, int access) {
    return p[global_index(p, line, text, i, access)];
}

// A kernel's __launch_bounds__(most, ...), checked at its first statement (book/launch/rewrite.py
// writes the call there): a launch of more threads a block than `most` fails on a GPU.
inline void launch_bounds(int line, long long most) {
    const unsigned long long threads =
        (unsigned long long)block_dim.x * block_dim.y * block_dim.z;
    if ((long long)threads <= most) return;
    char what[512];
    std::snprintf(what, sizeof what, "the launch has %llu threads a block, but the kernel's "
                  "__launch_bounds__ on line %d allows at most %lld: on a GPU the launch fails "
                  "(CUDA_ERROR_INVALID_VALUE, 'too many resources requested for launch')",
                  threads, line, most);
    fail_here(what);
}

}  // namespace cuda_emu
