// shared_semantics.cu -- __shared__ memory as a GPU has it (tests/test_shared_semantics.py): its
// elements are lvalues of their own type, volatile warp-synchronous code and spin-waits run as
// on a GPU, warp matches; and, for the emulator's check mode, the races it must report.

struct Point { float x, y; };

template <class T> __device__ T twice(T v) { return v + v; }
template <class T> __device__ T first_of(const T* p) { return p[0]; }
__device__ void bump(float& x) { x += 10.0f; }
__device__ float row_sum(const float* row, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += row[i];
    return sum;
}

// One block of 32 threads. out: 10 floats per thread; bits: 2 ints per thread; sizes: 9 sizes.
extern "C" __global__ void shared_lvalues(float* out, int* bits_out, unsigned* sizes) {
    __shared__ float s[32];
    __shared__ float grid2[4][8];
    __shared__ int bits[32];
    __shared__ Point pts[32];
    __shared__ unsigned bins[8][4];
    __shared__ float total;
    const int t = threadIdx.x;
    if (t == 0) {
        memset(bins, 0, sizeof bins);
        total = 0.0f;
    }
    s[t] = t;
    grid2[t / 8][t % 8] = t;
    bits[t] = t;
    pts[t].x = t;
    pts[t].y = 2 * t;
    __syncthreads();
    auto copy = s[t];      // a float: the write through r below does not change it
    float& r = s[t];
    r += 1.0f;             // s[t] = t + 1
    bump(s[t]);            // s[t] = t + 11
    Point& p = pts[t];
    p.x += 0.5f;
    ++bits[t];
    bits[t] |= 0x100;
    bits[t] <<= 1;
    bits[t]--;
    const int old = bits[t]++;
    atomicAdd(&bins[t % 8][t % 4], 1u);
    atomicAdd(&total, 1.0f);
    const float lane0 = __shfl_sync(0xffffffffu, s[t], 0);  // s[0] = 11
    __syncthreads();
    unsigned in_row = 0;
    for (unsigned c : bins[t % 8]) in_row += c;
    float* out_t = out + 10 * t;
    out_t[0] = copy;
    out_t[1] = s[t];
    out_t[2] = pts[t].x + pts[t].y;
    out_t[3] = twice(s[t]);
    out_t[4] = max(s[t], 20.0f);
    out_t[5] = lane0;
    out_t[6] = row_sum(grid2[t % 4], 8);
    out_t[7] = first_of(s);
    out_t[8] = in_row;
    out_t[9] = total;
    bits_out[2 * t] = old;
    bits_out[2 * t + 1] = bits[t];
    if (t == 0) {
        sizes[0] = sizeof s;
        sizes[1] = sizeof(s[0]);
        sizes[2] = sizeof(s) / sizeof(s[0]);
        sizes[3] = sizeof grid2;
        sizes[4] = sizeof grid2[1];
        sizes[5] = sizeof(pts);
        sizes[6] = sizeof pts[3];
        sizes[7] = sizeof(bins[1][2]);
        sizes[8] = sizeof total;
    }
}

// The last warp of the classic shared-memory reduction: lanes exchange partial sums through
// volatile shared memory with no __syncwarp(), as written for GPUs before Volta (the lanes of
// a converged warp still run such code in lockstep). One sum of 256 values per block.
__device__ void warp_reduce(volatile float* sdata, unsigned tid) {
    sdata[tid] += sdata[tid + 32];
    sdata[tid] += sdata[tid + 16];
    sdata[tid] += sdata[tid + 8];
    sdata[tid] += sdata[tid + 4];
    sdata[tid] += sdata[tid + 2];
    sdata[tid] += sdata[tid + 1];
}
extern "C" __global__ void reduce_legacy(const float* in, float* out) {
    __shared__ float sdata[256];
    const unsigned tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    for (unsigned s = 128; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) warp_reduce(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// The same in the other forms tutorials write: dynamic shared memory of a template type, a
// template warp_reduce on a `volatile T*`; a volatile local pointer; a volatile __shared__ array.
template <class T> __device__ void warp_reduce_t(volatile T* sdata, unsigned tid) {
    sdata[tid] += sdata[tid + 32];
    sdata[tid] += sdata[tid + 16];
    sdata[tid] += sdata[tid + 8];
    sdata[tid] += sdata[tid + 4];
    sdata[tid] += sdata[tid + 2];
    sdata[tid] += sdata[tid + 1];
}
extern "C" __global__ void reduce_legacy_forms(const int* in, int* out) {
    extern __shared__ int idata[];
    volatile __shared__ int vdata[64];
    const unsigned tid = threadIdx.x;
    idata[tid] = in[blockIdx.x * 64 + tid];
    vdata[tid] = in[blockIdx.x * 64 + tid];
    __syncthreads();
    if (tid < 32) {
        warp_reduce_t(idata, tid);
        volatile int* v = vdata;
        v[tid] += v[tid + 32];
        v[tid] += v[tid + 16];
        v[tid] += v[tid + 8];
        v[tid] = v[tid] + v[tid + 4];
        vdata[tid] += vdata[tid + 2];
        vdata[tid] += vdata[tid + 1];
    }
    if (tid == 0) out[2 * blockIdx.x] = idata[0], out[2 * blockIdx.x + 1] = vdata[0];
}

// The same reduction as it is written since Volta: __syncwarp() between the steps.
extern "C" __global__ void reduce_syncwarp(const float* in, float* out) {
    __shared__ float sdata[256];
    const unsigned tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    for (unsigned s = 128; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        float v = sdata[tid] + sdata[tid + 32];
        __syncwarp();
        for (unsigned s = 16; s > 0; s >>= 1) {
            sdata[tid] = v;
            __syncwarp();
            v += sdata[tid + s];
            __syncwarp();
        }
        if (tid == 0) out[blockIdx.x] = v;
    }
}

// Warp 0 waits for warp 1: on a volatile __shared__ flag (how = 0), on a global flag read
// through a volatile pointer (1), or with atomics and __threadfence (2). out[0]: what thread 0
// read after the wait (42, written before the flag). (value is volatile too: the check mode
// orders two warps' volatile accesses, not plain ones around a fence.)
extern "C" __global__ void spin_wait(int* flag, int* out, int how) {
    __shared__ volatile int ready;
    __shared__ volatile int value;
    if (threadIdx.x == 0) ready = 0;
    __syncthreads();
    if (threadIdx.x == 32) {
        value = 42;
        out[1] = 42;
        __threadfence();
        if (how == 0) ready = 1;
        else atomicExch(flag, 1);
    }
    if (threadIdx.x == 0) {
        if (how == 0) {
            while (ready == 0) {}
            __threadfence_block();
            out[0] = value;
        } else if (how == 1) {
            volatile int* f = flag;
            while (*f == 0) {}
            __threadfence();
            out[0] = ((volatile int*)out)[1];
        } else {
            while (atomicAdd(flag, 0) == 0) __threadfence();
            out[0] = atomicAdd(out + 1, 0);
        }
    }
}

// A spin-wait that nothing ends: thread 0 waits for a flag no thread sets (a deadlock on a GPU).
extern "C" __global__ void spin_forever(int* out) {
    __shared__ volatile int never;
    if (threadIdx.x == 0) never = 0;
    __syncthreads();
    if (threadIdx.x == 0) while (never == 0) {}
    out[threadIdx.x] = 1;
}

// __match_any_sync and __match_all_sync, on int, float and long long values; 6 words a thread.
extern "C" __global__ void matches(const int* keys, unsigned* out) {
    const int t = threadIdx.x;
    int pred = -1, pred_half = -1;
    const unsigned half = t % 32 < 16 ? 0x0000ffffu : 0xffff0000u;
    unsigned* mine = out + 6 * t;
    mine[0] = __match_any_sync(0xffffffffu, keys[t]);
    mine[1] = __match_any_sync(half, 0.5f * keys[t]);
    mine[2] = __match_all_sync(0xffffffffu, (long long)keys[t] / 1000, &pred);
    mine[3] = pred;
    mine[4] = __match_all_sync(half, keys[t] % 2, &pred_half);
    mine[5] = pred_half;
}

// An out-of-bounds index after a declaration over three lines: the message names its line.
extern "C" __global__ void index_after_long_declaration(float* out, int i) {
    __shared__ float
        tall[4]
        [8];
    tall[threadIdx.x % 4][threadIdx.x % 8] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = tall[i][0];  // the out-of-bounds line
}

// ---- races the check mode (BOOK_EMU_CHECK=1) reports ------------------------------------------

// A block sum into a __shared__ scalar with no atomic: every thread reads and writes `sum`.
extern "C" __global__ void scalar_race(const float* in, float* out) {
    __shared__ float sum;
    if (threadIdx.x == 0) sum = 0.0f;
    __syncthreads();
    sum += in[threadIdx.x];  // scalar update
    __syncthreads();
    if (threadIdx.x == 0) out[0] = sum;
}

// Dynamic shared memory written as floats and read, by the next thread, as ints: with the
// barrier (sync = 1) legal; without it, a race. i: an index each thread also reads.
extern "C" __global__ void dynamic_neighbours(float* out, int sync, int i) {
    extern __shared__ float fbuf[];
    extern __shared__ int ibuf[];
    fbuf[threadIdx.x] = threadIdx.x;
    if (sync) __syncthreads();
    const int left = threadIdx.x > 0 ? ibuf[threadIdx.x - 1] : __float_as_int(fbuf[i]);
    out[threadIdx.x] = __int_as_float(left);
}

// Harris's sequential-addressing reduction with the loop's __syncthreads() forgotten: thread t
// reads s[t + k] before thread t + k has written it, then writes s[t] that thread t - k read.
extern "C" __global__ void reduce_no_barrier(const int* in, int* out) {
    __shared__ int s[64];
    const unsigned t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1)
        if (t < k) s[t] += s[t + k];
    if (t == 0) out[0] = s[0];
}

// The classic reduction's last warp written without volatile, its array passed to a plain
// pointer: wrong on a GPU since Volta (and before, where the compiler keeps sdata[tid] in a
// register), flagged by compute-sanitizer's racecheck. Check mode follows the pointer.
__device__ void warp_reduce_plain(float* sdata, unsigned tid) {
    sdata[tid] += sdata[tid + 32];  // the plain pointer's race
    sdata[tid] += sdata[tid + 16];
    sdata[tid] += sdata[tid + 8];
    sdata[tid] += sdata[tid + 4];
    sdata[tid] += sdata[tid + 2];
    sdata[tid] += sdata[tid + 1];
}
extern "C" __global__ void reduce_plain_pointer(const float* in, float* out) {
    __shared__ float sdata[64];
    const unsigned tid = threadIdx.x;
    sdata[tid] = in[tid];
    __syncthreads();
    if (tid < 32) warp_reduce_plain(sdata, tid);
    if (tid == 0) out[0] = sdata[0];
}

// The neighbour's sum through a pointer into sdata, dereferenced: *p, *(p + 1).
extern "C" __global__ void neighbour_deref(const float* in, float* out) {
    __shared__ float sdata[64];
    const unsigned tid = threadIdx.x;
    float* p = &sdata[tid];
    *p = in[tid];
    __syncthreads();
    if (tid < 63) *p += *(p + 1);  // the deref race
    __syncthreads();
    if (tid == 0) out[0] = sdata[0];
}

// A histogram in shared memory, zeroed first (zero = 1) or not (its bins start as whatever the
// memory held): atomics on the bins never race each other; the bins are read after a barrier.
extern "C" __global__ void shared_histogram(const int* x, int* bins, int zero) {
    __shared__ int s[16];
    if (zero && threadIdx.x < 16) s[threadIdx.x] = 0;
    __syncthreads();
    atomicAdd(&s[x[threadIdx.x] & 15], 1);  // the histogram's atomic
    __syncthreads();
    if (threadIdx.x < 16) bins[threadIdx.x] = s[threadIdx.x];
}

// The histogram with a plain `+= 1` in place of the atomic: threads that share a bin lose each
// other's counts on a GPU (a lost update, which no barrier fixes).
extern "C" __global__ void shared_histogram_plain(const int* x, int* bins) {
    __shared__ int s[16];
    if (threadIdx.x < 16) s[threadIdx.x] = 0;
    __syncthreads();
    s[x[threadIdx.x] & 15] += 1;  // the plain count
    __syncthreads();
    if (threadIdx.x < 16) bins[threadIdx.x] = s[threadIdx.x];
}

// Two arrays carved from the dynamic shared memory, the launch sized for the first only.
extern "C" __global__ void carved_arrays(const float* x, float* y) {
    extern __shared__ float buf[];
    float* vals = buf;
    int* keys = reinterpret_cast<int*>(buf + blockDim.x);
    vals[threadIdx.x] = x[threadIdx.x];
    keys[threadIdx.x] = int(threadIdx.x);  // the carved array's write
    __syncthreads();
    y[threadIdx.x] = vals[threadIdx.x] + keys[threadIdx.x];
}

// Legal: a __shared__ scalar in a switch and a ternary (check mode reads it as a value there).
extern "C" __global__ void scalar_switch(const int* modes, float* out) {
    __shared__ int mode;
    if (threadIdx.x == 0) mode = modes[blockIdx.x];
    __syncthreads();
    float v;
    switch (mode) {
        case 0: v = 1.f; break;
        case 1: v = 2.f; break;
        default: v = mode > 5 ? 3.f : 4.f;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// A bug: thread 0 zeroes the total the others add into, with no barrier between.
extern "C" __global__ void init_then_atomics(const float* x, float* out) {
    __shared__ float total;
    if (threadIdx.x == 0) total = 0.f;  // zeroing
    atomicAdd(&total, x[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = total;
}

// Legal: names that shadow a __shared__ scalar (a lambda's pointer parameter, a constexpr local).
extern "C" __global__ void scalar_shadows(float* out) {
    __shared__ float total;
    __shared__ int n;
    if (threadIdx.x == 0) total = 1.0f, n = 2;
    __syncthreads();
    auto add = [](float* total, float v) { *total += v; };
    float mine = 0.0f;
    add(&mine, total);
    float v = n;
    {
        constexpr int n = 4;
        constexpr int m = n * 2;
        v += m;
    }
    out[threadIdx.x] = mine + v;
}

// A bug: a __shared__ counter bumped through a helper's reference parameter by every thread.
__device__ void inc(int& c) { c++; }

extern "C" __global__ void shared_count_by_reference(const float* x, int* out) {
    __shared__ int count;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    if (x[threadIdx.x] > 0.f) inc(count);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = count;
}
