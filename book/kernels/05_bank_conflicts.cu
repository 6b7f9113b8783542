// 05_bank_conflicts.cu -- chapter 5: shared-memory banks.
//
// Shared memory is 32 banks of 4-byte words; word w lives in bank w % 32. A warp's access takes
// one pass (wavefront) per distinct word in its most-used bank, so 32 threads reading 32 words in
// one bank take 32 passes, while threads reading the same word share it (broadcast).
#include "common.cuh"

#ifndef TILE
#define TILE 32
#endif
#ifndef PAD
#define PAD 0
#endif

// The tiled kernel of 04_tiled.cu with the A tile stored transposed: the loads from global
// memory stay coalesced (thread tx reads A[row0 + ty][t + tx]) but the thread writes
// AsT[tx][ty], i.e. word tx * (TILE + PAD) + ty. With TILE = 32 and PAD = 0 the 32 threads of a
// warp (same ty, tx = 0..31) write one bank 32 times: a 32-way store conflict. PAD = 1 makes the
// row length 33 words, so the same column runs through all 32 banks. The inner loop reads
// AsT[k][ty] (one word per warp row: a broadcast) and Bs[k][tx] (32 consecutive words).
// Launch: block (TILE, TILE), grid (CEIL_DIV(N, TILE), CEIL_DIV(M, TILE)); any M, N, K.
extern "C" __global__ void matmul_tiled_tstore(const float* __restrict__ A,
                                               const float* __restrict__ B,
                                               float* __restrict__ C, int M, int N, int K) {
    __shared__ float AsT[TILE][TILE + PAD];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        AsT[tx][ty] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += AsT[k][ty] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

// Source 001's kernel "that creates store bank conflicts", as written (in our names): the load
// indices were swapped along with the store indices, so thread (tx, ty) loads
// A[row0 + ty][t + ty] and B[t + tx][col0 + tx] -- diagonal elements -- and every thread of a
// row stores the same value. The inner loop then multiplies the wrong numbers. The source
// checked it with A all ones and B all zeros, where every kernel returns zeros.
extern "C" __global__ void matmul_tiled_src001_tstore(const float* __restrict__ A,
                                                      const float* __restrict__ B,
                                                      float* __restrict__ C,
                                                      int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[tx][ty] = (row < M && t + ty < K) ? A[row * K + t + ty] : 0.0f;
        Bs[tx][ty] = (t + tx < K && col < N) ? B[(t + tx) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

// Microbenchmark: every warp reads shared memory at word lane * stride, `iters` times. The
// reads are volatile, so each one is issued. With 32 banks the predicted conflict degree is
// gcd(stride, 32): stride 1 and every odd stride hit 32 banks; stride 32 hits one.
// Launch: block (threads, 1) with threads a multiple of 32, any grid; stride 1 ... 33.
#define STRIDE_WORDS 1056  // 32 * 33 words: lane * stride stays inside for stride <= 33
extern "C" __global__ void smem_stride(float* __restrict__ out, int stride, int iters) {
    __shared__ float buf[STRIDE_WORDS];
    for (int i = threadIdx.x; i < STRIDE_WORDS; i += blockDim.x) buf[i] = (float)i;
    __syncthreads();
    const volatile float* v = buf;
    const int idx = ((threadIdx.x & 31) * stride) % STRIDE_WORDS;
    float acc = 0.0f;
#pragma unroll 8
    for (int i = 0; i < iters; ++i) acc += v[idx];
    if (acc == -1.0f) out[blockIdx.x] = acc;  // never true; keeps the loads alive
}
