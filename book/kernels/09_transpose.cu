// 09_transpose.cu -- chapter 9: an operand handed over transposed, copied into row-major order
// before book.sgemm's row-major (NN) kernels read it ("packing", as BLAS libraries on CPUs do).
//
// Why: 08_async.cu reads an operand whose rows run along k one float at a time (A always; B
//   where it is transposed). With both operands so (NT) it ran at 86% of its NN speed at 4096^3
//   on an H100; copying B^T once costs two passes over B at the copy bandwidth -- about 2% of
//   that product's time -- after which the NN kernel runs.
// How: a block moves a 32 x 32 tile through shared memory: it reads 32 rows of X along their
//   length (each warp one row at a time: 128 coalesced bytes) and writes them as 32 columns of Y,
//   again along Y's rows. The tile's rows are 33 floats apart, so that the reads down a column of
//   the tile touch 32 different banks.
// Launch: block (32, 8), grid (tiles), one block per 32 x 32 tile of X numbered row by row
//   (CEIL_DIV(cols, 32) tiles per row of tiles), any rows and cols. X: rows x cols, rows ldx
//   floats apart; Y = X^T: cols x rows, rows ldy >= rows floats apart (Y's floats past `rows`
//   in each row are not written).
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
transpose(const float* __restrict__ X, int ldx, float* __restrict__ Y, int ldy, int rows, int cols) {
    __shared__ float tile[32][33];
    const int across = CEIL_DIV(cols, 32);
    const int r0 = (int)(blockIdx.x / across) * 32, c0 = (int)(blockIdx.x % across) * 32;
    for (int j = threadIdx.y; j < 32; j += 8) {  // X's rows r0 + j, columns c0 + threadIdx.x
        const int r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = X[(long long)r * ldx + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < 32; j += 8) {  // Y's rows c0 + j, columns r0 + threadIdx.x
        const int c = c0 + j, r = r0 + threadIdx.x;
        if (r < rows && c < cols) Y[(long long)c * ldy + r] = tile[threadIdx.x][j];
    }
}

// pad_rows: X (rows x cols, rows ldx floats apart, starting anywhere on 4 bytes) copied into Y,
//   rows ldy floats apart (ldy a multiple of 4, Y on 16 bytes), zeros past `cols`: book.sgemm's
//   B where its rows do not start on 16 bytes (a plan with pad_b), so that the NN kernels read
//   them in 16-byte pieces. Each thread writes one float4 of Y. Launch: block 256, grid
//   CEIL_DIV(rows * ldy / 4, 256).
extern "C" __global__ void __launch_bounds__(256)
pad_rows(const float* __restrict__ X, int ldx, float* __restrict__ Y, int ldy, int rows, int cols) {
    const long long i = (long long)blockIdx.x * 256 + threadIdx.x;  // Y's float4 number i
    const int quads = ldy / 4;
    if (i >= (long long)rows * quads) return;
    const int r = (int)(i / quads), c = (int)(i % quads) * 4;
    const float* x = X + (long long)r * ldx;
    float4 v;
    v.x = c < cols ? x[c] : 0.0f;
    v.y = c + 1 < cols ? x[c + 1] : 0.0f;
    v.z = c + 2 < cols ? x[c + 2] : 0.0f;
    v.w = c + 3 < cols ? x[c + 3] : 0.0f;
    reinterpret_cast<float4*>(Y + (long long)r * ldy)[c / 4] = v;
}
