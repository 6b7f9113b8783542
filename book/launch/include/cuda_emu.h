// cuda_emu.h -- run CUDA C kernels on the CPU with CUDA's execution semantics.
//
// The book's kernels are plain CUDA C (book/kernels/*.cu). Without a GPU, book/launch/emulator.py
// compiles the same source as C++20 with this header in front of it, after the rewrites of
// book/launch/rewrite.py (__shared__) and rewrite_memory.py (global memory); each launch runs in
// book/launch/worker.py's worker process. The mapping:
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
//   * a fiber runs until it blocks or yields: a volatile shared-memory access, __threadfence*(),
//     __nanosleep() and an atomic repeated on one address let the block's other threads run
//     first (yield_fiber), so lanes of a warp running volatile code advance in lockstep, as a
//     GPU's warp does, and spin-waits end;
//   * an error (these, and the checks below) stops the launch: the runtime raises LaunchError
//     with the message, which names the block and thread;
//   * in book/launch/worker.py's worker process a signal handler catches a kernel's memory faults and
//     arithmetic traps, writes a FaultReport (signal, address, load or store, block, thread)
//     and exits; the parent turns it into LaunchError. Each fiber stack has a guard page;
//   * a block runs on one OS thread; a launch starts one OS thread per core (BOOK_CPU_THREADS
//     overrides) and each pulls blocks until none are left, reusing its fibers and stacks;
//   * `__shared__` variables are `static thread_local`: one copy per OS thread, i.e. per block in
//     flight, shared by that block's fibers. Dynamic `extern __shared__` arrays are rewritten by
//     book/launch/rewrite.py into a per-OS-thread buffer of the launch's shared_mem bytes, filled with NaN
//     bytes (0xFF) before every block so that reads of unwritten shared memory show up.
//
// Arithmetic is IEEE float as written: no fast-math, no contraction of a*b+c into an FMA
// (-std=c++20 implies -ffp-contract=off), so fmaf() is the only fused multiply-add.
#pragma once

// CUDA_EMU_EXTERN_RUNTIME (book/launch/emulator.py's builds with the precompiled header): the
// launch's scheduler (run_grid) and the file-scope definitions (the fibers' switch, assert's and
// the sanitizers' handlers) are compiled once, into the cuda_emu_runtime.o built beside the
// precompiled header and linked into each kernel's library, instead of in every build
// (CUDA_EMU_RUNTIME: that object's own build). Each library still has its own copy of them and
// of every variable, as when each build compiled them.
#if !defined(CUDA_EMU_EXTERN_RUNTIME) || defined(CUDA_EMU_RUNTIME)
#define CUDA_EMU_OWNS_RUNTIME 1
#else
#define CUDA_EMU_OWNS_RUNTIME 0
#endif

// C++20's std::lerp, which libstdc++'s <math.h> also puts in the global namespace, renamed while
// the standard headers are read: a kernel's own lerp (the CUDA samples' helper_math.h) then
// compiles as it does with nvcc.
#define lerp cuda_emu_std_lerp_
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
#include <unordered_map>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <csignal>
#include <unistd.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "cuda_emu/types.h"
#include "cuda_emu/context.h"
#include "cuda_emu/scheduler.h"
#include "cuda_emu/warp.h"
#include "cuda_emu/shared.h"
#include "cuda_emu/shared_uses.h"
#include "cuda_emu/memory.h"
#include "cuda_emu/builtins.h"
#include "cuda_emu/math.h"
#include "cuda_emu/half.h"
#include "cuda_emu/groups.h"
#undef lerp  // (std::lerp renamed above, while the standard headers were read)
