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
//     resume. So an early `return` before a barrier cannot deadlock the others;
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
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

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

enum FiberState { READY, AT_BARRIER, DONE };

struct Fiber {
    ucontext_t ctx;
    uint3 tid;
    FiberState state;
};

struct Worker {
    ucontext_t scheduler;
    Fiber* current = nullptr;
    void (*body)(void*) = nullptr;  // runs the kernel once, for the current fiber
    void* closure = nullptr;
};

inline thread_local Worker* worker = nullptr;
inline thread_local uint3 thread_idx{0, 0, 0};
inline thread_local uint3 block_idx{0, 0, 0};
inline thread_local dim3 block_dim;
inline thread_local dim3 grid_dim;
inline thread_local unsigned char* dynamic_smem = nullptr;

constexpr std::size_t kStackBytes = 256 * 1024;  // per fiber; untouched pages cost nothing

inline void fiber_main() {
    Worker* w = worker;
    w->body(w->closure);
    w->current->state = DONE;  // returning resumes uc_link, the scheduler
}

inline void syncthreads() {
    Worker* w = worker;
    Fiber* f = w->current;
    f->state = AT_BARRIER;
    swapcontext(&f->ctx, &w->scheduler);
}

// Runs every block of the grid. body(closure) executes the kernel for the current fiber.
inline void run_grid(dim3 grid, dim3 block, std::size_t smem_bytes, void (*body)(void*),
                     void* closure, unsigned n_workers) {
    const std::size_t n_blocks = std::size_t(grid.x) * grid.y * grid.z;
    const unsigned n_threads = block.x * block.y * block.z;
    std::atomic<std::size_t> next{0};

    auto work = [&] {
        Worker w;
        w.body = body;
        w.closure = closure;
        std::vector<Fiber> fibers(n_threads);
        const std::size_t stack_total = kStackBytes * n_threads;
        void* stacks = mmap(nullptr, stack_total, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (stacks == MAP_FAILED) {
            std::fprintf(stderr, "cuda_emu: cannot map %zu bytes of fiber stacks\n", stack_total);
            std::abort();
        }
        const std::size_t smem_alloc = smem_bytes ? smem_bytes : 16;
        auto* smem = static_cast<unsigned char*>(::operator new(smem_alloc, std::align_val_t(128)));

        worker = &w;
        block_dim = block;
        grid_dim = grid;
        dynamic_smem = smem;
        for (std::size_t b; (b = next.fetch_add(1)) < n_blocks;) {
            block_idx = {unsigned(b % grid.x), unsigned((b / grid.x) % grid.y),
                         unsigned(b / (std::size_t(grid.x) * grid.y))};
            std::memset(smem, 0xFF, smem_alloc);
            for (unsigned i = 0; i < n_threads; ++i) {
                Fiber& f = fibers[i];
                f.tid = {i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
                f.state = READY;
                getcontext(&f.ctx);
                f.ctx.uc_stack.ss_sp = static_cast<char*>(stacks) + i * kStackBytes;
                f.ctx.uc_stack.ss_size = kStackBytes;
                f.ctx.uc_link = &w.scheduler;
                makecontext(&f.ctx, fiber_main, 0);
            }
            // Each sweep moves every live fiber to its next barrier or to its end.
            for (unsigned live = n_threads; live > 0;) {
                for (Fiber& f : fibers) {
                    if (f.state == DONE) continue;
                    f.state = READY;
                    thread_idx = f.tid;
                    w.current = &f;
                    swapcontext(&w.scheduler, &f.ctx);
                    if (f.state == DONE) --live;
                }
            }
        }
        ::operator delete(smem, std::align_val_t(128));
        munmap(stacks, stack_total);
        worker = nullptr;
    };

    const unsigned n = unsigned(std::min<std::size_t>(std::max(1u, n_workers), n_blocks));
    std::vector<std::thread> helpers;
    for (unsigned i = 1; i < n; ++i) helpers.emplace_back(work);
    work();
    for (auto& t : helpers) t.join();
}

// Unpacks void** args by the kernel's own parameter types, as cudaLaunchKernel does.
template <class... P, std::size_t... I>
void launch_impl(void (*kernel)(P...), const unsigned* g, const unsigned* b, std::size_t smem,
                 void** args, unsigned n_workers, std::index_sequence<I...>) {
    const std::tuple<std::decay_t<P>...> values{*static_cast<std::decay_t<P>*>(args[I])...};
    auto call = [&] { std::apply(kernel, values); };  // each fiber gets its own copy of the params
    run_grid(dim3(g[0], g[1], g[2]), dim3(b[0], b[1], b[2]), smem,
             [](void* c) { (*static_cast<decltype(call)*>(c))(); }, &call, n_workers);
}

template <class... P>
void launch(void (*kernel)(P...), const unsigned* grid, const unsigned* block, std::size_t smem,
            void** args, unsigned n_workers) {
    launch_impl(kernel, grid, block, smem, args, n_workers, std::index_sequence_for<P...>{});
}

}  // namespace cuda_emu

// ---- CUDA C keywords and built-ins -----------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __shared__ static thread_local
#define __constant__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __syncthreads() ::cuda_emu::syncthreads()
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
template <class T> inline T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
