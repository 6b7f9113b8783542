// bugs.cu -- kernels with a learner's bug each, which the CPU emulator names (appendix A;
// tests/test_emulator_errors.py). Not matmul kernels: the registry does not list them.

// Threads 0-15 wait at one __syncthreads(), threads 16-31 at another: barrier divergence.
extern "C" __global__ void divergent_barrier(float* out) {
    __shared__ float s[32];
    if (threadIdx.x < 16) __syncthreads();
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[31 - threadIdx.x];
}

// The same first barrier, but the other threads exit instead: legal (exited threads do not count).
extern "C" __global__ void barrier_then_exit(float* out) {
    if (threadIdx.x < 16) __syncthreads();
    out[threadIdx.x] = threadIdx.x;
}

// Lane 31 exits before a shuffle whose mask names it.
extern "C" __global__ void shfl_after_exit(float* out) {
    if (threadIdx.x == 31) return;
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1.0f * threadIdx.x, 1);
}

// Lanes 0-15 shuffle among themselves but read lane 20.
extern "C" __global__ void shfl_outside_mask(int* out) {
    if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0x0000ffffu, (int)threadIdx.x, 20);
}

// A shuffle width that is not a power of two.
extern "C" __global__ void shfl_bad_width(int* out) {
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (int)threadIdx.x, 1, 12);
}

// A ballot whose mask leaves out the calling lane.
extern "C" __global__ void mask_without_caller(unsigned* out) {
    out[threadIdx.x] = __ballot_sync(1u, 1);
}

// ---- memory and arithmetic -------------------------------------------------------------------

// Thread t writes out[offset + t]: past the end, far away or before the start, by `offset`.
extern "C" __global__ void write_at(float* out, int offset) {
    out[offset + (int)threadIdx.x] = 1.0f;
}

// Thread t reads in[offset + t].
extern "C" __global__ void read_at(const float* in, float* out, int offset) {
    out[threadIdx.x] = in[offset + (int)threadIdx.x];
}

// Reads a __shared__ array of 32 floats at `index`.
extern "C" __global__ void shared_at(float* out, int index) {
    __shared__ float s[32];
    s[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = s[index];
}

// Integer division by `d`.
extern "C" __global__ void divide(const int* a, int* out, int d) {
    out[threadIdx.x] = a[threadIdx.x] / d;
}

// Waits for a flag that nothing sets.
extern "C" __global__ void forever(int* flag) {
    volatile int* f = flag;
    while (f[0] == 0) {}
}
