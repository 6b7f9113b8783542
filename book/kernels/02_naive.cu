// 02_naive.cu -- chapter 2: the naive kernel, one thread per element of C.
//
// Idea: the CPU loop's two outer loops (over rows and columns of C) become the grid of threads;
//   each thread runs the inner k loop for its own C[row][col].
// Changed from chapter 1: nothing but the mapping of (row, col) to threads; bounds checks make it
//   correct for any M, N, K.
// Expected bottleneck: global-memory traffic. Every FMA loads one float of A and one of B
//   (2 loads per 2 FLOPs), and no value is reused from fast memory by the kernel itself.
#include "common.cuh"

// 2D grid: threadIdx.x runs along the columns of C, so the 32 threads of a warp read 32
// consecutive floats of a row of B and one (broadcast) float of A.
extern "C" __global__ void matmul_naive(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

// 1D grid (as source 004 writes it): thread idx covers element idx of C, row = idx / N and
// col = idx % N, so consecutive threads still walk along a row of C.
extern "C" __global__ void matmul_naive_1d(const float* __restrict__ A,
                                           const float* __restrict__ B, float* __restrict__ C,
                                           int M, int N, int K) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)M * N) return;
    const int row = (int)(idx / N), col = (int)(idx % N);
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
