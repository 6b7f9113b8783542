// 06_coarsen.cu -- chapter 6: thread coarsening, OUT outputs of C per thread (source 003's ILP).
//
// Idea: the 32x32 tiled kernel, with each thread computing OUT elements of C in one column
//   (rows ty, ty + ROWS, ty + 2 ROWS, ...; ROWS = TILE / OUT threads rows per block). In the
//   inner loop a thread reads Bs[k][tx] once into a register and uses it for OUT FMAs.
// Changed from 04_tiled.cu: blocks of TILE x ROWS threads; each thread loads OUT elements of each
//   tile and keeps OUT accumulators. Shared loads per FMA fall from 2 to 1 + 1/OUT.
// Expected bottleneck: shared-memory loads at OUT = 1; at large OUT, fewer threads per block
//   (less latency hiding) and more registers per thread.
// Launch: block (TILE, TILE / OUT), grid (CEIL_DIV(N, TILE), CEIL_DIV(M, TILE)); any M, N, K.
#include "common.cuh"

#ifndef TILE
#define TILE 32
#endif
#ifndef OUT
#define OUT 2
#endif
#define ROWS (TILE / OUT)

extern "C" __global__ void matmul_coarse(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * TILE;
    const int col = blockIdx.x * TILE + tx;
    float acc[OUT];
#pragma unroll
    for (int i = 0; i < OUT; ++i) acc[i] = 0.0f;
    for (int t = 0; t < K; t += TILE) {
#pragma unroll
        for (int i = 0; i < OUT; ++i) {
            const int r = ty + i * ROWS;
            As[r][tx] = (row0 + r < M && t + tx < K) ? A[(row0 + r) * K + t + tx] : 0.0f;
            Bs[r][tx] = (t + r < K && col < N) ? B[(t + r) * N + col] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            const float b = Bs[k][tx];
#pragma unroll
            for (int i = 0; i < OUT; ++i) acc[i] += As[ty + i * ROWS][k] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < OUT; ++i) {
        const int row = row0 + ty + i * ROWS;
        if (row < M && col < N) C[row * N + col] = acc[i];
    }
}
