// ozaki.cuh -- what chapter 12's two files share (12_ozaki.cu, 12_ozaki_wgmma.cu): the moduli,
// the layout of the residues, and the reduction of an int32 sum modulo a modulus.
#ifndef BOOK_OZAKI_CUH
#define BOOK_OZAKI_CUH
#include "common.cuh"

// The moduli (book/blas/ozaki.py's MODULI; a test holds them equal), the largest first. Called
// with a constant l (an unrolled loop), it is a constant: `v % modulus(l)` compiles to a
// multiply and shifts, not a division.
__host__ __device__ constexpr int modulus(int l) {
    constexpr int m[16] = {256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193};
    return m[l];
}

// Where byte (row, k) of a residue matrix lies: in records of 128 rows x 128 k's (16 KiB), a row
// of Kp / 128 records for each 128 rows, each record in the 128-byte swizzle wgmma reads (the
// 16-byte piece j of row r at piece j ^ (r % 8); 12_ozaki_wgmma.cu copies a record as it lies).
__device__ __forceinline__ long long record_offset(int row, int k, int Kp) {
    return ((long long)(row / 128) * (Kp / 128) + k / 128) * 16384 + (row % 128) * 128 +
           ((((k % 128) / 16) ^ (row % 8)) * 16) + k % 16;
}

// v mod m in 0 .. m - 1 for any int32 v and 128 <= m <= 256, without a division: t = v's high
// half times 2^16 mod m, plus its low half, is v mod m too and below 2^24 in magnitude, so exact
// in float32; t / m through the float reciprocal `inv` (1 / m) is off by less than 0.01, so q
// is floor(t / m) or one off, which one step corrects.
__device__ __forceinline__ int mod_of(int v, int m, float inv) {
    const int t = (v >> 16) * ((1 << 16) % m) + (v & 0xFFFF);
    const int r = t - (int)floorf((float)t * inv) * m;
    return r < 0 ? r + m : r >= m ? r - m : r;
}

// 2^s as a float64, for -1022 <= s <= 1023 (exact: a product by it only moves the exponent).
__device__ __forceinline__ double pow2(int s) {
    return __longlong_as_double((long long)(s + 1023) << 52);
}

// The accuracy guard's (GUARD): a sum s >= 0 as a byte that stands for a lower bound of it: 0, or
// 1 + 8 e + m with e = floor(log2 s) and m its next three bits (book/models/ozaki.py's level_code).
__device__ __forceinline__ unsigned char level_code(int s) {
    if (s <= 0) return 0;
    const int e = 31 - __clz(s);
    const int m = (e >= 3 ? s >> (e - 3) : s << (3 - e)) & 7;
    return (unsigned char)(1 + 8 * e + m);
}

#endif
