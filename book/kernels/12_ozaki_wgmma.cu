// 12_ozaki_wgmma.cu -- chapter 12: the INT8 products of the Ozaki scheme II on Hopper's warpgroup
// mma (wgmma), in place of 12_ozaki.cu's ozaki_products (one warp per 16 x 8 tile, mma.sync).
//
// Idea: as chapter 10's step 4 for TF32, but with int8 operands: a warpgroup multiplies a 64 x 32
//   tile of A by a 32 x 256 tile of B (wgmma m64n256k32, int32 sums), both read by the tensor
//   core from shared memory, K-major (the only layout 8-bit wgmma reads), 128 bytes -- 128 k's --
//   per row in the 128-byte swizzle (wgmma.cuh: the 16-byte piece j of row r at j ^ (r % 8)).
//   12_ozaki.cu's ozaki_residues writes the residues in exactly that layout, in records of 128
//   rows x 128 k's (16 KiB), so a stage -- A's record and B's two -- comes in as three bulk
//   copies (cp.async.bulk), counted on an mbarrier, no address computed by any thread.
// A block: a tile of 128 x 256 of C at a time, three warpgroups (384 threads): one thread of
//   the third issues the copies, STAGES k-tiles ahead, each into a stage as soon as both
//   computing warpgroups have released it (the `empty` mbarriers) -- across the end of a tile,
//   into the next; the two others, 64 rows each, run 4 wgmmas per k-tile and keep one k-tile's
//   in flight (wgmma_wait<1>) while the next is issued. The sums end modulo the modulus (uint8),
//   as ozaki_products's. Tiles go in groups of GROUP_M rows of tiles (as chapter 9's), so that
//   the records the blocks read at one time stay in L2.
// Launch: block 384, a block per SM (or fewer: one per tile), with the residues' rows padded to
//   128 (A's, Mp) and 256 (B's, Np), k to 128 (Kp); STAGES * 48 KiB + 1024 bytes of dynamic
//   shared memory. sm_90a.
#include "ozaki.cuh"
#include "wgmma.cuh"

#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#define RECORD 16384                 // bytes of one record: 128 rows of 128 int8
#define EPI_PITCH 264                // bytes a row of a warp's 16 x 256 residues of C
#define STAGE_BYTES (3 * RECORD)     // A's record, then B's two

// The 128 accumulator registers of a m64n256 wgmma (operands %0 .. %127).
#define WGMMA_D128_REGS \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"

#ifdef __CUDA_ARCH__
// D (64 x 256, int32) [+]= A (64 x 32) B (32 x 256), int8 operands at a and b in shared memory as
// wgmma_m64n128_tf32's (the same bytes: a row of 128 bytes holds 128 k's instead of 32; B's 256
// rows are two records one after the other), the k-step's first byte given (row 0 + 32 s).
// d[4 j + i] = D[16 w + g + 8 (i / 2)][8 j + 2 t + i % 2], j < 32.
__device__ __forceinline__ void wgmma_m64n256_s8(int (&d)[128], const signed char* a,
                                                 const signed char* b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 "
                 WGMMA_D128_REGS
                 ", %128, %129, 1;\n"
                 : WGMMA_D64_AS("+r", d), WGMMA_D64_AS("+r", (d + 64))
                 : "l"(tf32_descriptor(reinterpret_cast<const float*>(a))),
                   "l"(tf32_descriptor(reinterpret_cast<const float*>(b))));
}
__device__ __forceinline__ void fence_int_registers(int (&d)[128]) {
    for (int i = 0; i < 128; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
#else
// The CPU emulator: the warp's 32 mma.sync m16n8k32 s8 (exact integer sums, as the wgmma's).
inline void wgmma_m64n256_s8(int (&d)[128], const signed char* a, const signed char* b) {
    const int w = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const float* fa = reinterpret_cast<const float*>(a);
    const float* fb = reinterpret_cast<const float*>(b);
    using wgmma_emu::swizzled;  // (4 bytes at byte 4 k of row `row`)
    const unsigned ra[4] = {swizzled(fa, 16 * w + g, t), swizzled(fa, 16 * w + g + 8, t),
                            swizzled(fa, 16 * w + g, t + 4), swizzled(fa, 16 * w + g + 8, t + 4)};
    for (int j = 0; j < 32; ++j) {
        const unsigned rb[2] = {swizzled(fb, 8 * j + g, t), swizzled(fb, 8 * j + g, t + 4)};
        const int c[4] = {d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]};
        int out[4];
        ::cuda_emu::mma_s8(__LINE__, out, ra, rb, c);
        for (int i = 0; i < 4; ++i) d[4 * j + i] = out[i];
    }
}
inline void fence_int_registers(int (&)[128]) {}
#endif

// v mod M for a constant modulus M: v + M 2^23 is non-negative (|v| <= K (M/2 + 1)^2 < M 2^23 for
// K <= MAX_K) and congruent to v, so its unsigned remainder by M -- a multiply and shifts -- is
// the residue. M = 0: the modulus m at run time (ozaki.cuh's mod_of, inv = 1 / m). M = LEVELS:
// the accuracy guard's slice of levels, whose sum is kept as its level_code (ozaki.cuh).
#define LEVELS (-1)
template <int M> __device__ __forceinline__ unsigned residue(int v, int m, float inv) {
    if constexpr (M > 0) return ((unsigned)v + ((unsigned)M << 23)) % (unsigned)M;
    else if constexpr (M == LEVELS) return level_code(v);
    else return (unsigned)mod_of(v, m, inv);
}

// A warp's sums acc (its thread's 128, d[4 j + i] as wgmma_m64n256_s8 lays them out) modulo M
// (residue), a byte each, into the warp's 16 rows of `mine` (EPI_PITCH bytes apart).
template <int M>
__device__ __forceinline__ void stage_mod(const int (&acc)[128], unsigned char* mine, int g, int tq,
                                          int m = M) {
    const float inv = 1.0f / m;  // (M > 0: unused)
#pragma unroll
    for (int q = 0; q < 128; q += 2) {
        const int r = g + 8 * (q % 4 / 2), c = 8 * (q / 4) + 2 * tq;
        *reinterpret_cast<unsigned short*>(mine + r * EPI_PITCH + c) =
            (unsigned short)(residue<M>(acc[q], m, inv) | residue<M>(acc[q + 1], m, inv) << 8);
    }
}

// R[l * r_slice + i * N + j] = (RA_l RB_l^T)(i, j) mod m_l for every modulus l < plain, and for
// plain <= l < n (the accuracy guard's slice of levels; plain = n without it) as its level_code: the tiles of
// 128 x 256 of C, modulus by modulus, taken by the blocks in turn (tile blockIdx.x, then
// blockIdx.x + gridDim.x, ...: a block per SM, so that the copies of a block's next tile are
// on their way while it finishes this one). RA_l, RB_l: Mp and Np rows of Kp int8 in records
// (ozaki.cuh's record_offset).
extern "C" __global__ void __launch_bounds__(384, 1)
ozaki_products_wgmma(const signed char* __restrict__ RA, const signed char* __restrict__ RB,
                     unsigned char* __restrict__ R, int M, int N, int Kp, long long a_slice,
                     long long b_slice, long long r_slice, const int* __restrict__ moduli, int n,
                     int plain) {
    extern __shared__ __align__(16) unsigned char raw[];
    unsigned char* stages = align_1024(raw);
    __shared__ unsigned long long full[STAGES], empty[STAGES];
    const int tid = threadIdx.x, wg = tid / 128, tiles = Kp / 128;
    const int tiles_n = CEIL_DIV(N, 256), tiles_m = CEIL_DIV(M, 128), in_group = GROUP_M * tiles_n;
    const int per_modulus = tiles_m * tiles_n, total = n * per_modulus;
    auto tile_of = [&](int t, int& l, int& tm, int& tn) {  // GROUP_M rows of tiles at a time
        l = t / per_modulus;
        t %= per_modulus;
        const int first = t / in_group * GROUP_M, rows = min(tiles_m - first, GROUP_M);
        tm = first + t % in_group % rows;
        tn = t % in_group / rows;
    };
    if (tid == 0)
        for (int s = 0; s < STAGES; ++s) barrier_init(&full[s]), barrier_init(&empty[s], 2);
    __syncthreads();
    if (wg == 2) {  // the producer: k-tile `it` of the block's whole run into stage it % STAGES
        registers_down<40>();
        for (int t = blockIdx.x, it = 0; tid == 256 && t < total; t += gridDim.x) {
            int l, tm, tn;
            tile_of(t, l, tm, tn);
            const signed char* a = RA + l * a_slice + (long long)tm * tiles * RECORD;
            const signed char* b = RB + l * b_slice + (long long)2 * tn * tiles * RECORD;
            for (int kt = 0; kt < tiles; ++kt, ++it) {
                unsigned long long* bar = &full[it % STAGES];
                unsigned char* stage = stages + it % STAGES * STAGE_BYTES;
                if (it >= STAGES) barrier_wait(&empty[it % STAGES], (it / STAGES - 1) % 2);
                barrier_expect(bar, STAGE_BYTES);
                bulk_copy(stage, a + (long long)kt * RECORD, RECORD, bar);
                bulk_copy(stage + RECORD, b + (long long)kt * RECORD, RECORD, bar);
                bulk_copy(stage + 2 * RECORD, b + (long long)(tiles + kt) * RECORD, RECORD, bar);
            }
        }
        return;
    }
    registers_up<232>();
    const int w = (tid % 128) / 32, g = tid % 32 / 4, tq = tid % 4;
    int acc[128];
    for (int t = blockIdx.x, it = 0; t < total; t += gridDim.x) {
        int l, tm, tn;
        tile_of(t, l, tm, tn);
#pragma unroll
        for (int i = 0; i < 128; ++i) acc[i] = 0;
        for (int kt = 0; kt < tiles; ++kt, ++it) {
            barrier_wait(&full[it % STAGES], it / STAGES % 2);  // k-tile `it` has landed
            const signed char* s =
                reinterpret_cast<const signed char*>(stages + it % STAGES * STAGE_BYTES);
            wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < 4; ++ks)
                wgmma_m64n256_s8(acc, s + wg * 64 * 128 + 32 * ks, s + RECORD + 32 * ks);
            wgmma_commit();
            wgmma_wait<1>();  // the k-tile before is done: its stage may be refilled
            if (kt > 0 && tid % 128 == 0) barrier_arrive(&empty[(it - 1) % STAGES]);
        }
        wgmma_wait<0>();
        if (tid % 128 == 0) barrier_arrive(&empty[(it - 1) % STAGES]);
        fence_int_registers(acc);
        unsigned char* out = R + l * r_slice;
        const int row0 = tm * 128 + wg * 64 + 16 * w, col0 = tn * 256;
        // through the warp's own 16 rows of shared memory (`mine`), so that a warp's stores to R
        // are 128 adjacent bytes, not single bytes 8 rows apart
        unsigned char* mine = stages + STAGES * STAGE_BYTES + (wg * 4 + w) * 16 * EPI_PITCH;
        if (l >= plain) stage_mod<LEVELS>(acc, mine, g, tq);
        else switch (l) {  // (the modulus a constant in each: a remainder by it is a multiply)
        case 0: stage_mod<modulus(0)>(acc, mine, g, tq); break;
        case 1: stage_mod<modulus(1)>(acc, mine, g, tq); break;
        case 2: stage_mod<modulus(2)>(acc, mine, g, tq); break;
        case 3: stage_mod<modulus(3)>(acc, mine, g, tq); break;
        case 4: stage_mod<modulus(4)>(acc, mine, g, tq); break;
        case 5: stage_mod<modulus(5)>(acc, mine, g, tq); break;
        case 6: stage_mod<modulus(6)>(acc, mine, g, tq); break;
        case 7: stage_mod<modulus(7)>(acc, mine, g, tq); break;
        case 8: stage_mod<modulus(8)>(acc, mine, g, tq); break;
        case 9: stage_mod<modulus(9)>(acc, mine, g, tq); break;
        default: stage_mod<0>(acc, mine, g, tq, moduli[l]);  // (more moduli than ozaki.py takes)
        }
        __syncwarp();
        const int lane = tid % 32;
        for (int r = 0; r < 16 && row0 + r < M; ++r) {
            unsigned char* to = out + (long long)(row0 + r) * N + col0;
            if (N % 4 == 0) {
                for (int c = 4 * lane; c < 256 && col0 + c < N; c += 128)
                    *reinterpret_cast<unsigned*>(to + c) =
                        *reinterpret_cast<const unsigned*>(mine + r * EPI_PITCH + c);
            } else {
                for (int c = lane; c < 256 && col0 + c < N; c += 32) to[c] = mine[r * EPI_PITCH + c];
            }
        }
        __syncwarp();  // (read before the next tile's writes)
    }
}

// The INT8 ceiling of wgmma on this GPU, as chapter 10's wgmma_peak measures TF32's: two
// warpgroups run ozaki_products_wgmma's 4 wgmmas a k-tile, `iters` times, on one stage that never
// leaves shared memory (no copy, no epilogue). Block 256, a block per SM, STAGE_BYTES + 1024 bytes
// of dynamic shared memory; out: a sum per thread (so that nothing is optimized away).
extern "C" __global__ void __launch_bounds__(256, 1) int8_peak(int* out, int iters) {
    extern __shared__ __align__(16) unsigned char raw[];
    unsigned char* stage = align_1024(raw);
    for (int i = threadIdx.x; i < STAGE_BYTES; i += 256) stage[i] = (unsigned char)(i % 7);
#ifdef __CUDA_ARCH__
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the writes, for wgmma
#endif
    __syncthreads();
    const signed char* s = reinterpret_cast<const signed char*>(stage);
    int acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0;
    for (int it = 0; it < iters; ++it) {
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
            wgmma_m64n256_s8(acc, s + threadIdx.x / 128 * 64 * 128 + 32 * ks, s + RECORD + 32 * ks);
        wgmma_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    fence_int_registers(acc);
    int sum = 0;
    for (int i = 0; i < 128; ++i) sum += acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
