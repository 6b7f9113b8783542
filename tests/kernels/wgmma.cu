// A kernel that tests wgmma against mma.sync on both backends (tests/test_tensor_cores.py).
#include "wgmma.cuh"

// wgmma against mma: A (64 x 32), B (32 x 128), C (64 x 128) row-major; one warpgroup. D1: four
// chained wgmma_m64n128_tf32 (k-steps 0..3, from the swizzled shared tiles), accumulating from C
// when `from_c`; D2: the same sums as each warp's chain of mma_tf32 per 8 columns, fragments read
// straight from A and B. Compiled for sm_90a on the GPU.
extern "C" __global__ void wgmma_vs_mma(const float* A, const float* B, const float* C, float* D1,
                                        float* D2, int from_c) {
    extern __shared__ __align__(16) float dynamic[];
    float* a_tile = align_1024(dynamic);  // 64 rows (of 128) used
    float* b_tile = a_tile + 128 * 32;
    const int tid = threadIdx.x, w = tid / 32, g = tid % 32 / 4, t = tid % 4;
    for (int e = tid; e < 128 * 32; e += 128) {
        const int r = e / 32, k = e % 32;
        a_tile[tf32_swizzle(r, k)] = r < 64 ? A[r * 32 + k] : 0.0f;
        b_tile[tf32_swizzle(r, k)] = B[k * 128 + r];
    }
#ifdef __CUDA_ARCH__
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
    __syncthreads();
    float d[64];
    for (int j = 0; j < 16; ++j)
        for (int i = 0; i < 4; ++i) d[4 * j + i] = C[(16 * w + g + 8 * (i / 2)) * 128 + 8 * j + 2 * t + i % 2];
    wgmma_fence();
    for (int s = 0; s < 4; ++s) wgmma_m64n128_tf32(d, a_tile + 8 * s, b_tile + 8 * s, from_c || s > 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(d);
    for (int j = 0; j < 16; ++j) {
        float c[4], out[4];
        for (int i = 0; i < 4; ++i) {
            const int r = 16 * w + g + 8 * (i / 2), col = 8 * j + 2 * t + i % 2;
            c[i] = from_c ? C[r * 128 + col] : 0.0f;
            D1[r * 128 + col] = d[4 * j + i];
        }
        for (int s = 0; s < 4; ++s) {
            const int r = 16 * w + g, k = 8 * s + t, col = 8 * j + g;
            const unsigned a[4] = {(unsigned)__float_as_int(A[r * 32 + k]), (unsigned)__float_as_int(A[(r + 8) * 32 + k]),
                                   (unsigned)__float_as_int(A[r * 32 + k + 4]), (unsigned)__float_as_int(A[(r + 8) * 32 + k + 4])};
            const unsigned b[2] = {(unsigned)__float_as_int(B[k * 128 + col]), (unsigned)__float_as_int(B[(k + 4) * 128 + col])};
            mma_tf32(out, a, b, c);
            for (int i = 0; i < 4; ++i) c[i] = out[i];
        }
        for (int i = 0; i < 4; ++i) D2[(16 * w + g + 8 * (i / 2)) * 128 + 8 * j + 2 * t + i % 2] = c[i];
    }
}

// tf32_swizzle as the kernels compute it, for the picture of chapter 10: out[r * 32 + k].
extern "C" __global__ void swizzle_offsets(int* out, int rows) {
    for (int e = threadIdx.x; e < rows * 32; e += blockDim.x) out[e] = tf32_swizzle(e / 32, e % 32);
}

// mbarriers as a producer and its consumers use them (matmul_tf32x3_ws's pattern), on both
// backends: thread 32 (the producer) writes round r's value into slot r % 2 of a shared ring and
// arrives on full[r % 2], having first waited on empty[r % 2] for the round before it there; the
// 32 threads of warp 0 wait on full, read, and arrive on empty. out[32 r + lane] = r + lane.
// `empty_count` is how many arrivals a phase of empty waits for: 32 is right, more deadlocks
// (on the emulator, an error; on a GPU, a hang). Launch: block 64, one block.
extern "C" __global__ void handoff(float* out, int rounds, int empty_count) {
    __shared__ float ring[2][32];
    __shared__ unsigned long long full[2], empty[2];
    const int tid = threadIdx.x;
    if (tid == 0)
        for (int s = 0; s < 2; ++s) barrier_init(&full[s]), barrier_init(&empty[s], empty_count);
    __syncthreads();
    if (tid == 32) {
        for (int r = 0; r < rounds; ++r) {
            if (r >= 2) barrier_wait(&empty[r % 2], (r / 2 - 1) % 2);
            for (int l = 0; l < 32; ++l) ring[r % 2][l] = float(r + l);
            barrier_arrive(&full[r % 2]);
        }
    } else if (tid < 32) {
        for (int r = 0; r < rounds; ++r) {
            barrier_wait(&full[r % 2], r / 2 % 2);
            out[32 * r + tid] = ring[r % 2][tid];
            barrier_arrive(&empty[r % 2]);
        }
    }
}
