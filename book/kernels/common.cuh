// common.cuh -- helpers shared by the book's kernels (each .cu file includes it).
//
// Names used throughout the book, in prose, Python and CUDA alike:
//   C (M x N) = A (M x K) * B (K x N), all row-major float32;
//   tx, ty = threadIdx.x, threadIdx.y;  TILE, BM, BN, BK, TM, TN = tile sizes (compile-time).
#ifndef BOOK_COMMON_CUH
#define BOOK_COMMON_CUH

// Number of blocks of `size` needed to cover `n` items.
#define CEIL_DIV(n, size) (((n) + (size) - 1) / (size))

// Chapter 8: floats col .. col + 3 of row `row` of a rows x cols row-major matrix, zero outside
// it. One 16-byte load (LDG.128) when all four are inside and cols is a multiple of 4 (then the
// address is 16-byte aligned, since col is a multiple of 4 and the matrix starts aligned);
// otherwise four guarded scalar loads, so any size stays correct.
__device__ __forceinline__ float4 load4(const float* __restrict__ m, int row, int col, int rows,
                                        int cols) {
    if (row >= rows) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float* p = m + (long long)row * cols + col;
    if ((cols & 3) == 0 && col + 3 < cols) return *reinterpret_cast<const float4*>(p);
    return make_float4(col < cols ? p[0] : 0.0f, col + 1 < cols ? p[1] : 0.0f,
                       col + 2 < cols ? p[2] : 0.0f, col + 3 < cols ? p[3] : 0.0f);
}

// Chapter 8: stores v into floats col .. col + 3 of row `row`, skipping what lies outside.
__device__ __forceinline__ void store4(float* __restrict__ m, int row, int col, int rows, int cols,
                                       float4 v) {
    if (row >= rows) return;
    float* p = m + (long long)row * cols + col;
    if ((cols & 3) == 0 && col + 3 < cols) { *reinterpret_cast<float4*>(p) = v; return; }
    if (col < cols) p[0] = v.x;
    if (col + 1 < cols) p[1] = v.y;
    if (col + 2 < cols) p[2] = v.z;
    if (col + 3 < cols) p[3] = v.w;
}

#endif
