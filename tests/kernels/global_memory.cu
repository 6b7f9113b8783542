// Global memory as a learner writes it: vector loads through every kind of cast, indexes through
// pointers that moved, device functions, inline PTX kept for the GPU (tests/test_global_memory.py).
using vec4 = float4;

template <typename V>
__device__ V load_as(const float* p, int i) { return *reinterpret_cast<const V*>(p + i); }

__device__ float left_of(const float* row, int i) { return row[i - 1]; }

// out[t] = the sum of in[4t .. 4t + 3], read as one float4 from in + 4t + offset (offset 0: legal;
// 1 or 2: misaligned, which a GPU refuses). how: 0 C-style cast, 1 a type alias, 2 a template.
extern "C" __global__ void vector_sum(const float* in, float* out, int offset, int how) {
    const int t = threadIdx.x;
    float4 v;
    if (how == 0) v = *(float4*)(in + 4 * t + offset);
    else if (how == 1) v = *reinterpret_cast<const vec4*>(&in[4 * t + offset]);
    else v = load_as<float4>(in, 4 * t + offset);
    out[t] = v.x + v.y + v.z + v.w;
}

// A double read from a float array at element 2t + offset (offset 1: misaligned on a GPU).
extern "C" __global__ void as_double(const float* in, double* out, int offset) {
    out[threadIdx.x] = *(const double*)(in + 2 * threadIdx.x + offset);
}

// out[t] = in[t - 1] through a device function: t = 0 reads before the start.
extern "C" __global__ void stencil_left(const float* in, float* out, int first) {
    const int t = threadIdx.x + first;
    out[threadIdx.x] = left_of(in, t);
}

// Legal: the row pointer moves (A += row * n), a pointer runs to one past the end, the same
// array comes twice (a view of it inside another) -- none of it is outside an array.
extern "C" __global__ void moved_pointers(const float* A, float* rows, const float* part, int n) {
    const int row = blockIdx.x;
    A += row * n;
    float s = 0.0f;
    for (const float* p = A; p != A + n; ++p) s += *p;
    rows[row] = s + part[0] + A[n - 1] - A[n - 1];
}

// The lane index through inline PTX on a GPU, in C++ on the emulator.
extern "C" __global__ void lane_ids(int* out) {
    unsigned lane;
#ifdef __CUDA_ARCH__
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
#else
    lane = threadIdx.x % 32;
#endif
    out[threadIdx.x] = int(lane);
}

// A spin lock on global memory: every thread of the block adds 1 to *total under the lock.
extern "C" __global__ void locked_count(int* lock, int* total) {
    for (bool done = false; !done;) {
        if (atomicCAS(lock, 0, 1) == 0) {
            *total += 1;
            __threadfence();
            atomicExch(lock, 0);
            done = true;
        }
    }
}

// A struct holding a pointer, passed by value (the Programming Guide's Matrix): a GPU follows the
// pointer; the emulator, whose worker holds copies of the array arguments only, refuses it.
struct Span {
    int n;
    float* data;
};
extern "C" __global__ void span_fill(Span s) {
    if (threadIdx.x < s.n) s.data[threadIdx.x] = 1.0f;
}

// A row pointer into the input, read one to the left: row[-1] of the first row is before the
// start. A __device__ table indexed past its end.
__device__ float table[8];
extern "C" __global__ void row_left(const float* in, float* out, int n, int shift) {
    const float* row = in + blockIdx.x * n;
    out[blockIdx.x * n + threadIdx.x] = row[(int)threadIdx.x - shift] + table[threadIdx.x % 8];
}
extern "C" __global__ void table_fill(int count) {
    for (int i = threadIdx.x; i < count; i += blockDim.x) table[i] = float(i);
}

// The same accesses through __restrict__ pointers (as most optimized kernels write them): the
// emulator's checks see through the qualifier.
extern "C" __global__ void restrict_read_at(const float* __restrict__ in, float* __restrict__ out,
                                            int offset) {
    out[threadIdx.x] = in[offset + (int)threadIdx.x];
}

extern "C" __global__ void restrict_float4(const float* __restrict__ in, float* __restrict__ out,
                                           int i) {
    const float4 v = *reinterpret_cast<const float4*>(in + i + 4 * threadIdx.x);
    out[threadIdx.x] = v.x + v.y + v.z + v.w;
}

extern "C" __global__ void restrict_local(const int* __restrict__ x, int* __restrict__ out) {
    const int* __restrict__ row = x + threadIdx.x;
    out[threadIdx.x] = row[-1];  // x[-1] at thread 0
}

// __launch_bounds__(128): a GPU refuses a launch of more threads a block.
extern "C" __global__ void __launch_bounds__(128) bounded(float* out) {
    out[threadIdx.x] = 1.0f;
}

template <int THREADS>
__global__ void __launch_bounds__(THREADS / 2, 1) bounded_t(float* out) {
    out[threadIdx.x] = 2.0f;
}

// The SGEMM articles' FETCH_FLOAT4: a cast indexed at once. n = 4k is legal; n = 4k + 2 reads
// the last float4 half past the array (its elements checked as p[i]'s are).
#define FETCH_FLOAT4(pointer) (reinterpret_cast<float4*>(&(pointer))[0])
extern "C" __global__ void fetch_float4_copy(float* in, float* out, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i < n) FETCH_FLOAT4(out[i]) = FETCH_FLOAT4(in[i]);
}

// Pointers whose declarations show no *: a typedef'd parameter and an `auto` local. in[i + 1]
// and row[c] at their last thread run 1 past the end, as with float* (once silent for n = 101:
// inside the array's padding, where no guard page is).
typedef const float* cfloat_p;
using float_p = float*;
extern "C" __global__ void alias_shift(cfloat_p in, float_p out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        auto row = out + i;
        row[0] = in[i + 1];
    }
}

// A reverse loop with an unsigned counter: i >= 0 always holds, and i wraps to 2^32 - 1.
extern "C" __global__ void reverse_sums(const float* x, float* out, int n) {
    float acc = 0.0f;
    for (unsigned i = n - 1; i >= 0; --i) {
        acc += x[i];
        out[i] = acc;
    }
}
