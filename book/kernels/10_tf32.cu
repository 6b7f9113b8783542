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

// Step 2: shared-memory tiles. A block computes TBM x TBN = 128 x 128 of C with 8 warps in
// 2 x 4, each warp 64 x 32 = 4 x 4 mma tiles, so a warp's fragments of A serve 4 mmas and those
// of B 4. Tiles of TBK = 16 values of k are staged in shared memory (A transposed, k-major), the
// rows padded by 8 floats: a fragment's 32 reads (8 rows g x 4 k's t) then fall in 32 different
// banks (8t + g). Launch: block (256, 1), grid (CEIL_DIV(N, 128), CEIL_DIV(M, 128)); any M, N, K.
#define TBM 128
#define TBN 128
#define TBK 16
#define TPAD 8
#define MI 4  // mma tiles per warp along M (16 rows each)
#define NI 4  // along N (8 columns each)

extern "C" __global__ void __launch_bounds__(256)
matmul_tf32_tiled(const float* __restrict__ A, const float* __restrict__ B,
                  float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TBK][TBM + TPAD], Bs[TBK][TBN + TPAD];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int m0 = blockIdx.y * TBM, n0 = blockIdx.x * TBN;
    const int wm = warp / 4 * (MI * 16), wn = warp % 4 * (NI * 8);  // the warp's corner
    float acc[MI][NI][4] = {}, fix[MI][NI][4] = {};
    for (int k0 = 0; k0 < K; k0 += TBK) {
        for (int e = tid; e < TBM * TBK; e += 256) {  // A: along k, 16 floats per row
            const int r = e / TBK, c = e % TBK;
            As[c][r] = element(A, m0 + r, k0 + c, M, K);
        }
        for (int e = tid; e < TBK * TBN; e += 256) {  // B: along n
            const int r = e / TBN, c = e % TBN;
            Bs[r][c] = element(B, k0 + r, n0 + c, K, N);
        }
        __syncthreads();
        for (int ks = 0; ks < TBK; ks += 8) {
            float a[MI][4], b[NI][2];
            for (int mi = 0; mi < MI; ++mi) {
                const int r = wm + mi * 16 + g;
                a[mi][0] = As[ks + t][r], a[mi][1] = As[ks + t][r + 8];
                a[mi][2] = As[ks + t + 4][r], a[mi][3] = As[ks + t + 4][r + 8];
            }
            for (int ni = 0; ni < NI; ++ni) {
                const int c = wn + ni * 8 + g;
                b[ni][0] = Bs[ks + t][c], b[ni][1] = Bs[ks + t + 4][c];
            }
            unsigned a_big[MI][4], b_big[NI][2], a_small[MI][4] = {}, b_small[NI][2] = {};
            for (int mi = 0; mi < MI; ++mi)
                for (int i = 0; i < 4; ++i) {
                    a_big[mi][i] = to_tf32(a[mi][i]);
                    if (SPLIT == 3) a_small[mi][i] = to_tf32(a[mi][i] - tf32_value(a_big[mi][i]));
                }
            for (int ni = 0; ni < NI; ++ni)
                for (int i = 0; i < 2; ++i) {
                    b_big[ni][i] = to_tf32(b[ni][i]);
                    if (SPLIT == 3) b_small[ni][i] = to_tf32(b[ni][i] - tf32_value(b_big[ni][i]));
                }
            for (int mi = 0; mi < MI; ++mi)
                for (int ni = 0; ni < NI; ++ni) {
                    mma_into(acc[mi][ni], a_big[mi], b_big[ni]);
                    if (SPLIT == 3) {
                        mma_into(fix[mi][ni], a_small[mi], b_big[ni]);
                        mma_into(fix[mi][ni], a_big[mi], b_small[ni]);
                    }
                }
        }
        __syncthreads();
    }
    for (int mi = 0; mi < MI; ++mi)
        for (int ni = 0; ni < NI; ++ni)
            for (int i = 0; i < 4; ++i) {
                const int r = m0 + wm + mi * 16 + g + 8 * (i / 2);
                const int c = n0 + wn + ni * 8 + 2 * t + i % 2;
                if (r < M && c < N) C[(long long)r * N + c] = acc[mi][ni][i] + fix[mi][ni][i];
            }
}

// The ceiling of mma.sync with TF32: every warp runs CHAINS independent chains of m16n8k8 mmas
// on fragments held in registers, touching memory once at the end (like 00_fma_peak.cu for the
// FMA units). Launch: block 256, as many blocks as fill the GPU; iters mmas per chain.
#ifndef CHAINS
#define CHAINS 16
#endif
extern "C" __global__ void mma_peak(float* out, int iters) {
    unsigned a[4], b[2];
    for (int i = 0; i < 4; ++i) a[i] = to_tf32(1e-3f * (threadIdx.x % 32 + i));
    for (int i = 0; i < 2; ++i) b[i] = to_tf32(1e-3f * (threadIdx.x % 32 - i));
    float acc[CHAINS][4] = {};
    for (int it = 0; it < iters; ++it)
        for (int j = 0; j < CHAINS; ++j) mma_tf32(acc[j], a, b, acc[j]);
    float sum = 0.0f;
    for (int j = 0; j < CHAINS; ++j) sum += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
