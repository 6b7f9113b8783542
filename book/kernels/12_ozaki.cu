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
//   ozaki_residues     the scaled integers' residues, n int8 matrices, k padded to a multiple of 32
//   ozaki_products     for each modulus, the INT8 product (mma.sync m16n8k32), kept mod m (uint8)
//   ozaki_reconstruct  the CRT in float64 (high parts exact, low parts after), scaled to float32
// A first version: the passes over A and B read 32 x 32 tiles along their contiguous side;
//   ozaki_products uses one warp per 16 x 8 tile of C, its fragments loaded straight from the
//   residues (on Hopper, 12_ozaki_wgmma.cu's ozaki_products_wgmma runs instead).
// Launch (book/blas/ozaki.py): any sizes with K < 2^17, any strides. Compute capability 8.0.
#include "common.cuh"

// float64 products and sums that are never fused into an FMA (the model rounds each one).
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

// A 32 x 32 tile of X (rows x cols, element (i, k) at X[i * xr + k * xc]) into T[i - i0][k - k0],
// zeros outside X, read along whichever of its sides lies contiguous (xc == 1: along k, as A's
// rows; else along i, as B's columns read as rows of B^T), so that a warp reads 32 adjacent
// floats. Block (32, 8).
__device__ __forceinline__ void load_tile(float (&T)[32][33], const float* __restrict__ X, int rows,
                                          int cols, long long xr, long long xc, int i0, int k0) {
    const int tx = threadIdx.x, along_k = xc == 1;
    for (int y = threadIdx.y; y < 32; y += 8) {
        const int i = i0 + (along_k ? y : tx), k = k0 + (along_k ? tx : y);
        const float x = i < rows && k < cols ? X[i * xr + k * xc] : 0.0f;
        if (along_k) T[y][tx] = x;
        else T[tx][y] = x;
    }
    __syncthreads();
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

// The largest finite magnitude of each row of X, as its float bits (non-negative floats order
// as their bits), into top[first + i] by atomicMax (top zeroed before); rows that hold Inf or
// NaN flagged in bad[first + i], and bad[flag] (any row of A or column of B) too: the
// reconstruction computes their elements of C with float32 FMAs instead, as cuBLAS SGEMM does.
// Block (32, 8), grid (CEIL_DIV(cols, 32), CEIL_DIV(rows, 32)).
extern "C" __global__ void ozaki_magnitudes(const float* __restrict__ X, int rows, int cols,
                                            long long xr, long long xc, int* __restrict__ top,
                                            int* __restrict__ bad, int first, int flag) {
    __shared__ float T[32][33];
    const int i0 = blockIdx.y * 32;
    load_tile(T, X, rows, cols, xr, xc, i0, blockIdx.x * 32);
    for (int y = threadIdx.y; y < 32; y += 8) {  // a warp per row of the tile
        const float a = fabsf(T[y][threadIdx.x]);
        const bool special = !(a <= 3.402823466e38f);  // Inf or NaN
        float m = special ? 0.0f : a;
        for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        const bool any = __any_sync(0xffffffffu, special);
        const int i = i0 + y;
        if (threadIdx.x == 0 && i < rows) {
            if (m > 0.0f) atomicMax(&top[first + i], __float_as_int(m));
            if (any) bad[first + i] = bad[flag] = 1;
        }
    }
}

// The residues of the scaled rows: R[l * slice + i * ldr + k] = rint(X(i, k) 2^shift) mod m_l
// (shift: shift_of(top[first + i], p)), in the symmetric range (-m_l / 2 .. (m_l - 1) / 2, an
// int8), for l < n, i < rows_pad, k < ldr: zeros past the rows and columns of X, and for Inf and
// NaN. Block (32, 8), grid
// (ldr / 32, CEIL_DIV(rows_pad, 32)); ldr a multiple of 32.
extern "C" __global__ void ozaki_residues(const float* __restrict__ X, int rows, int cols,
                                          long long xr, long long xc, const int* __restrict__ top,
                                          int first, int p, int n, const int* __restrict__ moduli,
                                          signed char* __restrict__ R, int rows_pad, int ldr,
                                          long long slice) {
    __shared__ float T[32][33];
    const int i0 = blockIdx.y * 32, k = blockIdx.x * 32 + threadIdx.x;
    load_tile(T, X, rows, cols, xr, xc, i0, blockIdx.x * 32);
    for (int y = threadIdx.y; y < 32; y += 8) {
        const int i = i0 + y;
        if (i >= rows_pad) break;
        const float x = T[y][threadIdx.x];  // (nonzero only inside X)
        const int v = x != 0.0f && fabsf(x) <= 3.402823466e38f
                          ? (int)rintf(ldexpf(x, shift_of(top[first + i], p))) : 0;
        for (int l = 0; l < n; ++l) {
            const int m = moduli[l];
            int r = v % m;
            if (r < 0) r += m;
            if (r > (m - 1) / 2) r -= m;
            R[l * slice + (long long)i * ldr + k] = (signed char)r;
        }
    }
}

// For modulus l = blockIdx.z: R[l * r_slice + i * N + j] = (RA_l RB_l^T)(i, j) mod m_l, in
// 0 .. m_l - 1. RA_l: A's residues, M rounded up to 32 rows of Kp int8; RB_l: B's, a row per
// column of B, N rounded up to 16 rows; Kp a multiple of 32. A warp computes
// a 16 x 8 tile of C, a block of 4 warps 32 x 16.
extern "C" __global__ void ozaki_products(const signed char* __restrict__ RA,
                                          const signed char* __restrict__ RB,
                                          unsigned char* __restrict__ R, int M, int N, int Kp,
                                          long long a_slice, long long b_slice,
                                          long long r_slice, const int* __restrict__ moduli) {
    const int l = blockIdx.z, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int i0 = blockIdx.y * 32 + (warp / 2) * 16, j0 = blockIdx.x * 16 + (warp % 2) * 8;
    const signed char* a = RA + l * a_slice + (long long)(i0 + g) * Kp + 4 * t;
    const signed char* b = RB + l * b_slice + (long long)(j0 + g) * Kp + 4 * t;
    int acc[4] = {0, 0, 0, 0};
    for (int k = 0; k < Kp; k += 32) {
        const unsigned af[4] = {*reinterpret_cast<const unsigned*>(a + k),
                                *reinterpret_cast<const unsigned*>(a + 8LL * Kp + k),
                                *reinterpret_cast<const unsigned*>(a + k + 16),
                                *reinterpret_cast<const unsigned*>(a + 8LL * Kp + k + 16)};
        const unsigned bf[2] = {*reinterpret_cast<const unsigned*>(b + k),
                                *reinterpret_cast<const unsigned*>(b + k + 16)};
        mma_s8(acc, af, bf, acc);
    }
    const int m = moduli[l];
    for (int q = 0; q < 4; ++q) {
        const int i = i0 + g + 8 * (q / 2), j = j0 + 2 * t + q % 2;
        if (i < M && j < N) {
            int r = acc[q] % m;
            if (r < 0) r += m;
            R[l * r_slice + (long long)i * N + j] = (unsigned char)r;
        }
    }
}

// C[i * ldc + j] = C'(i, j) 2^-(sa + sb), rounded to float32 (sa, sb: shift_of top[i] and
// top[M + j]), C' rebuilt from its residues
// R[l * r_slice + i * N + j] (l < n) by the Chinese remainder theorem. K holds, in float64,
// w_hi[0 .. n - 1], w_lo[0 .. n - 1], P_hi, P_lo and 1 / P (book/models/ozaki.py's constants):
// the sum of the high parts is exact, q = rint(sum / P), C' = (hi - q P_hi) + (lo - q P_lo).
// Where row i of A (bad[i]) or column j of B (bad[M + j]) holds Inf or NaN, the element is A's
// row times B's column in float32 FMAs, k = 0 .. Kd - 1 in order (as cuBLAS SGEMM gives them):
// A(i, k) = A[i * ar + k * ac], B(k, j) = B[k * br + j * bc].
extern "C" __global__ void ozaki_reconstruct(const unsigned char* __restrict__ R, int M, int N,
                                             long long r_slice, int n, const double* __restrict__ K,
                                             const int* __restrict__ top, int p,
                                             float* __restrict__ C, int ldc,
                                             const int* __restrict__ bad,
                                             const float* __restrict__ A, long long ar,
                                             long long ac, const float* __restrict__ B,
                                             long long br, long long bc, int Kd) {
    const long long total = (long long)M * N;
    const bool any = bad[M + N] != 0;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const int i = (int)(e / N), j = (int)(e % N);
        if (any && (bad[i] || bad[M + j])) {
            float sum = 0.0f;
            for (int k = 0; k < Kd; ++k) sum = fmaf(A[i * ar + k * ac], B[k * br + j * bc], sum);
            C[(long long)i * ldc + j] = sum;
            continue;
        }
        double hi = 0.0, lo = 0.0;
        for (int l = 0; l < n; ++l) {
            const double r = R[l * r_slice + e];
            hi = DADD(hi, DMUL(r, K[l]));
            lo = DADD(lo, DMUL(r, K[n + l]));
        }
        const double q = rint(DMUL(DADD(hi, lo), K[2 * n + 2]));
        const double x = DADD(DADD(hi, -DMUL(q, K[2 * n])), DADD(lo, -DMUL(q, K[2 * n + 1])));
        const int shift = shift_of(top[i], p) + shift_of(top[M + j], p);
        C[(long long)i * ldc + j] = (float)ldexp(x, -shift);
    }
}
