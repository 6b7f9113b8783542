// 04_tiled.cu -- chapter 4: shared-memory tiling.
//
// Idea: a TILE x TILE block of threads computes a TILE x TILE tile of C. It walks along K in steps
//   of TILE; at each step the block loads one tile of A and one of B into shared memory (one
//   element per thread), waits at a barrier, and every thread does TILE FMAs from shared memory.
// Changed from the naive kernel: each float loaded from global memory is used TILE times, so
//   global traffic per FMA falls by a factor of TILE.
// Expected bottleneck: shared-memory loads (two per FMA) and the barriers between tiles.
// Launch: block (TILE, TILE), grid (CEIL_DIV(N, TILE), CEIL_DIV(M, TILE)). Any M, N, K: loads
//   outside A or B read as zero, stores outside C are skipped.
#include "common.cuh"

#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
