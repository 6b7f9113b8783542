// 04_row_shared.cu -- chapter 4: one row of A in shared memory per block (source 004's kernel).
//
// Idea: block r computes row r of C. Its threads first copy row r of A (K floats) into dynamic
//   shared memory, then each thread computes the columns j = tx, tx + blockDim.x, ... of that row
//   from shared memory (A) and global memory (B).
// Changed from the naive kernel: A is read from global memory once per row instead of once per
//   element of C; B is still read once per FMA.
// Expected bottleneck: global loads of B (4 bytes per FMA, half of the naive kernel's 8).
// Launch: block (threads, 1), grid (M, 1), dynamic shared memory for K floats rounded up to a
//   multiple of 16 bytes: the compiler reads a_row four floats at a time (LDS.128), and the last
//   16-byte read of a row of K = 17 floats touches floats 16..19.
#include "common.cuh"

extern "C" __global__ void matmul_row_shared(const float* __restrict__ A,
                                             const float* __restrict__ B, float* __restrict__ C,
                                             int M, int N, int K) {
    extern __shared__ float a_row[];  // K floats: row blockIdx.x of A
    const int row = blockIdx.x;
    for (int k = threadIdx.x; k < K; k += blockDim.x) a_row[k] = A[row * K + k];
    __syncthreads();
    for (int col = threadIdx.x; col < N; col += blockDim.x) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += a_row[k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
