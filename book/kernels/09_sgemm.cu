// 09_sgemm.cu -- chapter 9: chapter 8's cp.async kernel (08_async.cu) as book.sgemm launches it:
// for matrices whose rows are a leading dimension apart (views into wider arrays, and B copied
// into 16-byte aligned rows where N is not a multiple of 4), and split over K.
// Why more entry points: matmul_async passes lda = K and ldb = ldc = N as constants, and the
// code built from them runs a few percent faster at large squares than the same body built for
// any leading dimension (measured on an H100 and an H200); each entry keeps its own build.
//
// Split-K: with few tiles of C and a long K, one block per tile leaves SMs idle. The split
//   entries launch gridDim.z blocks per tile, block z over slice z of K, each storing its partial
//   sums in slice z of a workspace W (M x N floats per slice); 09_splitk.cu then adds the slices
//   into C. (Adding them in the last block of each tile instead, which saves the second launch,
//   ran slower on an H200 at every split shape of the suite: 85-90% of cuBLAS against 93-94%.)
// Launch: matmul_async_ld as matmul_async, with lda >= K, ldb >= N, ldc >= N after M, N, K; the
//   split entries take W (gridDim.z * M * N floats) in place of C (matmul_splitk_ld: and lda, ldb).
#include "08_async.cu"
#ifndef __CUDA_ARCH__
#include <chrono>  // the CPU emulator's clock for matmul_async_timed
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_async_ld(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K, int lda, int ldb, int ldc) {
    async_tiles(A, B, C, M, N, K, lda, ldb, ldc);
}

// Split-K: block z computes slice z of K, its partial sums into slice z of W (M x N floats).
__device__ __forceinline__ void splitk_slice(const float* __restrict__ A,
                                             const float* __restrict__ B, float* __restrict__ W,
                                             int M, int N, int K, int lda, int ldb) {
    const int all = CEIL_DIV(K, BK), per = CEIL_DIV(all, (int)gridDim.z);
    const int t0 = blockIdx.z * per, tiles = min(per, all - t0);
    const WarpPlace place = warp_place();
    const TileSpot at = tile_spot(B, M, N, ldb);
    float acc[WMITER * TM][WNITER * TN] = {};
    if (tiles > 0) async_accumulate(acc, A, B, M, N, K, lda, ldb, at, t0, tiles, place);
    warp_tile_store(W + (long long)blockIdx.z * M * N, M, N, N, at.m0, at.n0, acc, place,
                    at.row_from, at.col_from);
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_splitk(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ W,
              int M, int N, int K) {
    splitk_slice(A, B, W, M, N, K, K, N);
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_splitk_ld(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ W,
                 int M, int N, int K, int lda, int ldb) {
    splitk_slice(A, B, W, M, N, K, lda, ldb);
}

// Chapter 9's per-block timeline: matmul_async that also records, for each block, when it
// started and ended (the GPU's global timer, ns) and the SM it ran on: T[3 b], T[3 b + 1],
// T[3 b + 2] for block b = blockIdx.y * gridDim.x + blockIdx.x. (On the CPU emulator: the host's
// clock, and SM 0.)
__device__ __forceinline__ unsigned long long now_ns() {
#ifdef __CUDA_ARCH__
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#else
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
#endif
}
__device__ __forceinline__ unsigned sm_id() {
#ifdef __CUDA_ARCH__
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
#else
    return 0;
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_async_timed(const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C, int M, int N, int K, unsigned long long* T) {
    const unsigned long long start = now_ns();
    async_tiles(A, B, C, M, N, K, K, N, N);
    __syncthreads();  // the block ends when its last warp does
    if (threadIdx.x == 0) {
        unsigned long long* t = T + 3 * (blockIdx.y * gridDim.x + blockIdx.x);
        t[0] = start;
        t[1] = now_ns();
        t[2] = sm_id();
    }
}
