// 00_fma_peak.cu -- chapter 0: the FP32 arithmetic ceiling, measured.
//
// Idea: every thread runs CHAINS independent chains of fused multiply-adds in registers,
//   x = x * b + c, touching memory only once at the end. With enough warps per SM and enough
//   independent chains per warp, every FP32 lane retires one FMA (2 FLOPs) per cycle.
// Expected bottleneck: the FMA pipes themselves -- nothing else is in the loop.
// Check: x converges to the fixed point c / (1 - b); the kernel's outputs must be close to it.
#ifndef CHAINS
#define CHAINS 8
#endif

extern "C" __global__ void fma_peak(float* out, int iters, float b, float c) {
    float x[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) x[j] = threadIdx.x * 1e-3f + j;
    // Unrolled so that the loop's counter and branch take a negligible share of issue slots.
#pragma unroll 16
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < CHAINS; ++j) x[j] = fmaf(x[j], b, c);
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) sum += x[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum / CHAINS;
}
