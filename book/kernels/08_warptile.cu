// 08_warptile.cu -- chapter 8, steps 2 and 3: warp tiling, then double buffering in registers.
//
// Idea: the block -> warp -> thread tiles of warptile.cuh. With DB = 1 the shared tiles have two
//   stages: while the FMAs run on one, the next tile's global loads are already in flight into
//   registers, and are stored into the other stage after the FMAs (one barrier per tile instead
//   of two).
// Changed from 08_vectorized.cu: the thread-to-C mapping (warp tiles) and, with DB, the overlap
//   of global loads with arithmetic.
// Expected bottleneck: FMA issue once the loads hide behind it; registers (the accumulators plus
//   the prefetched float4s) limit how many warps an SM holds.
// Launch: block (THREADS, 1), grid (CEIL_DIV(N, BN), CEIL_DIV(M, BM)); any M, N, K.
#include "warptile.cuh"

#ifndef DB
#define DB 1
#endif
#define STAGES (DB ? 2 : 1)
#define A_LOADS (BM * BK / 4 / THREADS)  // float4s of A each thread loads per tile
#define B_LOADS (BK * BN / 4 / THREADS)
#define A_STEP (THREADS / (BK / 4))      // rows between a thread's float4s of A
#define B_STEP (THREADS / (BN / 4))      // rows between its float4s of B
static_assert(A_LOADS >= 1 && B_LOADS >= 1 && A_LOADS * THREADS * 4 == BM * BK &&
              B_LOADS * THREADS * 4 == BK * BN && THREADS % (BK / 4) == 0 &&
              THREADS % (BN / 4) == 0,
              "every thread loads whole float4s, the same columns of every tile");

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_warptile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K) {
    __shared__ __align__(16) float As[STAGES][BK][BM + PAD];  // k-major A tiles
    __shared__ __align__(16) float Bs[STAGES][BK][BN];
    const int tid = threadIdx.x, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const WarpPlace place = warp_place();
    float acc[WMITER * TM][WNITER * TN] = {};
    float4 ra4[A_LOADS], rb4[B_LOADS];  // the next tile, on its way from global memory

    // This thread's float4s of every tile: A rows ra + l * A_STEP at columns ca .. ca + 3 (k),
    // B rows rb + l * B_STEP at columns cb .. cb + 3. Where the block's tiles lie wholly inside
    // the matrices (all but the edge blocks) they are loaded without any bounds check.
    const int ra = tid / (BK / 4), ca = 4 * (tid % (BK / 4));
    const int rb = tid / (BN / 4), cb = 4 * (tid % (BN / 4));
    const bool inner = m0 + BM <= M && n0 + BN <= N && (K & 3) == 0 && (N & 3) == 0;
    auto fetch = [&](int t) {
        if (inner && t + BK <= K) {
            const float* a = A + (long long)(m0 + ra) * K + t + ca;
            const float* b = B + (long long)(t + rb) * N + n0 + cb;
#pragma unroll
            for (int l = 0; l < A_LOADS; ++l)
                ra4[l] = *reinterpret_cast<const float4*>(a + (long long)l * A_STEP * K);
#pragma unroll
            for (int l = 0; l < B_LOADS; ++l)
                rb4[l] = *reinterpret_cast<const float4*>(b + (long long)l * B_STEP * N);
            return;
        }
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) ra4[l] = load4(A, m0 + ra + l * A_STEP, t + ca, M, K);
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) rb4[l] = load4(B, t + rb + l * B_STEP, n0 + cb, K, N);
    };
    auto stash = [&](int s) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int r = ra + l * A_STEP;
            As[s][ca][r] = ra4[l].x; As[s][ca + 1][r] = ra4[l].y;
            As[s][ca + 2][r] = ra4[l].z; As[s][ca + 3][r] = ra4[l].w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l)
            *reinterpret_cast<float4*>(&Bs[s][rb + l * B_STEP][cb]) = rb4[l];
    };

    fetch(0);
    stash(0);
    __syncthreads();
    int s = 0;
    for (int t = 0; t < K; t += BK) {
        const bool more = t + BK < K;
        if (DB) {
            if (more) fetch(t + BK);  // in flight during the FMAs below
            warp_tile_fma(acc, As[s], Bs[s], place);
            if (more) stash(s ^ 1);   // stage s ^ 1 was last read before the previous barrier
            __syncthreads();
            s ^= 1;
        } else {
            warp_tile_fma(acc, As[0], Bs[0], place);
            __syncthreads();
            if (more) { fetch(t + BK); stash(0); }
            __syncthreads();
        }
    }
    warp_tile_store(C, M, N, N, m0, n0, acc, place);
}
