// 08_async.cu -- chapter 8, step 4: the warp tiles of warptile.cuh fed by cp.async, STAGES deep.
//
// Idea: cp.async copies global memory straight into shared memory without passing through
//   registers, and the thread does not wait for it until it asks to (cp.async.wait_group). With
//   STAGES shared tiles in a ring, the copies of tiles t+1 .. t+STAGES-1 are in flight while the
//   FMAs run on tile t; one barrier per tile. A is still stored transposed: each thread copies
//   single floats of A (4-byte copies, coalesced along k) into their k-major places, and whole
//   16-byte pieces of B.
//   The fragments are double-buffered too: step k + 1's are read from shared memory while the
//   FFMAs of step k run, across tile boundaries as well (the barrier sits before the last step).
//   The stages live in dynamic shared memory (more than the 48 KiB of static shared memory).
// Changed from 08_warptile.cu: the loads. No registers hold the next tile any more, so the
//   registers that 08_warptile.cu's DB = 1 spent on it are free, and the pipeline can be deeper.
// Expected bottleneck: FMA issue, and the LDS bandwidth of the fragments it reads.
// Launch: block (THREADS, 1), grid (CEIL_DIV(N, BN), CEIL_DIV(M, BM)), STAGES_BYTES of dynamic
//   shared memory; any M, N, K.
// Transposed operands (chapter 9's book.sgemm): with TRANS_A = 1, element (m, k) of A is at
//   A[k * lda + m] (A handed over as the transpose of a row-major K x M array, X.T in NumPy);
//   with TRANS_B = 1, element (k, n) of B is at B[n * ldb + k]. Only the copies into shared memory
//   change: an operand whose rows run along k is copied one float at a time into its k-major
//   tile (as A always was), one whose rows run along m or n in 16-byte pieces (as B always was).
//   A transposed B tile is padded (PADB) as A's is, against bank conflicts of those copies.
#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#if TRANS_B && !defined(PADB)
#define PADB 4
#endif
#include "warptile.cuh"

#ifndef STAGES
#define STAGES 3
#endif
#ifndef MOVE_EDGES
#define MOVE_EDGES 1  // 0: edge tiles stay in place and check every copy (chapter 9 times both)
#endif
#ifndef ROW_ALIGN
#define ROW_ALIGN 4  // 2 or 1: chapter 9's builds for rows that start on 8 or 4 bytes (tile_spot)
#endif
static_assert(ROW_ALIGN == 4 || ROW_ALIGN == 2 || ROW_ALIGN == 1, "ROW_ALIGN: 4, 2 or 1 floats");
#define STAGES_BYTES (STAGES * BK * (BM + PAD + BN + PADB) * 4)  // dynamic shared memory
#define A_COPIES (BM * BK / THREADS)      // floats of A each thread copies per tile (A as is)
#define B_COPIES (BK * BN / 4 / THREADS)  // 16-byte pieces of B (B as is)
#define A_STEP (THREADS / BK)              // rows between a thread's floats of A
#define B_STEP (THREADS / (BN / 4))        // rows between its pieces of B
static_assert(STAGES >= 2, "at least one tile in flight while another is computed");

// An inner tile of an operand whose rows run along m or n (B as is, A transposed; see below):
// unchecked copies of ROW_ALIGN floats (16 bytes; in the builds for rows on 8 or 4 bytes, 8 or
// 4), a warp's side by side along a row, so that each copy instruction reads whole 128-byte lines.
// (Four 4-byte copies of each thread's 16-byte piece, 16 bytes apart across the warp, read every
// line four times: on an H100 that ran slower than the checked copies at 2758 x 619 x 222.)
template <int W, int P>
__device__ __forceinline__ void copy_rows(float (*S)[W + P], const float* __restrict__ src,
                                          int ld, int c0, int k0) {
    constexpr int PER_ROW = W / ROW_ALIGN, STEP = THREADS / PER_ROW;
    constexpr int COPIES = BK * PER_ROW / THREADS;
    static_assert(THREADS % PER_ROW == 0 && (BK * PER_ROW) % THREADS == 0, "whole rows per step");
    const int r = threadIdx.x / PER_ROW, c = ROW_ALIGN * (threadIdx.x % PER_ROW);
    const float* p = src + (long long)(k0 + r) * ld + c0 + c;
#pragma unroll
    for (int l = 0; l < COPIES; ++l) {
        float* dst = &S[r + l * STEP][c];
        const float* q = p + (long long)l * STEP * ld;
        if (ROW_ALIGN == 4) copy16_aligned(dst, q);
        else if (ROW_ALIGN == 2) copy8_aligned(dst, q);
        else copy4(dst, q, true);
    }
}

// The copies of one operand's tile into its k-major shared tile S[BK][W + P] (W = BM for A,
// BN for B), for k from k0. Every thread copies the same places of every tile.
// Across: the operand's rows run along k (A as is, B transposed): element (r, k) of the tile is
//   src[(r0 + r) * ld + k0 + k], one float per copy, consecutive threads along k (coalesced).
//   `rows`: M or N, the rows there are.
template <int W, int P>
__device__ __forceinline__ void copy_across(float (*S)[W + P], const float* __restrict__ src,
                                            int ld, int rows, int r0, int k0, int K, bool inner) {
    static_assert((W * BK) % THREADS == 0 && THREADS % BK == 0, "whole floats per thread");
    constexpr int STEP = THREADS / BK, COPIES = W * BK / THREADS;
    const int r = threadIdx.x / BK, c = threadIdx.x % BK;
    if (inner && k0 + BK <= K) {  // no bounds check (see tile_spot)
        const float* p = src + (long long)(r0 + r) * ld + k0 + c;
#pragma unroll
        for (int l = 0; l < COPIES; ++l) copy4(&S[c][r + l * STEP], p + (long long)l * STEP * ld, true);
        return;
    }
#pragma unroll
    for (int l = 0; l < COPIES; ++l) {  // checked: src-size 0 writes zeros and reads nothing
        const int row = r0 + r + l * STEP, k = k0 + c;
        const bool inside = row < rows && k < K;
        copy4(&S[c][r + l * STEP], inside ? src + (long long)row * ld + k : src, inside);
    }
}
// Along: the operand's rows run along m or n (B as is, A transposed): element (k, c) of the tile is
//   src[(k0 + k) * ld + c0 + c]: in inner tiles by copy_rows; in checked copies in 16-byte pieces
//   where the rows start on 16 bytes (`aligned`), else one float at a time. `cols`: M or N.
template <int W, int P>
__device__ __forceinline__ void copy_along(float (*S)[W + P], const float* __restrict__ src,
                                           int ld, int cols, int c0, int k0, int K, bool inner,
                                           bool aligned) {
    static_assert((BK * W / 4) % THREADS == 0 && THREADS % (W / 4) == 0, "whole pieces per thread");
    constexpr int STEP = THREADS / (W / 4), COPIES = BK * W / 4 / THREADS;
    const int r = threadIdx.x / (W / 4), c = 4 * (threadIdx.x % (W / 4));
    if (inner && k0 + BK <= K) {
        copy_rows<W, P>(S, src, ld, c0, k0);
        return;
    }
#pragma unroll
    for (int l = 0; l < COPIES; ++l) {
        const int k = k0 + r + l * STEP, col = c0 + c;
        float* dst = &S[r + l * STEP][c];
        const float* row = src + (long long)(k < K ? k : 0) * ld;  // a valid address if outside
        // (16 bytes only where the piece starts on 16: a tile that a ROW_ALIGN 2 or 1 build moved
        // back to an edge off multiples of 4 starts off them, though the rows themselves are on 16)
        if (k < K && aligned && (ROW_ALIGN == 4 || (c0 & 3) == 0) && col + 3 < cols) {
            copy16_aligned(dst, row + col);
            continue;
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const bool inside = k < K && col + j < cols;
            copy4(dst + j, inside ? row + col + j : src, inside);
        }
    }
}

// Where a block works: on the tile of C in tile row tile_row and column tile_col (blockIdx.y and
// blockIdx.x here, chapter 9's stream-K a tile index). That tile would start at
// (tile_row * BM, tile_col * BN); at the bottom and right edges it sticks out of C. Where C holds
// a whole tile, and the operands read in 16-byte pieces (B as is, A transposed) have rows that
// start on 16-byte boundaries (ld a multiple of 4), the edge tiles are moved back to end at the
// edge instead: every copy of A and B then lies inside the matrices and needs no bounds check (a
// row read in whole 16-byte pieces is read up to its length rounded up to 4, which rows ld apart
// hold). A moved tile overlaps the one before it; it stores only its own rows and columns, from
// (row_from, col_from). Otherwise (small or unaligned matrices) the tiles stay put and every copy
// is checked. With B transposed the last column of tiles stays put (B's rows past N are not
// there to read), and its copies are checked.
// Chapter 9's builds for rows that start on 8 or 4 bytes (ROW_ALIGN 2 or 1 floats) do the same
// for such rows, with unchecked copies of 8 or 4 bytes, moving tiles back to an edge rounded up
// to ROW_ALIGN: not a multiple of 4, so store_own may store a piece of 4 only in part.
struct TileSpot {
    int m0, n0;              // the corner of the tile the block computes
    int row_from, col_from;  // the first row and column it stores
    bool inner;              // its copies need no bounds check (but k's in the last tile of K)
    bool a16, b16;           // A's and B's rows start on 16-byte boundaries
};
__device__ __forceinline__ bool rows_on(const float* X, int ld, int floats) {
    return (ld & (floats - 1)) == 0 && (reinterpret_cast<unsigned long long>(X) & (4 * floats - 1)) == 0;
}
__device__ __forceinline__ TileSpot tile_spot(int tile_row, int tile_col, const float* A,
                                              const float* B, int M, int N, int lda, int ldb) {
    const int m = tile_row * BM, n = tile_col * BN;
    const bool a16 = rows_on(A, lda, 4), b16 = rows_on(B, ldb, 4);
    const bool pieces_ok = (!TRANS_A || rows_on(A, lda, ROW_ALIGN)) &&  // the unchecked copies
                           (TRANS_B || rows_on(B, ldb, ROW_ALIGN));     // may run
    constexpr int R = ROW_ALIGN - 1;
    const int tall = TRANS_A ? (M + R) & ~R : M, wide = TRANS_B ? N : (N + R) & ~R;
    if (!MOVE_EDGES) return {m, n, m, n, pieces_ok && m + BM <= M && n + BN <= N, a16, b16};
    const bool inner = pieces_ok && tall >= BM && (TRANS_B ? n + BN <= N : wide >= BN);
    return {inner ? min(m, tall - BM) : m, inner && !TRANS_B ? min(n, wide - BN) : n, m, n, inner,
            a16, b16};
}

// The block's tile into C (rows ldc floats apart), its own rows and columns only (see tile_spot).
// Where C's rows do not start on 16 bytes, each warp's rows pass through shared memory (the
// stages, free once every warp has read its last tile) so that its stores cover whole rows;
// not in the split-K entries (STAGE false), whose slices of a workspace are no user's C: there
// the code for it raised ptxas's register count past 168 in some builds, and 128-thread blocks
// from 3 to 2 an SM (an H100 ran 64x128/3s_k3 at 261 x 4409 x 4055 3% slower).
template <bool STAGE = true>
__device__ __forceinline__ void store_own(float* __restrict__ C, int M, int N, int ldc,
                                          const float (&acc)[WMITER * TM][WNITER * TN],
                                          WarpPlace place, TileSpot at) {
    constexpr bool STAGE_FITS = THREADS / 32 * STAGED_FLOATS <= STAGES * BK * (BM + PAD + BN + PADB);
    if (STAGE && STAGE_FITS && !rows_on(C, ldc, 4)) {
        extern __shared__ __align__(16) float stages[];
        __syncthreads();
        warp_tile_store_staged(C, M, N, ldc, at.m0, at.n0, acc, place, at.row_from, at.col_from,
                               stages + threadIdx.x / 32 * STAGED_FLOATS);
        return;
    }
    if (ROW_ALIGN < 4 && (at.col_from - at.n0) & 3)  // moved back to an edge off multiples of 4
        warp_tile_store<true>(C, M, N, ldc, at.m0, at.n0, acc, place, at.row_from, at.col_from);
    else
        warp_tile_store(C, M, N, ldc, at.m0, at.n0, acc, place, at.row_from, at.col_from);
}

// The main loop: acc += A B over the k tiles t0 .. t0 + tiles - 1 (k from t0 * BK), for the
// block tile at (at.m0, at.n0); tiles >= 1. The rows of A and B are lda and ldb floats apart.
__device__ __forceinline__ void async_accumulate(float (&acc)[WMITER * TM][WNITER * TN],
                                                 const float* __restrict__ A,
                                                 const float* __restrict__ B, int M, int N,
                                                 int K, int lda, int ldb, TileSpot at, int t0,
                                                 int tiles, WarpPlace place) {
    extern __shared__ __align__(16) float stages[];  // STAGES_BYTES: the A tiles, then the B tiles
    float(*As)[BK][BM + PAD] = reinterpret_cast<float(*)[BK][BM + PAD]>(stages);  // k-major A
    float(*Bs)[BK][BN + PADB] = reinterpret_cast<float(*)[BK][BN + PADB]>(stages + STAGES * BK * (BM + PAD));
    const int m0 = at.m0, n0 = at.n0;

#if TRANS_A || TRANS_B
    // Each tile's copies (copy_across, copy_along): without bounds checks where the tile is inner
    // (see tile_spot) and its k's lie inside K; otherwise every copy is checked -- the last tile
    // of K, and all tiles of small or unaligned matrices.
    auto copy_tile = [&](int s, int t) {  // tile t (k from t * BK) into stage s
        const int k0 = t * BK;
#if TRANS_A
        copy_along<BM, PAD>(As[s], A, lda, M, m0, k0, K, at.inner, at.a16);
#else
        copy_across<BM, PAD>(As[s], A, lda, M, m0, k0, K, at.inner);
#endif
#if TRANS_B
        copy_across<BN, PADB>(Bs[s], B, ldb, N, n0, k0, K, at.inner);
#else
        copy_along<BN, PADB>(Bs[s], B, ldb, N, n0, k0, K, at.inner, at.b16);
#endif
    };
#else
    // The same copies as copy_across (A) and copy_along (B) do, written out: the SASS ptxas makes
    // of the two functions ran 4-8% slower at large squares on an H200 (chapter 9), so the
    // row-major case keeps chapter 8's code. This thread's pieces of every tile: A rows
    // ra + l * A_STEP at column ca (k), B rows rb + l * B_STEP at columns cb .. cb + 3.
    const int tid = threadIdx.x;
    const int ra = tid / BK, ca = tid % BK, rb = tid / (BN / 4), cb = 4 * (tid % (BN / 4));
    auto copy_tile = [&](int s, int t) {  // tile t (k from t * BK) into stage s
        const int k0 = t * BK;
        if (at.inner && k0 + BK <= K) {
            const float* a = A + (long long)(m0 + ra) * lda + k0 + ca;
            const float* b = B + (long long)(k0 + rb) * ldb + n0 + cb;
#pragma unroll
            for (int l = 0; l < A_COPIES; ++l)
                copy4(&As[s][ca][ra + l * A_STEP], a + (long long)l * A_STEP * lda, true);
            if (ROW_ALIGN == 4) {  // (chapter 8's code as it was: its SASS is what was timed)
#pragma unroll
                for (int l = 0; l < B_COPIES; ++l)
                    copy16_aligned(&Bs[s][rb + l * B_STEP][cb], b + (long long)l * B_STEP * ldb);
            } else {
                copy_rows<BN, PADB>(Bs[s], B, ldb, n0, k0);
            }
            return;
        }
#pragma unroll
        for (int l = 0; l < A_COPIES; ++l) {
            const int r = m0 + ra + l * A_STEP, c = k0 + ca;
            const bool inside = r < M && c < K;
            copy4(&As[s][ca][ra + l * A_STEP], inside ? A + (long long)r * lda + c : A, inside);
        }
#pragma unroll
        for (int l = 0; l < B_COPIES; ++l) {
            const int r = k0 + rb + l * B_STEP, c = n0 + cb;
            float* dst = &Bs[s][rb + l * B_STEP][cb];
            const float* row = B + (long long)(r < K ? r : 0) * ldb;  // a valid address if outside
            if (r < K && at.b16 && c + 3 < N) {  // (n0 is on 4 here: a build for B as is whose rows
                // are on 16 is the ROW_ALIGN 4 build, whose tiles move back to multiples of 4)
                copy16_aligned(dst, row + c);
                continue;
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const bool inside = r < K && c + j < N;
                copy4(dst + j, inside ? row + c + j : B, inside);
            }
        }
    };
#endif
#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {  // fill all stages but one
        if (t < tiles) copy_tile(t, t0 + t);
        commit();
    }
    wait_groups<STAGES - 2>();  // tile 0 has landed
    __syncthreads();
    float a[2][WMITER * TM], b[2][WNITER * TN];  // fragments: step k's, and step k + 1's on the way
    load_fragments(a[0], b[0], As[0], Bs[0], 0, place);
    for (int t = 0; t < tiles; ++t) {
        const int s = t % STAGES, next = t + STAGES - 1;
        if (next < tiles) copy_tile(next % STAGES, t0 + next);  // into tile t - 1's stage
        commit();                   // an empty group near the end keeps the count uniform
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k < BK - 1) {       // read step k + 1 while the FFMAs of step k run
                load_fragments(a[(k + 1) % 2], b[(k + 1) % 2], As[s], Bs[s], k + 1, place);
            } else if (t + 1 < tiles) {
                wait_groups<STAGES - 2>();  // this thread's copies of tile t + 1 have landed ...
                __syncthreads();    // ... and everyone's; and all reads of tile t - 1 are done
                load_fragments(a[0], b[0], As[(t + 1) % STAGES], Bs[(t + 1) % STAGES], 0, place);
            }
            outer_product(acc, a[k % 2], b[k % 2]);
        }
    }
}

// The kernel's body: the block's tile of C = A B, the tile in tile row tile_row and column
// tile_col (blockIdx.y and blockIdx.x here), where the rows of A, B and C are lda, ldb, ldc
// floats apart. matmul_async (this chapter) calls it for contiguous matrices, lda = K and
// ldb = ldc = N, and the compiler builds it with those constants in; chapter 9's 09_sgemm.cu
// calls it with leading dimensions as BLAS takes them, and with tiles numbered in one row.
__device__ __forceinline__ void async_tiles(const float* __restrict__ A,
                                            const float* __restrict__ B, float* __restrict__ C,
                                            int M, int N, int K, int lda, int ldb, int ldc,
                                            int tile_row, int tile_col) {
    const WarpPlace place = warp_place();
    const TileSpot at = tile_spot(tile_row, tile_col, A, B, M, N, lda, ldb);
    float acc[WMITER * TM][WNITER * TN] = {};
    async_accumulate(acc, A, B, M, N, K, lda, ldb, at, 0, CEIL_DIV(K, BK), place);
    store_own(C, M, N, ldc, acc, place, at);
}

#if !defined(ONE_ENTRY) || defined(ENTRY_matmul_async)  // 09_sgemm.cu: one entry per build
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_async(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int M, int N, int K) {
    async_tiles(A, B, C, M, N, K, K, N, N, blockIdx.y, blockIdx.x);
}
#endif
