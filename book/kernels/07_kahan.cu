// 07_kahan.cu -- chapter 7: Kahan-compensated float32 accumulation (source 004).
//
// Idea: a float32 running sum loses the low bits of every term it adds once the sum is much
//   larger than the term. Kahan's compensated summation keeps those lost bits in a second float
//   (comp) and feeds them back into the next term, so the error no longer grows with K.
//   One step, for the product p = a * b:
//       y    = p - comp;        // the new term, corrected by what the last addition lost
//       t    = sum + y;         // rounded: low bits of y are lost here ...
//       comp = (t - sum) - y;   // ... and recovered exactly here (minus sign included)
//       sum  = t;
// Changed from 02_naive.cu / 04_tiled.cu: the accumulation only (4 FP32 operations per term
//   instead of 1 FMA). The kernels must be compiled without fast-math reassociation, which
//   would simplify comp to 0; NVRTC never reassociates. With FMA contraction (NVRTC's default)
//   the first line becomes one fma(a, b, -comp); chapter 7 measures both ways.
// Expected bottleneck: as the plain kernels, plus 3 more dependent FP32 operations per term.
// Launch: as matmul_naive (block (b, b), grid (CEIL_DIV(N, b), CEIL_DIV(M, b))) and as
//   matmul_tiled (block (TILE, TILE)); any M, N, K.
#include "common.cuh"

#ifndef TILE
#define TILE 16
#endif

// One compensated step: sum += p, with the rounding error carried in comp.
__device__ __forceinline__ void kahan_add(float& sum, float& comp, float p) {
    const float y = p - comp;
    const float t = sum + y;
    comp = (t - sum) - y;
    sum = t;
}

extern "C" __global__ void matmul_naive_kahan(const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ C,
                                              int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float sum = 0.0f, comp = 0.0f;
    for (int k = 0; k < K; ++k) kahan_add(sum, comp, A[row * K + k] * B[k * N + col]);
    C[row * N + col] = sum;
}

extern "C" __global__ void matmul_tiled_kahan(const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ C,
                                              int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float sum = 0.0f, comp = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) kahan_add(sum, comp, As[ty][k] * Bs[k][tx]);
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = sum;
}
