// 12_ozaki.cu -- chapter 12: float32 products from INT8 tensor cores, the Ozaki scheme II (Ozaki,
// Uchino and Imamura, 2025). book/models/ozaki.py is the same computation in NumPy, step by step;
// the kernels agree with it bit for bit.
//
// Idea: scale each row of A and each column of B by a power of two and round to integers of p
//   bits; take their residues modulo n small coprime moduli (int8); multiply the residues on the
//   tensor cores, exactly in int32; rebuild each element of the integer product from its n
//   residues by the Chinese remainder theorem, in float64; scale back.
// The passes (each its own launch):
//   ozaki_magnitudes   the largest magnitude of each row of A and column of B (read as a row of
//                      B^T), which fixes its power of two, and which hold Inf or NaN
//   ozaki_residues     the scaled integers' residues, n int8 matrices, in records of 128 rows x
//                      128 k's laid out as wgmma reads them (record_offset)
//   ozaki_products     for each modulus, the INT8 product (mma.sync m16n8k32), kept mod m (uint8);
//                      ozaki_products_tiled (below) the same from tiles in shared memory, and
//                      on Hopper 12_ozaki_wgmma.cu's ozaki_products_wgmma runs instead
//   ozaki_reconstruct  the CRT in float64 (high parts exact, low parts after), scaled to float32
// Launch (book/blas/ozaki.py): any sizes with K < 2^17, any strides. Compute capability 8.0.
#include "ozaki.cuh"

// GUARD (0 or 1): the build with precision='ozaki''s accuracy guard (book/models/ozaki.py's
// guard): the residues pass also sums each row's magnitudes and writes the levels of |X| as one
// more slice, the products keep that slice's sums as a level_code, the reconstruction flags
// elements and sums rows, and ozaki_rows and ozaki_fallback take what it flagged as float32 FMA
// chains. Without it, those arguments go unused.
#ifndef GUARD
#define GUARD 0
#endif

// float64 products and sums that are never fused into an FMA (the model rounds each one); the
// reconstruction's products by the weights and by P are exact (ozaki.py's constants: a test holds
// it), so its FMAs give the model's bits.
#ifdef __CUDA_ARCH__
#define DMUL(a, b) __dmul_rn(a, b)
#define DADD(a, b) __dadd_rn(a, b)
#else
#define DMUL(a, b) ((a) * (b))
#define DADD(a, b) ((a) + (b))
#endif

// D = A B + C for one 16 x 32 x 8 tile of int8 operands, int32 sums, by the 32 lanes of a warp.
// With g = lane / 4 and t = lane % 4 a lane holds, four int8 to a register, the lowest byte first:
//   a[0] = A[g][4t .. 4t + 3], a[1] = A[g + 8][4t ..],
//   a[2] = A[g][16 + 4t ..],   a[3] = A[g + 8][16 + 4t ..]
//   b[0] = B[4t .. 4t + 3][g], b[1] = B[16 + 4t ..][g]
//   c[0], c[1] = C[g][2t], C[g][2t + 1];  c[2], c[3] = C[g + 8][2t], C[g + 8][2t + 1]
__device__ __forceinline__ void mma_s8(int (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                       const int (&c)[4]) {
#ifdef __CUDA_ARCH__
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]),
          "r"(c[1]), "r"(c[2]), "r"(c[3]));
#else
    ::cuda_emu::mma_s8(__LINE__, d, a, b, c);
#endif
}

// The power of two of row i: p minus the exponent e of its largest finite magnitude (= f 2^e,
// 0.5 <= f < 1; `top`: its float bits), so that the row times 2^shift stays below 2^p; 0 for a
// row of zeros.
__device__ __forceinline__ int shift_of(int top, int p) {
    if (top == 0) return 0;
    int e;
    frexpf(__int_as_float(top), &e);
    return p - e;
}

// The largest finite magnitude of each row of X (element (i, k) at X[i * xr + k * xc]), as its
// float bits (non-negative floats order as their bits), into top[first + i] by atomicMax (top
// zeroed before); rows that hold Inf or NaN flagged in bad[first + i], and bad[flag] (any row of
// A or column of B) too: the reconstruction computes their elements of C with float32 FMAs
// instead, as cuBLAS SGEMM does. Block 256. Rows along k (xc == 1, as A's): a warp reads 32
// adjacent k's of a row at a time, 1024 of them a block, grid (CEIL_DIV(rows, 8),
// CEIL_DIV(cols, 1024)). Else (B's columns, read as rows of B^T): a thread a row, 32 adjacent
// rows a warp, 64 k's a block, grid (CEIL_DIV(rows, 256), CEIL_DIV(cols, 64)).
extern "C" __global__ void __launch_bounds__(256)
ozaki_magnitudes(const float* __restrict__ X, int rows, int cols, long long xr, long long xc,
                 int* __restrict__ top, int* __restrict__ bad, int first, int flag) {
    const int along_k = xc == 1, span = along_k ? 1024 : 64;
    const int i = along_k ? blockIdx.x * 8 + threadIdx.x / 32 : blockIdx.x * 256 + threadIdx.x;
    const int k0 = blockIdx.y * span + (along_k ? threadIdx.x % 32 : 0), step = along_k ? 32 : 1;
    const int end = min(cols, (int)(blockIdx.y + 1) * span);
    float m = 0.0f;
    bool special = false;
    if (i < rows) {
#pragma unroll 8
        for (int k = k0; k < end; k += step) {
            const float a = fabsf(X[i * xr + k * xc]);
            if (a <= 3.402823466e38f) m = fmaxf(m, a);
            else special = true;  // Inf or NaN
        }
    }
    if (along_k) {  // (the whole warp: its row is the same for all lanes)
        for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        special = __any_sync(0xffffffffu, special);
        if (threadIdx.x % 32 != 0) return;
    }
    if (i >= rows) return;
    if (m > 0.0f) atomicMax(&top[first + i], __float_as_int(m));
    if (special) bad[first + i] = bad[flag] = 1;
}

#if GUARD
// The guard's share of the residues pass (book/models/ozaki.py's guard), for 4 adjacent k's of
// a row: the sum of the scaled integers' magnitudes (|v| = |2^15 v1 + v0|, exact) into *sum, a
// warp's 128 k's added first, and its top bit (INEXACT) set where a rounding moved one of them
// (`moved`: this thread's); and the levels floor(127 |x| 2^-e) (2^e: the row's power of two,
// from its largest magnitude `top`; exact in float64), one more int8 residue slice at *level.
#define INEXACT (1ull << 63)
__device__ __forceinline__ void guard_row(const float* x, const float (&v1)[4], const float (&v0)[4],
                                          int top, bool inside, unsigned long long* sum,
                                          signed char* level, bool moved) {
    unsigned long long s = 0;
    unsigned word = 0;
    int e = 0;
    if (top != 0) frexpf(__int_as_float(top), &e);
    for (int q = 0; q < 4; ++q) {
        s += (unsigned long long)fabsf(fmaf(v1[q], 32768.0f, v0[q]));
        const float a = fabsf(x[q]);
        const double l = a <= 3.402823466e38f ? floor(127.0 * ((double)a * pow2(-e))) : 0.0;
        word |= (unsigned)l << (8 * q);
    }
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    moved = __any_sync(0xffffffffu, moved);
    if (inside && threadIdx.x % 32 == 0 && s) atomicAdd(sum, s);  // (below 2^47: never INEXACT)
    if (inside && threadIdx.x % 32 == 0 && moved) atomicOr(sum, INEXACT);
    *reinterpret_cast<unsigned*>(level) = word;
}
#endif

// The residues of the scaled rows: byte (i, k) of residue matrix l, at R[l * slice +
// record_offset(i, k, Kp)], is rint(X(i, k) 2^shift) mod m_l (shift: shift_of(top[first + i], p))
// in the symmetric range -m_l / 2 .. (m_l - 1) / 2 (an int8), for l < n: zeros past X's rows and
// columns, and for Inf and NaN. A block of (32, 8) threads: 32 rows x 128 k's of X into shared
// memory, read along whichever side lies contiguous (32 adjacent floats a warp); then each warp
// a row at a time, a thread 4 adjacent k's, a 4-byte word of each residue matrix. Grid
// (Kp / 128, rows_pad / 32), rows_pad a multiple of 128 and Kp of 128.
extern "C" __global__ void __launch_bounds__(256)
ozaki_residues(const float* __restrict__ X, int rows, int cols, long long xr, long long xc,
               const int* __restrict__ top, int first, int p, int n,
               signed char* __restrict__ R, int Kp, long long slice,
               unsigned long long* __restrict__ sums) {
    __shared__ float T[32][132];  // (132: a warp's 16-byte reads of a row hit every bank once)
    const int i0 = blockIdx.y * 32, k0 = blockIdx.x * 128, tx = threadIdx.x, ty = threadIdx.y;
    if (xc == 1) {  // rows along k: warp ty reads rows ty, ty + 8, ...
        for (int y = ty; y < 32; y += 8)
            for (int c = tx; c < 128; c += 32) {
                const int i = i0 + y, k = k0 + c;
                T[y][c] = i < rows && k < cols ? X[i * xr + k] : 0.0f;
            }
    } else {  // rows across: warp ty reads k's ty, ty + 8, ..., 32 adjacent rows each
        for (int c = ty; c < 128; c += 8) {
            const int i = i0 + tx, k = k0 + c;
            T[tx][c] = i < rows && k < cols ? X[i * xr + k * xc] : 0.0f;
        }
    }
    __syncthreads();
    for (int y = ty; y < 32; y += 8) {
        const int i = i0 + y, s = i < rows ? shift_of(top[first + i], p) : 0;
        // x 2^s as two exact products by powers of two (|s| <= 30 + 149 + 1: each half a float)
        const float lo = __int_as_float((127 + s / 2) << 23), hi = __int_as_float((127 + s - s / 2) << 23);
        // v = rint(x 2^s), |v| <= 2^30, held as v = 2^15 v1 + v0 (0 <= v0 < 2^15): two floats,
        // each an exact small integer, so that its residues come from float32 FMAs alone
        float v1[4], v0[4];
        bool moved = false;  // (the guard's: a rounding changed one of them)
        for (int q = 0; q < 4; ++q) {
            const float x = T[y][4 * tx + q];  // (nonzero only inside X)
            const bool finite = fabsf(x) <= 3.402823466e38f;
            const float v = finite ? rintf(x * lo * hi) : 0.0f;
            moved = moved || (finite && v != x * lo * hi);
            v1[q] = floorf(v * (1.0f / 32768.0f));
            v0[q] = fmaf(v1[q], -32768.0f, v);
        }
        const long long at = record_offset(i, k0 + 4 * tx, Kp);
#if GUARD
        guard_row(T[y] + 4 * tx, v1, v0, i < rows ? top[first + i] : 0, i < rows,
                  sums + first + i, R + n * slice + at, moved);
#endif
#pragma unroll
        for (int l = 0; l < 16; ++l) {
            if (l >= n) continue;
            // t = v1 (2^15 mod m) + v0 = v (mod m), |t| <= 2^23: exact; q = t / m rounded through
            // the float 1/m (off by under 1/500), r = t - q m, exact: within -m/2 - 1 .. m/2 + 1,
            // an int8 for every modulus but 255 (128 there, moved to -127) and 256 (v's low byte
            // itself). The float r + 1.5 2^23 has the bits 0x4B400000 + r: its low byte is r's.
            const int m = modulus(l);
            const float magic = 12582912.0f;  // 1.5 2^23
            unsigned word = 0;
            for (int q = 0; q < 4; ++q) {
                float r = v0[q];  // (m = 256: v0's low byte is v's)
                if (m != 256) {
                    const float t = fmaf(v1[q], (float)((1 << 15) % m), v0[q]);
                    const float c = fmaf(t, 1.0f / m, magic) - magic;
                    r = fmaf(c, -(float)m, t);
                    if (m == 255 && r > 127.0f) r -= 255.0f;
                }
                word |= (__float_as_uint(r + magic) & 0xFF) << (8 * q);
            }
            *reinterpret_cast<unsigned*>(R + l * slice + at) = word;
        }
    }
}

// The INT8 ceiling of mma.sync m16n8k32 (s8) on this GPU, as 12_ozaki_wgmma.cu's int8_peak measures
// wgmma's: each warp 8 independent products a step on operands that stay in registers, `iters`
// steps (16 x 8 x 32 x 8 MACs each); out: a sum per thread, so that nothing is optimized away.
// Block 256, a grid of a few blocks per SM.
extern "C" __global__ void __launch_bounds__(256) int8_mma_peak(int* __restrict__ out, int iters) {
    const unsigned seed = (blockIdx.x * 256u + threadIdx.x) * 2654435761u;
    const unsigned af[4] = {seed, seed ^ 0x01010101u, seed ^ 0x02020202u, seed ^ 0x03030303u};
    const unsigned bf[2] = {seed ^ 0x05050505u, seed ^ 0x07070707u};
    int acc[8][4];
    for (int u = 0; u < 8; ++u)
        for (int q = 0; q < 4; ++q) acc[u][q] = 0;
    for (int it = 0; it < iters; ++it)
        for (int u = 0; u < 8; ++u) mma_s8(acc[u], af, bf, acc[u]);
    unsigned s = 0;
    for (int u = 0; u < 8; ++u)
        for (int q = 0; q < 4; ++q) s += (unsigned)acc[u][q];
    out[blockIdx.x * 256 + threadIdx.x] = (int)s;
}

// For modulus l = blockIdx.z: R[l * r_slice + i * N + j] = (RA_l RB_l^T)(i, j) mod m_l, in
// 0 .. m_l - 1. RA_l: A's residues, a row per row of A; RB_l: B's, a row per column of B; both
// in records (record_offset), Kp a multiple of 128. A warp computes a 16 x 8 tile of C (mma.sync,
// its fragments loaded straight from the records), a block of 4 warps 32 x 16.
extern "C" __global__ void ozaki_products(const signed char* __restrict__ RA,
                                          const signed char* __restrict__ RB,
                                          unsigned char* __restrict__ R, int M, int N, int Kp,
                                          long long a_slice, long long b_slice,
                                          long long r_slice, const int* __restrict__ moduli,
                                          int plain) {
    const int l = blockIdx.z, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int i0 = blockIdx.y * 32 + (warp / 2) * 16, j0 = blockIdx.x * 16 + (warp % 2) * 8;
    const signed char* a = RA + l * a_slice;
    const signed char* b = RB + l * b_slice;
    auto word = [&](const signed char* x, int row, int k) {
        return *reinterpret_cast<const unsigned*>(x + record_offset(row, k, Kp));
    };
    int acc[4] = {0, 0, 0, 0};
    for (int k = 4 * t; k < Kp; k += 32) {
        const unsigned af[4] = {word(a, i0 + g, k), word(a, i0 + g + 8, k),
                                word(a, i0 + g, k + 16), word(a, i0 + g + 8, k + 16)};
        const unsigned bf[2] = {word(b, j0 + g, k), word(b, j0 + g, k + 16)};
        mma_s8(acc, af, bf, acc);
    }
#if GUARD
    if (l >= plain) {
        for (int q = 0; q < 4; ++q) {
            const int i = i0 + g + 8 * (q / 2), j = j0 + 2 * t + q % 2;
            if (i < M && j < N) R[l * r_slice + (long long)i * N + j] = level_code(acc[q]);
        }
        return;
    }
#endif
    const int m = moduli[l];
    const float inv = 1.0f / m;
    for (int q = 0; q < 4; ++q) {
        const int i = i0 + g + 8 * (q / 2), j = j0 + 2 * t + q % 2;
        if (i < M && j < N) R[l * r_slice + (long long)i * N + j] = (unsigned char)mod_of(acc[q], m, inv);
    }
}


#if GUARD
// Whether element (i, j) is taken by FFMA for its own sake (book/models/ozaki.py's guard, operation
// for operation; the cancelled rows are ozaki_fallback's): E, the bound on the scaling's error, and
// every quantity in units of 2^-(sa + sb); sb_sum: the sum of the scaled integers' magnitudes of
// column j; code: the level_code of (|A||B|)'s lower bound; limit: sqrt(K) 2^(2p - 27); half_k:
// K / 2. (Each product by a power of two, pow2, is exact: the model's ldexp.)
__device__ __forceinline__ bool guard_flag(double E, double sb_sum, double limit, unsigned code,
                                           float top_i, int sb, double half_k) {
    const double v = code ? (8.0 + (double)((code - 1) % 8)) * pow2((int)(code - 1) / 8 - 3) : 0.0;
    if (DMUL(E, 16129.0) > DMUL(limit, v)) return true;
    return !(DMUL((double)top_i, DADD(sb_sum, half_k) * pow2(-sb)) < 8.507059173023462e37);  // (2^126)
}
#endif

// C[i * ldc + j] = C'(i, j) 2^-(sa + sb), rounded to float32 (sa, sb: shift_of top[i] and
// top[M + j]), C' rebuilt from its residues R[l * r_slice + i * N + j] (l < n) by the Chinese
// remainder theorem. K holds, in float64, w_hi[0 .. n - 1], w_lo[0 .. n - 1], P_hi, P_lo and
// 1 / P (book/models/ozaki.py's constants): the sum of the high parts is exact,
// q = rint(sum / P), C' = (hi - q P_hi) + (lo - q P_lo).
// Where row i of A (bad[i]) or column j of B (bad[M + j]) holds Inf or NaN, the element is A's
// row times B's column in float32 FMAs, k = 0 .. Kd - 1 in order (as cuBLAS SGEMM gives them):
// A(i, k) = A[i * ar + k * ac], B(k, j) = B[k * br + j * bc].
// With GUARD: slice n + 1 of R gets each element's flag (guard_flag, from the levels of slice n:
// a slice of its own, so that the pass may run again alone), and
// stats[3 i .. 3 i + 2] gain row i's sums of squares of the bounds E and of C (in float64, each
// element times its unit 2^-(sa + sb)) and its count of flags, for ozaki_fallback.
// A thread 4 adjacent elements of a row (4 bytes of each residue matrix at once where N % 4 == 0,
// all loaded before the sums start, and a 16-byte store where C's row allows it): block 128, grid (M, CEIL_DIV(N, 512)).
extern "C" __global__ void __launch_bounds__(128)
ozaki_reconstruct(unsigned char* __restrict__ R, int M, int N, long long r_slice, int n,
                  const double* __restrict__ K, const int* __restrict__ top, int p,
                  float* __restrict__ C, int ldc, const int* __restrict__ bad,
                  const float* __restrict__ A, long long ar, long long ac,
                  const float* __restrict__ B, long long br, long long bc, int Kd,
                  const unsigned long long* __restrict__ sums, double* __restrict__ stats) {
    __shared__ double k[2 * 16 + 3];  // K, read once a block (not once an element)
    for (int t = threadIdx.x; t < 2 * n + 3; t += blockDim.x) k[t] = K[t];
    __syncthreads();
    const int i = blockIdx.x, j0 = (blockIdx.y * 128 + threadIdx.x) * 4;
#if GUARD
    double e2 = 0.0, c2 = 0.0, count = 0.0;  // (the row's sums; every thread to the block's sum)
    const double limit = DMUL(sqrt((double)Kd), pow2(2 * p - 27));
#else
    if (j0 >= N) return;
#endif
    if (j0 < N) {
    const long long e = (long long)i * N + j0;
    const bool whole = j0 + 4 <= N, words = whole && N % 4 == 0;
    unsigned word[16];  // 4 residues a modulus, loaded all before any is used
#pragma unroll
    for (int l = 0; l < 16; ++l) {
        if (l >= n) continue;
        if (words) {
            word[l] = *reinterpret_cast<const unsigned*>(R + l * r_slice + e);
        } else {
            word[l] = 0;
            for (int q = 0; q < 4 && j0 + q < N; ++q) word[l] |= (unsigned)R[l * r_slice + e + q] << (8 * q);
        }
    }
    double hi[4] = {0.0, 0.0, 0.0, 0.0}, lo[4] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll
    for (int l = 0; l < 16; ++l) {
        if (l >= n) continue;
        for (int q = 0; q < 4; ++q) {  // r, exactly, as 2^52 + r less 2^52 (cheaper than a convert)
            const double r = __hiloint2double(0x43300000, (word[l] >> (8 * q)) & 0xFF) - 4503599627370496.0;
            hi[q] = fma(r, k[l], hi[q]);  // (each product exact: fused or not, the same bits)
            lo[q] = fma(r, k[n + l], lo[q]);
        }
    }
    const int sa = shift_of(top[i], p);
    const bool any = bad[M + N] != 0;
    float out[4];
    for (int q = 0; q < 4; ++q) {
        const int j = min(j0 + q, N - 1);  // (past N: computed, not stored)
        if (any && (bad[i] || bad[M + j])) {
            float sum = 0.0f;
            for (int k = 0; k < Kd; ++k) sum = fmaf(A[i * ar + k * ac], B[k * br + j * bc], sum);
            out[q] = sum;
#if GUARD
            if (j0 + q < N) R[(n + 1) * r_slice + e + q] = 0;  // (not ozaki_fallback's)
#endif
            continue;
        }
        const double c = rint(DMUL(DADD(hi[q], lo[q]), k[2 * n + 2]));
        const double x = DADD(fma(-c, k[2 * n], hi[q]), fma(-c, k[2 * n + 1], lo[q]));
        const double unit = pow2(-(sa + shift_of(top[M + j], p)));
        out[q] = (float)DMUL(x, unit);
#if GUARD
        if (j0 + q < N) {  // the row's sums of squares, and the element's own flag for ozaki_fallback
            // (E's terms only where a rounding moved something: ia, ib, the sums' INEXACT bits)
            const unsigned long long ua = sums[i], ub = sums[M + j];
            const bool ia = ua & INEXACT, ib = ub & INEXACT;
            const double sa_sum = (double)(ua & ~INEXACT), sb_sum = (double)(ub & ~INEXACT);
            const double E = DMUL(DADD(DADD(ib ? sa_sum : 0.0, ia ? sb_sum : 0.0), ia && ib ? (double)Kd : 0.0), 0.5);
            const double eu = DMUL(E, unit), cu = DMUL(x, unit);
            e2 = DADD(e2, DMUL(eu, eu));
            c2 = DADD(c2, DMUL(cu, cu));
            const bool flag = guard_flag(E, sb_sum, limit, R[n * r_slice + e + q],
                                         __int_as_float(top[i]), shift_of(top[M + j], p), 0.5 * Kd);
            R[(n + 1) * r_slice + e + q] = flag;
            count += flag;
        }
#endif
    }
    float* to = C + (long long)i * ldc + j0;
    if (whole && reinterpret_cast<unsigned long long>(to) % 16 == 0)
        *reinterpret_cast<float4*>(to) = make_float4(out[0], out[1], out[2], out[3]);
    else
        for (int q = 0; q < 4 && j0 + q < N; ++q) to[q] = out[q];
    }
#if GUARD
    __shared__ double part[3][4];  // the block's sums: warp by warp, then its first thread adds them
    for (int o = 16; o > 0; o /= 2) {
        e2 += __shfl_xor_sync(0xffffffffu, e2, o);
        c2 += __shfl_xor_sync(0xffffffffu, c2, o);
        count += __shfl_xor_sync(0xffffffffu, count, o);
    }
    if (threadIdx.x % 32 == 0) {
        part[0][threadIdx.x / 32] = e2;
        part[1][threadIdx.x / 32] = c2;
        part[2][threadIdx.x / 32] = count;
    }
    __syncthreads();
    if (threadIdx.x < 3) {
        const double* v = part[threadIdx.x];
        atomicAdd(&stats[3 * i + threadIdx.x], v[0] + v[1] + v[2] + v[3]);
    }
#endif
}

// x[0 .. n - 1] = 0 and s[0 .. ns - 1] = 0: what a pass adds to, zeroed by a launch at its start
// (book/blas/ozaki.py), so that a call's recorded launches zero it each time they are replayed and
// a pass timed alone starts afresh each time: the magnitudes and flags before ozaki_magnitudes;
// with the guard, its row and column sums before the residues, its sums by row of C and its count
// of listed rows before the reconstruction. Block 256, a thread an element of the longer.
extern "C" __global__ void ozaki_zero(int* __restrict__ x, int n, unsigned long long* __restrict__ s,
                                      int ns) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 0;
    if (i < ns) s[i] = 0;
}

// The guard's rows (book/models/ozaki.py's guard), once ozaki_reconstruct has summed them: each row
// i of C (no Inf or NaN in A's row, bad[i] = 0) whose bounds' sum of squares, stats[3 i], exceeds
// limit2 (GUARD_ROW^2 K^2) times its values', stats[3 i + 1] (its sums cancelled: the whole row is
// taken another way), or with an element flagged (stats[3 i + 2] > 0), is added to `rows`: rows[0]
// counts them, rows[1 ..] holds i for a row of flagged elements, -1 - i for a whole row, in any
// order. Block 256, a thread a row; rows[0] = 0 before.
extern "C" __global__ void ozaki_rows(const double* __restrict__ stats, double limit2,
                                      const int* __restrict__ bad, int M, int* __restrict__ rows) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M || bad[i]) return;
    const bool whole = stats[3 * i] > limit2 * stats[3 * i + 1];
    if (whole || stats[3 * i + 2] > 0.0) rows[1 + atomicAdd(&rows[0], 1)] = whole ? -1 - i : i;
}

// The guard's fallback (book/models/ozaki.py's guarded): in the rows ozaki_rows listed, the
// elements ozaki_reconstruct flagged (a byte each, `flags`: M x N) or all of a whole row, as
// float32 FMA chains over 16 k's, their sums added in float64 and rounded once (the model's
// ffma_chunked, in its order), the columns of B with Inf or NaN (bad[M + j]) left as they are.
// A tile of 64 listed rows x 64 columns a block, as chapter 5's tiles: 16 k's of A's rows and of
// B's columns in shared memory at a time, a thread 4 rows x 4 columns (rows ty + 16 q, columns
// tx + 16 c). Block (16, 16), grid (CEIL_DIV(M, 64), CEIL_DIV(N, 64)): a block past the listed
// rows returns at once, so that inputs that need nothing cost a launch. Without GUARD: nothing.
extern "C" __global__ void __launch_bounds__(256)
ozaki_fallback(const float* __restrict__ A, long long ar, long long ac, const float* __restrict__ B,
               long long br, long long bc, float* __restrict__ C, int ldc, int M, int N, int Kd,
               const unsigned char* __restrict__ flags, const int* __restrict__ rows,
               const int* __restrict__ bad) {
#if GUARD
    const int listed = rows[0], first = blockIdx.x * 64, col0 = blockIdx.y * 64;
    if (first >= listed) return;
    __shared__ float As[64][17], Bs[16][64];
    __shared__ int row[64];    // the tile's rows of C, -1 past the list
    __shared__ bool whole[64]; // (and whether each is taken whole)
    const int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
    if (t < 64) {
        const int code = first + t < listed ? rows[1 + first + t] : 0;
        row[t] = first + t < listed ? (code < 0 ? -1 - code : code) : -1;
        whole[t] = first + t < listed && code < 0;
    }
    __syncthreads();
    float sum[4][4];
    double total[4][4];
    for (int q = 0; q < 4; ++q)
        for (int c = 0; c < 4; ++c) total[q][c] = 0.0;
    for (int k0 = 0; k0 < Kd; k0 += 16) {
        for (int e = t; e < 64 * 16; e += 256) {  // A's 64 listed rows, B's 64 columns, 16 k's
            const int r = e / 16, kk = e % 16, k = k0 + kk;
            As[r][kk] = row[r] >= 0 && k < Kd ? A[row[r] * ar + k * ac] : 0.0f;
            const int kb = e / 64, j = col0 + e % 64;
            Bs[kb][e % 64] = k0 + kb < Kd && j < N ? B[(k0 + kb) * br + j * bc] : 0.0f;
        }
        __syncthreads();
        for (int q = 0; q < 4; ++q)
            for (int c = 0; c < 4; ++c) sum[q][c] = 0.0f;
        const int ks = min(16, Kd - k0);
        for (int kk = 0; kk < ks; ++kk)
            for (int q = 0; q < 4; ++q)
                for (int c = 0; c < 4; ++c) sum[q][c] = fmaf(As[ty + 16 * q][kk], Bs[kk][tx + 16 * c], sum[q][c]);
        for (int q = 0; q < 4; ++q)
            for (int c = 0; c < 4; ++c) total[q][c] = DADD(total[q][c], (double)sum[q][c]);
        __syncthreads();
    }
    for (int q = 0; q < 4; ++q) {
        const int i = row[ty + 16 * q];
        if (i < 0) continue;
        for (int c = 0; c < 4; ++c) {
            const int j = col0 + tx + 16 * c;
            if (j < N && !bad[M + j] && (whole[ty + 16 * q] || flags[(long long)i * N + j]))
                C[(long long)i * ldc + j] = (float)total[q][c];
        }
    }
#endif
}

// The INT8 products for compute capability 8.x, tiled (book/blas/ozaki.py's products='tiled', its
// choice below 9.0; 4.2-6.4x ozaki_products's speed on an H200): as ozaki_products, R's slice
// l = blockIdx.z, but a block of 8 warps takes a tile of 128 x 128 of C, and k in records of 128
// (ozaki.cuh's record_offset: 16 KiB each, A's and B's copied whole into shared memory by cp.async,
// TILED_STAGES of them in flight), each warp 64 x 32 of C: 4 x 4 mma.sync m16n8k32 a step of 32
// k's, its fragments read from shared memory as 4-byte words -- the records' swizzle (16-byte piece
// j of row r at j ^ (r % 8)) puts a warp's 32 words in 32 banks. Slices l >= plain (the accuracy
// guard's levels, GUARD) keep their sums as level_code, the others modulo their modulus. Every loop
// over the accumulators is unrolled (indexed by constants, they stay in registers: an earlier build
// kept them in local memory) and so is the step over a record's k's (245 registers, a block an SM:
// faster on the H200 than 127 and two blocks, the lab notes' tries).
// Block 256, grid (Np / 128, Mp / 128, slices), TILED_STAGES * 32 KiB of dynamic shared memory.
#ifndef TILED_STAGES
#define TILED_STAGES 3
#endif
extern "C" __global__ void __launch_bounds__(256)
ozaki_products_tiled(const signed char* __restrict__ RA, const signed char* __restrict__ RB,
                     unsigned char* __restrict__ R, int M, int N, int Kp, long long a_slice,
                     long long b_slice, long long r_slice, const int* __restrict__ moduli, int plain) {
    extern __shared__ __align__(16) unsigned char tiles[];
    const int l = blockIdx.z, tm = blockIdx.y, tn = blockIdx.x, records = Kp / 128;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int wm = warp / 4, wn = warp % 4;
    const signed char* a = RA + l * a_slice + (long long)tm * records * 16384;
    const signed char* b = RB + l * b_slice + (long long)tn * records * 16384;
    auto load = [&](int kt) {  // A's record kt, then B's, into stage kt % TILED_STAGES
        unsigned char* to = tiles + (kt % TILED_STAGES) * 32768;
        for (int c = tid; c < 2048; c += 256) {  // 16-byte pieces: 1024 of A's, 1024 of B's
            const signed char* from = (c < 1024 ? a : b) + (long long)kt * 16384 + (c % 1024) * 16;
            copy16_aligned(reinterpret_cast<float*>(to + c * 16), reinterpret_cast<const float*>(from));
        }
        commit();
    };
    auto word = [](const unsigned char* rec, int row, int k) {  // 4 bytes at (row, k) of a record
        return *reinterpret_cast<const unsigned*>(rec + row * 128 + (((k / 16) ^ (row % 8)) * 16) + k % 16);
    };
    int acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0;
    for (int s = 0; s < TILED_STAGES - 1; ++s) {
        if (s < records) load(s);
        else commit();  // (an empty group: the count of groups stays the same)
    }
    for (int kt = 0; kt < records; ++kt) {
        wait_groups<TILED_STAGES - 2>();  // record kt has landed (this thread's copies)
        __syncthreads();                  // (everyone's; and stage (kt - 1) % S is free)
        if (kt + TILED_STAGES - 1 < records) load(kt + TILED_STAGES - 1);
        else commit();
        const unsigned char* sa = tiles + (kt % TILED_STAGES) * 32768;
        const unsigned char* sb = sa + 16384;
#pragma unroll
        for (int k = 0; k < 128; k += 32) {
            unsigned af[4][4], bf[4][2];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int r = wm * 64 + i * 16 + g;
                af[i][0] = word(sa, r, k + 4 * t);
                af[i][1] = word(sa, r + 8, k + 4 * t);
                af[i][2] = word(sa, r, k + 16 + 4 * t);
                af[i][3] = word(sa, r + 8, k + 16 + 4 * t);
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int c = wn * 32 + j * 8 + g;
                bf[j][0] = word(sb, c, k + 4 * t);
                bf[j][1] = word(sb, c, k + 16 + 4 * t);
            }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) mma_s8(acc[i][j], af[i], bf[j], acc[i][j]);
        }
    }
    const int m = l < plain ? moduli[l] : 256;  // (the levels' slice has no modulus)
    const float inv = 1.0f / m;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int row = tm * 128 + wm * 64 + i * 16 + g + 8 * (q / 2);
                const int col = tn * 128 + wn * 32 + j * 8 + 2 * t + q % 2;
                if (row < M && col < N)
                    R[l * r_slice + (long long)row * N + col] =
                        l >= plain ? level_code(acc[i][j][q]) : (unsigned char)mod_of(acc[i][j][q], m, inv);
            }
}
