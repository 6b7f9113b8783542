// 08_warptile.cu -- chapter 8, steps 2 and 3: warp tiling, then double buffering.
//
// Idea: three levels of tiles. A block computes BM x BN of C; each of its warps a WM x WN region;
//   each warp covers its region in WMITER x WNITER sub-tiles of WSUBM x WSUBN, and each thread
//   computes a TM x TN piece of every sub-tile. A thread's TN values of B are then 4-float pieces
//   WSUBN apart instead of one run of TN floats, so the LDS.128s of a quarter-warp read adjacent
//   16-byte pieces and never collide in banks; a warp's stores of C cover compact rows.
//   With DB = 1 the shared tiles have two stages: while the FMAs run on one, the next tile's
//   global loads are already in flight into registers, and are stored into the other stage
//   after the FMAs (one barrier per tile instead of two).
// Changed from 08_vectorized.cu: the thread-to-C mapping (warp tiles) and, with DB, the overlap
//   of global loads with arithmetic.
// Expected bottleneck: FMA issue once the loads hide behind it; registers (the accumulators plus
//   the prefetched float4s) limit how many warps an SM holds.
// Launch: block (THREADS, 1), grid (CEIL_DIV(N, BN), CEIL_DIV(M, BM)); any M, N, K.
#include "common.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef WNITER
#define WNITER 4
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 4
#endif
#ifndef THREADS
#define THREADS 128
#endif
#ifndef PAD
#define PAD 4
#endif
#ifndef DB
#define DB 1
#endif
#ifndef MINB
#define MINB 1  // __launch_bounds__'s blocks per SM: 2 caps a 256-thread block at 128 registers
#endif
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
#define STAGES (DB ? 2 : 1)
#define A_LOADS (BM * BK / 4 / THREADS)  // float4s of A each thread loads per tile
#define B_LOADS (BK * BN / 4 / THREADS)
static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "one warp per WM x WN region");
static_assert(WMITER >= 1 && (WSUBM / TM) * (WSUBN / TN) == 32, "32 threads per sub-tile");
static_assert(A_LOADS >= 1 && B_LOADS >= 1 && A_LOADS * THREADS * 4 == BM * BK &&
              B_LOADS * THREADS * 4 == BK * BN, "every thread loads whole float4s of each tile");
static_assert(TM % 4 == 0 && TN % 4 == 0 && PAD % 4 == 0, "float4 reads of the shared tiles");

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_warptile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K) {
    __shared__ __align__(16) float As[STAGES][BK][BM + PAD];  // k-major A tiles
    __shared__ __align__(16) float Bs[STAGES][BK][BN];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);
    const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.0f;
    float4 ra[A_LOADS], rb[B_LOADS];  // the next tile, on its way from global memory

    auto fetch = [&](int t) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int i = tid + l * THREADS, r = i / (BK / 4), c = 4 * (i % (BK / 4));
            ra[l] = load4(A, m0 + r, t + c, M, K);
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int i = tid + l * THREADS, r = i / (BN / 4), c = 4 * (i % (BN / 4));
            rb[l] = load4(B, t + r, n0 + c, K, N);
        }
    };
    auto stash = [&](int s) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int i = tid + l * THREADS, r = i / (BK / 4), c = 4 * (i % (BK / 4));
            As[s][c][r] = ra[l].x; As[s][c + 1][r] = ra[l].y;
            As[s][c + 2][r] = ra[l].z; As[s][c + 3][r] = ra[l].w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int i = tid + l * THREADS, r = i / (BN / 4), c = 4 * (i % (BN / 4));
            *reinterpret_cast<float4*>(&Bs[s][r][c]) = rb[l];
        }
    };
    auto compute = [&](int s) {
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[WMITER * TM], b[WNITER * TN];
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int i = 0; i < TM; i += 4) {
                    const float4 v = *reinterpret_cast<const float4*>(
                        &As[s][k][wrow * WM + wm * WSUBM + trow * TM + i]);
                    a[wm * TM + i] = v.x; a[wm * TM + i + 1] = v.y;
                    a[wm * TM + i + 2] = v.z; a[wm * TM + i + 3] = v.w;
                }
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const float4 v = *reinterpret_cast<const float4*>(
                        &Bs[s][k][wcol * WN + wn * WSUBN + tcol * TN + j]);
                    b[wn * TN + j] = v.x; b[wn * TN + j + 1] = v.y;
                    b[wn * TN + j + 2] = v.z; b[wn * TN + j + 3] = v.w;
                }
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += a[i] * b[j];
        }
    };

    fetch(0);
    stash(0);
    __syncthreads();
    int s = 0;
    for (int t = 0; t < K; t += BK) {
        const bool more = t + BK < K;
        if (DB) {
            if (more) fetch(t + BK);  // in flight during the FMAs below
            compute(s);
            if (more) stash(s ^ 1);   // stage s ^ 1 was last read before the previous barrier
            __syncthreads();
            s ^= 1;
        } else {
            compute(0);
            __syncthreads();
            if (more) { fetch(t + BK); stash(0); }
            __syncthreads();
        }
    }
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = m0 + wrow * WM + wm * WSUBM + trow * TM + i;
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const int c = wn * TN + j;
                    store4(C, row, n0 + wcol * WN + wn * WSUBN + tcol * TN + j, M, N,
                           make_float4(acc[wm * TM + i][c], acc[wm * TM + i][c + 1],
                                       acc[wm * TM + i][c + 2], acc[wm * TM + i][c + 3]));
                }
        }
}
