// cuda_emu/scheduler.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
#pragma once

// ---- the scheduler ---------------------------------------------------------------------------
namespace cuda_emu {

enum FiberState { READY, AT_BARRIER, AT_WARP, AT_MBARRIER, DONE };
enum WarpOp { SHFL, VOTE, SYNC, ACTIVE, MMA, REDUCE, MATCH_ANY, MATCH_ALL };
inline const char* const kOpNames[] = {"a __shfl*_sync", "a vote (__ballot/__any/__all_sync)",
                                       "__syncwarp", "__activemask()",
                                       "an mma.sync (tensor core: every lane of the warp)",
                                       "a __reduce_*_sync", "a __match_any_sync",
                                       "a __match_all_sync"};

// One lane's fragments of a tensor-core mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// (D = A B + C, A 16 x 8, B 8 x 8, C and D 16 x 8); the lane passes a pointer to it as its value.
// With s8 set: of an mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 (A 16 x 32, B 32 x 8,
// four int8 packed in each of a and b, C and D in ci and di).
struct MmaTf32 {
    unsigned a[4], b[2];
    float c[4], d[4];
    int s8 = 0, ci[4], di[4];
};
inline void mma_tf32_release(MmaTf32* const (&lanes)[32]);

struct Fiber {
    Context ctx;              // its registers while it is suspended (context.h)
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
    bool yielded;             // it gave up the CPU (yield_fiber) and is READY for the next pass
    const volatile void* last_volatile;  // the last word it read through a volatile pointer
    unsigned volatile_reads;             // outside shared memory, and how many (yield_if_spinning)
    unsigned locks;           // spin locks it holds (atomicCAS(m, 0, v) won, not yet atomicExch'd)
    bool synced;              // it made an atomic, a fence or a volatile access (memory.h's
                              // check of races on global memory then leaves it alone)
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
    Context scheduler;              // the scheduler's, while a fiber runs
    Fiber* current = nullptr;
    void (*body)(void*) = nullptr;  // runs the kernel once, for the current fiber
    void* closure = nullptr;
    ErrorSink* errors = nullptr;
    bool failed = false;            // a fiber of this worker reported an error
    unsigned at_barrier = 0;        // this block's threads waiting at __syncthreads() now
    int barrier_line = 0;           // the line of the first of them
    const Fiber* noted = nullptr;   // the thread its BarrierNote names
};

// What a launch stopped by the time limit leaves for the message (book/launch/worker.py's
// WAITING), one note per worker thread: `switches` counts the worker's switches to a thread, and
// before each, while threads of its block wait at a barrier, the note says how many, where, and
// which thread runs. The parent reads the notes twice before it stops the worker: a worker
// whose count did not move is inside a thread that never came back. A thread resumed after it
// yielded (yield_fiber: a volatile access, a fence) is not counted: threads that only spin on a
// flag while others wait at a barrier move nothing, and the note names the first of them.
struct BarrierNote {
    unsigned waiting;
    int line;
    unsigned block[3], thread[3];
    unsigned long long switches;
};
static_assert(sizeof(BarrierNote) == 40, "book/launch/worker.py reads this layout");
constexpr int kBarrierNotesAt = 2048, kBarrierNotes = 32;  // in the fault page

inline thread_local Worker* worker = nullptr;
inline thread_local uint3 thread_idx{0, 0, 0};
inline thread_local uint3 block_idx{0, 0, 0};
inline thread_local dim3 block_dim;
inline thread_local dim3 grid_dim;
inline thread_local unsigned char* dynamic_smem = nullptr;
inline thread_local std::size_t dynamic_smem_bytes = 0;  // as the launch gave them (shared_mem=)
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
    w->current->state = DONE;
    finish_fiber(w->current->ctx, w->scheduler);  // back to the scheduler
}

inline int where(char* out, std::size_t size, const uint3& t) {
    return std::snprintf(out, size, "block (%u, %u, %u), thread (%u, %u, %u)", block_idx.x,
                         block_idx.y, block_idx.z, t.x, t.y, t.z);
}

// What the worker process's signal handler leaves for book/launch/worker.py before it exits, when a kernel
// touches memory it may not (SIGSEGV, SIGBUS), divides an integer by zero (SIGFPE) or the like.
struct FaultReport {
    int signal, code, write, in_kernel;  // write: 1 store, 0 load, -1 unknown
    unsigned long long address;
    unsigned block[3], thread[3];
};
static_assert(sizeof(FaultReport) == 48, "book/launch/worker.py reads this layout");
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
        // The stack pointer at or below the top of the fiber's guard page, or the fault inside it
        // (a call's push of its return address: the pointer still at the page's top): its stack
        // overflowed (code -2).
        if (r->in_kernel && w->current->stack != nullptr &&
            (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RSP] <=
                 reinterpret_cast<long long>(w->current->stack) + 4096 ||
             (at >= reinterpret_cast<const unsigned char*>(w->current->stack) &&
              at < reinterpret_cast<const unsigned char*>(w->current->stack) + 4096)))
            r->code = -2;
#endif
        if (r->in_kernel) {
            r->block[0] = block_idx.x, r->block[1] = block_idx.y, r->block[2] = block_idx.z;
            r->thread[0] = thread_idx.x, r->thread[1] = thread_idx.y, r->thread[2] = thread_idx.z;
        }
        r->signal = sig;  // last: book/launch/worker.py reads a report whose signal is set
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
    switch_context(w->current->ctx, w->scheduler);
    std::abort();  // unreachable: a failed fiber is never resumed
}

// Lets the block's other threads run before this one goes on (volatile accesses, fences,
// __nanosleep: what a GPU's other warps would do meanwhile): the fiber gives up the CPU, still
// READY, and the scheduler's pass goes on to the next ready fiber; the fiber goes on in the next
// pass. So the lanes of a warp running the same straight-line volatile accesses advance in
// lockstep, one access each per pass, and a thread spinning on a flag lets the writer run.
inline void yield_fiber() {
    Worker* w = worker;
    if (w == nullptr || w->current == nullptr) return;  // (not in a kernel's thread)
    Fiber* f = w->current;
    f->yielded = true;
    switch_context(f->ctx, w->scheduler);
}

// A read through a volatile pointer outside shared memory (a flag in global memory): yields when
// it reads the same address as this thread's last such read -- a loop that spins on it -- and
// at every 64th such read (a loop that spins on several), so that the writer can run; a stream
// of reads (other blocks' results) goes on with few switches.
inline void yield_if_spinning(const volatile void* at) {
    Worker* w = worker;
    if (w == nullptr || w->current == nullptr) return;
    Fiber* f = w->current;
    f->synced = true;
    if (f->last_volatile == at || ++f->volatile_reads % 64 == 0) yield_fiber();
    f->last_volatile = at;
}

inline void syncthreads(int line) {
    Worker* w = worker;
    Fiber* f = w->current;
    f->state = AT_BARRIER;
    f->line = line;
    if (w->at_barrier++ == 0) w->barrier_line = line;
    switch_context(f->ctx, w->scheduler);
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
    switch_context(f->ctx, worker->scheduler);
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
    switch_context(f->ctx, w->scheduler);
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
inline thread_local std::vector<SharedInfo*> shared_arrays;  // this OS thread's shared memory
inline void reset_shared_checks(unsigned n_threads);
inline void begin_dynamic_shared(unsigned char* data, std::size_t bytes);  // (in shared.h)
inline void end_dynamic_shared();
inline void check_before_shared(const unsigned char* dynamic_before, std::size_t dynamic_bytes);
inline void check_global_writes();  // (in memory.h)
inline void clear_global_writes();  // (as a block starts: a failed one's are left)

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
            // A lane of the mask that has exited counts as absent, as on a GPU (the Programming
            // Guide's collectives wait for the non-exited threads of the mask): `if (i >= n)
            // return;` before a full-mask __ballot_sync is legal. (Not for mma: .aligned.)
            bool complete = true;
            unsigned live = 0;
            for (unsigned l = 0; l < 32 && complete; ++l) {
                if (!(f.mask >> l & 1u)) continue;
                const std::size_t j = base + l;
                if (j < end && fibers[j].state == DONE && f.op != MMA) continue;
                complete = j < end && fibers[j].state == AT_WARP && fibers[j].mask == f.mask &&
                           fibers[j].op == f.op;
                live |= 1u << l;
            }
            if (!complete) continue;
            unsigned long long ballot = 0;
            bool same = true;  // (__match_all_sync) every lane of the mask brings f's value
            for (unsigned l = 0; l < 32; ++l)
                if (live >> l & 1u) {
                    if (fibers[base + l].value) ballot |= 1ull << l;
                    same &= fibers[base + l].value == f.value;
                }
            const unsigned long long reduced = f.op == REDUCE ? reduce_lanes(fibers, base, live, f.src) : 0;
            if (f.op == MMA) {  // the whole warp (its mask is): compute every lane's D at once
                MmaTf32* lanes[32];
                for (unsigned l = 0; l < 32; ++l)
                    lanes[l] = reinterpret_cast<MmaTf32*>(fibers[base + l].value);
                mma_tf32_release(lanes);
            }
            for (unsigned l = 0; l < 32; ++l) {
                if (!(live >> l & 1u)) continue;
                Fiber& g = fibers[base + l];
                if (g.op == SHFL) {
                    if (!(live >> g.src & 1u)) {  // on a GPU: an undefined value
                        char what[900];
                        if (f.mask >> g.src & 1u)  // in the mask, but exited
                            std::snprintf(what, sizeof what, "block (%u, %u, %u), thread (%u, %u, "
                                          "%u): a __shfl*_sync at line %d reads lane %u, which "
                                          "finished the kernel without calling it (it returned "
                                          "early, or a branch such as `if (threadIdx.x < 16)` "
                                          "skipped the call): on a GPU the value is undefined. "
                                          "Read only lanes that call it too (every lane of the "
                                          "mask, with the branch inside: `v = lane < 16 ? v + w "
                                          ": v` after the shuffle)", block_idx.x,
                                          block_idx.y, block_idx.z, g.tid.x, g.tid.y, g.tid.z,
                                          g.line, g.src);
                        else
                            std::snprintf(what, sizeof what, "block (%u, %u, %u), thread (%u, %u, "
                                          "%u): a __shfl*_sync at line %d reads lane %u, which its "
                                          "mask 0x%08x leaves out", block_idx.x, block_idx.y,
                                          block_idx.z, g.tid.x, g.tid.y, g.tid.z, g.line, g.src,
                                          f.mask);
                        worker->errors->report(what);
                        worker->failed = true;
                        return false;
                    }
                    g.result = fibers[base + g.src].value;
                } else if (g.op == REDUCE) {
                    g.result = reduced;
                } else if (g.op == MATCH_ANY) {  // the lanes of the mask whose value is g's
                    g.result = 0;
                    for (unsigned k = 0; k < 32; ++k)
                        if (live >> k & 1u && fibers[base + k].value == g.value) g.result |= 1ull << k;
                } else if (g.op == MATCH_ALL) {
                    g.result = same ? live : 0u;
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

// When no warp operation or mbarrier can release anything (threads that yielded may still run
// on): every lane waiting at an __activemask() gets the mask of the lanes of its warp waiting at
// the same one (the lanes that arrived there together, as a converged warp would). Returns true
// if any lane was released.
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

// Runs every block of the grid. body(closure) executes the kernel for the current fiber. (Hidden:
// each library's calls bind to its own, which uses its own variables.)
#if !CUDA_EMU_OWNS_RUNTIME
__attribute__((visibility("hidden"))) void run_grid(dim3 grid, dim3 block, std::size_t smem_bytes,
                                                    void (*body)(void*), void* closure,
                                                    unsigned n_workers, ErrorSink* errors);
#else
#ifdef CUDA_EMU_RUNTIME
__attribute__((visibility("hidden"))) void run_grid(
#else
inline void run_grid(
#endif
                     dim3 grid, dim3 block, std::size_t smem_bytes, void (*body)(void*),
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
        dynamic_smem_bytes = smem_bytes;
        dynamic_bytes = &dynamic;
        begin_dynamic_shared(smem, smem_bytes);
        for (std::size_t b; !errors->failed && (b = next.fetch_add(1)) < n_blocks;) {
            block_idx = {unsigned(b % grid.x), unsigned((b / grid.x) % grid.y),
                         unsigned(b / (std::size_t(grid.x) * grid.y))};
            std::memset(smem, 0xFF, dynamic.size);
            reset_shared_checks(n_threads);
            clear_global_writes();
            for (unsigned i = 0; i < n_threads; ++i) {
                Fiber& f = fibers[i];
                f.tid = {i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
                f.index = i;
                f.lane = i % 32;
                f.state = READY;
                f.yielded = false;
                f.last_volatile = nullptr;
                f.volatile_reads = 0;
                f.locks = 0;
                f.synced = false;
                f.stack = static_cast<char*>(stacks) + i * kStackBytes;
                start_context(f.ctx, f.stack, kStackBytes, w.scheduler);
            }
            // Each pass runs every ready fiber until it blocks (a barrier, a warp operation),
            // yields (yield_fiber: it runs on in the next pass) or ends; then complete warp
            // operations release their lanes, completed mbarrier phases their waiters, or
            // __activemask() its lanes; while a fiber that yielded is still ready, the next pass
            // runs it; else the block barrier releases every live fiber, else nothing can move:
            // an error says why.
            w.at_barrier = 0;
            w.noted = nullptr;
            if (note) note->waiting = 0;
            for (unsigned live = n_threads; live > 0 && !w.failed;) {
                bool yielded = false;
                for (Fiber& f : fibers) {
                    if (f.state != READY) continue;
                    thread_idx = f.tid;
                    w.current = &f;
                    if (note) {  // (in case this thread never comes back)
                        if (!f.yielded) ++note->switches;
                        if (!w.noted || !w.noted->yielded) w.noted = &f;  // the first spinning one
                        if (w.at_barrier)
                            note->waiting = w.at_barrier, note->line = w.barrier_line,
                            note->block[0] = block_idx.x, note->block[1] = block_idx.y,
                            note->block[2] = block_idx.z, note->thread[0] = w.noted->tid.x,
                            note->thread[1] = w.noted->tid.y, note->thread[2] = w.noted->tid.z;
                    }
                    f.yielded = false;
                    switch_context(w.scheduler, f.ctx);
                    if (w.failed) break;
                    if (f.state == DONE) --live;
                    yielded |= f.state == READY;
                }
                if (w.failed || live == 0) break;
                if (release_warps(fibers) || w.failed || release_mbarriers(fibers) ||
                    release_active(fibers) || yielded) continue;
                bool at_warp = false;
                for (const Fiber& f : fibers) at_warp |= f.state == AT_WARP;
                if (at_warp) { report_stuck(fibers); break; }
                if (report_mbarrier_stuck(fibers)) break;
                if (!check_barrier(fibers)) break;
                check_global_writes();  // (before a write that the barrier orders after them)
                if (w.failed) break;
                bool synced = false;  // (what a thread at the barrier learned by an atomic or a
                for (const Fiber& f : fibers)  // fence, the barrier passes to all)
                    synced |= f.synced && f.state == AT_BARRIER;
                for (Fiber& f : fibers) {
                    if (f.state == AT_BARRIER) f.state = READY;
                    f.synced |= synced;
                }
                w.at_barrier = 0;
                if (note) note->waiting = 0;  // the barrier is passed
                ++block_epoch;
            }
            if (!w.failed) check_before_shared(dynamic.map, before_smem);
            if (!w.failed) check_global_writes();
        }
        end_dynamic_shared();
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
#endif

// Unpacks void** args by the kernel's own parameter types, as cudaLaunchKernel does.
// Returns 0, or 1 with the first error's message in err.
template <class... P, std::size_t... I>
int launch_impl(void (*kernel)(P...), const unsigned* g, const unsigned* b, std::size_t smem,
                void** args, unsigned n_workers, char* err, std::size_t err_size, void* fault,
                std::index_sequence<I...>) {
    if (fault) catch_faults(fault);  // only in book/launch/worker.py's worker process
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

}  // namespace cuda_emu
