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
#ifndef SPLITK
#define SPLITK 0  // 1: blockIdx.z picks a slice of K (chapter 9); 0 keeps the loop bounds constant
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

// The kernel's body: C = A B where the rows of A, B and C are lda, ldb, ldc floats apart.
// matmul_async (this chapter) calls it for contiguous matrices, lda = K and ldb = ldc = N, and
// the compiler builds it with those constants in; chapter 9's 09_sgemm.cu calls it with leading
// dimensions as BLAS takes them.
__device__ __forceinline__ void async_tiles(const float* __restrict__ A,
                                            const float* __restrict__ B, float* __restrict__ C,
                                            int M, int N, int K, int lda, int ldb, int ldc) {
    extern __shared__ __align__(16) float stages[];  // STAGES_BYTES: the A tiles, then the B tiles
    float(*As)[BK][BM + PAD] = reinterpret_cast<float(*)[BK][BM + PAD]>(stages);  // k-major A
    float(*Bs)[BK][BN] = reinterpret_cast<float(*)[BK][BN]>(stages + STAGES * BK * (BM + PAD));
    const int tid = threadIdx.x, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const WarpPlace place = warp_place();
    float acc[WMITER * TM][WNITER * TN] = {};
#if SPLITK
    // Split-K (chapter 9): block z computes the tiles t0 .. t0 + tiles - 1 of K and stores its
    // partial sums in slice z of C (gridDim.z slices of M x N; a reduction adds them).
    const int all = CEIL_DIV(K, BK), per = CEIL_DIV(all, (int)gridDim.z);
    const int t0 = blockIdx.z * per, tiles = min(per, all - t0);
    C += (long long)blockIdx.z * M * ldc;
#else
    const int t0 = 0, tiles = CEIL_DIV(K, BK);  // this chapter: all of K, straight into C
#endif

    // This thread's pieces of every tile: A rows ra + l * A_STEP at column ca (k), B rows
    // rb + l * B_STEP at columns cb .. cb + 3. Where the block's tiles lie wholly inside the
    // matrices (all but the edge blocks) they are copied without any bounds check -- if B's rows
    // start on 16-byte boundaries (ldb a multiple of 4), as the 16-byte copies need. The edge
    // blocks check every copy (src-size 0 writes zeros and reads nothing).
    const int ra = tid / BK, ca = tid % BK, rb = tid / (BN / 4), cb = 4 * (tid % (BN / 4));
    const bool b16 = (ldb & 3) == 0 && (reinterpret_cast<unsigned long long>(B) & 15) == 0;
    const bool inner = m0 + BM <= M && n0 + BN <= N && b16;
    auto copy_tile = [&](int s, int t) {  // tile t (k from t * BK) into stage s
        const int k0 = t * BK;
        if (inner && k0 + BK <= K) {
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
            if (r < K && b16 && c + 3 < N) {
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
#if SPLITK
    if (tiles <= 0) {  // an empty slice of K (the host avoids them): its partial sums are zero
        warp_tile_store(C, M, N, ldc, m0, n0, acc, place);
        return;
    }
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
    warp_tile_store(C, M, N, ldc, m0, n0, acc, place);
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
matmul_async(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int M, int N, int K) {
    async_tiles(A, B, C, M, N, K, K, N, N);
}
