// 09_sgemm.cu -- chapter 9: chapter 8's cp.async kernel (08_async.cu) as book.sgemm launches it:
// for matrices whose rows are a leading dimension apart (views into wider arrays; where B's rows
// do not start on 16 bytes, B copied into aligned rows first, or 08_async.cu built for rows on 8
// or 4 bytes, ROW_ALIGN 2 or 1), and split over K.
// Why more entry points: matmul_async passes lda = K and ldb = ldc = N as constants, and the
// code built from them runs a few percent faster at large squares than the same body built for
// any leading dimension (measured on an H100 and an H200); each entry keeps its own build.
// One entry per build: on a GPU, book.blas compiles each entry it launches on its own
// (-DONE_ENTRY -DENTRY_<name>), side by side. The whole file, ten kernels, took 12 s to compile
// on an H100 host, and 26 s with ten configurations compiling at once; the CPU emulator builds
// every entry in one go.
//
// Split-K: with few tiles of C and a long K, one block per tile leaves SMs idle. The split
//   entries launch gridDim.z blocks per tile, block z over slice z of K, each storing its partial
//   sums in slice z of a workspace W (M rows of N floats, rounded up to 4); 09_splitk.cu then
//   adds the slices into C. (Adding them in the last block of each tile instead, which saves the
//   second launch, ran slower on an H200 at every split shape of the suite: 85-90% of cuBLAS
//   against 93-94%.)
// Stream-K: one block per tile leaves the last wave part-empty whenever the tiles are not a
//   multiple of the blocks the GPU runs at once (512 tiles on 132 SMs: 3.9 waves take 4).
//   matmul_tiles runs the whole waves, one block per tile; then matmul_streamk runs `shares`
//   blocks (as many as run at once) that share the steps of the tiles left (tiles x k-tiles)
//   equally: a block stores the tiles its share holds whole into C, and a piece of a tile at
//   either end of its share into its two places in W; streamk_fixup then adds each shared
//   tile's pieces, in order, into C.
// Launch: matmul_async_ld as matmul_async, with lda >= K, ldb >= N, ldc >= N after M, N, K; the
//   split entries take W (gridDim.z * M * ((N + 3) & ~3) floats) in place of C
//   (matmul_splitk_ld: and lda, ldb); matmul_tiles(_ld) as matmul_async(_ld) on grid (first)
//   as streamk_layout sets it; matmul_streamk(_ld) on grid (shares), with W (2 * shares * BM * BN floats) after C and
//   shares last; then streamk_fixup on grid (shares - 1, BM * BN / FIXUP_FLOATS), THREADS
//   threads, no dynamic shared memory.
#include "08_async.cu"
#ifndef __CUDA_ARCH__
#include <chrono>  // the CPU emulator's clock for matmul_async_timed
#endif

#if !defined(ONE_ENTRY) || defined(ENTRY_matmul_async_ld)
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_async_ld(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K, int lda, int ldb, int ldc) {
    async_tiles(A, B, C, M, N, K, lda, ldb, ldc, blockIdx.y, blockIdx.x);
}
#endif

// Split-K: block z computes slice z of K, its partial sums into slice z of W: M rows of N floats,
// (N + 3) & ~3 apart, so that its stores are whole 16-byte pieces whatever N is.
__device__ __forceinline__ void splitk_slice(const float* __restrict__ A,
                                             const float* __restrict__ B, float* __restrict__ W,
                                             int M, int N, int K, int lda, int ldb) {
    const int all = CEIL_DIV(K, BK), per = CEIL_DIV(all, (int)gridDim.z);
    const int t0 = blockIdx.z * per, tiles = min(per, all - t0);
    const WarpPlace place = warp_place();
    const TileSpot at = tile_spot(blockIdx.y, blockIdx.x, A, B, M, N, lda, ldb);
    float acc[WMITER * TM][WNITER * TN] = {};
    if (tiles > 0) async_accumulate(acc, A, B, M, N, K, lda, ldb, at, t0, tiles, place);
    const int ldw = (N + 3) & ~3;  // rows of 16-byte pieces (09_splitk.cu's w_row)
    store_own<false>(W + (long long)blockIdx.z * M * ldw, M, N, ldw, acc, place, at);
}

#if !defined(ONE_ENTRY) || defined(ENTRY_matmul_splitk)
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_splitk(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ W,
              int M, int N, int K) {
    splitk_slice(A, B, W, M, N, K, K, N);
}
#endif

#if !defined(ONE_ENTRY) || defined(ENTRY_matmul_splitk_ld)
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_splitk_ld(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ W,
                 int M, int N, int K, int lda, int ldb) {
    splitk_slice(A, B, W, M, N, K, lda, ldb);
}
#endif

// Stream-K after whole waves. Of the T tiles of C (in rows of CEIL_DIV(N, BN)), the first
// T / shares * shares go one block per tile (matmul_tiles, launched first: the whole waves).
// Only the tiles left, fewer than `shares`, are shared by steps (matmul_streamk, launched
// next): their steps, tile by tile and k-tile by k-tile within a tile, are numbered
// 0 .. work - 1, and block p takes share p, steps streamk_start(p) .. streamk_start(p + 1) - 1.
// A tile whose steps one share holds all of is stored into C; a piece of one goes to W: to
// place 2p if it is the first piece of share p, else to place 2p + 1 (only a share's first and
// last tiles can be pieces).
struct StreamK {
    int cols, steps;  // tiles per row of C; k-tiles per tile
    int first;        // the first tile shared by steps (those before go whole)
    long long work;   // the steps shared
};
__device__ __forceinline__ StreamK streamk_layout(int M, int N, int K, int shares) {
    const int cols = CEIL_DIV(N, BN), tiles = CEIL_DIV(M, BM) * cols, steps = CEIL_DIV(K, BK);
    const int first = tiles / shares * shares;
    return {cols, steps, first, (long long)(tiles - first) * steps};
}
__device__ __forceinline__ long long streamk_start(long long work, long long p, int shares) {
    return work * p / shares;
}

// One block per tile, tiles numbered row by row (blockIdx.x): the whole waves.
#if !defined(ONE_ENTRY) || defined(ENTRY_matmul_tiles)
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_tiles(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int M, int N, int K) {
    const int cols = CEIL_DIV(N, BN);
    async_tiles(A, B, C, M, N, K, K, N, N, blockIdx.x / cols, blockIdx.x % cols);
}
#endif

#if !defined(ONE_ENTRY) || defined(ENTRY_matmul_tiles_ld)
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_tiles_ld(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K, int lda, int ldb, int ldc) {
    const int cols = CEIL_DIV(N, BN);
    async_tiles(A, B, C, M, N, K, lda, ldb, ldc, blockIdx.x / cols, blockIdx.x % cols);
}
#endif

// Share p = blockIdx.x of the tiles left after the whole waves.
__device__ __forceinline__ void streamk_share(const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ C,
                                              float* __restrict__ W, int M, int N, int K, int lda,
                                              int ldb, int ldc, int shares) {
    const StreamK sk = streamk_layout(M, N, K, shares);
    const WarpPlace place = warp_place();
    const long long begin = streamk_start(sk.work, blockIdx.x, shares);
    const long long end = streamk_start(sk.work, blockIdx.x + 1, shares);
    for (long long g = begin; g < end;) {
        const int i = (int)(g / sk.steps), t0 = (int)(g - (long long)i * sk.steps);
        const int n = (int)min((long long)(sk.steps - t0), end - g);
        const int tile = sk.first + i;
        const TileSpot at = tile_spot(tile / sk.cols, tile % sk.cols, A, B, M, N, lda, ldb);
        float acc[WMITER * TM][WNITER * TN] = {};
        async_accumulate(acc, A, B, M, N, K, lda, ldb, at, t0, n, place);
        if (n == sk.steps)
            store_own(C, M, N, ldc, acc, place, at);
        else
            warp_tile_store(W + (2LL * blockIdx.x + (g != begin)) * (BM * BN), BM, BN, BN, 0, 0,
                            acc, place);
        g += n;
        __syncthreads();  // the next tile's first copies go to stages this one's last steps read
    }
}

#if !defined(ONE_ENTRY) || defined(ENTRY_matmul_streamk)
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_streamk(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               float* __restrict__ W, int M, int N, int K, int shares) {
    streamk_share(A, B, C, W, M, N, K, K, N, N, shares);
}
#endif

#if !defined(ONE_ENTRY) || defined(ENTRY_matmul_streamk_ld)
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_streamk_ld(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  float* __restrict__ W, int M, int N, int K, int lda, int ldb, int ldc,
                  int shares) {
    streamk_share(A, B, C, W, M, N, K, lda, ldb, ldc, shares);
}
#endif

// After a stream-K launch with `shares` shares: blockIdx.x = q adds up the tile in which share
// q + 1 starts, if share q + 1 is the first to start inside it (else that tile is another
// block's, or was stored whole), FIXUP_FLOATS of it per block (blockIdx.y: which part). Its
// pieces are those of the shares q, q + 1, ... up to the last that starts inside the tile (but
// empty ones), added in that order (so the result does not depend on timing). A, B, lda and
// ldb only tell where the tile lies (tile_spot).
#define FIXUP_FLOATS (THREADS * 16)  // 16 floats per thread: 4 float4s in registers
static_assert((BM * BN) % FIXUP_FLOATS == 0, "the fix-up covers a tile in whole parts");
#if !defined(ONE_ENTRY) || defined(ENTRY_streamk_fixup)
extern "C" __global__ void __launch_bounds__(THREADS)
streamk_fixup(const float* __restrict__ W, float* __restrict__ C, const float* __restrict__ A,
              const float* __restrict__ B, int M, int N, int K, int lda, int ldb, int ldc,
              int shares) {
    const StreamK sk = streamk_layout(M, N, K, shares);
    const long long q = blockIdx.x, start = streamk_start(sk.work, q + 1, shares);
    const int i = (int)(start / sk.steps);
    const long long first = (long long)i * sk.steps, last = first + sk.steps;
    if (start == first || streamk_start(sk.work, q, shares) > first) return;
    // The thread's 16 floats of the tile: 4 pieces of 4 adjacent ones where C's rows start on 16
    // bytes (16-byte loads and stores), else 16 single floats THREADS apart (a warp's stores then
    // cover 32 adjacent floats, as in store_own).
    const bool wide = rows_on(C, ldc, 4);
    const int V = wide ? 4 : 1, e0 = blockIdx.y * FIXUP_FLOATS + V * threadIdx.x;
    float sum[16] = {};
    for (long long p = q; p < shares; ++p) {
        const long long s = streamk_start(sk.work, p, shares);
        if (s >= last) break;
        if (streamk_start(sk.work, p + 1, shares) == s) continue;  // an empty share (work < shares)
        const float* piece = W + (2 * p + (s < first)) * (BM * BN) + e0;
        if (wide) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float4 v = *reinterpret_cast<const float4*>(piece + j * 4 * THREADS);
                sum[4 * j] += v.x; sum[4 * j + 1] += v.y;
                sum[4 * j + 2] += v.z; sum[4 * j + 3] += v.w;
            }
        } else {
#pragma unroll
            for (int j = 0; j < 16; ++j) sum[j] += piece[j * THREADS];
        }
    }
    const TileSpot at = tile_spot((sk.first + i) / sk.cols, (sk.first + i) % sk.cols, A, B, M, N,
                                  lda, ldb);
#pragma unroll
    for (int j = 0; j < 16 / 4; ++j) {
        if (wide) {
            const int e = e0 + j * 4 * THREADS, row = at.m0 + e / BN, col = at.n0 + e % BN;
            if (row >= at.row_from)
                store4_from(C, row, col, M, N, ldc, at.col_from,
                            make_float4(sum[4 * j], sum[4 * j + 1], sum[4 * j + 2], sum[4 * j + 3]));
            continue;
        }
#pragma unroll
        for (int v = 0; v < 4; ++v) {
            const int e = e0 + (4 * j + v) * THREADS, row = at.m0 + e / BN, col = at.n0 + e % BN;
            if (row >= at.row_from && row < M && col >= at.col_from && col < N)
                C[(long long)row * ldc + col] = sum[4 * j + v];
        }
    }
}
#endif

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

#if !defined(ONE_ENTRY) || defined(ENTRY_matmul_async_timed)
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_async_timed(const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C, int M, int N, int K, unsigned long long* T) {
    const unsigned long long start = now_ns();
    async_tiles(A, B, C, M, N, K, K, N, N, blockIdx.y, blockIdx.x);
    __syncthreads();  // the block ends when its last warp does
    if (threadIdx.x == 0) {
        unsigned long long* t = T + 3 * (blockIdx.y * gridDim.x + blockIdx.x);
        t[0] = start;
        t[1] = now_ns();
        t[2] = sm_id();
    }
}
#endif
