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

// Lane 31 exits before a full-mask shuffle, and lane 30 reads it.
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

// The same write through pointer arithmetic (checked as an index is).
extern "C" __global__ void write_through(float* out, int offset) {
    *(out + offset + (int)threadIdx.x) = 1.0f;
}

// The same write through a pointer walked along (`*p++`: the emulator does not follow it; its
// guard regions and guard bytes find it).
extern "C" __global__ void write_walked(float* out, int offset) {
    float* p = out + offset + (int)threadIdx.x;
    *p++ = 1.0f;
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

// ---- for the check mode (BOOK_EMU_CHECK=1) ---------------------------------------------------

// A block sum that forgets the barrier after the loads: thread 31 adds up words the other threads
// write in the same phase, so on a GPU it may read them before they are written.
extern "C" __global__ void sum_without_barrier(const float* in, float* out) {
    __shared__ float s[32];
    s[threadIdx.x] = in[threadIdx.x];
    if (threadIdx.x == 31) {
        float total = 0.0f;
        for (int i = 0; i < 32; ++i) total += s[i];
        out[0] = total;
    }
}

// Chapter 4's tiled kernel without its second barrier: a fast thread overwrites the tile with the
// next one while slower threads still read the current one.
extern "C" __global__ void tiled_one_barrier(const float* A, const float* B, float* C, int n) {
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += 16) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        // missing: __syncthreads();
    }
    C[row * n + col] = acc;
}

// Reads a shared word no thread wrote.
extern "C" __global__ void reads_unwritten(float* out) {
    __shared__ float s[64];
    s[threadIdx.x] = 1.0f;  // 32 threads write s[0..31]
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x + 32];
}

// Indexes a 2D __shared__ tile one row too far: threads 240-255 read row 16 of 16.
extern "C" __global__ void tile_overflow(float* out) {
    __shared__ float tile[16][16];
    tile[threadIdx.x / 16][threadIdx.x % 16] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x / 16 + 1][threadIdx.x % 16];
}

// Reads float4s at in[i + 4 t]: with i not a multiple of 4 the float4 is misaligned, which a GPU
// reports as "misaligned address" (error 716) and the CPU alone would let pass.
extern "C" __global__ void float4_at(const float* in, float* out, int i) {
    const float4 v = *reinterpret_cast<const float4*>(&in[i + 4 * threadIdx.x]);
    out[threadIdx.x] = v.x + v.y + v.z + v.w;
}

// Runs a pointer taken from a __shared__ array n floats past each thread's own element: thread
// 31 reads past the end when n > 0 (an index s[i] is checked; a pointer is not, so the emulator
// ends every __shared__ array at an inaccessible page).
extern "C" __global__ void shared_pointer_past(float* out, int n) {
    __shared__ float s[32];
    float* p = s;
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = p[threadIdx.x + n];
}

// A device assert that fails in thread 5 (x[5] <= 0).
extern "C" __global__ void assert_positive(const float* x) { assert(x[threadIdx.x] > 0.0f); }

// Uses dynamic shared memory (extern __shared__): one float per thread, which the launch must
// give as shared_mem= bytes.
extern "C" __global__ void dynamic_tile(float* out) {
    extern __shared__ float tile[];
    tile[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}

// Recursion without end: every call keeps a frame (a volatile local array) on the thread's stack.
__device__ int deeper(int n, volatile int* sink) {
    volatile int frame[64];
    frame[0] = n;
    *sink = frame[0];
    return n + deeper(n + 1, sink) + frame[0];
}
extern "C" __global__ void endless_recursion(int* out) { out[threadIdx.x] = deeper(0, out); }

// Writes through a const parameter, casting const away: a GPU would write the array; the
// emulator reports it (the caller's array is not the kernel's to change).
extern "C" __global__ void write_const(const float* in) {
    ((float*)in)[threadIdx.x] = 0.0f;
}

// The classic reduction's last warp, as tutorials wrote it before Volta: lanes of a warp add
// through volatile shared memory with no __syncwarp, trusting that they run in lockstep. On a
// GPU it still gives the sum; since Volta nothing guarantees it (the check mode says so).
extern "C" __global__ void warp_sync_sum(const float* in, float* out) {
    __shared__ float s[64];
    s[threadIdx.x] = in[threadIdx.x];
    s[threadIdx.x + 32] = in[threadIdx.x + 32];
    __syncthreads();
    volatile float* v = s;
    const unsigned t = threadIdx.x;
    v[t] += v[t + 32];
    v[t] += v[t + 16];
    v[t] += v[t + 8];
    v[t] += v[t + 4];
    v[t] += v[t + 2];
    v[t] += v[t + 1];
    if (t == 0) out[0] = v[0];
}
