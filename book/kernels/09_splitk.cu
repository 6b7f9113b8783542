// 09_splitk.cu -- chapter 9: the reduction after a split-K launch.
//
// Idea: with few output tiles and a long K, one block per tile of C leaves most SMs idle. Split-K
//   launches SPLITS blocks per tile, each summing one slice of K into its own M x N slice of a
//   workspace W (08_async.cu with gridDim.z = SPLITS); this kernel then adds the slices into C.
// Cost: the workspace is written and read once, SPLITS * M * N floats each way -- small beside
//   the 2 M N K FLOPs whenever K is large against SPLITS.
// Also the epilogue of BLAS's C = alpha A B + beta C for every plan of book.sgemm (one slice:
//   A B computed into W first); where beta is 0, C is written without being read (NaN there
//   does not reach the result, as in BLAS).
// Launch: any grid and block; every thread takes a grid-stride share of the M * N outputs. The
//   slices of W are M rows w_row floats apart, one after the other (split-K's: w_row is N rounded
//   up to 4, so that its blocks store whole 16-byte pieces); element (m, n) of C is at
//   C[m * c_row + n * c_col] (c_row = ldc, c_col = 1 for book.sgemm's C; 09_skinny.cu's sums
//   may store C's transpose).
#include "common.cuh"

extern "C" __global__ void splitk_reduce(const float* __restrict__ W, float* __restrict__ C,
                                         int M, int N, int w_row, int c_row, int c_col,
                                         int splits, float alpha, float beta) {
    const long long total = (long long)M * N, slice = (long long)M * w_row;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long m = i / N, n = i % N;
        float sum = 0.0f;
        for (int z = 0; z < splits; ++z) sum += W[z * slice + m * w_row + n];
        float* c = C + m * c_row + n * c_col;
        *c = beta == 0.0f ? alpha * sum : alpha * sum + beta * *c;
    }
}
