// semantics.cu -- tiny kernels that pin down CUDA's execution model (tests/test_runtime.py).

// Every thread writes its indices and the launch's dimensions: 12 ints per thread.
extern "C" __global__ void indices(int* out) {
    const int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int* o = out + 12 * (block * blockDim.x * blockDim.y * blockDim.z + thread);
    o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
    o[3] = blockIdx.x;  o[4] = blockIdx.y;  o[5] = blockIdx.z;
    o[6] = blockDim.x;  o[7] = blockDim.y;  o[8] = blockDim.z;
    o[9] = gridDim.x;   o[10] = gridDim.y;  o[11] = gridDim.z;
}

// Tree reduction in shared memory: one sum per block (blockDim.x a power of two <= 1024).
extern "C" __global__ void block_sum(const float* in, float* out, int n) {
    __shared__ float s[1024];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// out (cols x rows) = transpose of in (rows x cols), through a padded 16x16 shared tile.
extern "C" __global__ void transpose_tile(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * 16 + threadIdx.x;
    y = blockIdx.x * 16 + threadIdx.y;
    if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}

// Threads at or past `live` return before the barrier; the others swap values through
// shared memory across it (thread t reads what thread live-1-t wrote).
extern "C" __global__ void early_exit(const float* in, float* out, int live) {
    __shared__ float s[256];
    const int t = threadIdx.x;
    if (t >= live) return;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[live - 1 - t];
}

// Each block reverses its chunk of `in` (up to blockDim.x floats) through dynamic shared memory.
extern "C" __global__ void dynamic_reverse(const float* in, float* out, int n) {
    extern __shared__ float buf[];
    const int start = blockIdx.x * blockDim.x, t = threadIdx.x;
    const int len = min((int)blockDim.x, n - start);
    if (t < len) buf[t] = in[start + t];
    __syncthreads();
    if (t < len) out[start + t] = buf[len - 1 - t];
}

// 16-byte vector loads and stores: out[i] = 2 * in[i] for n4 float4s.
extern "C" __global__ void scale_float4(const float4* __restrict__ in, float4* __restrict__ out,
                                        int n4) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    const float4 v = in[i];
    out[i] = make_float4(2.0f * v.x, 2.0f * v.y, 2.0f * v.z, 2.0f * v.w);
}

// A kernel that needs shared memory: static 1 KiB plus whatever the launch asks for.
extern "C" __global__ void uses_shared(float* out) {
    __shared__ float fixed[256];
    extern __shared__ float extra[];
    fixed[threadIdx.x] = threadIdx.x;
    extra[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = fixed[threadIdx.x] + extra[threadIdx.x];
}

// A shared array it never uses: the optimizing compiler drops it (0 bytes static), so the whole
// 48 KiB of dynamic shared memory may still be asked for.
extern "C" __global__ void unused_shared(float* out) {
    __shared__ float never[8];
    extern __shared__ float extra[];
    extra[threadIdx.x] = 2.0f;
    __syncthreads();
    out[threadIdx.x] = extra[threadIdx.x];
}

// ---- warps -------------------------------------------------------------------------------------

// Sum of each warp's 32 values by __shfl_down_sync; lane 0 writes it.
extern "C" __global__ void warp_sum(const float* in, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0) out[i / 32] = v;
}

// Every shuffle variant, with width: 5 ints per thread.
extern "C" __global__ void shuffles(int* out, int width) {
    const int t = threadIdx.x, v = 100 + t;
    int* o = out + 5 * t;
    o[0] = __shfl_sync(0xffffffffu, v, 3, width);
    o[1] = __shfl_up_sync(0xffffffffu, v, 2, width);
    o[2] = __shfl_down_sync(0xffffffffu, v, 3, width);
    o[3] = __shfl_xor_sync(0xffffffffu, v, 5, width);
    o[4] = __shfl_sync(0xffffffffu, (double)v + 0.5, t ^ 1, width) == v + (t % 2 ? -0.5 : 1.5);
}

// Votes over `pred[t]`, the active mask after some lanes exit, and __syncwarp: 4 per thread.
extern "C" __global__ void votes(const int* pred, unsigned* out, int live) {
    const int t = threadIdx.x;
    unsigned* o = out + 4 * t;
    if (t >= live) return;
    const unsigned mask = __activemask();
    o[0] = __ballot_sync(mask, pred[t]);
    o[1] = __any_sync(mask, pred[t]);
    o[2] = __all_sync(mask, pred[t]);
    __syncwarp(mask);
    o[3] = mask;
}

// Integer intrinsics: 6 per input.
extern "C" __global__ void bit_ops(const unsigned* in, int* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned x = in[i];
    int* o = out + 6 * i;
    o[0] = __popc(x); o[1] = __ffs((int)x); o[2] = __clz((int)x);
    o[3] = (int)__brev(x); o[4] = __popcll(((unsigned long long)x << 32) | x);
    o[5] = __clzll((long long)x);
}

// Warp-aggregated atomics: one atomicAdd per warp by an elected leader; each thread gets a
// unique slot (the counter ends at the number of live threads).
extern "C" __global__ void aggregated_count(int* counter, int* slot, int live) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= live) return;
    const unsigned mask = __activemask();
    const int lane = threadIdx.x % 32, leader = __ffs((int)mask) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(counter, __popc(mask));
    base = __shfl_sync(mask, base, leader);
    slot[t] = base + __popc(mask & ((1u << lane) - 1u));
}

// Full-mask collectives after some lanes have returned: legal (the lanes that exited are not
// waited for), as a GPU runs them. out[i]: the ballot of x > 0, the warp's sum by shuffles among
// the live lanes (xor partners that exited read as 0 via a guard), and 1 after a __syncwarp.
extern "C" __global__ void collectives_after_return(const int* x, unsigned* ballot, int* any,
                                                    int* synced, int n) {
    const int i = threadIdx.x;
    if (i >= n) return;
    ballot[i] = __ballot_sync(0xffffffffu, x[i] > 0);
    any[i] = __any_sync(0xffffffffu, x[i] > 5) + 2 * __all_sync(0xffffffffu, x[i] > -1000);
    __syncwarp();
    synced[i] = 1;
}

// A shuffle that reads a lane which has exited: undefined on a GPU, an error here.
extern "C" __global__ void shfl_from_exited(const int* x, int* out, int n) {
    const int i = threadIdx.x;
    if (i >= n) return;
    out[i] = __shfl_down_sync(0xffffffffu, x[i], 16);
}

// A full-mask shuffle inside a branch only half the warp takes: lanes 16-31 skip the call (and
// finish the kernel), so lane 8's read of lane 16 is undefined on a GPU.
extern "C" __global__ void shfl_in_branch(const float* x, float* out) {
    float v = x[threadIdx.x];
    if (threadIdx.x < 16) v += __shfl_down_sync(0xffffffffu, v, 8);  // the branch's shuffle
    out[threadIdx.x] = v;
}
