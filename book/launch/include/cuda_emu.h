// cuda_emu.h -- run CUDA C kernels on the CPU with CUDA's execution semantics.
//
// The book's kernels are plain CUDA C (book/kernels/*.cu). Without a GPU, book/cpu.py compiles
// the same source as C++20 with this header in front of it. The mapping:
//
//   * every CUDA thread of a block is a fiber (a user-level thread with its own stack);
//     threadIdx/blockIdx/blockDim/gridDim are per-OS-thread variables that the scheduler sets
//     before it resumes a fiber;
//   * __syncthreads() suspends the fiber; when every live fiber of the block has reached the
//     barrier (or returned: an exited thread no longer takes part, as on current GPUs) they all
//     resume. So an early `return` before a barrier cannot deadlock the others; live threads
//     waiting at different __syncthreads() (source lines) are an error (barrier divergence);
//   * threads form warps of 32 by linear thread index, as on the GPU. A warp-level operation
//     (__shfl*_sync, __ballot/__any/__all_sync, __syncwarp) suspends the lane until every lane
//     its mask names has reached an operation of the same kind with the same mask; then each
//     lane's result is computed at once (so a later tensor-core operation can read the whole
//     warp's fragments the same way). A mask lane that has exited or waits elsewhere while
//     nothing else can move is an error naming both threads;
//   * an mbarrier (Hopper's split barrier, wgmma.cuh's barrier_*) is a 64-bit word in shared
//     memory: its expected and pending arrival counts and its phase bit. A thread that waits on a
//     phase not yet complete suspends; the scheduler resumes it once another thread's arrival
//     completes the phase. Threads that wait on phases no arrival can complete are an error;
//   * an error (these, and the checks below) stops the launch: book/cpu.py raises LaunchError
//     with the message, which names the block and thread;
//   * in book/cpu.py's worker process a signal handler catches a kernel's memory faults and
//     arithmetic traps, writes a FaultReport (signal, address, load or store, block, thread)
//     and exits; the parent turns it into LaunchError. Each fiber stack has a guard page;
//   * a block runs on one OS thread; a launch starts one OS thread per core (BOOK_CPU_THREADS
//     overrides) and each pulls blocks until none are left, reusing its fibers and stacks;
//   * `__shared__` variables are `static thread_local`: one copy per OS thread, i.e. per block in
//     flight, shared by that block's fibers. Dynamic `extern __shared__` arrays are rewritten by
//     book/cpu.py into a per-OS-thread buffer of the launch's shared_mem bytes, filled with NaN
//     bytes (0xFF) before every block so that reads of unwritten shared memory show up.
//
// Arithmetic is IEEE float as written: no fast-math, no contraction of a*b+c into an FMA
// (-std=c++20 implies -ffp-contract=off), so fmaf() is the only fused multiply-add.
#pragma once

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <csignal>
#include <unistd.h>
#include <sys/mman.h>
#include <ucontext.h>

// ---- CUDA's built-in types -------------------------------------------------------------------
struct uint3 { unsigned x, y, z; };
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) double2 { double x, y; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }

// ---- the scheduler ---------------------------------------------------------------------------
namespace cuda_emu {

enum FiberState { READY, AT_BARRIER, AT_WARP, AT_MBARRIER, DONE };
enum WarpOp { SHFL, VOTE, SYNC, ACTIVE, MMA, REDUCE };
inline const char* const kOpNames[] = {"a __shfl*_sync", "a vote (__ballot/__any/__all_sync)",
                                       "__syncwarp", "__activemask()",
                                       "an mma.sync (tensor core: every lane of the warp)",
                                       "a __reduce_*_sync"};

// One lane's fragments of a tensor-core mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// (D = A B + C, A 16 x 8, B 8 x 8, C and D 16 x 8); the lane passes a pointer to it as its value.
struct MmaTf32 {
    unsigned a[4], b[2];
    float c[4], d[4];
};
inline void mma_tf32_release(MmaTf32* const (&lanes)[32]);

struct Fiber {
    ucontext_t ctx;
    uint3 tid;
    unsigned index;           // linear thread index in the block
    unsigned lane;            // index % 32: threads form warps as on the GPU
    FiberState state;
    int line;                 // source line of the barrier or warp operation it waits at
    const unsigned long long* mbarrier;  // state AT_MBARRIER: the mbarrier it waits on,
    unsigned parity;                     // until its phase of this parity has completed
    // A warp-level operation in progress (state AT_WARP): what this lane brings, what it gets.
    WarpOp op;
    unsigned mask;
    unsigned long long value, result;
    unsigned src;             // for shuffles: the lane whose value this lane reads
    char* stack;              // the lowest byte of its stack (a guard page comes first)
};

// The first error of a launch (any worker, any block) wins; the launch then stops.
struct ErrorSink {
    std::atomic<bool> failed{false};
    char* text;
    std::size_t size;
    void report(const char* message) {
        bool expected = false;
        if (failed.compare_exchange_strong(expected, true))
            std::snprintf(text, size, "%s", message);
    }
};

struct Worker {
    ucontext_t scheduler;
    Fiber* current = nullptr;
    void (*body)(void*) = nullptr;  // runs the kernel once, for the current fiber
    void* closure = nullptr;
    ErrorSink* errors = nullptr;
    bool failed = false;            // a fiber of this worker reported an error
    unsigned at_barrier = 0;        // this block's threads waiting at __syncthreads() now
    int barrier_line = 0;           // the line of the first of them
};

// What a launch stopped by the time limit leaves for the message (book/launch/emulator.py's
// WAITING), one note per worker thread: `switches` counts the worker's switches to a thread, and
// before each, while threads of its block wait at a barrier, the note says how many, where, and
// which thread runs. The parent reads the notes twice before it stops the worker: a worker
// whose count did not move is inside a thread that never came back.
struct BarrierNote {
    unsigned waiting;
    int line;
    unsigned block[3], thread[3];
    unsigned long long switches;
};
static_assert(sizeof(BarrierNote) == 40, "book/launch/emulator.py reads this layout");
constexpr int kBarrierNotesAt = 2048, kBarrierNotes = 32;  // in the fault page

inline thread_local Worker* worker = nullptr;
inline thread_local uint3 thread_idx{0, 0, 0};
inline thread_local uint3 block_idx{0, 0, 0};
inline thread_local dim3 block_dim;
inline thread_local dim3 grid_dim;
inline thread_local unsigned char* dynamic_smem = nullptr;
struct GuardedBytes;
inline thread_local const GuardedBytes* dynamic_bytes = nullptr;  // its guards

constexpr std::size_t kStackBytes = 256 * 1024;  // per fiber; untouched pages cost nothing

// Bytes that end (rounded up to 16) where kGuardBytes of inaccessible memory begin, with as many
// before their pages, so that an access past their end or before their start faults (what falls
// in the rest of their first page is found by its 0xFF bytes changing): dynamic shared memory,
// and every static __shared__ array (shared_array). map (their first page) is null where mmap
// failed.
constexpr std::size_t kGuardBytes = std::size_t{1} << 20;  // address space only: never touched
struct GuardedBytes {
    std::size_t size, pages;
    unsigned char* map;
    explicit GuardedBytes(std::size_t bytes)
        : size((bytes + 15) / 16 * 16), pages((size + 4095) / 4096 * 4096),
          map(static_cast<unsigned char*>(mmap(nullptr, kGuardBytes + pages + kGuardBytes, PROT_NONE,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {
        if (map == MAP_FAILED) map = nullptr;
        else if (mprotect(map + kGuardBytes, pages, PROT_READ | PROT_WRITE) != 0) {
            munmap(map, kGuardBytes + pages + kGuardBytes);
            map = nullptr;
        } else {
            map += kGuardBytes;
        }
    }
    GuardedBytes(const GuardedBytes&) = delete;
    GuardedBytes& operator=(const GuardedBytes&) = delete;
    ~GuardedBytes() {
        if (map) munmap(map - kGuardBytes, kGuardBytes + pages + kGuardBytes);
    }
    unsigned char* data() const { return map + pages - size; }
    unsigned char* guard() const { return map + pages; }       // kGuardBytes after the end
    unsigned char* lead() const { return map - kGuardBytes; }  // kGuardBytes before the pages
};

inline void fiber_main() {
    Worker* w = worker;
    w->body(w->closure);
    w->current->state = DONE;  // returning resumes uc_link, the scheduler
}

inline int where(char* out, std::size_t size, const uint3& t) {
    return std::snprintf(out, size, "block (%u, %u, %u), thread (%u, %u, %u)", block_idx.x,
                         block_idx.y, block_idx.z, t.x, t.y, t.z);
}

// What the worker process's signal handler leaves for book/cpu.py before it exits, when a kernel
// touches memory it may not (SIGSEGV, SIGBUS), divides an integer by zero (SIGFPE) or the like.
struct FaultReport {
    int signal, code, write, in_kernel;  // write: 1 store, 0 load, -1 unknown
    unsigned long long address;
    unsigned block[3], thread[3];
};
static_assert(sizeof(FaultReport) == 48, "book/cpu.py reads this layout");
inline FaultReport* fault_report = nullptr;
constexpr int kSharedNameAt = 4096 - 256;  // where in the fault page a code -4 names its array

// The guards after and before each static __shared__ array (shared_array, below), and its
// declaration.
struct SharedGuard {
    std::atomic<unsigned char*> page{nullptr};
    unsigned char* lead = nullptr;
    const char *name = nullptr, *declared = nullptr;
};
inline SharedGuard shared_guards[4096];

inline void on_fault(int sig, siginfo_t* info, void* context) {
    if (FaultReport* r = fault_report) {
        r->code = info->si_code;
        r->address = reinterpret_cast<unsigned long long>(info->si_addr);
        r->write = -1;
#if defined(__x86_64__) && defined(REG_ERR)
        if (sig == SIGSEGV)  // bit 1 of the page fault's error code: the access was a write
            r->write = (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
        (void)context;
#endif
        const Worker* w = worker;
        r->in_kernel = w != nullptr && w->current != nullptr;
        const auto* at = static_cast<unsigned char*>(info->si_addr);
        auto in = [at](const unsigned char* from) { return from != nullptr && at >= from && at < from + kGuardBytes; };
        if (const GuardedBytes* d = dynamic_bytes; d != nullptr && d->map != nullptr)
            if (in(d->guard()) || in(d->lead()))
                r->code = in(d->guard()) ? -3 : -5;  // past the end (before the start) of the dynamic shared memory
        for (const SharedGuard& g : shared_guards) {  // past the end (before the start) of a static __shared__ array
            const unsigned char* page = g.page.load();
            if (page != nullptr && (in(page) || in(g.lead)) && g.declared != nullptr) {
                r->code = in(page) ? -4 : -6;  // "name (declared)" into the fault page, as async-signal-safe copies
                char* out = reinterpret_cast<char*>(r) + kSharedNameAt;
                int i = 0;
                for (const char* part : {g.name, " (", g.declared, ")"})
                    for (int j = 0; i < 255 && part[j]; ++j) out[i++] = part[j];
                out[i] = 0;
                break;
            }
        }
#if defined(__x86_64__) && defined(REG_RSP)
        // The stack pointer below the fiber's guard page: its stack overflowed (code -2).
        if (r->in_kernel && w->current->stack != nullptr &&
            static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RSP] <
                reinterpret_cast<long long>(w->current->stack) + 4096)
            r->code = -2;
#endif
        if (r->in_kernel) {
            r->block[0] = block_idx.x, r->block[1] = block_idx.y, r->block[2] = block_idx.z;
            r->thread[0] = thread_idx.x, r->thread[1] = thread_idx.y, r->thread[2] = thread_idx.z;
        }
        r->signal = sig;  // last: book/cpu.py reads a report whose signal is set
    }
    _exit(86);
}

inline unsigned launches = 0;  // counted by catch_faults, once per launch, before any thread runs
inline void catch_faults(void* report) {
    fault_report = static_cast<FaultReport*>(report);
    ++launches;
    struct sigaction action {};
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;  // on the thread's own signal stack: a fiber's
    sigemptyset(&action.sa_mask);               // stack may be the thing that overflowed
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigaction(sig, &action, nullptr);
}

// Called from a kernel's thread: report an error naming the block and thread, and never return
// (the fiber is abandoned; the launch stops and Python raises LaunchError with the message).
[[noreturn]] inline void fail_here(const char* what) {
    Worker* w = worker;
    char message[1024];
    int n = where(message, sizeof message, w->current->tid);
    std::snprintf(message + n, sizeof message - n, ": %s", what);
    w->errors->report(message);
    w->failed = true;
    w->current->state = DONE;
    swapcontext(&w->current->ctx, &w->scheduler);
    std::abort();  // unreachable: a failed fiber is never resumed
}

inline void syncthreads(int line) {
    Worker* w = worker;
    Fiber* f = w->current;
    f->state = AT_BARRIER;
    f->line = line;
    if (w->at_barrier++ == 0) w->barrier_line = line;
    swapcontext(&f->ctx, &w->scheduler);
}

// mbarriers: bits 0-31 the arrivals still pending in the current phase, 32-62 the arrivals a
// phase expects, 63 the current phase's parity. (The byte counts of the copies an arrival
// expects are not kept: the emulator's bulk copies land at once.)
inline unsigned pending_of(unsigned long long bar) { return unsigned(bar & 0xFFFFFFFFull); }
inline unsigned expected_of(unsigned long long bar) { return unsigned(bar >> 32 & 0x7FFFFFFFull); }
inline unsigned phase_of(unsigned long long bar) { return unsigned(bar >> 63); }
inline unsigned long long mbarrier_word(unsigned phase, unsigned expected, unsigned pending) {
    return static_cast<unsigned long long>(phase) << 63 |
           static_cast<unsigned long long>(expected) << 32 | pending;
}
inline void mbarrier_init(unsigned long long* bar, unsigned count) { *bar = mbarrier_word(0, count, count); }
inline void mbarrier_arrive(unsigned long long* bar) {
    if (pending_of(*bar) > 1) --*bar;
    else *bar = mbarrier_word(phase_of(*bar) ^ 1u, expected_of(*bar), expected_of(*bar));  // the next phase
}
// Waits until the phase of this parity has completed (the current phase's parity is the other).
inline void mbarrier_wait(const unsigned long long* bar, unsigned parity) {
    if (phase_of(*bar) != (parity & 1u)) return;
    Fiber* f = worker->current;
    f->state = AT_MBARRIER;
    f->mbarrier = bar;
    f->parity = parity & 1u;
    swapcontext(&f->ctx, &worker->scheduler);
}

// __syncthreads_count(pred): a barrier that also returns how many of the block's threads passed
// a nonzero pred. After the first barrier every thread adds to the current slot; after the
// second every thread reads it, and the first to read moves the block to the other slot (and
// clears it) for the next call.
inline int syncthreads_count(int line, bool pred);

// Suspends the calling lane until every lane its mask names has reached a warp operation of the
// same kind with the same mask; the scheduler then computes each lane's result.
inline unsigned long long warp_op(WarpOp op, unsigned mask, unsigned long long value, unsigned src,
                                  int line) {
    Worker* w = worker;
    Fiber* f = w->current;
    if (!(mask >> f->lane & 1u)) {
        char what[256];
        std::snprintf(what, sizeof what, "%s at line %d has mask 0x%08x, which leaves out the "
                      "calling lane %u (a lane must name itself)", kOpNames[op], line, mask, f->lane);
        fail_here(what);
    }
    f->state = AT_WARP;
    f->op = op;
    f->mask = mask;
    f->value = value;
    f->src = src;
    f->line = line;
    swapcontext(&f->ctx, &w->scheduler);
    return f->result;
}

// Check mode (CUDA_EMU_CHECK): every release of the block barrier starts a new block epoch, every
// warp operation's release a new epoch of that warp; two threads' accesses to one shared word in
// the same epochs, one of them a write, are a race.
inline thread_local unsigned block_epoch = 0;
// __syncthreads_count/_and/_or: the block's sum of the predicates, in two slots used in turn
// (the fibers of a block run one at a time on one OS thread, so plain thread_locals suffice).
inline thread_local long long sync_sum[2] = {0, 0};
inline thread_local unsigned sync_slot = 0;
inline thread_local std::vector<unsigned> warp_epoch;
struct SharedInfo;
inline thread_local std::vector<SharedInfo*> shared_arrays;  // this OS thread's checked arrays
inline void reset_shared_checks(unsigned n_threads);
inline void check_before_shared(const unsigned char* dynamic_before, std::size_t dynamic_bytes);

// __reduce_*_sync (redux.sync): the 32-bit values of the lanes of `mask` combined; kind = 0 add
// (wrapping), 1 min, 2 max, 3 and, 4 or, 5 xor, plus 8 where min and max compare signed ints.
inline unsigned long long reduce_lanes(const std::vector<Fiber>& fibers, std::size_t base,
                                       unsigned mask, unsigned kind) {
    bool first = true;
    unsigned r = 0;
    for (unsigned l = 0; l < 32; ++l) {
        if (!(mask >> l & 1u)) continue;
        const unsigned v = unsigned(fibers[base + l].value);
        const bool less = kind & 8u ? int(v) < int(r) : v < r;
        switch (kind & 7u) {
            case 0: r += v; break;
            case 1: r = first || less ? v : r; break;
            case 2: r = first || (!less && v != r) ? v : r; break;
            case 3: r = first ? v : r & v; break;
            case 4: r |= v; break;
            default: r ^= v; break;
        }
        first = false;
    }
    return r;
}

// After a pass in which every fiber ran until it blocked: release the warp groups whose lanes have
// all arrived. Returns true if any group was released.
inline bool release_warps(std::vector<Fiber>& fibers) {
    bool released = false;
    const std::size_t n = fibers.size();
    for (std::size_t base = 0; base < n; base += 32) {
        const std::size_t end = std::min(n, base + 32);
        for (std::size_t i = base; i < end; ++i) {
            Fiber& f = fibers[i];
            if (f.state != AT_WARP || f.op == ACTIVE) continue;
            bool complete = true;
            for (unsigned l = 0; l < 32 && complete; ++l) {
                if (!(f.mask >> l & 1u)) continue;
                const std::size_t j = base + l;
                complete = j < end && fibers[j].state == AT_WARP && fibers[j].mask == f.mask &&
                           fibers[j].op == f.op;
            }
            if (!complete) continue;
            unsigned long long ballot = 0;
            for (unsigned l = 0; l < 32; ++l)
                if (f.mask >> l & 1u && fibers[base + l].value) ballot |= 1ull << l;
            const unsigned long long reduced = f.op == REDUCE ? reduce_lanes(fibers, base, f.mask, f.src) : 0;
            if (f.op == MMA) {  // the whole warp (its mask is): compute every lane's D at once
                MmaTf32* lanes[32];
                for (unsigned l = 0; l < 32; ++l)
                    lanes[l] = reinterpret_cast<MmaTf32*>(fibers[base + l].value);
                mma_tf32_release(lanes);
            }
            for (unsigned l = 0; l < 32; ++l) {
                if (!(f.mask >> l & 1u)) continue;
                Fiber& g = fibers[base + l];
                if (g.op == SHFL) {
                    if (!(f.mask >> g.src & 1u)) {  // on a GPU: an undefined value
                        char what[512];
                        std::snprintf(what, sizeof what, "block (%u, %u, %u), thread (%u, %u, %u):"
                                      " a __shfl*_sync at line %d reads lane %u, which its mask "
                                      "0x%08x leaves out", block_idx.x, block_idx.y, block_idx.z,
                                      g.tid.x, g.tid.y, g.tid.z, g.line, g.src, f.mask);
                        worker->errors->report(what);
                        worker->failed = true;
                        return false;
                    }
                    g.result = fibers[base + g.src].value;
                } else if (g.op == REDUCE) {
                    g.result = reduced;
                } else {
                    g.result = ballot;
                }
                g.state = READY;
            }
            ++warp_epoch[base / 32];
            released = true;
        }
    }
    return released;
}

// When nothing else can move: every lane waiting at an __activemask() gets the mask of the lanes
// of its warp waiting at the same one (the lanes that arrived there together, as a converged warp
// would). Returns true if any lane was released.
inline bool release_active(std::vector<Fiber>& fibers) {
    bool released = false;
    for (std::size_t base = 0; base < fibers.size(); base += 32) {
        const std::size_t end = std::min(fibers.size(), base + 32);
        for (std::size_t i = base; i < end; ++i) {
            if (fibers[i].state != AT_WARP || fibers[i].op != ACTIVE) continue;
            unsigned mask = 0;
            for (std::size_t j = base; j < end; ++j)
                if (fibers[j].state == AT_WARP && fibers[j].op == ACTIVE &&
                    fibers[j].line == fibers[i].line) mask |= 1u << (j - base);
            for (std::size_t j = base; j < end; ++j)
                if (mask >> (j - base) & 1u) fibers[j].result = mask, fibers[j].state = READY;
            released = true;
        }
    }
    return released;
}

inline void describe(char* out, std::size_t size, const Fiber& f) {
    int n = std::snprintf(out, size, "thread (%u, %u, %u)", f.tid.x, f.tid.y, f.tid.z);
    if (f.state == DONE) std::snprintf(out + n, size - n, " has exited");
    else if (f.state == AT_BARRIER) std::snprintf(out + n, size - n, " waits at __syncthreads() "
                                                  "(line %d)", f.line);
    else if (f.state == AT_MBARRIER) std::snprintf(out + n, size - n, " waits on an mbarrier");
    else std::snprintf(out + n, size - n, " waits at %s (line %d, mask 0x%08x)", kOpNames[f.op],
                       f.line, f.mask);
}

// Nothing can run and no warp operation can complete: explain the first lane that holds one up.
inline void report_stuck(std::vector<Fiber>& fibers) {
    char message[1024];
    int n = std::snprintf(message, sizeof message, "block (%u, %u, %u): ", block_idx.x,
                          block_idx.y, block_idx.z);
    for (std::size_t i = 0; i < fibers.size(); ++i) {
        const Fiber& f = fibers[i];
        if (f.state != AT_WARP) continue;
        const std::size_t base = i - f.lane;
        for (unsigned l = 0; l < 32; ++l) {
            if (!(f.mask >> l & 1u)) continue;
            const std::size_t j = base + l;
            if (j < fibers.size() && fibers[j].state == AT_WARP && fibers[j].mask == f.mask &&
                fibers[j].op == f.op) continue;
            n += std::snprintf(message + n, sizeof message - n, "%s at line %d in thread (%u, %u, "
                               "%u) has mask 0x%08x, which names lane %u, but ", kOpNames[f.op],
                               f.line, f.tid.x, f.tid.y, f.tid.z, f.mask, l);
            if (j >= fibers.size())
                std::snprintf(message + n, sizeof message - n, "the block has no thread there");
            else
                describe(message + n, sizeof message - n, fibers[j]);
            worker->errors->report(message);
            worker->failed = true;
            return;
        }
    }
}

// Resumes the fibers whose mbarrier phase has completed. Returns true if any was.
inline bool release_mbarriers(std::vector<Fiber>& fibers) {
    bool released = false;
    for (Fiber& f : fibers)
        if (f.state == AT_MBARRIER && phase_of(*f.mbarrier) != f.parity) f.state = READY, released = true;
    return released;
}

// Nothing can run, and a fiber waits on an mbarrier: no arrival is left to complete its phase.
// Named first: a fiber whose mbarrier has had some of its arrivals (too few: the likely bug; the
// others often wait on what that one would have done), else the first waiting.
inline bool report_mbarrier_stuck(std::vector<Fiber>& fibers) {
    const Fiber* stuck = nullptr;
    unsigned waiting = 0, at_sync = 0;
    auto some_arrived = [](const Fiber& f) { return pending_of(*f.mbarrier) < expected_of(*f.mbarrier); };
    for (const Fiber& f : fibers) {
        waiting += f.state == AT_MBARRIER, at_sync += f.state == AT_BARRIER;
        if (f.state == AT_MBARRIER && (!stuck || (some_arrived(f) && !some_arrived(*stuck)))) stuck = &f;
    }
    if (!stuck) return false;
    char message[1024];
    std::snprintf(message, sizeof message, "block (%u, %u, %u): deadlock: thread (%u, %u, %u) waits "
                  "on an mbarrier for a phase that no thread is left to complete (%u of its %u "
                  "arrivals still pending); %u threads wait on mbarriers, %u at __syncthreads()",
                  block_idx.x, block_idx.y, block_idx.z, stuck->tid.x, stuck->tid.y, stuck->tid.z,
                  pending_of(*stuck->mbarrier), expected_of(*stuck->mbarrier), waiting, at_sync);
    worker->errors->report(message);
    worker->failed = true;
    return true;
}

// All live fibers wait at __syncthreads(): they must wait at the same one.
inline bool check_barrier(std::vector<Fiber>& fibers) {
    const Fiber* first = nullptr;
    for (const Fiber& f : fibers) {
        if (f.state != AT_BARRIER) continue;
        if (!first) { first = &f; continue; }
        if (f.line == first->line) continue;
        unsigned same = 0, other = 0;
        for (const Fiber& g : fibers) same += g.state == AT_BARRIER && g.line == first->line,
                                      other += g.state == AT_BARRIER && g.line == f.line;
        char message[1024];
        std::snprintf(message, sizeof message, "block (%u, %u, %u): barrier divergence: %u "
                      "threads, the first (%u, %u, %u), wait at the __syncthreads() on line %d, "
                      "and %u threads, the first (%u, %u, %u), at the one on line %d; every "
                      "thread of a block that has not exited must reach the same __syncthreads()",
                      block_idx.x, block_idx.y, block_idx.z, same, first->tid.x, first->tid.y,
                      first->tid.z, first->line, other, f.tid.x, f.tid.y, f.tid.z, f.line);
        worker->errors->report(message);
        worker->failed = true;
        return false;
    }
    return true;
}

// Fiber stacks, kStackBytes per thread with a guard page at the bottom of each (a stack that
// overflows faults instead of overwriting its neighbour), kept for the next launch: setting the
// guards costs a system call per thread.
struct StackPool {
    std::mutex lock;
    std::vector<std::pair<void*, unsigned>> free;  // (region, threads it holds)
};
inline StackPool stack_pool;

inline std::pair<void*, unsigned> take_stacks(unsigned n_threads) {
    {
        std::lock_guard<std::mutex> hold(stack_pool.lock);
        auto& f = stack_pool.free;
        for (std::size_t i = 0; i < f.size(); ++i)
            if (f[i].second >= n_threads) {
                const auto region = f[i];
                f.erase(f.begin() + std::ptrdiff_t(i));
                return region;
            }
    }
    void* stacks = mmap(nullptr, kStackBytes * n_threads, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stacks == MAP_FAILED) return {nullptr, 0};
    for (unsigned i = 0; i < n_threads; ++i)
        mprotect(static_cast<char*>(stacks) + i * kStackBytes, 4096, PROT_NONE);
    return {stacks, n_threads};
}

inline void give_stacks(void* stacks, unsigned n_threads) {
    std::lock_guard<std::mutex> hold(stack_pool.lock);
    stack_pool.free.emplace_back(stacks, n_threads);
}

// Runs every block of the grid. body(closure) executes the kernel for the current fiber.
inline void run_grid(dim3 grid, dim3 block, std::size_t smem_bytes, void (*body)(void*),
                     void* closure, unsigned n_workers, ErrorSink* errors) {
    const std::size_t n_blocks = std::size_t(grid.x) * grid.y * grid.z;
    const unsigned n_threads = block.x * block.y * block.z;
    std::atomic<std::size_t> next{0};

    std::atomic<int> workers_started{0};
    auto work = [&] {
        Worker w;
        const int slot = workers_started.fetch_add(1);
        BarrierNote* note = fault_report && slot < kBarrierNotes
            ? reinterpret_cast<BarrierNote*>(reinterpret_cast<char*>(fault_report) + kBarrierNotesAt) + slot
            : nullptr;
        w.body = body;
        w.closure = closure;
        w.errors = errors;
        std::vector<Fiber> fibers(n_threads);
        const auto [stacks, stack_capacity] = take_stacks(n_threads);
        if (!stacks) {
            errors->report("cannot map the fiber stacks of a block");
            return;
        }
        // Dynamic shared memory ends where an inaccessible region begins (and one comes before
        // it), so that an index past the bytes the launch gave (shared_mem=; none given: 0), or
        // before them, faults, and is reported as such.
        const GuardedBytes dynamic(smem_bytes);  // unmapped when the worker thread is done
        if (!dynamic.map) {
            errors->report("cannot map the block's dynamic shared memory (mmap failed: an "
                           "address-space limit such as ulimit -v?)");
            give_stacks(stacks, stack_capacity);
            return;
        }
        auto* smem = dynamic.data();
        const std::size_t before_smem = dynamic.map ? dynamic.pages - dynamic.size : 0;
        if (before_smem) std::memset(dynamic.map, 0xFF, before_smem);
        std::vector<char> signal_stack(fault_report ? 1 << 16 : 0);
        if (fault_report) {
            stack_t ss{};
            ss.ss_sp = signal_stack.data();
            ss.ss_size = signal_stack.size();
            sigaltstack(&ss, nullptr);
        }

        worker = &w;
        block_dim = block;
        grid_dim = grid;
        dynamic_smem = smem;
        dynamic_bytes = &dynamic;
        for (std::size_t b; !errors->failed && (b = next.fetch_add(1)) < n_blocks;) {
            block_idx = {unsigned(b % grid.x), unsigned((b / grid.x) % grid.y),
                         unsigned(b / (std::size_t(grid.x) * grid.y))};
            std::memset(smem, 0xFF, dynamic.size);
            reset_shared_checks(n_threads);
            for (unsigned i = 0; i < n_threads; ++i) {
                Fiber& f = fibers[i];
                f.tid = {i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
                f.index = i;
                f.lane = i % 32;
                f.state = READY;
                getcontext(&f.ctx);
                f.ctx.uc_stack.ss_sp = static_cast<char*>(stacks) + i * kStackBytes;
                f.stack = static_cast<char*>(stacks) + i * kStackBytes;
                f.ctx.uc_stack.ss_size = kStackBytes;
                f.ctx.uc_link = &w.scheduler;
                makecontext(&f.ctx, fiber_main, 0);
            }
            // Each pass runs every ready fiber until it blocks (a barrier, a warp operation) or
            // ends; then complete warp operations release their lanes, else the block barrier
            // releases every live fiber, else nothing can move: an error says why.
            w.at_barrier = 0;
            if (note) note->waiting = 0;
            for (unsigned live = n_threads; live > 0 && !w.failed;) {
                for (Fiber& f : fibers) {
                    if (f.state != READY) continue;
                    thread_idx = f.tid;
                    w.current = &f;
                    if (note) {  // (in case this thread never comes back)
                        ++note->switches;
                        if (w.at_barrier)
                            note->waiting = w.at_barrier, note->line = w.barrier_line,
                            note->block[0] = block_idx.x, note->block[1] = block_idx.y,
                            note->block[2] = block_idx.z, note->thread[0] = f.tid.x,
                            note->thread[1] = f.tid.y, note->thread[2] = f.tid.z;
                    }
                    swapcontext(&w.scheduler, &f.ctx);
                    if (w.failed) break;
                    if (f.state == DONE) --live;
                }
                if (w.failed || live == 0) break;
                if (release_warps(fibers) || w.failed || release_active(fibers) ||
                    release_mbarriers(fibers)) continue;
                bool at_warp = false;
                for (const Fiber& f : fibers) at_warp |= f.state == AT_WARP;
                if (at_warp) { report_stuck(fibers); break; }
                if (report_mbarrier_stuck(fibers)) break;
                if (!check_barrier(fibers)) break;
                for (Fiber& f : fibers)
                    if (f.state == AT_BARRIER) f.state = READY;
                w.at_barrier = 0;
                if (note) note->waiting = 0;  // the barrier is passed
                ++block_epoch;
            }
            if (!w.failed) check_before_shared(dynamic.map, before_smem);
        }
        if (fault_report) {
            stack_t off{};
            off.ss_flags = SS_DISABLE;
            sigaltstack(&off, nullptr);
        }
        dynamic_bytes = nullptr;
        give_stacks(stacks, stack_capacity);
        worker = nullptr;
    };

    const unsigned n = unsigned(std::min<std::size_t>(std::max(1u, n_workers), n_blocks));
    std::vector<std::thread> helpers;
    for (unsigned i = 1; i < n; ++i) helpers.emplace_back(work);
    work();
    for (auto& t : helpers) t.join();
}

// Unpacks void** args by the kernel's own parameter types, as cudaLaunchKernel does.
// Returns 0, or 1 with the first error's message in err.
template <class... P, std::size_t... I>
int launch_impl(void (*kernel)(P...), const unsigned* g, const unsigned* b, std::size_t smem,
                void** args, unsigned n_workers, char* err, std::size_t err_size, void* fault,
                std::index_sequence<I...>) {
    if (fault) catch_faults(fault);  // only in book/cpu.py's worker process
    const std::tuple<std::decay_t<P>...> values{*static_cast<std::decay_t<P>*>(args[I])...};
    auto call = [&] { std::apply(kernel, values); };  // each fiber gets its own copy of the params
    ErrorSink errors;
    errors.text = err;
    errors.size = err_size;
    run_grid(dim3(g[0], g[1], g[2]), dim3(b[0], b[1], b[2]), smem,
             [](void* c) { (*static_cast<decltype(call)*>(c))(); }, &call, n_workers, &errors);
    return errors.failed ? 1 : 0;
}

template <class... P>
int launch(void (*kernel)(P...), const unsigned* grid, const unsigned* block, std::size_t smem,
           void** args, unsigned n_workers, char* err, std::size_t err_size, void* fault) {
    return launch_impl(kernel, grid, block, smem, args, n_workers, err, err_size, fault,
                       std::index_sequence_for<P...>{});
}

// ---- warp-level intrinsics -------------------------------------------------------------------
template <class T>
inline unsigned long long bits_of(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp values up to 8 bytes");
    unsigned long long u = 0;
    std::memcpy(&u, &v, sizeof(T));
    return u;
}
template <class T>
inline T from_bits(unsigned long long u) {
    T v;
    std::memcpy(&v, &u, sizeof(T));
    return v;
}
inline unsigned segment(int width, int line) {  // lanes of the caller's segment start here
    if (width < 1 || width > 32 || (width & (width - 1))) {
        char what[160];
        std::snprintf(what, sizeof what, "a __shfl*_sync at line %d has width %d; it must be a "
                      "power of 2 from 1 to 32", line, width);
        fail_here(what);
    }
    return worker->current->lane & ~unsigned(width - 1);
}
// The shuffles read `var` from another lane, within the caller's segment of `width` lanes; where
// the source lane falls outside it the caller keeps its own value -- except that __shfl_xor_sync
// may read from an earlier segment, as CUDA documents (PTX shfl.bfly checks the upper bound only).
template <class T>
inline T shfl(int line, unsigned mask, T v, int src_lane, int width = 32) {
    const unsigned base = segment(width, line);
    const unsigned src = base + (unsigned(src_lane) & unsigned(width - 1));
    return from_bits<T>(warp_op(SHFL, mask, bits_of(v), src, line));
}
template <class T>
inline T shfl_up(int line, unsigned mask, T v, unsigned delta, int width = 32) {
    const unsigned lane = worker->current->lane, base = segment(width, line);
    const unsigned src = lane - base >= delta ? lane - delta : lane;
    return from_bits<T>(warp_op(SHFL, mask, bits_of(v), src, line));
}
template <class T>
inline T shfl_down(int line, unsigned mask, T v, unsigned delta, int width = 32) {
    const unsigned lane = worker->current->lane, base = segment(width, line);
    const unsigned src = lane - base + delta < unsigned(width) ? lane + delta : lane;
    return from_bits<T>(warp_op(SHFL, mask, bits_of(v), src, line));
}
template <class T>
inline T shfl_xor(int line, unsigned mask, T v, int lane_mask, int width = 32) {
    const unsigned lane = worker->current->lane, base = segment(width, line);
    const unsigned other = (lane ^ unsigned(lane_mask)) & 31u;
    const unsigned src = other < base + unsigned(width) ? other : lane;  // earlier segments: yes
    return from_bits<T>(warp_op(SHFL, mask, bits_of(v), src, line));
}
inline unsigned ballot(int line, unsigned mask, int predicate) {
    return unsigned(warp_op(VOTE, mask, predicate != 0, 0, line));
}
inline void syncwarp(int line, unsigned mask = 0xffffffffu) { warp_op(SYNC, mask, 0, 0, line); }
template <class T>
inline T reduce(int line, unsigned mask, T v, unsigned kind) {
    static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned>,
                  "__reduce_*_sync takes an int or an unsigned");
    return T(unsigned(warp_op(REDUCE, mask, unsigned(v), kind | (std::is_same_v<T, int> ? 8u : 0u), line)));
}

// ---- tensor cores: TF32 -------------------------------------------------------------------------
// cvt.rna.tf32.f32: x rounded to TF32 (10 explicit mantissa bits, float's exponent range), to
// nearest with ties away from zero; the 13 low bits of the result are zero. NaN stays NaN.
inline unsigned tf32_rna(float x) {
    unsigned u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7F800000u) == 0x7F800000u) return (u & 0x007FFFFFu) ? 0x7FFFFFFFu : u;
    return (u + 0x1000u) & 0xFFFFE000u;  // on the magnitude: a carry into the exponent is right
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 for the whole warp, in the fragment layout
// of the PTX ISA: with g = lane / 4 and t = lane % 4, a lane holds A[g][t], A[g + 8][t],
// A[g][t + 4], A[g + 8][t + 4] in a[0..3]; B[t][g], B[t + 4][g] in b[0..1]; C and D at rows g
// (c[0], c[1]) and g + 8 (c[2], c[3]), columns 2t and 2t + 1.
// Semantics: an operand's 13 low bits are ignored (the operand is read as TF32: truncated, as
// the GPU reads a float32 passed without cvt.rna); each product of two TF32 values is exact.
// The sum of C and the 8 products is formed as a tensor core does it, not as a float32 FFMA
// chain: every term is cut (toward zero) to the grid of 2^(e - 26), e the exponent of the largest
// term, the cut terms are added exactly, and the sum is cut toward zero to float32. NVIDIA does
// not document this; on an H100 it gave the hardware's result bit for bit on 90-95% of the
// elements of random tiles with spread exponents, the rest within 16 steps of that grid (exact
// sums rounded to nearest matched under 60%; tests/test_tensor_cores.py). What matters for
// accuracy is that it cuts toward zero: errors that do not cancel, and grow with K when a kernel
// accumulates in the tensor core (10_tf32.cu). Where every partial sum is exact (small integers,
// say) it agrees with the GPU bit for bit.
inline double cut(double x, double step) { return std::trunc(x / step) * step; }
inline float cut_to_float(double x) {  // toward zero
    float f = float(x);
    if (std::fabs(double(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
    return f;
}
inline void mma_tf32_release(MmaTf32* const (&lanes)[32]) {
    auto value = [](unsigned bits) {
        bits &= 0xFFFFE000u;
        float f;
        std::memcpy(&f, &bits, 4);
        return double(f);
    };
    double A[16][8], B[8][8], C[16][8];
    for (unsigned l = 0; l < 32; ++l) {
        const unsigned g = l / 4, t = l % 4;
        const MmaTf32& f = *lanes[l];
        A[g][t] = value(f.a[0]), A[g + 8][t] = value(f.a[1]);
        A[g][t + 4] = value(f.a[2]), A[g + 8][t + 4] = value(f.a[3]);
        B[t][g] = value(f.b[0]), B[t + 4][g] = value(f.b[1]);
        for (unsigned i = 0; i < 4; ++i) C[g + 8 * (i / 2)][2 * t + i % 2] = f.c[i];
    }
    for (unsigned l = 0; l < 32; ++l) {
        const unsigned g = l / 4, t = l % 4;
        for (unsigned i = 0; i < 4; ++i) {
            const unsigned r = g + 8 * (i / 2), c = 2 * t + i % 2;
            double terms[9] = {C[r][c]}, largest = 0.0;
            for (unsigned k = 0; k < 8; ++k) terms[k + 1] = A[r][k] * B[k][c];  // exact
            for (double x : terms) largest = std::max(largest, std::fabs(x));
            double sum = 0.0;
            if (largest > 0.0 && std::isfinite(largest)) {
                const double step = std::ldexp(1.0, std::ilogb(largest) - 26);
                for (double x : terms) sum += cut(x, step);  // exact: multiples of step < 2^31
            } else {
                for (double x : terms) sum += x;  // zeros, or Inf / NaN as IEEE adds them
            }
            lanes[l]->d[i] = cut_to_float(sum);
        }
    }
}

// Called by each lane: waits for the whole warp (mask 0xffffffff, as .aligned requires), then
// d holds this lane's fragment of D.
inline void mma_tf32(int line, float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                     const float (&c)[4]) {
    MmaTf32 frag;
    for (int i = 0; i < 4; ++i) frag.a[i] = a[i], frag.c[i] = c[i];
    frag.b[0] = b[0], frag.b[1] = b[1];
    warp_op(MMA, 0xffffffffu, reinterpret_cast<unsigned long long>(&frag), 0, line);
    for (int i = 0; i < 4; ++i) d[i] = frag.d[i];
}
inline unsigned activemask(int line) {  // see release_active
    return unsigned(warp_op(ACTIVE, 1u << worker->current->lane, 0, 0, line));
}

// ---- __shared__ arrays that know their name and bounds, and in check mode who touched each word --
// book/cpu.py rewrites `__shared__ T name[A][B];` into `static thread_local shared_array<T, A, B>
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
// end faults, and the fault names the array (code -4; book/cpu.py reads the declaration left in
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
// address and bytes into the fault page before the launch: book/launch/emulator.py's POINTERS),
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

// ---- CUDA C keywords and built-ins -----------------------------------------------------------
#define __global__ __attribute__((visibility("hidden")))  // a kernel named err or fault
                                                           // must not replace libc's own
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __shared__ static thread_local
#define __constant__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __syncthreads() ::cuda_emu::syncthreads(__LINE__)
#define __syncthreads_count(pred) ::cuda_emu::syncthreads_count(__LINE__, pred)
#define __syncthreads_and(pred) (::cuda_emu::syncthreads_count(__LINE__, !(pred)) == 0)
#define __syncthreads_or(pred) (::cuda_emu::syncthreads_count(__LINE__, pred) != 0)
#define __syncwarp(...) ::cuda_emu::syncwarp(__LINE__ __VA_OPT__(, ) __VA_ARGS__)
#define __shfl_sync(...) ::cuda_emu::shfl(__LINE__, __VA_ARGS__)
#define __shfl_up_sync(...) ::cuda_emu::shfl_up(__LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) ::cuda_emu::shfl_down(__LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) ::cuda_emu::shfl_xor(__LINE__, __VA_ARGS__)
#define __ballot_sync(mask, pred) ::cuda_emu::ballot(__LINE__, mask, pred)
#define __any_sync(mask, pred) (::cuda_emu::ballot(__LINE__, mask, pred) != 0u)
#define __all_sync(mask, pred) (::cuda_emu::ballot(__LINE__, mask, !(pred)) == 0u)
#define __activemask() ::cuda_emu::activemask(__LINE__)
#define __reduce_add_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, v, 0u)
#define __reduce_min_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, v, 1u)
#define __reduce_max_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, v, 2u)
#define __reduce_and_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, (unsigned)(v), 3u)
#define __reduce_or_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, (unsigned)(v), 4u)
#define __reduce_xor_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, (unsigned)(v), 5u)
#define threadIdx (::cuda_emu::thread_idx)
#define blockIdx (::cuda_emu::block_idx)
#define blockDim (::cuda_emu::block_dim)
#define gridDim (::cuda_emu::grid_dim)
#define warpSize 32

template <class A, class B>
inline std::common_type_t<A, B> min(A a, B b) { return b < a ? b : a; }
template <class A, class B>
inline std::common_type_t<A, B> max(A a, B b) { return a < b ? b : a; }

inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
template <class T> inline T __ldg(const T* p) { return *p; }
// The other load and store cache hints (ld.global.cg, .ca, .cs, .lu, .cv; st.global.wb, .cg, .cs,
// .wt): on the CPU every load and store is plain.
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T, class V> inline void __stwb(T* p, V v) { *p = static_cast<T>(v); }
template <class T, class V> inline void __stcg(T* p, V v) { *p = static_cast<T>(v); }
template <class T, class V> inline void __stcs(T* p, V v) { *p = static_cast<T>(v); }
template <class T, class V> inline void __stwt(T* p, V v) { *p = static_cast<T>(v); }
// Atomics: the value converts to the pointer's type, as CUDA's overloads take it (atomicAdd(p, 1)
// on a float* or an unsigned* is legal CUDA).
template <class T, class V> inline T atomicAdd(T* p, V v) {
    return std::atomic_ref<T>(*p).fetch_add(static_cast<T>(v));
}
template <class T, class V> inline T atomicSub(T* p, V v) {
    return std::atomic_ref<T>(*p).fetch_sub(static_cast<T>(v));
}
template <class T, class V> inline T atomicExch(T* p, V v) {
    return std::atomic_ref<T>(*p).exchange(static_cast<T>(v));
}
template <class T, class V> inline T atomicAnd(T* p, V v) {
    return std::atomic_ref<T>(*p).fetch_and(static_cast<T>(v));
}
template <class T, class V> inline T atomicOr(T* p, V v) {
    return std::atomic_ref<T>(*p).fetch_or(static_cast<T>(v));
}
template <class T, class V> inline T atomicXor(T* p, V v) {
    return std::atomic_ref<T>(*p).fetch_xor(static_cast<T>(v));
}
template <class T, class U, class V> inline T atomicCAS(T* p, U expected_in, V desired) {
    T expected = static_cast<T>(expected_in);
    std::atomic_ref<T>(*p).compare_exchange_strong(expected, static_cast<T>(desired));
    return expected;  // the old value, whether or not it was replaced
}
template <class T, class V> inline T atomicMax(T* p, V value) {
    const T v = static_cast<T>(value);
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (old < v && !a.compare_exchange_weak(old, v)) {}
    return old;
}
template <class T, class V> inline T atomicMin(T* p, V value) {
    const T v = static_cast<T>(value);
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (v < old && !a.compare_exchange_weak(old, v)) {}
    return old;
}
template <class F> inline unsigned atomic_update(unsigned* p, F next) {  // old -> next(old)
    std::atomic_ref<unsigned> a(*p);
    unsigned old = a.load();
    while (!a.compare_exchange_weak(old, next(old))) {}
    return old;
}
inline unsigned atomicInc(unsigned* p, unsigned limit) {
    return atomic_update(p, [limit](unsigned old) { return old >= limit ? 0u : old + 1u; });
}
inline unsigned atomicDec(unsigned* p, unsigned limit) {
    return atomic_update(p, [limit](unsigned old) { return old == 0u || old > limit ? limit : old - 1u; });
}

// The CUDA math API's fast and rounding intrinsics, and integer ones: the same values where CUDA
// specifies them exactly (the fast ones are computed exactly here; on a GPU they are within the
// documented ulps).
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __saturatef(float x) { return x != x ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline int __float2int_rn(float x) { return static_cast<int>(std::nearbyint(x)); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline int __float2int_rd(float x) { return static_cast<int>(std::floor(x)); }
inline int __float2int_ru(float x) { return static_cast<int>(std::ceil(x)); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((unsigned long long)a * b >> 32); }
inline int __mulhi(int a, int b) { return int((long long)a * b >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)((unsigned __int128)a * b >> 64);
}
inline int __mul24(int a, int b) {  // the low 32 bits of the product of a's and b's low 24 bits
    return int((long long)(int(unsigned(a) << 8) >> 8) * (int(unsigned(b) << 8) >> 8));
}
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline long long clock64() {  // nanoseconds of the host's clock: it counts up, as the SM's does
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace cuda_emu {
inline int syncthreads_count(int line, bool pred) {
    syncthreads(line);
    const unsigned slot = sync_slot;
    sync_sum[slot] += pred;
    syncthreads(line);
    const long long sum = sync_sum[slot];
    if (sync_slot == slot) {  // the first thread past the second barrier
        sync_slot = slot ^ 1u;
        sync_sum[slot ^ 1u] = 0;
    }
    return static_cast<int>(sum);
}
}  // namespace cuda_emu

// cuda_fp16.h's basics (book/cpu.py drops the #include line; the types are always here): __half
// holds IEEE binary16's 16 bits, __half2 two of them. A float or double becomes a half rounded to
// nearest, ties to even, as the GPU's __float2half; NaN becomes the GPU's canonical 0x7FFF. An
// operation on halves is computed in float (double for fma) from the exact values and rounded
// once to half: float's 24 bits (53 for fma's product and sum) make that the correctly rounded
// result, the one the GPU's half units give.
namespace cuda_emu {
inline unsigned short to_half_bits(double d) {
    const unsigned short sign = std::signbit(d) ? 0x8000u : 0u;
    const double a = std::fabs(d);
    if (std::isnan(d)) return 0x7FFFu;
    if (a >= 65520.0) return sign | 0x7C00u;  // past the largest half (65504) by half a step: Inf
    if (a < 6.103515625e-05)                   // below 2^-14: a multiple of 2^-24 (subnormal)
        return sign | static_cast<unsigned short>(std::nearbyint(a * 16777216.0));
    int e;
    std::frexp(a, &e);  // a = f 2^e, f in [0.5, 1): 11 bits of significand are steps of 2^(e - 11)
    const unsigned q = static_cast<unsigned>(std::nearbyint(std::ldexp(a, 11 - e)));  // 1024..2048
    return sign | static_cast<unsigned short>(((e + 14) << 10) + q - 1024);  // 2048 carries up
}
inline float from_half_bits(unsigned short h) {
    const int e = h >> 10 & 0x1F, m = h & 0x3FF;
    const float a = e == 0x1F ? (m ? NAN : INFINITY)
                    : e ? std::ldexp(float(1024 + m), e - 25) : std::ldexp(float(m), -24);
    return h & 0x8000u ? -a : a;
}
}  // namespace cuda_emu

struct __half {
    unsigned short bits;
    __half() = default;
    __half(float f) : bits(::cuda_emu::to_half_bits(f)) {}
    __half(double d) : bits(::cuda_emu::to_half_bits(d)) {}
    __half(int i) : bits(::cuda_emu::to_half_bits(i)) {}
    operator float() const { return ::cuda_emu::from_half_bits(bits); }
};
struct alignas(4) __half2 { __half x, y; };
typedef __half half;
typedef __half2 half2;
inline __half cuda_emu_half(unsigned short bits) { __half h; h.bits = bits; return h; }
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline __half __double2half(double d) { return __half(d); }
inline __half __int2half_rn(int i) { return __half(i); }
inline float __half2float(__half h) { return float(h); }
inline int __half2int_rz(__half h) { return static_cast<int>(float(h)); }
inline int __half2int_rn(__half h) { return static_cast<int>(std::nearbyint(float(h))); }
inline short __half_as_short(__half h) { return static_cast<short>(h.bits); }
inline unsigned short __half_as_ushort(__half h) { return h.bits; }
inline __half __short_as_half(short s) { return cuda_emu_half(static_cast<unsigned short>(s)); }
inline __half __ushort_as_half(unsigned short u) { return cuda_emu_half(u); }
inline __half __hadd(__half a, __half b) { return __half(float(a) + float(b)); }
inline __half __hsub(__half a, __half b) { return __half(float(a) - float(b)); }
inline __half __hmul(__half a, __half b) { return __half(float(a) * float(b)); }
inline __half __hdiv(__half a, __half b) { return __half(float(a) / float(b)); }
inline __half __hfma(__half a, __half b, __half c) {
    return __half(double(float(a)) * double(float(b)) + double(float(c)));
}
inline __half __hneg(__half a) { return cuda_emu_half(a.bits ^ 0x8000u); }
inline __half __habs(__half a) { return cuda_emu_half(a.bits & 0x7FFFu); }
inline __half hsqrt(__half a) { return __half(std::sqrt(float(a))); }
inline bool __hisnan(__half a) { return (a.bits & 0x7FFFu) > 0x7C00u; }
// (__hmax, __hmin: a NaN gives the other operand; two give NaN)
inline __half __hmax(__half a, __half b) {
    return __hisnan(a) ? (__hisnan(b) ? cuda_emu_half(0x7FFFu) : b) : __hisnan(b) || float(a) >= float(b) ? a : b;
}
inline __half __hmin(__half a, __half b) {
    return __hisnan(a) ? (__hisnan(b) ? cuda_emu_half(0x7FFFu) : b) : __hisnan(b) || float(a) <= float(b) ? a : b;
}
inline bool __heq(__half a, __half b) { return float(a) == float(b); }
inline bool __hne(__half a, __half b) {  // ordered: false where either is NaN (operator!= is not)
    return !__hisnan(a) && !__hisnan(b) && float(a) != float(b);
}
inline bool __hlt(__half a, __half b) { return float(a) < float(b); }
inline bool __hle(__half a, __half b) { return float(a) <= float(b); }
inline bool __hgt(__half a, __half b) { return float(a) > float(b); }
inline bool __hge(__half a, __half b) { return float(a) >= float(b); }
inline int __hisinf(__half a) { return (a.bits & 0x7FFFu) == 0x7C00u ? (a.bits & 0x8000u ? -1 : 1) : 0; }
inline __half operator+(const __half& a, const __half& b) { return __hadd(a, b); }
inline __half operator-(const __half& a, const __half& b) { return __hsub(a, b); }
inline __half operator*(const __half& a, const __half& b) { return __hmul(a, b); }
inline __half operator/(const __half& a, const __half& b) { return __hdiv(a, b); }
inline __half operator-(const __half& a) { return __hneg(a); }
inline __half& operator+=(__half& a, const __half& b) { return a = __hadd(a, b); }
inline __half& operator-=(__half& a, const __half& b) { return a = __hsub(a, b); }
inline __half& operator*=(__half& a, const __half& b) { return a = __hmul(a, b); }
inline __half& operator/=(__half& a, const __half& b) { return a = __hdiv(a, b); }
inline bool operator==(const __half& a, const __half& b) { return __heq(a, b); }
inline bool operator!=(const __half& a, const __half& b) { return float(a) != float(b); }
inline bool operator<(const __half& a, const __half& b) { return __hlt(a, b); }
inline bool operator<=(const __half& a, const __half& b) { return __hle(a, b); }
inline bool operator>(const __half& a, const __half& b) { return __hgt(a, b); }
inline bool operator>=(const __half& a, const __half& b) { return __hge(a, b); }
inline __half2 make_half2(__half x, __half y) { return {x, y}; }
inline __half2 __halves2half2(__half x, __half y) { return {x, y}; }
inline __half2 __half2half2(__half a) { return {a, a}; }
inline __half2 __float2half2_rn(float f) { return {__half(f), __half(f)}; }
inline __half2 __floats2half2_rn(float x, float y) { return {__half(x), __half(y)}; }
inline __half2 __float22half2_rn(float2 f) { return {__half(f.x), __half(f.y)}; }
inline float2 __half22float2(__half2 h) { return {float(h.x), float(h.y)}; }
inline float __low2float(__half2 h) { return float(h.x); }
inline float __high2float(__half2 h) { return float(h.y); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half2 __hadd2(__half2 a, __half2 b) { return {__hadd(a.x, b.x), __hadd(a.y, b.y)}; }
inline __half2 __hsub2(__half2 a, __half2 b) { return {__hsub(a.x, b.x), __hsub(a.y, b.y)}; }
inline __half2 __hmul2(__half2 a, __half2 b) { return {__hmul(a.x, b.x), __hmul(a.y, b.y)}; }
inline __half2 __h2div(__half2 a, __half2 b) { return {__hdiv(a.x, b.x), __hdiv(a.y, b.y)}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
    return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
inline __half2 operator+(const __half2& a, const __half2& b) { return __hadd2(a, b); }
inline __half2 operator-(const __half2& a, const __half2& b) { return __hsub2(a, b); }
inline __half2 operator*(const __half2& a, const __half2& b) { return __hmul2(a, b); }

// Bit manipulation (CUDA Math API, integer intrinsics).
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clz(int x) { return x ? __builtin_clz(unsigned(x)) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline unsigned __brev(unsigned x) {
    x = (x >> 1 & 0x55555555u) | (x & 0x55555555u) << 1;
    x = (x >> 2 & 0x33333333u) | (x & 0x33333333u) << 2;
    x = (x >> 4 & 0x0F0F0F0Fu) | (x & 0x0F0F0F0Fu) << 4;
    x = (x >> 8 & 0x00FF00FFu) | (x & 0x00FF00FFu) << 8;
    return x >> 16 | x << 16;
}

// A failed device assert(): glibc's assert() calls __assert_fail. This library's own definition
// (hidden, so the calls bind to it, not to libc's) reports the assertion's text, file and line
// with the thread, as a GPU prints them, and stops the launch; outside a kernel it aborts.
extern "C" __attribute__((visibility("hidden"), noreturn)) void __assert_fail(
    const char* assertion, const char* file, unsigned int line, const char* function) noexcept {
    if (::cuda_emu::worker == nullptr || ::cuda_emu::worker->current == nullptr) std::abort();
    char what[768];
    std::snprintf(what, sizeof what, "device assert failed: `%s` (%s, line %u, in %s)", assertion,
                  file, line, function);
    ::cuda_emu::fail_here(what);
}
