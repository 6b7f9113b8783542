// tensor.cuh -- tensor cores from CUDA C: TF32 rounding and the warp-wide m16n8k8 TF32 mma, on
// the GPU (inline PTX, compute capability 8.0 and later) and on the CPU emulator alike.
//
// mma_tf32(d, a, b, c): D = A B + C for one 16 x 8 x 8 tile, computed by the 32 lanes of a warp
// together (every lane must call it). Each lane holds a piece of each matrix, in the layout the
// PTX ISA fixes for mma.m16n8k8 with .tf32 operands: with g = lane / 4 and t = lane % 4,
//   a[0..3] = A[g][t], A[g + 8][t], A[g][t + 4], A[g + 8][t + 4]   (A: 16 x 8, row-major)
//   b[0..1] = B[t][g], B[t + 4][g]                                 (B: 8 x 8, column-major)
//   c[0..3], d[0..3] = C[g][2t], C[g][2t + 1], C[g + 8][2t], C[g + 8][2t + 1]
// to_tf32(x): x rounded to TF32 (10 mantissa bits) to nearest, ties away from zero
// (cvt.rna.tf32.f32), as the bits of a float.
#ifndef BOOK_TENSOR_CUH
#define BOOK_TENSOR_CUH
#include "common.cuh"

__device__ __forceinline__ unsigned to_tf32(float x) {
#ifdef __CUDA_ARCH__
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
#else
    return ::cuda_emu::tf32_rna(x);
#endif
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2], const float (&c)[4]) {
#ifdef __CUDA_ARCH__
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
          "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
    ::cuda_emu::mma_tf32(__LINE__, d, a, b, c);
#endif
}

#endif
