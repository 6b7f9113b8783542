// 10_wgmma.cu -- tensor cores, step 3: 3xTF32 on Hopper's warpgroup mma (wgmma), its operands
// copied into shared memory by the copy engine, split once beforehand.
//
// Idea: mma.sync (steps 1 and 2) has a TF32 ceiling (mma_peak, results/<gpu>/10_tensor_peaks.csv)
//   of about 320 TFLOP/s on an H100, so 3xTF32 through it could reach at best about twice
//   SGEMM's 51 with nothing else to do. wgmma, Hopper's warpgroup mma, peaks near 485
//   (wgmma_peak, below): four warps (a warpgroup) multiply a 64 x 8 tile of A by an 8 x 128 tile
//   of B, both read by the tensor core from shared memory. Its TF32 operands must be stored
//   k-major, 128 bytes (32 k's) per row in a fixed swizzle (wgmma.cuh), so B is transposed, and
//   the split into big and small parts is done once for all:
// pack_split (the first launch, one pass over A and one over B): each 128 x 32 tile of A, and of
//   B transposed, becomes a 32 KiB record [big 128 x 32][small 128 x 32], already in the swizzled
//   layout, zero-padded to whole tiles. big = tf32(x), small = tf32(x - big).
// matmul_tf32x3_wgmma (the last launch): a block computes 128 x 128 of C with two warpgroups, each
//   64 x 128. One thread asks the copy engine (cp.async.bulk) for the two 32 KiB records of a
//   k-tile, STAGES - 1 tiles ahead, into the stage of the k-tile before the current one as soon
//   as that one's wgmmas are done (the wait at a chunk's end comes after: asked for only after
//   it, the copy arrived late, and step 3 took 6 to 9% longer); an mbarrier counts the copy's
//   bytes, and every thread waits on it. Per 8 k's, three wgmmas: small_A big_B, big_A small_B,
//   big_A big_B (the 2^-22 term small_A small_B is dropped).
// The accumulation: the tensor core adds its inputs with truncation (toward zero), so a sum kept
//   in it for all of K drifts by K / 8 cuts. Here the tensor core sums one chunk of CHUNK k-tiles
//   (64 k's with CHUNK = 2) from zero, and the chunk is added to the accumulator with float32 adds (rounded to
//   nearest): the cuts stay inside the chunk. SMALL_FIRST = 1 orders the chunk's wgmmas so that
//   its small terms go first, while the sum is still small and its cuts tiny, and the big terms of
//   all its k-tiles last: 4 cuts at full size per k-tile instead of 12. (The chunk's k-tiles are
//   then all still in shared memory, since CHUNK <= 2 and CHUNK <= STAGES - 1.) It is a few
//   percent slower.
// Any magnitude (book.sgemm's precision="tf32x3"; built with SCALED = 1): the split's small parts,
//   and their products, would fall below float32's normal range for small inputs (A and B near
//   1e-18 give products near 1e-36, their small terms near 1e-39: the tensor core drops them).
//   pack_split also finds, per row of A and per column of B, the largest exponent of a nonzero
//   finite element; where that lies outside 2^-40 .. 2^40 (shift_of), rescale packs the row's
//   panel again, each such row multiplied by the power of two that brings its largest to
//   [1, 2) -- exact -- and the product's store multiplies C's element back by both powers. (An
//   earlier version scaled every row, after a pass of its own over A and B: the same bits, and
//   a pass more.) Non-finite elements are split as big = x, small = 0 and flagged:
//   the product's store then recomputes the elements of C in the rows and columns they touch
//   with FFMA (fix_tile), so that Inf and NaN come out as cuBLAS SGEMM's.
// Launch: pack_split with block 256 and grid (CEIL_DIV(K, 32), CEIL_DIV(max(M, N), 128), 2)
//   (where SCALED, then rescale); then matmul_tf32x3_wgmma with block 256, grid
//   (CEIL_DIV(N, 128), CEIL_DIV(M, 128), splits), STAGE_BYTES * STAGES + 1024 bytes of dynamic
//   shared memory; any M, N, K. With splits > 1 (few tiles of C: split-K), the slice of K of a
//   tile that ends last adds up the others' sums (gather_slices): no launch more.
//   Compiled for sm_90a (compute capability 9.0).
#include "wgmma.cuh"

#ifndef STAGES
#define STAGES 3
#endif
#ifndef SMALL_FIRST
#define SMALL_FIRST 0  // 1: a chunk's small terms first, its big terms last (fewer cuts at full size)
#endif
#ifndef CHUNK
#define CHUNK 2  // k-tiles (of 32 k's) summed in the tensor core before each float32 add
#endif
#ifndef SCALED
#define SCALED 0  // 1: rows of A and columns of B scaled by powers of two where needed (above)
#endif
#ifndef AREG
#define AREG 0  // 1: pack_split packs B alone, for step 5 (matmul_tf32x3_areg)
#endif
#ifndef TRANS
#define TRANS 0  // 1: the launches compute C's transpose, B^T A^T (thin M: see c_at)
#endif
#define TILE_FLOATS (128 * 32)           // one 128 x 32 tile
#define RECORD_FLOATS (2 * TILE_FLOATS)  // big and small
#define STAGE_BYTES (2 * RECORD_FLOATS * 4)
static_assert(STAGES >= 2, "at least one tile in flight while another is computed");
static_assert(CHUNK >= 1, "at least one k-tile per float32 add");
static_assert(!SMALL_FIRST || (CHUNK <= 2 && CHUNK <= STAGES - 1),
              "SMALL_FIRST: a chunk's k-tiles must all stay in shared memory to its end (a stage is "
              "refilled one k-tile after its first wgmmas)");

// The biased exponent field (0 .. 254) of |x| for a finite x; -1 for Inf and NaN.
__device__ __forceinline__ int exponent_of(float x) {
    const int e = (__float_as_int(x) >> 23) & 255;
    return e == 255 ? -1 : e;
}

// A row's (column's) *magnitude*, as pack_split gathers it in ea and eb: the exponent field of
// its largest finite element plus one (1 where that is subnormal), 0 where every element is zero.
// Rows and columns whose largest element lies within 2^-40 .. 2^40 (fields 87 .. 167) are not
// scaled: there a largest element times a largest element lies within 2^-80 .. 2^80, its small
// terms (2^-11 below) and the terms 2^-24 below those stay in float32's normal range (above
// 2^-126), and sums of up to 2^31 such products stay below 2^128. Outside it (and where the
// largest is subnormal) the row is scaled by the power of two that brings its largest to [1, 2):
// C's element is then multiplied back by 2^shift_of(ea[m]) 2^shift_of(eb[n]). Zero rows: 0.
#define SAFE_LOW 87
#define SAFE_HIGH 167
__device__ __forceinline__ int shift_of(int magnitude) {
    const int field = magnitude - 1;
    return magnitude == 0 || (field >= SAFE_LOW && field <= SAFE_HIGH) ? 0 : field - 127;
}

// 2^-shift_of(e[i]): the power of two row (column) i is multiplied by before its split; 1 where
// the build does not scale.
__device__ __forceinline__ float scale_of(const int* e, int i) {
#if SCALED
    return ldexpf(1.0f, -shift_of(e[i]));
#else
    return 1.0f;
#endif
}
// x times that power of two: exact (a product that is representable is exact; below the
// normal range it is rounded once, as ldexpf would).
__device__ __forceinline__ float scaled_by(float x, const int* e, int i) { return x * scale_of(e, i); }

// A launch that may start while the one before it in the stream ends (book.sgemm launches
// all three of its kernels so: programmatic dependent launch) waits here, before it reads what
// that one wrote (pack_split: A and B, which the launch before may have written); in a plain
// launch it returns at once.
__device__ __forceinline__ void wait_for_the_launch_before() {
#ifdef __CUDA_ARCH__
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// x's big and small TF32 parts: big = tf32(x), small = tf32(x - big); for Inf and NaN, big = x
// and small = 0 (fix_tile recomputes what they touch).
__device__ __forceinline__ void split_tf32(float x, float& big, float& small) {
    big = __int_as_float((int)to_tf32(x));
    small = exponent_of(x) < 0 ? 0.0f : __int_as_float((int)to_tf32(x - big));
}

// One 128 x 32 tile of A (is_b false: rows r0 .., k's k0 ..) or of B transposed (is_b: its
// columns r0 .. are the record's rows) into its record: A's rows are the record rows (k = its
// column); B's columns are (k = its row). Record (i, kt) -- rows 128 i .., k's 32 kt .. -- starts
// at float (i * CEIL_DIV(K, 32) + kt) * RECORD_FLOATS of Ap or Bp. T: the block's shared 32 x 129
// floats, to read B's piece along its rows (A's, where TRANS). `gather` (pack_split where
// SCALED): top[i] takes the bits of the largest |x| of this thread's piece i (of record row
// (threadIdx.x + 256 i) / 8); `scale`: multiplied by scale_of first (rescale, with ea and eb
// complete).
__device__ __forceinline__ void pack_tile(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ Ap, float* __restrict__ Bp, int M,
                                          int N, int K, bool is_b, int kt, int panel, float (*T)[129],
                                          const int* ea, const int* eb, int (&top)[4], bool gather,
                                          bool scale) {
    const int k0 = kt * 32, r0 = panel * 128, rows = is_b ? N : M;
    float* record = (is_b ? Bp : Ap) + ((long long)panel * CEIL_DIV(K, 32) + kt) * RECORD_FLOATS;
    const float* src = is_b ? B : A;  // its element (row, k) at k rows + row where `across`,
    const int* e = is_b ? eb : ea;    // else at row K + k
    const bool across = is_b != TRANS;
    auto scaled = [&](float x, int i) { return scale ? scaled_by(x, e, i) : x; };
    if (across) {
        for (int i = threadIdx.x; i < 32 * 128; i += 256) {
            const int k = k0 + i / 128, n = r0 + i % 128;
            T[i / 128][i % 128] = k < K && n < rows ? scaled(src[(long long)k * rows + n], n) : 0.0f;
        }
        __syncthreads();
    }
    float v[4][4];  // this thread's four pieces of 4 k's (16 bytes), all loaded before any store
    for (int i = 0; i < 4; ++i) {
        const int p = threadIdx.x + 256 * i, r = p / 8, k = 4 * (p % 8), row = r0 + r;
        if (!across && row < rows && k0 + k + 3 < K && K % 4 == 0) {  // 16 bytes at once
            const float4 q = *reinterpret_cast<const float4*>(src + (long long)row * K + k0 + k);
            v[i][0] = q.x, v[i][1] = q.y, v[i][2] = q.z, v[i][3] = q.w;
            for (int j = 0; j < 4; ++j) v[i][j] = scaled(v[i][j], row);
        } else {
            for (int j = 0; j < 4; ++j)
                v[i][j] = across ? T[k + j][r] : row < rows && k0 + k + j < K
                    ? scaled(src[(long long)row * K + k0 + k + j], row) : 0.0f;
        }
    }
    if (gather)  // the largest |x| as its bits (in that order for every float; above all finite
        for (int i = 0; i < 4; ++i)  // ones for Inf and NaN): two instructions an element
            for (int j = 0; j < 4; ++j) top[i] = max(top[i], __float_as_int(v[i][j]) & 0x7FFFFFFF);
    if (AREG && !is_b) return;  // (step 5 splits A itself: its magnitudes alone are gathered)
    for (int i = 0; i < 4; ++i) {
        const int e = threadIdx.x + 256 * i, r = e / 8, k = 4 * (e % 8);
        float big[4], small[4];
        for (int j = 0; j < 4; ++j) split_tf32(v[i][j], big[j], small[j]);
        const int at = tf32_swizzle(r, k);
        *reinterpret_cast<float4*>(record + at) = make_float4(big[0], big[1], big[2], big[3]);
        *reinterpret_cast<float4*>(record + TILE_FLOATS + at) =
            make_float4(small[0], small[1], small[2], small[3]);
    }
}

// A and B into records: k-tile blockIdx.x of panel blockIdx.y, of A where blockIdx.z = 0, of
// B where 1. Where SCALED, unscaled, but gathering each row's and column's magnitude into ea and
// eb (by atomicMax) and the flags of rows and columns with Inf or NaN into bad
// (bad[m], bad[M + n], and bad[M + N] for any; such a row's magnitude may miss the 32 k's that
// hold its Inf or NaN, and fix_tile recomputes its elements of C anyway); ea, eb and bad
// zeros before the launch (the previous call's rescale zeroed them, or the allocation).
// Launch: block 256, grid (CEIL_DIV(K, 32), CEIL_DIV(max(M, N), 128), 2).
extern "C" __global__ void __launch_bounds__(256)
pack_split(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ Ap,
           float* __restrict__ Bp, int M, int N, int K, int* __restrict__ ea, int* __restrict__ eb,
           int* __restrict__ bad) {
    __shared__ float T[32][129];
    wait_for_the_launch_before();  // (the launch before may have written A or B)
    const bool is_b = blockIdx.z == 1;
    const int r0 = blockIdx.y * 128;
    if (r0 >= (is_b ? N : M)) return;  // the grid covers the larger of M and N
    int top[4] = {0, 0, 0, 0};
    pack_tile(A, B, Ap, Bp, M, N, K, is_b, blockIdx.x, blockIdx.y, T, ea, eb, top, SCALED, false);
    if (SCALED)  // the 8 threads of a record row (adjacent lanes) join their largest, one adds it
        for (int i = 0; i < 4; ++i) {
            for (int o = 4; o > 0; o /= 2) top[i] = max(top[i], __shfl_xor_sync(0xFFFFFFFFu, top[i], o));
            const int row = r0 + (threadIdx.x + 256 * i) / 8;
            if (threadIdx.x % 8 == 0 && row < (is_b ? N : M)) {
                if (top[i] >= 0x7F800000) bad[is_b ? M + row : row] = bad[M + N] = 1;  // Inf or NaN seen
                else if (top[i] > 0) atomicMax(is_b ? &eb[row] : &ea[row], (top[i] >> 23) + 1);
            }  // (the atomic's result is not used: a reduction, no wait)
        }
}

// Where SCALED, after pack_split: the panels of 128 rows of A (blockIdx.x < CEIL_DIV(M, 128)),
// or of 128 columns of B (the blocks after), that hold a row or column outside the safe range
// (shift_of) are packed again, scaled; the others (the usual case: the block reads 128
// magnitudes and returns) stand. blockIdx.y takes every gridDim.y-th k-tile of the panel.
// The blocks of blockIdx.y = 0 also zero `next` (n ints): the other of the workspace's two sets
// of flags, which the previous call's product has finished reading and the next call's
// pack_split fills (this call's product reads the set ea and eb are in). So calls of one shape
// need no memset.
// Launch: block 256, grid (CEIL_DIV(M, 128) + CEIL_DIV(N, 128), any).
extern "C" __global__ void __launch_bounds__(256)
rescale(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ Ap,
        float* __restrict__ Bp, int M, int N, int K, int* __restrict__ ea, int* __restrict__ eb,
        int* __restrict__ next, int n) {
    __shared__ float T[32][129];
    wait_for_the_launch_before();
    if (blockIdx.y == 0)
        for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256) next[i] = 0;
    const bool is_b = (int)blockIdx.x >= CEIL_DIV(M, 128);
    const int panel = is_b ? blockIdx.x - CEIL_DIV(M, 128) : blockIdx.x, r = panel * 128 + threadIdx.x;
    if (AREG && !is_b) return;  // (step 5 scales A's fragments itself)
    if (!__syncthreads_or(threadIdx.x < 128 && r < (is_b ? N : M) && shift_of(is_b ? eb[r] : ea[r]) != 0))
        return;
    for (int kt = blockIdx.y; kt < CEIL_DIV(K, 32); kt += gridDim.y) {
        int unused[4] = {0, 0, 0, 0};
        pack_tile(A, B, Ap, Bp, M, N, K, is_b, kt, panel, T, ea, eb, unused, false, true);
        __syncthreads();  // (T is read by every thread before the next k-tile refills it)
    }
}

// The tile of C a block computes: (tile_row, tile_col). group_m > 0 orders the blocks in groups
// of group_m tile rows, so that the blocks running at once share tiles of A and B in L2.
__device__ __forceinline__ int2 tile_of(int group_m) {
    int tile_row = blockIdx.y, tile_col = blockIdx.x;
    if (group_m > 0) {
        const int id = blockIdx.y * gridDim.x + blockIdx.x, group = group_m * gridDim.x;
        const int first = id / group * group_m, rows = min((int)gridDim.y - first, group_m);
        tile_row = first + id % group % rows, tile_col = id % group / rows;
    }
    return make_int2(tile_row, tile_col);
}

// Split-K (gridDim.z > 1): block z takes slice z of the k-tiles -- *kt0 on, *tiles of them --
// and the slice of its tile that ends last adds up all of theirs (gather_slices).
__device__ __forceinline__ void slice_of(int K, int* kt0, int* tiles) {
    const int all = CEIL_DIV(K, 32), per = CEIL_DIV(all, (int)gridDim.z);
    *kt0 = blockIdx.z * per, *tiles = max(0, min(per, all - *kt0));
}

// Whether rescale scaled any row of A or column of B that this tile of C meets: where none (the
// usual case), the store writes the sums as they are, without reading a shift per element
// (that cost a third of the product's time where storing C is most of it: 16384^2 x 256).
// Every thread of the block calls it.
__device__ __forceinline__ bool tile_scaled(int2 tile, int M, int N, const int* ea, const int* eb) {
#if SCALED
    const int i = threadIdx.x % 256, r = tile.x * 128 + i, c = tile.y * 128 + i - 128;
    return __syncthreads_or(i < 128 ? r < M && shift_of(ea[r]) != 0 : c < N && shift_of(eb[c]) != 0);
#else
    return false;
#endif
}

// Where TRANS, the launches compute C^T = B^T A^T with the roles swapped: their M x K "A" is B^T
// (the caller passes B, K x M in memory), their K x N "B" is A^T (A, N x K), and their M x N
// "C" is C^T (C, N x M): the offsets of element (r, k), (k, c) and (r, c) below. So a C of few
// rows (M <= 128) is computed by step 5 as one of few columns, B split in registers.
__device__ __forceinline__ long long a_at(int r, int k, int M, int K) { return TRANS ? (long long)k * M + r : (long long)r * K + k; }
__device__ __forceinline__ long long b_at(int k, int c, int N, int K) { return TRANS ? (long long)c * K + k : (long long)k * N + c; }
__device__ __forceinline__ long long c_at(int r, int c, int M, int N) { return TRANS ? (long long)c * M + r : (long long)r * N + c; }

// Warpgroup wg's 64 x 128 sums (acc, in wgmma's layout) into C's tile, each multiplied back by
// its row's and column's powers of two where `scaled`. A thread's sums come in pairs of adjacent
// columns: 8 bytes a store where N is even (one float where TRANS: the two are a column apart).
__device__ __forceinline__ void store_tile(float* C, const float (&acc)[64], int2 tile, int wg,
                                           int M, int N, const int* ea, const int* eb, bool scaled) {
    const int lane = threadIdx.x % 128, w = lane / 32, g = lane % 32 / 4, t = lane % 4;
    const int row = tile.x * 128 + wg * 64 + 16 * w + g, col = tile.y * 128 + 2 * t;
#pragma unroll
    for (int j = 0; j < 16; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // rows row and row + 8: acc[4 j + 2 h] and the next column's
            const int r = row + 8 * h, c = col + 8 * j;
            if (r >= M || c >= N) continue;
            float x = acc[4 * j + 2 * h], y = acc[4 * j + 2 * h + 1];
            if (scaled) {
                const int sr = shift_of(ea[r]);
                x = ldexpf(x, sr + shift_of(eb[c]));
                if (c + 1 < N) y = ldexpf(y, sr + shift_of(eb[c + 1]));
            }
            float* at = C + c_at(r, c, M, N);
            if (TRANS) {
                at[0] = x;
                if (c + 1 < N) at[M] = y;
            } else if (N % 2 == 0) {
                *reinterpret_cast<float2*>(at) = make_float2(x, y);  // (c is even, and so is N)
            } else {
                at[0] = x;
                if (c + 1 < N) at[1] = y;
            }
        }
}

// Split-K (gridDim.z > 1): every slice of a tile leaves its sums in `partials` (its own 64 KiB,
// in acc's layout: element i of thread x at 256 i + x, so that a warp's stores are adjacent)
// and counts itself in counts[tile]; the slice that counts last adds them all, in order of z
// (its own from its registers), and finishes the tile. No slice waits for another. counts:
// zeros before the launch, and after it. (Every thread of the block calls slice_is_last, step
// 4's producer too; last: a flag in shared memory.)
__device__ __forceinline__ float4* partial_of(float* partials, int z, int id) {
    return reinterpret_cast<float4*>(partials + ((long long)z * gridDim.x * gridDim.y + id) * 16384);
}
// Every thread of the block, after the block's sums are stored: thread 0 adds the slice to
// counts[id]; the slice that brings it to gridDim.z (the last of them) sets it back to 0 and
// returns true, after a fence, so that the others' sums are seen. last: a flag in shared memory.
__device__ __forceinline__ bool slice_is_last(int id, int* counts, int& last) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(counts + id, 1) == (int)gridDim.z - 1;
        if (last) atomicExch(counts + id, 0), __threadfence();
    }
    __syncthreads();
    return last;
}
__device__ __forceinline__ bool gather_slices(float (&acc)[64], int2 tile, float* partials,
                                              int* counts, int& last) {
    if (gridDim.z == 1) return true;
    const int id = tile.x * gridDim.x + tile.y, x = threadIdx.x % 256;
    auto four = [&](int i) { return make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]); };
    float4* mine = partial_of(partials, blockIdx.z, id);
#pragma unroll
    for (int i = 0; i < 16; ++i) mine[256 * i + x] = four(i);
    if (!slice_is_last(id, counts, last)) return false;
    float sum[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) sum[i] = 0.0f;
    for (int z = 0; z < (int)gridDim.z; ++z) {
        const float4* theirs = partial_of(partials, z, id);
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            const float4 p = z == (int)blockIdx.z ? four(i) : __ldcg(theirs + 256 * i + x);
            sum[4 * i] += p.x, sum[4 * i + 1] += p.y, sum[4 * i + 2] += p.z, sum[4 * i + 3] += p.w;
        }
    }
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = sum[i];
    return true;
}

// After the tile's store, where pack_split flagged (in bad) a row of A or a column of B that
// holds Inf or NaN, the tile's elements of C in them recomputed with float32 FMAs from A and B,
// by the first 256 threads: every one of those elements is Inf or NaN, and now the same one as
// cuBLAS SGEMM's. Where none is flagged anywhere (bad[M + N] = 0, the usual case) nothing.
__device__ __forceinline__ void fix_tile(int2 tile, float* C, const float* A, const float* B,
                                         const int* bad, int M, int N, int K) {
#if SCALED
    if (bad[M + N] == 0) return;
    __syncthreads();  // (the tile is stored: the recomputed elements replace what is there)
    if (threadIdx.x < 256)
        for (int e = threadIdx.x; e < 128 * 128; e += 256) {
            const int r = tile.x * 128 + e / 128, c = tile.y * 128 + e % 128;
            if (r >= M || c >= N || (!bad[r] && !bad[M + c])) continue;
            float sum = 0.0f;
            for (int k = 0; k < K; ++k) sum = fmaf(A[a_at(r, k, M, K)], B[b_at(k, c, N, K)], sum);
            C[c_at(r, c, M, N)] = sum;
        }
#endif
}

// The end of every product kernel (every thread of its two computing warpgroups): split-K's
// slices gathered, warpgroup wg's sums into C, the Inf and NaN elements recomputed. last: a
// flag in shared memory.
__device__ __forceinline__ void finish_tile(float* C, float (&acc)[64], int2 tile, int wg, int M,
                                            int N, int K, int* ea, int* eb, bool scaled,
                                            const float* A, const float* B, int* bad,
                                            float* partials, int* counts, int& last) {
    if (gather_slices(acc, tile, partials, counts, last)) {
        store_tile(C, acc, tile, wg, M, N, ea, eb, scaled);
        fix_tile(tile, C, A, B, bad, M, N, K);
    }
}

// Step 4's producer warpgroup at the end: the barriers of finish_tile, nothing else.
__device__ __forceinline__ void producer_finish(int2 tile, float* C, const float* A, const float* B,
                                                int* bad, int M, int N, int K, int* counts, int& last) {
    if (gridDim.z == 1 || slice_is_last(tile.x * gridDim.x + tile.y, counts, last))
        fix_tile(tile, C, A, B, bad, M, N, K);
}

// One k-tile's 12 wgmmas of warpgroup wg into part: per 8 k's, small_A big_B, big_A small_B,
// big_A big_B (the last left for the chunk's end where not `big_big`). `fresh`: part starts
// from zero.
__device__ __forceinline__ void ktile_wgmmas(float (&part)[64], const float* stage, int wg, bool fresh,
                                             bool big_big) {
    const float* a = stage + wg * 64 * 32;  // big A (this warpgroup's 64 rows)
    const float* b = stage + RECORD_FLOATS;  // big B; the small parts follow each
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        wgmma_m64n128_tf32(part, a + TILE_FLOATS + 8 * s, b + 8 * s, !(fresh && s == 0));
        wgmma_m64n128_tf32(part, a + 8 * s, b + TILE_FLOATS + 8 * s, true);
        if (big_big) wgmma_m64n128_tf32(part, a + 8 * s, b + 8 * s, true);
    }
}

// A finished chunk's sums into acc, with float32 adds (rounded to nearest), once its wgmmas are
// waited for.
__device__ __forceinline__ void add_chunk(float (&acc)[64], float (&chunk)[64]) {
    fence_registers(chunk);
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] += chunk[i];
}

// Ap, Bp: pack_split's records of A and of B.
extern "C" __global__ void __launch_bounds__(256, 1)
matmul_tf32x3_wgmma(const float* __restrict__ Ap, const float* __restrict__ Bp,
                    float* __restrict__ C, int M, int N, int K, int group_m,
                    int* ea, int* eb,
                    const float* __restrict__ A, const float* __restrict__ B, int* bad,
                    float* __restrict__ partials, int* __restrict__ counts) {
    extern __shared__ __align__(16) float dynamic[];
    float* stages = align_1024(dynamic);
    __shared__ int last;  // (split-K: whether this slice finishes its tile)
    __shared__ unsigned long long full[STAGES];  // one mbarrier per stage
    const int tid = threadIdx.x, wg = tid / 128;
    int kt0, tiles;
    slice_of(K, &kt0, &tiles);
    const int2 tile = tile_of(group_m);
    wait_for_the_launch_before();  // (rescale, or pack_split, wrote what comes next)
    const bool scaled = tile_scaled(tile, M, N, ea, eb);
    const int all = CEIL_DIV(K, 32);
    const float* a_records = Ap + ((long long)tile.x * all + kt0) * RECORD_FLOATS;
    const float* b_records = Bp + ((long long)tile.y * all + kt0) * RECORD_FLOATS;
    if (tid == 0)
        for (int s = 0; s < STAGES; ++s) barrier_init(&full[s]);
    __syncthreads();
    auto load = [&](int kt) {  // one thread: k-tile kt into its stage
        float* stage = stages + kt % STAGES * (2 * RECORD_FLOATS);
        barrier_expect(&full[kt % STAGES], STAGE_BYTES);
        bulk_copy(stage, a_records + (long long)kt * RECORD_FLOATS, RECORD_FLOATS * 4, &full[kt % STAGES]);
        bulk_copy(stage + RECORD_FLOATS, b_records + (long long)kt * RECORD_FLOATS, RECORD_FLOATS * 4,
                  &full[kt % STAGES]);
    };
    if (tid == 0)
        for (int kt = 0; kt < STAGES - 1 && kt < tiles; ++kt) load(kt);
    float acc[64], part[64];
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f, part[i] = 0.0f;
    auto stage_of = [&](int kt) { return stages + kt % STAGES * (2 * RECORD_FLOATS); };
    for (int kt = 0; kt < tiles; ++kt) {
        barrier_wait(&full[kt % STAGES], kt / STAGES % 2);  // k-tile kt has landed
        const bool first = kt % CHUNK == 0, last = kt % CHUNK == CHUNK - 1 || kt == tiles - 1;
        wgmma_fence();
        ktile_wgmmas(part, stage_of(kt), wg, first, !SMALL_FIRST);  // a chunk's first starts from 0
        if (SMALL_FIRST && last)  // big x big of every k-tile of the chunk (all still here)
            for (int j = kt - kt % CHUNK; j <= kt; ++j)
                for (int s = 0; s < 4; ++s)
                    wgmma_m64n128_tf32(part, stage_of(j) + wg * 64 * 32 + 8 * s,
                                       stage_of(j) + RECORD_FLOATS + 8 * s, true);
        wgmma_commit();
        // k-tile kt - 1's wgmmas are done (SMALL_FIRST: the chunk's big terms read its stage too)
        if (SMALL_FIRST && last) wgmma_wait<0>();
        else wgmma_wait<1>();
        __syncthreads();  // in both warpgroups: load into k-tile kt - 1's stage, at once
        if (tid == 0 && kt + STAGES - 1 < tiles) load(kt + STAGES - 1);
        if (last) {  // the chunk is complete: add it, while the load is on its way
            wgmma_wait<0>();
            add_chunk(acc, part);
        }
    }
    finish_tile(C, acc, tile, wg, M, N, K, ea, eb, scaled, A, B, bad, partials, counts, last);
}

// matmul_tf32x3_wgmma with a producer (step 4): the same sums, in the same order, but
//   - a third warpgroup (block 384) is the producer: one of its threads issues the bulk copies,
//     each into a stage as soon as both computing warpgroups have released it on that stage's
//     `empty` mbarrier. No __syncthreads in the loop: neither warpgroup waits for the other, so
//     while one adds a finished chunk the other's wgmmas keep the tensor cores busy. The
//     producer gives most of its registers to the two others (setmaxnreg: 40 and 232 a thread);
//   - PINGPONG = 1: two partial sums take turns (chunk c in part[c % 2]), so that a warpgroup
//     waits only for the k-tile before the one it has just committed (wgmma_wait<1>) and adds a
//     finished chunk while the next one runs. PINGPONG = 0: one partial sum; the warpgroup
//     waits for its chunk's wgmmas at the chunk's end (wgmma_wait<0>) and then releases the
//     chunk's stages. (SMALL_FIRST is ignored: each k-step's three wgmmas in turn.)
// Launch as matmul_tf32x3_wgmma, with block 384.
#ifndef PINGPONG
#define PINGPONG 0
#endif
extern "C" __global__ void __launch_bounds__(384, 1)
matmul_tf32x3_ws(const float* __restrict__ Ap, const float* __restrict__ Bp,
                 float* __restrict__ C, int M, int N, int K, int group_m,
                 int* ea, int* eb,
                 const float* __restrict__ A, const float* __restrict__ B, int* bad,
                    float* __restrict__ partials, int* __restrict__ counts) {
    extern __shared__ __align__(16) float dynamic[];
    float* stages = align_1024(dynamic);
    __shared__ int last;  // (split-K: whether this slice finishes its tile)
    __shared__ unsigned long long full[STAGES], empty[STAGES];
    const int tid = threadIdx.x, wg = tid / 128;
    int kt0, tiles;
    slice_of(K, &kt0, &tiles);
    const int2 tile = tile_of(group_m);
    wait_for_the_launch_before();  // (rescale, or pack_split, wrote what comes next)
    const bool scaled = tile_scaled(tile, M, N, ea, eb);
    if (tid == 0)
        for (int s = 0; s < STAGES; ++s) barrier_init(&full[s]), barrier_init(&empty[s], 2);
    __syncthreads();
    auto stage_of = [&](int kt) { return stages + kt % STAGES * (2 * RECORD_FLOATS); };
    if (wg == 2) {  // the producer
        registers_down<40>();
        const int all = CEIL_DIV(K, 32);
        const float* a_records = Ap + ((long long)tile.x * all + kt0) * RECORD_FLOATS;
        const float* b_records = Bp + ((long long)tile.y * all + kt0) * RECORD_FLOATS;
        for (int kt = 0; tid == 256 && kt < tiles; ++kt) {
            unsigned long long* bar = &full[kt % STAGES];
            if (kt >= STAGES) barrier_wait(&empty[kt % STAGES], (kt / STAGES - 1) % 2);
            barrier_expect(bar, STAGE_BYTES);
            bulk_copy(stage_of(kt), a_records + (long long)kt * RECORD_FLOATS, RECORD_FLOATS * 4, bar);
            bulk_copy(stage_of(kt) + RECORD_FLOATS, b_records + (long long)kt * RECORD_FLOATS,
                      RECORD_FLOATS * 4, bar);
        }
        producer_finish(tile, C, A, B, bad, M, N, K, counts, last);  // (the end's barriers)
        return;
    }
    registers_up<232>();
    auto release = [&](int kt) {  // k-tile kt's wgmmas are done: its stage may be refilled
        if (tid % 128 == 0) barrier_arrive(&empty[kt % STAGES]);
    };
    float acc[64], part0[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f, part0[i] = 0.0f;
#if PINGPONG
    float part1[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) part1[i] = 0.0f;
    // k-tile kt into `now` (its chunk's partial sums); then, with those wgmmas in flight,
    // k-tile kt - 1's stage released and, where kt - 1 ended a chunk, that chunk (`done`) added.
    auto step = [&](int kt, float (&now)[64], float (&done)[64]) {
        barrier_wait(&full[kt % STAGES], kt / STAGES % 2);  // k-tile kt has landed
        wgmma_fence();
        ktile_wgmmas(now, stage_of(kt), wg, kt % CHUNK == 0, true);
        wgmma_commit();
        wgmma_wait<1>();  // k-tile kt - 1's wgmmas are done
        if (kt > 0) release(kt - 1);
        if (kt > 0 && kt % CHUNK == 0) add_chunk(acc, done);
    };
    for (int kt = 0; kt < tiles; ++kt)  // chunks take turns: even ones in part0, odd in part1
        if (kt / CHUNK % 2 == 0) step(kt, part0, part1);
        else step(kt, part1, part0);
    wgmma_wait<0>();
    if (tiles > 0 && (tiles - 1) / CHUNK % 2 == 0) add_chunk(acc, part0);  // the last chunk
    else if (tiles > 0) add_chunk(acc, part1);
#else
    for (int kt = 0; kt < tiles; ++kt) {
        barrier_wait(&full[kt % STAGES], kt / STAGES % 2);  // k-tile kt has landed
        wgmma_fence();
        ktile_wgmmas(part0, stage_of(kt), wg, kt % CHUNK == 0, true);
        wgmma_commit();
        if (kt % CHUNK == CHUNK - 1 || kt == tiles - 1) {  // the chunk is complete: add it
            wgmma_wait<0>();
            for (int j = kt - kt % CHUNK; j <= kt; ++j) release(j);
            add_chunk(acc, part0);
        }
    }
#endif
    finish_tile(C, acc, tile, wg, M, N, K, ea, eb, scaled, A, B, bad, partials, counts, last);
}

// Step 5, A from registers (matmul_tf32x3_areg): the same sums, in the same order, as
// matmul_tf32x3_wgmma, but A is never split beforehand. pack_split (built with AREG = 1) splits
// B alone; A's 128 x 32 tile of a k-tile comes into the stage as it is, by every thread's
// cp.async (16 bytes a copy where K % 4 == 0 and A is 16-byte aligned, else 4), its rows
// A_PITCH floats apart so that a warp's reads of its fragments hit 32 banks. Each thread reads
// its own elements -- rows 16 w + g and 16 w + g + 8 of its warpgroup's 64, k's t and t + 4 of
// each 8 -- splits them in registers, scaled by its rows' powers of two, into wgmma's A
// fragments (wgmma reads A from registers, B from shared memory). What it saves: pack_split's
// writes of A's records (twice A's bytes; where SCALED the pass still reads A, for its
// magnitudes), and a quarter of the bytes copied into each stage. The two k-tiles of a chunk have their own set of fragments, so that the second's are
// split while the first's wgmmas run; a set is rewritten only in the next chunk, after the
// wait at this one's end. Where TRANS (A is K x M in memory: book.sgemm's thin M, B^T A^T), the
// tile comes in by k's, AT_PITCH floats from one k to the next (16 bytes a copy where M % 4 == 0).
// Launch: as matmul_tf32x3_wgmma, with A itself for Ap and STAGES * AREG_STAGE_FLOATS * 4 + 1024
// bytes of dynamic shared memory.
#define A_PITCH 36  // floats from one row of A's tile to the next: 4 g + t covers the 32 banks
#define AT_PITCH 136  // where TRANS, A's tile by k's: 8 t + g covers the 32 banks
#define AREG_STAGE_FLOATS (RECORD_FLOATS + 128 * A_PITCH)  // B's record, then A's tile
#define A_IN_TILE(r, k) (TRANS ? (k) * AT_PITCH + (r) : (r) * A_PITCH + (k))
extern "C" __global__ void __launch_bounds__(256, 1)
matmul_tf32x3_areg(const float* __restrict__ A, const float* __restrict__ Bp,
                   float* __restrict__ C, int M, int N, int K, int group_m,
                   int* ea, int* eb,
                   const float* __restrict__ same_as_A, const float* __restrict__ B, int* bad,
                    float* __restrict__ partials, int* __restrict__ counts) {
    extern __shared__ __align__(16) float dynamic[];
    float* stages = align_1024(dynamic);
    __shared__ int last;  // (split-K: whether this slice finishes its tile)
    __shared__ unsigned long long full[STAGES];  // B's record of the stage has landed
    const int tid = threadIdx.x, wg = tid / 128;
    int kt0, tiles;
    slice_of(K, &kt0, &tiles);
    const int2 tile = tile_of(group_m);
    wait_for_the_launch_before();  // (rescale, or pack_split, wrote what comes next)
    const bool scaled = tile_scaled(tile, M, N, ea, eb);
    const float* b_records = Bp + ((long long)tile.y * CEIL_DIV(K, 32) + kt0) * RECORD_FLOATS;
    if (tid == 0)
        for (int s = 0; s < STAGES; ++s) barrier_init(&full[s]);
    __syncthreads();
    auto stage_of = [&](int kt) { return stages + kt % STAGES * AREG_STAGE_FLOATS; };
    const bool by16 = (TRANS ? M : K) % 4 == 0 && reinterpret_cast<unsigned long long>(A) % 16 == 0;
    auto load = [&](int kt) {  // k-tile kt into its stage: B's record (one thread), A's tile (all)
        float* stage = stage_of(kt);
        if (tid == 0) {
            barrier_expect(&full[kt % STAGES], RECORD_FLOATS * 4);
            bulk_copy(stage, b_records + (long long)kt * RECORD_FLOATS, RECORD_FLOATS * 4, &full[kt % STAGES]);
        }
        float* tile_a = stage + RECORD_FLOATS;
        const int k0 = (kt0 + kt) * 32;
        if (by16)  // 16 bytes: row c / 8, k's 4 (c % 8) .. (where TRANS: k c / 32, rows 4 (c % 32) ..)
            for (int c = tid; c < 128 * 8; c += 256) {
                const int r = TRANS ? 4 * (c % 32) : c / 8, k = TRANS ? c / 32 : 4 * (c % 8);
                const int row = tile.x * 128 + r;
                const bool in = row < M && k0 + k < K;
                copy16(tile_a + A_IN_TILE(r, k), in ? A + a_at(row, k0 + k, M, K) : A, in);
            }
        else
            for (int c = tid; c < 128 * 32; c += 256) {
                const int r = TRANS ? c % 128 : c / 32, k = TRANS ? c / 128 : c % 32;
                const int row = tile.x * 128 + r;
                const bool in = row < M && k0 + k < K;
                copy4(tile_a + A_IN_TILE(r, k), in ? A + a_at(row, k0 + k, M, K) : A, in);
            }
        commit();
    };
    for (int kt = 0; kt < STAGES - 1; ++kt)  // (a group for every k-tile, empty past the last)
        if (kt < tiles) load(kt);
        else commit();
    const int lane = tid % 128, w = lane / 32, g = lane % 32 / 4, t = lane % 4;
    const int r0 = wg * 64 + 16 * w + g;  // this thread's rows in the tile: r0 and r0 + 8
    const float scale0 = tile.x * 128 + r0 < M ? scale_of(ea, tile.x * 128 + r0) : 1.0f;
    const float scale1 = tile.x * 128 + r0 + 8 < M ? scale_of(ea, tile.x * 128 + r0 + 8) : 1.0f;
    float acc[64], part[64], big0[16], small0[16], big1[16], small1[16];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f, part[i] = 0.0f;
    auto add = [&]() {  // the chunk's wgmmas are done: its sums into acc
        wgmma_wait<0>();
        add_chunk(acc, part);
    };
    // k-tile kt, its fragments in (big, small); `fresh`: the chunk's first; `last`: its last.
    auto ktile = [&](int kt, bool fresh, bool last, float (&big)[16], float (&small)[16]) {
        wait_groups<STAGES - 2>();  // this thread's copies of k-tile kt have landed
        __syncthreads();            // and every thread's
        const float* tile_a = stage_of(kt) + RECORD_FLOATS;
#pragma unroll
        for (int s = 0; s < 4; ++s)  // the fragment of k-step s: (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)
#pragma unroll
            for (int i = 0; i < 4; ++i)
                split_tf32(tile_a[A_IN_TILE(r0 + 8 * (i % 2), 8 * s + t + 4 * (i / 2))] *
                           (i % 2 == 0 ? scale0 : scale1), big[4 * s + i], small[4 * s + i]);
        barrier_wait(&full[kt % STAGES], kt / STAGES % 2);  // B's record of k-tile kt has landed
        const float* b = stage_of(kt);
        wgmma_fence();
#pragma unroll
        for (int s = 0; s < 4; ++s) {  // small_A big_B, big_A small_B, big_A big_B, as step 3
            wgmma_m64n128_tf32_ra(part, small + 4 * s, b + 8 * s, !(fresh && s == 0));
            wgmma_m64n128_tf32_ra(part, big + 4 * s, b + TILE_FLOATS + 8 * s, true);
            wgmma_m64n128_tf32_ra(part, big + 4 * s, b + 8 * s, true);
        }
        wgmma_commit();
        wgmma_wait<1>();  // k-tile kt - 1's wgmmas are done
        __syncthreads();  // in both warpgroups: load into k-tile kt - 1's stage, at once
        if (kt + STAGES - 1 < tiles) load(kt + STAGES - 1);
        else commit();
        if (last) add();  // the chunk is complete: add it, while the load is on its way
    };
    // A chunk at a time, its k-tiles' fragments in the two sets by turns; every branch below is
    // known when compiling but the chunk cut short at the end of K, so that ptxas sees where
    // each set's wgmmas are waited for.
    for (int c0 = 0; c0 < tiles; c0 += CHUNK) {
#pragma unroll
        for (int j = 0; j < CHUNK; ++j)
            if (c0 + j < tiles) {
                if (j % 2 == 0) ktile(c0 + j, j == 0, j == CHUNK - 1, big0, small0);
                else ktile(c0 + j, false, j == CHUNK - 1, big1, small1);
            }
        if (c0 + CHUNK > tiles) add();  // the last chunk, cut short
    }
    finish_tile(C, acc, tile, wg, M, N, K, ea, eb, scaled, A, B, bad, partials, counts, last);
}

// The ceiling of wgmma with TF32: two warpgroups per block each issue, iters times, the 12
// wgmmas of a k-tile (three per 8 k's, as above) on fixed tiles in shared memory, waiting for
// them each time; nothing is loaded in the loop. Launch: block 256, one block per SM, 2 *
// 65536 + 1024 bytes of dynamic shared memory.
extern "C" __global__ void __launch_bounds__(256, 1) wgmma_peak(float* out, int iters) {
    extern __shared__ __align__(16) float dynamic[];
    float* tiles = align_1024(dynamic);  // one stage: A's record, then B's
    for (int i = threadIdx.x; i < 2 * RECORD_FLOATS; i += 256)
        tiles[i] = __int_as_float((int)to_tf32(1e-3f * (i % 97) - 0.05f));
#ifdef __CUDA_ARCH__
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the writes, for wgmma
#endif
    __syncthreads();
    const float* a = tiles + threadIdx.x / 128 * 64 * 32;
    const float* b = tiles + RECORD_FLOATS;
    float part[64];
    for (int i = 0; i < 64; ++i) part[i] = 0.0f;
    for (int it = 0; it < iters; ++it) {
        wgmma_fence();
        for (int s = 0; s < 4; ++s) {
            wgmma_m64n128_tf32(part, a + TILE_FLOATS + 8 * s, b + 8 * s, true);
            wgmma_m64n128_tf32(part, a + 8 * s, b + TILE_FLOATS + 8 * s, true);
            wgmma_m64n128_tf32(part, a + 8 * s, b + 8 * s, true);
        }
        wgmma_commit();
        wgmma_wait<0>();
    }
    fence_registers(part);
    float sum = 0.0f;
    for (int i = 0; i < 64; ++i) sum += part[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
