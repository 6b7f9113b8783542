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
#include "warptile.cuh"

#ifndef STAGES
#define STAGES 3
#endif
#ifndef MOVE_EDGES
#define MOVE_EDGES 1  // 0: edge tiles stay in place and check every copy (chapter 9 times both)
#endif
#define A_COPIES (BM * BK / THREADS)      // floats of A each thread copies per tile
#define B_COPIES (BK * BN / 4 / THREADS)  // 16-byte pieces of B
#define STAGES_BYTES (STAGES * BK * (BM + PAD + BN) * 4)  // dynamic shared memory
#define A_STEP (THREADS / BK)              // rows between a thread's floats of A
#define B_STEP (THREADS / (BN / 4))        // rows between its pieces of B
static_assert(STAGES >= 2, "at least one tile in flight while another is computed");
static_assert(A_COPIES >= 1 && B_COPIES >= 1 && A_COPIES * THREADS == BM * BK &&
              B_COPIES * THREADS * 4 == BK * BN && THREADS % BK == 0 && THREADS % (BN / 4) == 0,
              "every thread copies whole pieces of each tile, the same columns of every tile");

// Where a block works: on the tile of C in tile row tile_row and column tile_col (blockIdx.y and
// blockIdx.x here, chapter 9's stream-K a tile index). That tile would start at
// (tile_row * BM, tile_col * BN); at the bottom and right edges it sticks out of C. Where C holds
// a whole tile (M >= BM and N >= BN), and B's rows start on 16-byte boundaries (ldb a multiple of
// 4) as the 16-byte copies need, the edge tiles are moved back to end at the edge instead: every
// copy of A and B then lies inside the matrices and needs no bounds check (B's rows are read in
// whole 16-byte pieces, up to N rounded up to 4, which rows ldb apart hold). A moved tile
// overlaps the one before it; it stores only its own rows and columns, from (row_from,
// col_from). Otherwise (small or unaligned matrices) the tiles stay put and every copy is checked.
struct TileSpot {
    int m0, n0;              // the corner of the tile the block computes
    int row_from, col_from;  // the first row and column it stores
    bool inner;              // its copies need no bounds check (but k's in the last tile of K)
    bool b16;                // B's rows start on 16-byte boundaries
};
__device__ __forceinline__ TileSpot tile_spot(int tile_row, int tile_col, const float* B, int M,
                                              int N, int ldb) {
    const int m = tile_row * BM, n = tile_col * BN, wide = (N + 3) & ~3;
    const bool b16 = (ldb & 3) == 0 && (reinterpret_cast<unsigned long long>(B) & 15) == 0;
    if (!MOVE_EDGES) return {m, n, m, n, b16 && m + BM <= M && n + BN <= N, b16};
    const bool inner = b16 && M >= BM && wide >= BN;
    return {inner ? min(m, M - BM) : m, inner ? min(n, wide - BN) : n, m, n, inner, b16};
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
    float(*Bs)[BK][BN] = reinterpret_cast<float(*)[BK][BN]>(stages + STAGES * BK * (BM + PAD));
    const int tid = threadIdx.x, m0 = at.m0, n0 = at.n0;

    // This thread's pieces of every tile: A rows ra + l * A_STEP at column ca (k), B rows
    // rb + l * B_STEP at columns cb .. cb + 3. Copied without bounds checks where the tile is
    // inner (see tile_spot) and its k's lie inside K; otherwise every copy is checked (src-size 0
    // writes zeros and reads nothing) -- the last tile of K, and all tiles of small or unaligned
    // matrices.
    const int ra = tid / BK, ca = tid % BK, rb = tid / (BN / 4), cb = 4 * (tid % (BN / 4));
    auto copy_tile = [&](int s, int t) {  // tile t (k from t * BK) into stage s
        const int k0 = t * BK;
        if (at.inner && k0 + BK <= K) {
            const float* a = A + (long long)(m0 + ra) * lda + k0 + ca;
            const float* b = B + (long long)(k0 + rb) * ldb + n0 + cb;
#pragma unroll
            for (int l = 0; l < A_COPIES; ++l)
                copy4(&As[s][ca][ra + l * A_STEP], a + (long long)l * A_STEP * lda, true);
#pragma unroll
            for (int l = 0; l < B_COPIES; ++l)
                copy16_aligned(&Bs[s][rb + l * B_STEP][cb], b + (long long)l * B_STEP * ldb);
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
            if (r < K && at.b16 && c + 3 < N) {
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
    const TileSpot at = tile_spot(tile_row, tile_col, B, M, N, ldb);
    float acc[WMITER * TM][WNITER * TN] = {};
    async_accumulate(acc, A, B, M, N, K, lda, ldb, at, 0, CEIL_DIV(K, BK), place);
    warp_tile_store(C, M, N, ldc, at.m0, at.n0, acc, place, at.row_from, at.col_from);
}

#if !defined(ONE_ENTRY) || defined(ENTRY_matmul_async)  // 09_sgemm.cu: one entry per build
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_async(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int M, int N, int K) {
    async_tiles(A, B, C, M, N, K, K, N, N, blockIdx.y, blockIdx.x);
}
#endif
