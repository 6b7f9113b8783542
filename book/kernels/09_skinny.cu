// 09_skinny.cu -- chapter 9: products where C has few rows or few columns (<= 32) and one
// operand is large: GEMV and "few rows" products. Two kernels, by the way the large operand X
// lies in memory. skinny_dots: X's rows run along k (A as is with N few; B transposed with M
// few, as C^T = B^T A^T), Z = X Y is P <= PR columns of dot products. skinny_rows: X's rows run
// along the long side of C (B as is with M few; A transposed with N few, as C^T = B^T A^T),
// Z = Y X is P <= PR rows. A third, skinny_outer (at the end), is for few k instead: C is large
// and A and B small. book.sgemm picks the kernel from the shape and the layout.
// Idea: the tile kernels are bound by their FMAs; here the cost is reading X once, and the whole
//   of it meets only P columns. A warp computes RW rows of Z: for each chunk of KC values of k,
//   the block copies the chunk of Y into shared memory (rows padded to PR + 1 floats, so that
//   the lanes' reads of one column fall into different banks), each lane takes the k's
//   lane, lane + 32, ... of the chunk -- a warp's loads of a row of X are 32 adjacent floats --
//   and keeps RW x PR partial sums; at the end the warp adds its lanes' sums with shuffles.
//   Where X has few rows, the k's are also split among gridDim.y blocks: each stores its partial
//   sums into W, and the block that finishes last among a column of the grid adds them
//   (skinny_last, skinny_sum), so a split costs no second launch.
// Expected bottleneck: DRAM, reading X (R K floats) once.
// Launch (skinny_dots): block (32 * WARPS), grid (CEIL_DIV(R, RW * WARPS), splits). Element (k, p) of Y is at
//   Y[k * y_k + p * y_p], element (r, p) of Z at Z[r * z_r + p * z_p]; X's rows are ldx floats
//   apart. Where gridDim.y is 1, Z = alpha X Y + beta Z (Z not read where beta is 0); else each
//   block stores its sums into W[blockIdx.y * R * P + r * P + p], and the last block of each
//   column of the grid writes Z = alpha (their sum) + beta Z. `ticket` holds gridDim.x
//   counters, 0 before the launch and 0 again after it.
#include "common.cuh"

#ifndef PR
#define PR 8  // columns of Y the kernel is built for (P <= PR)
#endif
#ifndef WARPS
#define WARPS 8
#endif
#define RW (PR <= 8 ? 4 : PR == 16 ? 2 : 1)  // rows of X per warp: RW * PR <= 32 sums per lane
#define KC 128                                // values of k per chunk of Y in shared memory
static_assert(PR >= 1 && PR <= 32, "few columns: PR from 1 to 32");

__device__ __forceinline__ void skinny_store(float* __restrict__ Z, long long at, float v,
                                             float alpha, float beta) {
    Z[at] = beta == 0.0f ? alpha * v : alpha * v + beta * Z[at];
}

// Split-K without a second launch: each block of a column of the grid (blockIdx.x) has stored
// its slice of sums into W; it counts itself in ticket[blockIdx.x], and the block that counts
// last adds the slices, in the order s = 0, 1, ... (the same sum, bit for bit, whichever block
// comes last, and the same as 09_splitk.cu's splitk_reduce), and sets the counter back to 0
// for the next launch. __threadfence: a block's slice is visible to every block before its
// count is. Returns whether this block is the last (every thread gets the same answer).
__device__ __forceinline__ bool skinny_last(unsigned* ticket, int* last) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        *last = atomicAdd(&ticket[blockIdx.x], 1u) == gridDim.y - 1;
        if (*last) ticket[blockIdx.x] = 0u;
    }
    __syncthreads();
    if (*last) __threadfence();  // the other slices are read after their counts
    return *last;
}

// The last block's sums over rows [i0, i0 + ni) and columns [j0, j0 + nj) of W's slices (each
// `slice` floats, rows `cols` long): Z[i * z_i + j * z_j] = alpha (sum over s of
// W[s * slice + i * cols + j]) + beta Z. W is read past L1 (volatile): other blocks wrote it.
__device__ __forceinline__ void skinny_sum(const float* W, long long slice, int cols, float* Z,
                                           int z_i, int z_j, int i0, int ni, int j0, int nj,
                                           float alpha, float beta) {
    const volatile float* w = W;
    for (int t = threadIdx.x; t < ni * nj; t += blockDim.x) {
        const int i = i0 + t / nj, j = j0 + t % nj;
        float sum = 0.0f;
        for (int s = 0; s < (int)gridDim.y; ++s) sum += w[s * slice + (long long)i * cols + j];
        skinny_store(Z, (long long)i * z_i + (long long)j * z_j, sum, alpha, beta);
    }
}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
skinny_dots(const float* __restrict__ X, int ldx, const float* __restrict__ Y, int y_k, int y_p,
            float* __restrict__ Z, int z_r, int z_p, int R, int P, int K, float alpha,
            float beta, float* __restrict__ W, unsigned* __restrict__ ticket) {
    __shared__ float Ys[KC][PR + 1];
    __shared__ int last;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int r0 = (blockIdx.x * WARPS + warp) * RW;
    const int per = CEIL_DIV(CEIL_DIV(K, (int)gridDim.y), 32) * 32;  // k's per block: whole warps
    const int k_begin = blockIdx.y * per, k_end = min(K, k_begin + per);
    float acc[RW][PR] = {};
    for (int k0 = k_begin; k0 < k_end; k0 += KC) {
        for (int i = threadIdx.x; i < KC * PR; i += blockDim.x) {
            const int kk = i / PR, p = i % PR, k = k0 + kk;
            Ys[kk][p] = (k < k_end && p < P) ? Y[(long long)k * y_k + (long long)p * y_p] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < KC / 32; ++j) {
            const int kk = lane + 32 * j, k = k0 + kk;
            float y[PR];
#pragma unroll
            for (int p = 0; p < PR; ++p) y[p] = Ys[kk][p];
#pragma unroll
            for (int r = 0; r < RW; ++r) {
                const int row = r0 + r;
                const float x = (row < R && k < k_end) ? X[(long long)row * ldx + k] : 0.0f;
#pragma unroll
                for (int p = 0; p < PR; ++p) acc[r][p] += x * y[p];
            }
        }
        __syncthreads();  // the next chunk overwrites Ys
    }
#pragma unroll
    for (int r = 0; r < RW; ++r) {
        const int row = r0 + r;
#pragma unroll
        for (int p = 0; p < PR; ++p) {
            float v = acc[r][p];
#pragma unroll
            for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
            if (lane == p % 32 && row < R && p < P) {
                if (gridDim.y == 1)
                    skinny_store(Z, (long long)row * z_r + (long long)p * z_p, v, alpha, beta);
                else
                    W[(long long)blockIdx.y * R * P + (long long)row * P + p] = v;
            }
        }
    }
    if (gridDim.y > 1 && skinny_last(ticket, &last)) {  // this block's rows, every column p
        const int first = blockIdx.x * WARPS * RW;
        skinny_sum(W, (long long)R * P, P, Z, z_r, z_p, first, min(WARPS * RW, R - first), 0, P,
                   alpha, beta);
    }
}

// skinny_rows: Z (P x R) = Y (P x K) X (K x R), X's rows (k) ldx floats apart and read along r.
// A block takes 128 adjacent columns r of X, each lane 4 of them: per k it loads 4 floats of X
// (16 bytes where X's rows start on 16 bytes; a warp reads 512 adjacent bytes; else four single
// floats 32 apart, so that each load of the warp reads 128 adjacent bytes) and multiplies
// them by the chunk's Y[p][k], the same for every lane (a broadcast from shared memory), into
// 4 x PR sums. The block's WARPS warps split its k's among them, UNROLL rows at a time in turn
// (so that few columns still give many warps, each with UNROLL loads in flight), and add their
// sums through shared memory at the end.
// Launch: block (32 * WARPS), grid (CEIL_DIV(R, 128), splits); element (p, k) of Y at
//   Y[p * y_p + k * y_k], element (p, r) of Z at Z[p * z_p + r * z_r]; splits > 1 as skinny_dots
//   (W holds P x R slices, row p, column r at p * R + r: the last block of each column of the
//   grid adds its 128 columns of them).
#define UNROLL 4

__device__ __forceinline__ void rows_step(float (&acc)[PR][4], const float* y, const float (&x)[4]) {
#pragma unroll
    for (int p = 0; p < PR; ++p)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[p][j] += y[p] * x[j];
}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
skinny_rows(const float* __restrict__ X, int ldx, const float* __restrict__ Y, int y_p, int y_k,
            float* __restrict__ Z, int z_p, int z_r, int R, int P, int K, float alpha,
            float beta, float* __restrict__ W, unsigned* __restrict__ ticket) {
    __shared__ float Ys[KC][PR];
    __shared__ int last;
    __shared__ float sums[32][4 * PR + 1];  // one warp's sums at a time (+1: no bank conflicts)
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int r = 4 * (blockIdx.x * 32 + lane);
    const int per = CEIL_DIV(CEIL_DIV(K, (int)gridDim.y), 8) * 8;  // few columns of X: fine splits
    const int k_begin = blockIdx.y * per, k_end = min(K, k_begin + per);
    // Rows of X on 16 bytes: the lane's columns are r .. r + 3 (float4 loads where all 4 are in
    // X). Else they are lane, lane + 32, lane + 64, lane + 96 of the block's 128, so that each
    // of the 4 single-float loads of the warp reads 32 adjacent floats.
    const bool aligned = (ldx & 3) == 0 && (reinterpret_cast<unsigned long long>(X) & 15) == 0;
    auto col = [&](int j) { return aligned ? r + j : (int)blockIdx.x * 128 + lane + 32 * j; };
    const bool vec = aligned && r + 3 < R;
    float acc[PR][4] = {};
    for (int k0 = k_begin; k0 < k_end; k0 += KC) {
        for (int i = threadIdx.x; i < KC * PR; i += blockDim.x) {
            const int kk = i / PR, p = i % PR, k = k0 + kk;
            Ys[kk][p] = (k < k_end && p < P) ? Y[(long long)p * y_p + (long long)k * y_k] : 0.0f;
        }
        __syncthreads();
        const int kn = min(KC, k_end - k0);
        if (col(0) < R) {
            int kk = warp * UNROLL;  // this warp's rows: UNROLL at a time, every WARPS * UNROLL
            if (vec)  // UNROLL rows of X in flight per thread: a lone load per k leaves DRAM idle
                for (; kk + UNROLL <= kn; kk += WARPS * UNROLL) {
                    float4 v[UNROLL];
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u)
                        v[u] = *reinterpret_cast<const float4*>(X + (long long)(k0 + kk + u) * ldx + r);
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u) {
                        const float x[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
                        rows_step(acc, Ys[kk + u], x);
                    }
                }
            for (; kk + UNROLL <= kn; kk += WARPS * UNROLL) {  // single floats, as many in flight
                float x[UNROLL][4];
#pragma unroll
                for (int u = 0; u < UNROLL; ++u)
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        x[u][j] = col(j) < R ? X[(long long)(k0 + kk + u) * ldx + col(j)] : 0.0f;
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) rows_step(acc, Ys[kk + u], x[u]);
            }
            for (; kk < kn; kk += WARPS * UNROLL)  // the rows left, one at a time
                for (int u = 0; u < UNROLL && kk + u < kn; ++u) {
                    const float* row = X + (long long)(k0 + kk + u) * ldx;
                    float x[4];
#pragma unroll
                    for (int j = 0; j < 4; ++j) x[j] = col(j) < R ? row[col(j)] : 0.0f;
                    rows_step(acc, Ys[kk + u], x);
                }
        }
        __syncthreads();
    }
    for (int w = 1; w < WARPS; ++w) {  // warp 0 adds the other warps' sums, one warp at a time
        if (warp == w)
#pragma unroll
            for (int p = 0; p < PR; ++p)
#pragma unroll
                for (int j = 0; j < 4; ++j) sums[lane][4 * p + j] = acc[p][j];
        __syncthreads();
        if (warp == 0)
#pragma unroll
            for (int p = 0; p < PR; ++p)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[p][j] += sums[lane][4 * p + j];
        __syncthreads();
    }
    if (warp == 0 && col(0) < R)
#pragma unroll
        for (int p = 0; p < PR; ++p) {
            if (p >= P) break;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                if (col(j) >= R) break;
                if (gridDim.y == 1)
                    skinny_store(Z, (long long)p * z_p + (long long)col(j) * z_r, acc[p][j], alpha, beta);
                else
                    W[(long long)blockIdx.y * R * P + (long long)p * R + col(j)] = acc[p][j];
            }
        }
    if (gridDim.y > 1 && skinny_last(ticket, &last))  // W's slices are P x R: this block's columns
        skinny_sum(W, (long long)R * P, R, Z, z_p, z_r, 0, P, blockIdx.x * 128,
                   min(128, R - (int)blockIdx.x * 128), alpha, beta);
}

// skinny_outer: C (M x N) = A (M x K) B (K x N) with few k (K <= PR): the cost is writing C,
// so each thread keeps B's K values of its 4 columns in registers and writes those columns of
// every OUTER_ROWS rows of C its block takes: the groups of rows blockIdx.y, blockIdx.y +
// gridDim.y, ... For PR above 8 the host launches at most one wave of blocks (as many as the GPU
// holds at once), so that B is read once per block, not once per group (with a group a block and
// K = 32, the blocks read twice as many bytes of B from L2 as they write of C); for fewer k, or
// where C's columns alone would take more than half a wave, a block a group. A warp's columns
// are 128 adjacent ones, lane, lane + 32, lane + 64 and lane + 96 for a lane: each store of the
// warp writes 32 adjacent floats, whatever C's alignment. A group's OUTER_ROWS x K values of A
// go to shared memory (the same for every thread: broadcasts); each thread loads its share of
// the next group's while the block computes this one.
// Launch: block (32 * WARPS), grid (CEIL_DIV(N, 128 * WARPS), any count up to
//   CEIL_DIV(M, OUTER_ROWS)); element (m, k) of A at A[m * a_m + k * a_k], (k, n) of B at
//   B[k * b_k + n * b_n] (any layout); C = alpha A B + beta C, rows ldc floats apart (C not read
//   where beta is 0).
#define OUTER_ROWS 16
#define OUTER_LOADS CEIL_DIV(OUTER_ROWS * PR, 32 * WARPS)  // values of A per thread and group

__device__ __forceinline__ void outer_load_a(float (&a)[OUTER_LOADS], const float* __restrict__ A,
                                             int a_m, int a_k, int m0, int M, int K) {
#pragma unroll
    for (int l = 0; l < OUTER_LOADS; ++l) {
        const int i = threadIdx.x + l * 32 * WARPS, m = m0 + i / PR, k = i % PR;
        a[l] = i < OUTER_ROWS * PR && m < M && k < K
                   ? A[(long long)m * a_m + (long long)k * a_k] : 0.0f;
    }
}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
skinny_outer(const float* __restrict__ A, int a_m, int a_k, const float* __restrict__ B, int b_k,
             int b_n, float* __restrict__ C, int ldc, int M, int N, int K, float alpha, float beta) {
    __shared__ float As[OUTER_ROWS][PR];
    const int lane = threadIdx.x % 32;
    const int n0 = 128 * (blockIdx.x * WARPS + threadIdx.x / 32) + lane;  // columns n0 + 32 j
    float next[OUTER_LOADS];
    outer_load_a(next, A, a_m, a_k, blockIdx.y * OUTER_ROWS, M, K);
    float b[PR][4];
#pragma unroll
    for (int k = 0; k < PR; ++k)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int n = n0 + 32 * j;
            b[k][j] = k < K && n < N ? B[(long long)k * b_k + (long long)n * b_n] : 0.0f;
        }
    for (int m0 = blockIdx.y * OUTER_ROWS; m0 < M; m0 += gridDim.y * OUTER_ROWS) {
        __syncthreads();  // the last group's reads of As are done
#pragma unroll
        for (int l = 0; l < OUTER_LOADS; ++l) {
            const int i = threadIdx.x + l * 32 * WARPS;
            if (i < OUTER_ROWS * PR) As[i / PR][i % PR] = next[l];
        }
        __syncthreads();
        outer_load_a(next, A, a_m, a_k, m0 + gridDim.y * OUTER_ROWS, M, K);  // in flight meanwhile
        if (n0 >= N) continue;
#pragma unroll 4
        for (int i = 0; i < OUTER_ROWS; ++i) {
            const int m = m0 + i;
            if (m >= M) break;
            float acc[4] = {};
#pragma unroll
            for (int k = 0; k < PR; ++k) {  // (b and As are 0 past K)
                const float a = As[i][k];
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[j] += a * b[k][j];
            }
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (n0 + 32 * j < N) skinny_store(C, (long long)m * ldc + n0 + 32 * j, acc[j], alpha, beta);
        }
    }
}
