// 09_sgemm.cu -- chapter 9: chapter 8's cp.async kernel (08_async.cu) for matrices whose rows
// are a leading dimension apart, as book.sgemm takes them: views into wider arrays, and B copied
// into 16-byte aligned rows where N is not a multiple of 4.
// Why a second entry point: matmul_async passes lda = K and ldb = ldc = N as constants, and the
// code built from them runs a few percent faster at large squares than the same body built for
// any leading dimension (measured on an H100 and an H200); each entry keeps its own build.
// Launch: as matmul_async, with lda >= K, ldb >= N, ldc >= N after M, N, K.
#include "08_async.cu"

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_async_ld(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K, int lda, int ldb, int ldc) {
    async_tiles(A, B, C, M, N, K, lda, ldb, ldc);
}
