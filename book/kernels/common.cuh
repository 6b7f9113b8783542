// common.cuh -- helpers shared by the book's kernels (each .cu file includes it).
//
// Names used throughout the book, in prose, Python and CUDA alike:
//   C (M x N) = A (M x K) * B (K x N), all row-major float32;
//   tx, ty = threadIdx.x, threadIdx.y;  TILE, BM, BN, BK, TM, TN = tile sizes (compile-time).
#ifndef BOOK_COMMON_CUH
#define BOOK_COMMON_CUH

// Number of blocks of `size` needed to cover `n` items.
#define CEIL_DIV(n, size) (((n) + (size) - 1) / (size))

#endif
