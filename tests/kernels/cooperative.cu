// Cooperative groups, as CUDA's samples use them (tests/test_learner_cuda.py): a GPU compiles them
// (NVRTC finds the header among the CUDA toolkit's); the emulator refuses the file, naming it.
#include <cooperative_groups.h>
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
