// warptile.cuh -- chapter 8: the warp-tiled inner loop and store, shared by 08_warptile.cu (loads
// through registers) and 08_async.cu (loads with cp.async). Only the way tiles reach shared
// memory differs between the two kernels; what is computed from them is this file.
//
// Three levels of tiles. A block computes BM x BN of C; each of its warps a WM x WN region; each
// warp covers its region in WMITER x WNITER sub-tiles of WSUBM x WSUBN, and each thread computes
// a TM x TN piece of every sub-tile. A thread's TN values of B are then 4-float pieces WSUBN
// apart instead of one run of TN floats, so the LDS.128s of a quarter-warp read adjacent 16-byte
// pieces and never collide in banks; a warp's stores of C cover compact rows.
// The shared tiles: As[BK][BM + PAD] holds A transposed (k-major), Bs[BK][BN + PADB] holds B as
// is (PADB 0 but where B arrives transposed: 08_async.cu's TRANS_B).
#ifndef BOOK_WARPTILE_CUH
#define BOOK_WARPTILE_CUH
#include "common.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef WNITER
#define WNITER 2
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 4
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef PAD
#define PAD 4
#endif
#ifndef PADB
#define PADB 0
#endif
#ifndef MINB
#define MINB 1  // __launch_bounds__'s blocks per SM: 2 caps a 256-thread block at 128 registers
#endif
#ifndef SERP
#define SERP 0  // 1: odd rows of the outer product run backwards, so b[j] repeats at row ends
#endif
#define WMITER ((WM * WN) / (32 * TM * TN * WNITER))
#define WSUBM (WM / WMITER)
#define WSUBN (WN / WNITER)
static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "one warp per WM x WN region");
static_assert(WMITER >= 1 && (WSUBM / TM) * (WSUBN / TN) == 32, "32 threads per sub-tile");
static_assert(TM % 4 == 0 && TN % 4 == 0 && PAD % 4 == 0 && PADB % 4 == 0 && BK % 4 == 0,
              "float4 reads of the shared tiles");

// Where this thread works: its warp's region (wrow, wcol) and its place in a sub-tile.
struct WarpPlace {
    int wrow, wcol, trow, tcol;
};
__device__ __forceinline__ WarpPlace warp_place() {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    return {warp / (BN / WN), warp % (BN / WN), lane / (WSUBN / TN), lane % (WSUBN / TN)};
}

// Copies 4 floats of shared memory into registers r[0..3] with one LDS.128.
__device__ __forceinline__ void lds4(float* r, const float* s) {
    const float4 v = *reinterpret_cast<const float4*>(s);
    r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
}

// The fragments of step k: this thread's WMITER * TM values of A and WNITER * TN values of B,
// read from the shared tiles with LDS.128s.
__device__ __forceinline__ void load_fragments(float (&a)[WMITER * TM], float (&b)[WNITER * TN],
                                               const float (&As)[BK][BM + PAD],
                                               const float (&Bs)[BK][BN + PADB], int k, WarpPlace p) {
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; i += 4)
            lds4(&a[wm * TM + i], &As[k][p.wrow * WM + wm * WSUBM + p.trow * TM + i]);
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            lds4(&b[wn * TN + j], &Bs[k][p.wcol * WN + wn * WSUBN + p.tcol * TN + j]);
}

// acc += a b^T: the outer product of one step's fragments, WMITER * TM * WNITER * TN FFMAs.
__device__ __forceinline__ void outer_product(float (&acc)[WMITER * TM][WNITER * TN],
                                              const float (&a)[WMITER * TM],
                                              const float (&b)[WNITER * TN]) {
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int jj = 0; jj < WNITER * TN; ++jj) {
            const int j = (SERP && i % 2) ? WNITER * TN - 1 - jj : jj;
            acc[i][j] += a[i] * b[j];
        }
}

// acc += this thread's share of As * Bs over the BK values of k.
__device__ __forceinline__ void warp_tile_fma(float (&acc)[WMITER * TM][WNITER * TN],
                                              const float (&As)[BK][BM + PAD],
                                              const float (&Bs)[BK][BN + PADB], WarpPlace p) {
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        float a[WMITER * TM], b[WNITER * TN];
        load_fragments(a, b, As, Bs, k, p);
        outer_product(acc, a, b);
    }
}

// Writes the accumulators into C (rows ldc floats apart) at block corner (m0, n0), 16 bytes at a
// time where possible; only rows from row_from and columns from col_from, for tiles moved back
// over their neighbours (08_async.cu). STRADDLE: col_from - n0 may not be a multiple of 4 (a tile
// moved back to an edge that is not), so a piece of 4 may start before col_from.
template <bool STRADDLE = false>
__device__ __forceinline__ void warp_tile_store(float* __restrict__ C, int M, int N, int ldc,
                                                int m0, int n0,
                                                const float (&acc)[WMITER * TM][WNITER * TN],
                                                WarpPlace p, int row_from = 0,
                                                int col_from = 0) {
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const float* r = acc[wm * TM + i];
            const int row = m0 + p.wrow * WM + wm * WSUBM + p.trow * TM + i;
            if (row < row_from) continue;
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const int c = wn * TN + j;
                    const int col = n0 + p.wcol * WN + wn * WSUBN + p.tcol * TN + j;
                    const float4 v = make_float4(r[c], r[c + 1], r[c + 2], r[c + 3]);
                    if (col >= col_from)
                        store4(C, row, col, M, N, ldc, v);
                    else if (STRADDLE)
                        store4_from(C, row, col, M, N, ldc, col_from, v);
                }
        }
}

// warp_tile_store for rows of C that do not start on 16 bytes (N or ldc not a multiple of 4):
// there a thread's 4 floats of a row go out one at a time, 16 bytes apart across the warp, and
// each store instruction touches a part of four times the 32-byte sectors it fills. Here the warp
// passes its rows through shared memory instead: for each i, its threads write their pieces of
// rows i, TM + i, 2 TM + i, ... (STAGE_ROWS rows of WN floats) into S, its own STAGED_FLOATS, and
// then read them back along the rows, so that each store instruction writes 32 adjacent floats.
// Rows in S are WN + 16 floats apart: the 16-byte writes of a quarter-warp hit no bank twice.
#define STAGE_ROWS (WSUBM / TM)
#define STAGE_LD (WN + 16)
#define STAGED_FLOATS (STAGE_ROWS * STAGE_LD)
__device__ __forceinline__ void warp_tile_store_staged(float* __restrict__ C, int M, int N, int ldc,
                                                       int m0, int n0,
                                                       const float (&acc)[WMITER * TM][WNITER * TN],
                                                       WarpPlace p, int row_from, int col_from,
                                                       float* S) {
    const int lane = threadIdx.x % 32, r0 = m0 + p.wrow * WM, c0 = n0 + p.wcol * WN;
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const float* r = acc[wm * TM + i];
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const int c = wn * TN + j;
                    *reinterpret_cast<float4*>(&S[p.trow * STAGE_LD + wn * WSUBN + p.tcol * TN + j]) =
                        make_float4(r[c], r[c + 1], r[c + 2], r[c + 3]);
                }
            __syncwarp();
#pragma unroll
            for (int e = lane; e < STAGE_ROWS * WN; e += 32) {
                const int row = r0 + wm * WSUBM + (e / WN) * TM + i, col = c0 + e % WN;
                if (row >= row_from && row < M && col >= col_from && col < N)
                    C[(long long)row * ldc + col] = S[(e / WN) * STAGE_LD + e % WN];
            }
            __syncwarp();  // all reads of S are done before the next i writes it
        }
}
#endif
