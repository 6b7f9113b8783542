// Cooperative groups, as CUDA's samples use them (tests/test_learner_cuda.py): a GPU compiles them
// (NVRTC finds the header among the CUDA toolkit's), the emulator has their block and warp groups.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// A block's sum: each tile of 32 threads reduces with shfl_down, its lane 0 adds atomically.
extern "C" __global__ void tile_sums(const float* x, float* total, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int k = tile.size() / 2; k > 0; k /= 2) v += tile.shfl_down(v, k);
    if (tile.thread_rank() == 0) atomicAdd(total, v);
    block.sync();
}

// Tiles of 8: each tile's maximum by cg::reduce, and its rank among the block's tiles.
extern "C" __global__ void tile_max(const int* x, int* out, int* rank) {
    cg::thread_block_tile<8> tile = cg::tiled_partition<8>(cg::this_thread_block());
    const int m = cg::reduce(tile, x[threadIdx.x], cg::greater<int>());
    if (tile.thread_rank() == 0) out[tile.meta_group_rank()] = m;
    rank[threadIdx.x] = tile.thread_rank() + 100 * tile.meta_group_rank();
}

// Warp-aggregated append: the lanes with a positive value take their slots with one atomic.
extern "C" __global__ void append_positive(const int* x, int* out, int* count) {
    const int v = x[blockIdx.x * blockDim.x + threadIdx.x];
    if (v > 0) {
        cg::coalesced_group g = cg::coalesced_threads();
        int first = 0;
        if (g.thread_rank() == 0) first = atomicAdd(count, int(g.size()));
        out[g.shfl(first, 0) + g.thread_rank()] = v;
    }
}

// A grid-wide barrier, which needs a cooperative launch.
extern "C" __global__ void grid_barrier(float* x) {
    x[blockIdx.x] = 1.0f;
    cg::this_grid().sync();  // the grid's barrier
}
