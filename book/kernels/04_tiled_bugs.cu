// 04_tiled_bugs.cu -- chapter 4: the source articles' tiled kernels, as they wrote them.
//
// Rewritten in our names (float, C = A * B with A M x K, B K x N), each keeps exactly the one
// feature the chapter examines. They are in the registry so that the check, the tests and the
// sanitizer treat them like every other kernel; the check is what tells the wrong ones apart.
#include "common.cuh"

#ifndef TILE
#define TILE 16
#endif

// Source 000: stores C inside the tile loop (after every tile, not once at the end) and writes
// and reads both tiles transposed (As[tx][ty], then As[k][ty] * Bs[tx][k]).
extern "C" __global__ void matmul_tiled_src000(const float* __restrict__ A,
                                               const float* __restrict__ B, float* __restrict__ C,
                                               int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < (K - 1) / TILE + 1; ++t) {
        As[tx][ty] = (row < M && t * TILE + tx < K) ? A[row * K + t * TILE + tx] : 0.0f;
        Bs[tx][ty] = (t * TILE + ty < K && col < N) ? B[(t * TILE + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[k][ty] * Bs[tx][k];
        __syncthreads();
        if (row < M && col < N) C[row * N + col] = acc;  // inside the loop
    }
}

// Source 001: the loop runs gridDim.x times -- the number of tiles along N, not along K. The
// loads are bounds-checked, so it is right whenever CEIL_DIV(N, TILE) >= CEIL_DIV(K, TILE)
// (square matrices included) and wrong when K needs more tiles than N.
extern "C" __global__ void matmul_tiled_src001(const float* __restrict__ A,
                                               const float* __restrict__ B, float* __restrict__ C,
                                               int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int sub = 0; sub < gridDim.x; ++sub) {
        const int t = sub * TILE;
        As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

// Sources 002 and 003: no bounds checks; M, N and K are assumed to be multiples of TILE. Launched
// as they launch it, with a grid of N / TILE x M / TILE blocks (rounded down) and K / TILE tiles,
// so it never touches memory outside the matrices -- it silently leaves out the last rows and
// columns of C and the last K % TILE terms of every sum.
extern "C" __global__ void matmul_tiled_divisible(const float* __restrict__ A,
                                                  const float* __restrict__ B,
                                                  float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K / TILE; ++t) {
        As[ty][tx] = A[row * K + t * TILE + tx];
        Bs[ty][tx] = B[(t * TILE + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * N + col] = acc;
}
