// 08_vectorized.cu -- chapter 8, step 1: 16-byte loads from global and shared memory.
//
// Idea: chapter 6's 2D register tile, with every global load 16 bytes wide (float4: LDG.128)
//   and the A tile stored transposed (As[k][m]) so that a thread's TM values of A, like its TN
//   values of B, are contiguous in shared memory and read as float4 (LDS.128).
// Changed from 06_regtile.cu: a quarter of the load instructions, global and shared. The
//   transposed store of A is scalar; PAD floats after each row of As move those stores off each
//   other's banks (PAD must keep rows 16-byte aligned: 0 or a multiple of 4).
// Expected bottleneck: shared-memory reads of B, whose float4s are TN floats apart and collide
//   in banks; the warp tiling of 08_warptile.cu removes that.
// Launch: block ((BM / TM) * (BN / TN), 1), grid (CEIL_DIV(N, BN), CEIL_DIV(M, BM)); any M, N, K
//   (load4/store4 fall back to guarded scalar accesses at the edges and when K or N % 4 != 0).
#include "common.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef PAD
#define PAD 0
#endif
#define THREADS ((BM / TM) * (BN / TN))
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0 && BN % 4 == 0 && PAD % 4 == 0,
              "float4 accesses need TM, TN, BK, BN and PAD to be multiples of 4");

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_vec4(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K) {
    __shared__ __align__(16) float As[BK][BM + PAD];  // k-major: As[k][m] = A[m0 + m][t + k]
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int trow = tid / (BN / TN), tcol = tid % (BN / TN);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    for (int t = 0; t < K; t += BK) {
        for (int i = tid; i < BM * BK / 4; i += THREADS) {  // float4s along a row of A
            const int r = i / (BK / 4), c = 4 * (i % (BK / 4));
            const float4 v = load4(A, m0 + r, t + c, M, K);
            As[c][r] = v.x; As[c + 1][r] = v.y; As[c + 2][r] = v.z; As[c + 3][r] = v.w;
        }
        for (int i = tid; i < BK * BN / 4; i += THREADS) {  // float4s along a row of B
            const int r = i / (BN / 4), c = 4 * (i % (BN / 4));
            *reinterpret_cast<float4*>(&Bs[r][c]) = load4(B, t + r, n0 + c, K, N);
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&As[k][trow * TM + i]);
                a[i] = v.x; a[i + 1] = v.y; a[i + 2] = v.z; a[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[k][tcol * TN + j]);
                b[j] = v.x; b[j + 1] = v.y; b[j + 2] = v.z; b[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            store4(C, m0 + trow * TM + i, n0 + tcol * TN + j, M, N,
                   make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
}
