// 06_regtile.cu -- chapter 6: 2D register tiling.
//
// Idea: a block of (BM / TM) x (BN / TN) threads computes a BM x BN tile of C; each thread
//   computes a TM x TN block of it. At each step of BK along K the block stages a BM x BK tile of
//   A (stored k-major, As[k][m]) and a BK x BN tile of B in shared memory; then, for each k, a
//   thread loads TM values of A and TN values of B into registers and does TM * TN FMAs with them
//   (an outer product).
// Changed from 06_coarsen.cu: coarsened in both directions, so each shared load feeds TM or TN
//   FMAs instead of at most one column's worth: shared loads per FMA fall to 1/TN + 1/TM.
// Expected bottleneck: instruction issue and latency of the FMA chain once the loads are rare;
//   registers (TM * TN accumulators) limit occupancy at large TM x TN.
// Launch: block (BM / TM * BN / TN, 1), grid (CEIL_DIV(N, BN), CEIL_DIV(M, BM)); any M, N, K.
#include "common.cuh"

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#define THREADS ((BM / TM) * (BN / TN))

extern "C" __global__ void matmul_regtile(const float* __restrict__ A,
                                          const float* __restrict__ B, float* __restrict__ C,
                                          int M, int N, int K) {
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int trow = tid / (BN / TN), tcol = tid % (BN / TN);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float a[TM], b[TN];
    for (int t = 0; t < K; t += BK) {
        for (int i = tid; i < BM * BK; i += THREADS) {  // consecutive threads: along a row of A
            const int r = i / BK, c = i % BK;
            As[c][r] = (m0 + r < M && t + c < K) ? A[(m0 + r) * K + t + c] : 0.0f;
        }
        for (int i = tid; i < BK * BN; i += THREADS) {  // consecutive threads: along a row of B
            const int r = i / BN, c = i % BN;
            Bs[r][c] = (t + r < K && n0 + c < N) ? B[(t + r) * N + n0 + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[k][trow * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tcol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + trow * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = n0 + tcol * TN + j;
            if (row < M && col < N) C[row * N + col] = acc[i][j];
        }
    }
}
