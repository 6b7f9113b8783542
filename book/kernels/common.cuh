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

// Chapter 8: stores v into floats col .. col + 3 of row `row`, skipping what lies outside (16 bytes
// at once where the address allows, else 8 where it lies on 8 bytes: chapter 9's odd N). Rows
// are `ld` floats apart (ld >= cols; ld = cols when the matrix is contiguous). (The address, not
// ld and the matrix's start: chapter 9's edge tiles, moved back to end at an odd edge, start at
// columns that are not multiples of 4.)
__device__ __forceinline__ void store4(float* __restrict__ m, int row, int col, int rows, int cols,
                                       int ld, float4 v) {
    if (row >= rows) return;
    float* p = m + (long long)row * ld + col;
    if ((reinterpret_cast<unsigned long long>(p) & 15) == 0 && col + 3 < cols) {
        *reinterpret_cast<float4*>(p) = v;
        return;
    }
    if ((reinterpret_cast<unsigned long long>(p) & 7) == 0 && col + 3 < cols) {
        reinterpret_cast<float2*>(p)[0] = make_float2(v.x, v.y);  // rows on 8 bytes: 2 x 8
        reinterpret_cast<float2*>(p)[1] = make_float2(v.z, v.w);
        return;
    }
    if (col < cols) p[0] = v.x;
    if (col + 1 < cols) p[1] = v.y;
    if (col + 2 < cols) p[2] = v.z;
    if (col + 3 < cols) p[3] = v.w;
}
__device__ __forceinline__ void store4(float* __restrict__ m, int row, int col, int rows, int cols,
                                       float4 v) {
    store4(m, row, col, rows, cols, cols, v);
}

// store4 for the columns from `from` on (chapter 9's edge tiles moved back to end at the edge: a
// piece that starts before their first column of their own stores only its floats from there).
__device__ __forceinline__ void store4_from(float* __restrict__ m, int row, int col, int rows,
                                            int cols, int ld, int from, float4 v) {
    if (col >= from) {
        store4(m, row, col, rows, cols, ld, v);
        return;
    }
    if (row >= rows || col + 3 < from) return;
    float* p = m + (long long)row * ld + col;
    const float f[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; ++j)
        if (col + j >= from && col + j < cols) p[j] = f[j];
}

// Chapter 8: asynchronous copies global -> shared (cp.async, compute capability 8.0 and later).
// copy4 copies one float, or writes 0 when `inside` is false (src-size 0: nothing is read);
// copy16_aligned copies 16 bytes (both addresses 16-byte aligned; copy8_aligned: 8 bytes, 8-byte
// aligned), copy16 too or writes 16
// bytes of 0 where not `inside`. commit() closes the group of
// copies this thread issued since the last one; wait_groups<n>() waits until at most n of this
// thread's groups are still in flight (the copies of others need a __syncthreads after).
// On the CPU emulator a copy completes at once, which is one of the orders the GPU allows.
#ifdef __CUDA_ARCH__
__device__ __forceinline__ void copy4(float* dst, const float* src, bool inside) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src),
                 "r"(inside ? 4 : 0));
}
__device__ __forceinline__ void copy8_aligned(float* dst, const float* src) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(d), "l"(src));
}
__device__ __forceinline__ void copy16_aligned(float* dst, const float* src) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
}
__device__ __forceinline__ void copy16(float* dst, const float* src, bool inside) {  // 0s where not inside
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int n> __device__ __forceinline__ void wait_groups() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(n));
}
#else
inline void copy4(float* dst, const float* src, bool inside) { *dst = inside ? *src : 0.0f; }
// (the casts to float2 and float4: the emulator checks their alignment as cp.async's, which
// fails with 'misaligned address' on a GPU)
inline void copy8_aligned(float* dst, const float* src) {
    std::memcpy(dst, reinterpret_cast<const float2*>(src), 8);
}
inline void copy16_aligned(float* dst, const float* src) {
    std::memcpy(dst, reinterpret_cast<const float4*>(src), 16);
}
inline void copy16(float* dst, const float* src, bool inside) {
    if (inside) std::memcpy(dst, reinterpret_cast<const float4*>(src), 16);
    else std::memset(dst, 0, 16);
}
inline void commit() {}
template <int n> inline void wait_groups() {}
#endif

#endif
