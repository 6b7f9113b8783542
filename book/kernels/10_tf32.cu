// 10_tf32.cu -- tensor cores, step 1: one warp per 16 x 8 tile of C, fragments read straight
// from global memory, one mma.sync m16n8k8 (TF32) per 8 values of k.
//
// Idea: a tensor core multiplies a 16 x 8 tile of A by an 8 x 8 tile of B in one warp-wide
//   instruction; the 32 lanes each hold a few elements of A, B and C in the layout of tensor.cuh.
//   Its inputs are TF32: float32 with 10 of 23 mantissa bits, so each product carries a relative
//   error of up to 2^-11 per operand.
// SPLIT = 3 (3xTF32): each operand x = big + small, big = tf32(x) and small = tf32(x - big);
//   A B = big_A big_B + (small_A big_B + big_A small_B) + small_A small_B, the last term (about
//   2^-22 relative) dropped. The two correction products go to an accumulator of their own and
//   are added to the main one at the end, so their small values are not rounded away against
//   the large running sum at every step.
// FADD = 1: each mma starts from zero and its 16 x 8 result is added to the accumulators with
//   ordinary float32 adds (rounded to nearest). The tensor core adds its own C input by cutting
//   toward zero (tensor.cuh): accumulated over K / 8 mmas, those cuts all lean one way and the
//   error grows with K; added by FADD, they stay inside each mma's 8 products.
// Launch: block (128, 1): four warps, each a 16 x 8 tile, the block 32 x 16 of C;
//   grid (CEIL_DIV(N, 16), CEIL_DIV(M, 32)); any M, N, K (elements outside read as zero).
#include "tensor.cuh"

#ifndef SPLIT
#define SPLIT 1  // 1: plain TF32; 3: 3xTF32
#endif
#ifndef FADD
#define FADD 0  // 1: add each mma's result with float32 adds instead of in the tensor core
#endif
static_assert(SPLIT == 1 || SPLIT == 3, "SPLIT is 1 (TF32) or 3 (3xTF32)");

// acc += A B for one fragment: in the tensor core (its C input), or with FADD after it.
__device__ __forceinline__ void mma_into(float (&acc)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
    if (FADD) {
        const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        float d[4];
        mma_tf32(d, a, b, zero);
        for (int i = 0; i < 4; ++i) acc[i] += d[i];
    } else {
        mma_tf32(acc, a, b, acc);
    }
}

__device__ __forceinline__ float element(const float* __restrict__ m, int r, int c, int rows,
                                         int cols) {
    return r < rows && c < cols ? m[(long long)r * cols + c] : 0.0f;
}

__device__ __forceinline__ float tf32_value(unsigned bits) { return __int_as_float((int)bits); }

extern "C" __global__ void matmul_tf32(const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, int M, int N, int K) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int m0 = blockIdx.y * 32 + warp / 2 * 16, n0 = blockIdx.x * 16 + warp % 2 * 8;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f}, fix[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += 8) {  // every lane runs every mma: no early exit
        const float a[4] = {element(A, m0 + g, k0 + t, M, K), element(A, m0 + g + 8, k0 + t, M, K),
                            element(A, m0 + g, k0 + t + 4, M, K),
                            element(A, m0 + g + 8, k0 + t + 4, M, K)};
        const float b[2] = {element(B, k0 + t, n0 + g, K, N), element(B, k0 + t + 4, n0 + g, K, N)};
        unsigned a_big[4], b_big[2];
        for (int i = 0; i < 4; ++i) a_big[i] = to_tf32(a[i]);
        for (int i = 0; i < 2; ++i) b_big[i] = to_tf32(b[i]);
        mma_into(acc, a_big, b_big);
        if (SPLIT == 3) {
            unsigned a_small[4], b_small[2];
            for (int i = 0; i < 4; ++i) a_small[i] = to_tf32(a[i] - tf32_value(a_big[i]));
            for (int i = 0; i < 2; ++i) b_small[i] = to_tf32(b[i] - tf32_value(b_big[i]));
            mma_into(fix, a_small, b_big);
            mma_into(fix, a_big, b_small);
        }
    }
    for (int i = 0; i < 4; ++i) {
        const int r = m0 + g + 8 * (i / 2), c = n0 + 2 * t + i % 2;
        if (r < M && c < N) C[(long long)r * N + c] = acc[i] + fix[i];
    }
}
