// 12_ozaki_wgmma.cu -- chapter 12: the INT8 products of the Ozaki scheme II on Hopper's warpgroup
// mma (wgmma), in place of 12_ozaki.cu's ozaki_products (one warp per 16 x 8 tile, mma.sync).
//
// Idea: as chapter 10's step 3 for TF32, but with int8 operands: a warpgroup multiplies a 64 x 32
//   tile of A by a 32 x 128 tile of B (wgmma m64n128k32, int32 sums), both read by the tensor
//   core from shared memory, K-major (the only layout 8-bit wgmma reads), 128 bytes -- 128 k's --
//   per row in the 128-byte swizzle (wgmma.cuh: the 16-byte piece j of row r at j ^ (r % 8)).
//   The residues of 12_ozaki.cu's ozaki_residues are already K-major (A's rows, B's columns along
//   k), so a k-tile of 128 rows x 128 k's is copied as it lies, piece by piece, with cp.async,
//   STAGES - 1 k-tiles ahead.
// A block: two warpgroups (256 threads), 128 x 128 of C for the modulus blockIdx.z; per k-tile,
//   4 wgmmas a warpgroup. Its sums are kept modulo the modulus (uint8), as ozaki_products's.
// Launch: block 256, grid (Np / 128, Mp / 128, n) with the residues' rows padded to 128 (Mp, Np)
//   and k to 128 (Kp), STAGES * 32 KiB + 1024 bytes of dynamic shared memory. sm_90a.
#include "wgmma.cuh"

#ifndef STAGES
#define STAGES 3
#endif
#define TILE_BYTES (128 * 128)  // one operand's k-tile: 128 rows of 128 int8

#ifdef __CUDA_ARCH__
// D (64 x 128, int32) [+]= A (64 x 32) B (32 x 128), int8 operands at a and b in shared memory as
// wgmma_m64n128_tf32's (the same bytes: a row of 128 bytes holds 128 k's instead of 32), the
// k-step's first byte given (tile + 32 s). d in the same layout.
__device__ __forceinline__ void wgmma_m64n128_s8(int (&d)[64], const signed char* a,
                                                 const signed char* b, bool accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 "
                 WGMMA_D64_REGS
                 ", %64, %65, p;\n}\n"
                 : WGMMA_D64_AS("+r", d)
                 : "l"(tf32_descriptor(reinterpret_cast<const float*>(a))),
                   "l"(tf32_descriptor(reinterpret_cast<const float*>(b))), "r"(int(accumulate)));
}
__device__ __forceinline__ void fence_int_registers(int (&d)[64]) {
    for (int i = 0; i < 64; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
#else
// The CPU emulator: the warp's 16 mma.sync m16n8k32 s8 (exact integer sums, as the wgmma's).
inline void wgmma_m64n128_s8(int (&d)[64], const signed char* a, const signed char* b,
                             bool accumulate) {
    const int w = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const float* fa = reinterpret_cast<const float*>(a);
    const float* fb = reinterpret_cast<const float*>(b);
    using wgmma_emu::swizzled;  // (4 bytes at byte 4 k of row `row`)
    const unsigned ra[4] = {swizzled(fa, 16 * w + g, t), swizzled(fa, 16 * w + g + 8, t),
                            swizzled(fa, 16 * w + g, t + 4), swizzled(fa, 16 * w + g + 8, t + 4)};
    for (int j = 0; j < 16; ++j) {
        const unsigned rb[2] = {swizzled(fb, 8 * j + g, t), swizzled(fb, 8 * j + g, t + 4)};
        const int c[4] = {accumulate ? d[4 * j] : 0, accumulate ? d[4 * j + 1] : 0,
                          accumulate ? d[4 * j + 2] : 0, accumulate ? d[4 * j + 3] : 0};
        int out[4];
        ::cuda_emu::mma_s8(__LINE__, out, ra, rb, c);
        for (int i = 0; i < 4; ++i) d[4 * j + i] = out[i];
    }
}
inline void fence_int_registers(int (&)[64]) {}
#endif

// For modulus l = blockIdx.z: R[l * r_slice + i * N + j] = (RA_l RB_l^T)(i, j) mod m_l, for the
// block's 128 x 128 of C. RA_l, RB_l: Mp and Np rows of Kp int8 (multiples of 128).
extern "C" __global__ void __launch_bounds__(256)
ozaki_products_wgmma(const signed char* __restrict__ RA, const signed char* __restrict__ RB,
                     unsigned char* __restrict__ R, int M, int N, int Kp, long long a_slice,
                     long long b_slice, long long r_slice, const int* __restrict__ moduli) {
    extern __shared__ __align__(16) unsigned char raw[];
    unsigned char* smem = align_1024(raw);
    const int l = blockIdx.z, wg = threadIdx.x / 128;
    const signed char* a0 = RA + l * a_slice + (long long)blockIdx.y * 128 * Kp;
    const signed char* b0 = RB + l * b_slice + (long long)blockIdx.x * 128 * Kp;
    const int tiles = Kp / 128;
    auto copy_tile = [&](int s, int t) {  // k-tile t of A's and B's 128 rows into stage s
        unsigned char* sa = smem + s * 2 * TILE_BYTES;
        for (int p = threadIdx.x; p < 1024; p += 256) {  // 16-byte piece p: row p / 8, piece p % 8
            const int r = p / 8, j = p % 8, at = r * 128 + ((j ^ (r % 8)) * 16);
            const long long from = (long long)r * Kp + t * 128 + j * 16;
            copy16_aligned(reinterpret_cast<float*>(sa + at),
                           reinterpret_cast<const float*>(a0 + from));
            copy16_aligned(reinterpret_cast<float*>(sa + TILE_BYTES + at),
                           reinterpret_cast<const float*>(b0 + from));
        }
    };
    int acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0;
#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {  // fill all stages but one
        if (t < tiles) copy_tile(t, t);
        commit();
    }
    for (int t = 0; t < tiles; ++t) {
        wait_groups<STAGES - 2>();  // this thread's copies of tile t have landed ...
        __syncthreads();            // ... and everyone's; every wgmma of tile t - 1 is done
        if (t + STAGES - 1 < tiles) copy_tile((t + STAGES - 1) % STAGES, t + STAGES - 1);
        commit();
        const signed char* sa =
            reinterpret_cast<const signed char*>(smem + (t % STAGES) * 2 * TILE_BYTES);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
            wgmma_m64n128_s8(acc, sa + wg * 64 * 128 + 32 * ks, sa + TILE_BYTES + 32 * ks, true);
        wgmma_commit();
        wgmma_wait<0>();
        fence_int_registers(acc);
    }
    const int m = moduli[l], w = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, tq = lane % 4;
#pragma unroll
    for (int q = 0; q < 64; ++q) {
        const int j = q / 4, i = q % 4;
        const int row = blockIdx.y * 128 + wg * 64 + 16 * w + g + 8 * (i / 2);
        const int col = blockIdx.x * 128 + 8 * j + 2 * tq + i % 2;
        if (row < M && col < N) {
            int r = acc[q] % m;
            if (r < 0) r += m;
            R[l * r_slice + (long long)row * N + col] = (unsigned char)r;
        }
    }
}
