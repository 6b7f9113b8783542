// Races on global memory that the emulator's check mode reports (tests/test_global_races.py),
// and the legal patterns beside them that it must leave alone (they run right on a GPU too).

// A bug: two threads write each out element (i / 2), with different values.
extern "C" __global__ void downsample(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i / 2] = x[i];  // two writers
}

// Legal: many threads write the same value to one flag.
extern "C" __global__ void any_positive(const float* x, int* found, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.f) found[0] = 1;
}

// A bug: block b reads the partial sum block b - 1 writes in the same launch.
extern "C" __global__ void chained(const float* x, float* part) {
    __shared__ float s[64];
    int t = threadIdx.x, b = blockIdx.x;
    s[t] = x[b * 64 + t];
    __syncthreads();
    if (t == 0) {
        float acc = b > 0 ? part[b - 1] : 0.f;  // another block's write
        for (int k = 0; k < 64; ++k) acc += s[k];
        part[b] = acc;
    }
}

// A bug: an in-place shift; thread i reads x[i + 1], which thread i + 1 overwrites.
extern "C" __global__ void shift_left(float* x, int n) {
    int i = threadIdx.x;
    if (i + 1 < n) x[i] = x[i + 1];  // shift write
}

// Legal: the same shift with every read before a barrier and every write after it (one block).
extern "C" __global__ void shift_left_synced(float* x, int n) {
    int i = threadIdx.x;
    float v = i + 1 < n ? x[i + 1] : 0.f;
    __syncthreads();
    if (i + 1 < n) x[i] = v;
}

// Legal: the threadfence reduction. Each block writes its partial sum, and the last block to
// finish (an atomic counter says which) adds them all.
extern "C" __global__ void last_block_sum(const float* x, float* part, unsigned* done, float* out) {
    __shared__ float s[64];
    __shared__ bool last;
    int t = threadIdx.x, b = blockIdx.x;
    s[t] = x[b * 64 + t];
    __syncthreads();
    if (t == 0) {
        float acc = 0.f;
        for (int k = 0; k < 64; ++k) acc += s[k];
        part[b] = acc;
        __threadfence();
        last = atomicInc(done, gridDim.x) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {  // every thread of the last block reads partial sums (thread 0 made the atomic)
        s[t] = 0.f;
        for (int k = t; k < (int)gridDim.x; k += blockDim.x) s[t] += part[k];
        __syncthreads();
        if (t == 0) {
            float total = 0.f;
            for (int k = 0; k < 64; ++k) total += s[k];
            out[0] = total;
        }
    }
}

// A bug: a maximum by check-then-write instead of atomicMax.
extern "C" __global__ void racy_max(const int* x, int* best, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > *best) *best = x[i];  // check then write
}

// A bug: an in-place three-point stencil; thread i reads x[i - 1], which thread i - 1 wrote.
extern "C" __global__ void smooth_in_place(float* x, int n) {
    int i = threadIdx.x;
    if (i > 0 && i < n - 1) x[i] = 0.25f * x[i - 1] + 0.5f * x[i] + 0.25f * x[i + 1];  // stencil
}

// Legal: every thread zeroes its block's counter (one value), then, after a barrier, atomics.
extern "C" __global__ void count_positive(const float* x, float* count) {
    count[blockIdx.x] = 0.f;
    __syncthreads();
    if (x[blockIdx.x * blockDim.x + threadIdx.x] > 0.f) atomicAdd(&count[blockIdx.x], 1.f);
}

// Every thread writes one value to out[0]; thread 63 then runs past the array (the launch fails).
extern "C" __global__ void same_then_fail(const float* x, float* out) {
    out[0] = 1.f;
    if (threadIdx.x == 63) out[1000] = x[0];
}

extern "C" __global__ void twice(const float* x, float* out) {
    out[threadIdx.x] = 2.f * x[threadIdx.x];
}

// A bug: a counter bumped through a helper's reference parameter by every thread.
__device__ void bump(int& c) { c = c + 1; }  // through a reference

extern "C" __global__ void count_by_reference(const float* x, int* count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.f) bump(count[0]);
}
