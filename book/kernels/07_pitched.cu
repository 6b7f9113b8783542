// 07_pitched.cu -- chapter 7: matrices whose rows start at a chosen pitch (source 004).
//
// Idea: row r of a matrix starts at element r * ld, where the leading dimension ld >= the row's
//   length can be rounded up so that every row starts on an aligned address (what
//   cudaMallocPitch does). The elements between a row's end and the next row's start are never
//   read or written.
// Changed from 04_row_shared.cu and 04_tiled.cu: every index uses lda, ldb, ldc instead of K, N, N.
//   With lda = K, ldb = ldc = N they compute exactly what those kernels compute.
// Expected bottleneck: as those kernels; aligned rows can only save the extra memory sectors a
//   warp touches when its 32 floats straddle a boundary.
// Launch: matmul_row_shared_ld as matmul_row_shared (one block per row of C, 16 * CEIL_DIV(K, 4)
//   bytes of dynamic shared memory); matmul_tiled_ld as matmul_tiled. Any M, N, K.
#include "common.cuh"

#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void matmul_row_shared_ld(const float* __restrict__ A,
                                                const float* __restrict__ B, float* __restrict__ C,
                                                int M, int N, int K, int lda, int ldb, int ldc) {
    extern __shared__ float a_row[];
    const int row = blockIdx.x;
    for (int k = threadIdx.x; k < K; k += blockDim.x) a_row[k] = A[row * lda + k];
    __syncthreads();
    for (int col = threadIdx.x; col < N; col += blockDim.x) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += a_row[k] * B[k * ldb + col];
        C[row * ldc + col] = acc;
    }
}

extern "C" __global__ void matmul_tiled_ld(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K,
                                           int lda, int ldb, int ldc) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = (row < M && t + tx < K) ? A[row * lda + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * ldb + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * ldc + col] = acc;
}
