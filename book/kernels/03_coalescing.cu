// 03_coalescing.cu -- chapter 3: the naive kernel with threadIdx.x along the rows of C.
//
// Idea: the same arithmetic as matmul_naive (02_naive.cu), with the two thread indices swapped:
//   threadIdx.x now runs down a column of C (row = blockIdx.x * blockDim.x + threadIdx.x).
// Changed from the naive kernel: only which index is fastest-varying within a warp. The 32
//   threads of a warp now hold 32 different rows: at each k they read 32 floats of A that lie K
//   floats apart (one 32-byte sector each) and one float of B (broadcast), and they store to 32
//   different rows of C.
// Expected bottleneck: global loads of A, no longer coalesced -- up to 32 sectors per warp-wide
//   load where matmul_naive needs 1 for A and 4 for B.
// Launch: block (bx, by), grid (CEIL_DIV(M, bx), CEIL_DIV(N, by)): the grid's x covers rows.
#include "common.cuh"

extern "C" __global__ void matmul_naive_xrows(const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ C,
                                              int M, int N, int K) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
