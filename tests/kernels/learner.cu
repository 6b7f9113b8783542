// Legal CUDA of the kinds learners write, which the emulator must accept (tests/test_learner_cuda.py).

// Atomics with a literal of another type, on unsigned and float, global and shared.
extern "C" __global__ void atomics(unsigned* count, float* total, int* hist, const int* keys, int n) {
    __shared__ int local[4];
    if (threadIdx.x < 4) local[threadIdx.x] = 0;
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(count, 1);
        atomicAdd(total, 1);
        atomicAdd(&local[keys[i] % 4], 1);
    }
    __syncthreads();
    if (threadIdx.x < 4) atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
}

// Intrinsics of the CUDA math API, one per output.
extern "C" __global__ void intrinsics(const float* x, float* out, unsigned* u) {
    const float v = x[threadIdx.x];
    float* o = out + 8 * threadIdx.x;
    o[0] = rsqrtf(v);
    o[1] = __fdividef(1.0f, v);
    o[2] = __saturatef(v - 1.0f);
    o[3] = __frcp_rn(v);
    o[4] = (float)__float2int_rn(v);
    o[5] = (float)__mul24(3, (int)v);
    o[6] = __expf(0.0f) + __logf(1.0f);
    o[7] = fminf(v, 2.0f);
    if (threadIdx.x == 0) {
        u[0] = __umulhi(0xFFFFFFFFu, 0x10u);
        u[1] = (unsigned)(clock64() > 0);
        __threadfence();
    }
}

// Block-wide votes at a barrier.
extern "C" __global__ void votes(const int* flags, int* out) {
    const int f = flags[blockIdx.x * blockDim.x + threadIdx.x];
    const int count = __syncthreads_count(f);
    const int every = __syncthreads_and(f);
    const int some = __syncthreads_or(f);
    const int again = __syncthreads_count(!f);
    if (threadIdx.x == 0) {
        out[4 * blockIdx.x] = count;
        out[4 * blockIdx.x + 1] = every;
        out[4 * blockIdx.x + 2] = some;
        out[4 * blockIdx.x + 3] = again;
    }
}

// Kernels named like the emulator's own variables.
extern "C" __global__ void g(float* x) { x[threadIdx.x] += 1.0f; }
extern "C" __global__ void args(float* x) { x[threadIdx.x] += 2.0f; }
extern "C" __global__ void err(float* x) { x[threadIdx.x] += 3.0f; }
extern "C" __global__ void fault(float* x) { x[threadIdx.x] += 4.0f; }

// A device assert that fails in one thread.
extern "C" __global__ void asserts(const int* x) { assert(x[threadIdx.x] >= 0); }

// A thread's stack overflowing: recursion without end, and a large local array.
__device__ int deeper(int n, volatile int* sink) {
    volatile int pad[64];
    pad[0] = n;
    *sink = pad[0];
    return n + deeper(n + 1, sink) + pad[0];
}
extern "C" __global__ void recursion(int* out) { out[threadIdx.x] = deeper(0, out); }
extern "C" __global__ void big_local(int* out, int i) {
    volatile int local[1 << 20];  // 4 MiB
    local[i] = threadIdx.x;
    out[threadIdx.x] = local[i];
}

// Dynamic shared memory indexed at i (the launch gives shared_mem bytes, or none).
extern "C" __global__ void dynamic_shared(float* out, int i) {
    extern __shared__ float buf[];
    buf[i] = 1.0f;
    out[threadIdx.x] = buf[i];
}

// Two views of one array, both writable: y[i] += x[i] where y starts 5 floats after x.
extern "C" __global__ void shifted_add(float* x, float* y, int n) {
    const int i = threadIdx.x;
    if (i < n) y[i] += x[i];
}

// __shared__ in the forms tutorials write; i: the index each thread uses (out of bounds or not).
extern "C" __global__ void shared_forms(float* out, int i) { __shared__ float As[4][8], Bs[4][8];
    static __shared__ float Cs[16];
    volatile __shared__ int flag;
    __shared__ __align__(16) float Ds[8], total;
    const int t = threadIdx.x;
    if (t == 0) flag = 1, total = 0.0f;
    As[t % 4][t % 8] = 1.0f;
    Bs[t % 4][t % 8] = 2.0f;
    Cs[t % 16] = 3.0f;
    Ds[t % 8] = 4.0f;
    __syncthreads();
    if (t == 0) out[0] = As[0][0] + Bs[0][0] + Cs[0] + Ds[0] + flag + total;
    if (t == 1) out[1] = Bs[i / 8][i % 8];
}

// Shared memory written through a pointer (a float4 store), then read by index.
extern "C" __global__ void shared_through_pointer(float* out) {
    __shared__ float s[128];
    float4* v = reinterpret_cast<float4*>(&s[0]);
    v[threadIdx.x] = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
    __syncthreads();
    out[threadIdx.x] = s[4 * threadIdx.x] + s[4 * threadIdx.x + 3];
}

// A __shared__ array, and a row of one, cast to float4* as they are (no &s[0]): `index` is
// where thread 0 stores its float4 (in bounds: 0).
extern "C" __global__ void shared_cast_whole(float* out, int index) {
    __shared__ float s[128];
    __shared__ float t[4][16];
    t[threadIdx.x / 16 % 4][threadIdx.x % 16] = threadIdx.x;
    reinterpret_cast<float4*>(s)[threadIdx.x == 0 ? index : threadIdx.x] = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
    __syncthreads();
    const float4 row = reinterpret_cast<const float4*>(t[1])[threadIdx.x % 4];
    out[threadIdx.x] = s[4 * threadIdx.x] + s[4 * threadIdx.x + 3] + row.x;
}

// atomicInc and atomicDec wrap as CUDA defines them.
extern "C" __global__ void wrap_counters(unsigned* c) {
    atomicInc(&c[0], 4u);
    atomicDec(&c[1], 4u);
}

// A row of a shared array handed to a function as a pointer, const or not, or as an array.
__device__ float second(const float* p) { return p[1]; }
__device__ float third(float* p) { return p[2]; }
__device__ float first(const float (&p)[4]) { return p[0]; }
extern "C" __global__ void shared_rows(float* out) {
    __shared__ float S[8][4];
    S[threadIdx.x / 4][threadIdx.x % 4] = threadIdx.x;
    __syncthreads();
    const float* q = S[2];
    out[threadIdx.x] = second(S[1]) + third(S[2]) + first(S[3]) + q[3];
}

// Products below float32's normal range (2^-126): kept as subnormals, as cuBLAS keeps them.
extern "C" __global__ void tiny_product(const float* a, const float* b, float* c) {
    c[threadIdx.x] = a[threadIdx.x] * b[threadIdx.x];
}

// A pointer taken from a shared array, run past its end: the emulator names the array.
extern "C" __global__ void shared_pointer_overrun(float* out, int n) {
    __shared__ float tile[32][33];
    float* p = &tile[0][0];
    for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = tile[0][threadIdx.x];
}

// A float4 read at x + offset: on a GPU, an offset that is not a multiple of 4 floats is a
// misaligned address (the launch fails); the emulator says so.
extern "C" __global__ void misaligned(const float* x, float* out, int offset) {
    const float4 v = reinterpret_cast<const float4*>(x + offset)[threadIdx.x];
    out[threadIdx.x] = v.x + v.y + v.z + v.w;
}

// A pointer taken from a __shared__ array and run n floats before its start (thread 0 writes
// p[-n]); and the same through the dynamic shared memory.
extern "C" __global__ void shared_pointer_before(float* out, int n) {
    __shared__ float s[32];
    float* p = s;
    p[(int)threadIdx.x - n] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}
extern "C" __global__ void dynamic_pointer_before(float* out, int n) {
    extern __shared__ float tile[];
    float* p = tile;
    p[(int)threadIdx.x - n] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x];
}

// The cache hints of loads and stores (__ldg, __ldcg, __ldcs, __ldlu, __ldcv, __ldca; __stcg,
// __stcs, __stwb, __stwt): out[4 i + j] = the sum of x[i] read each way, times j + 1.
extern "C" __global__ void cache_hints(const float* x, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = __ldg(x + i) + __ldcg(x + i) + __ldcs(x + i) + __ldlu(x + i) + __ldcv(x + i)
                    + __ldca(x + i);
    __stcg(out + 4 * i, v);
    __stcs(out + 4 * i + 1, 2.0f * v);
    __stwb(out + 4 * i + 2, 3.0f * v);
    __stwt(out + 4 * i + 3, 4.0f * v);
}

// Warp reductions (compute capability 8.0): out[6 w ...] = warp w's sum, min and max (signed),
// min (unsigned), and and or of its lanes' values; the odd warp reduces its even lanes only.
extern "C" __global__ void warp_reductions(const int* x, int* out) {
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, v = x[threadIdx.x];
    const unsigned mask = w % 2 ? 0x55555555u : 0xFFFFFFFFu;
    if (!(mask >> lane & 1u)) return;
    const int sum = __reduce_add_sync(mask, v), low = __reduce_min_sync(mask, v);
    const int high = __reduce_max_sync(mask, v);
    const unsigned ulow = __reduce_min_sync(mask, (unsigned)v);
    const unsigned all = __reduce_and_sync(mask, (unsigned)v), any = __reduce_or_sync(mask, (unsigned)v);
    if (lane == 0) {
        out[6 * w] = sum, out[6 * w + 1] = low, out[6 * w + 2] = high;
        out[6 * w + 3] = (int)ulow, out[6 * w + 4] = (int)all, out[6 * w + 5] = (int)any;
    }
}

// Half the block waits at a barrier, the other half spins on a flag that the first half sets
// only after it: the block can never finish, on a GPU either.
extern "C" __global__ void barrier_against_spin(int* out) {
    __shared__ volatile int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (threadIdx.x < 16) {
        __syncthreads();
        flag = 1;
    } else {
        while (flag == 0) {}
    }
    out[threadIdx.x] = flag;
}

// The same with the flag in a volatile __shared__ array.
extern "C" __global__ void barrier_against_spin_array(int* out) {
    volatile __shared__ int flags[4];
    if (threadIdx.x == 0) flags[2] = 0;
    __syncthreads();
    if (threadIdx.x < 16) {
        __syncthreads();
        flags[2] = 1;
    } else {
        while (flags[2] == 0) {}
    }
    out[threadIdx.x] = flags[2];
}

// Block 0 deadlocks as barrier_against_spin; block 1 only runs long, through barriers.
extern "C" __global__ void one_block_hangs_one_runs(int* out) {
    __shared__ volatile int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    if (blockIdx.x == 0) {
        if (threadIdx.x < 16) {
            __syncthreads();
            flag = 1;
        } else {
            while (flag == 0) {}
        }
    } else {
        for (int i = 0; i < 100000000; ++i) __syncthreads();
    }
    out[blockIdx.x * 32 + threadIdx.x] = flag;
}

// Slow, not stuck: a long loop of barriers (stopped by a short time limit).
extern "C" __global__ void slow_with_barriers(float* out) {
    __shared__ float s[64];
    float acc = 0.0f;
    for (int i = 0; i < 100000000; ++i) {
        s[threadIdx.x] = acc;
        __syncthreads();
        acc += s[(threadIdx.x + 1) % 64] * 0.5f + 1.0f;
        __syncthreads();
    }
    out[threadIdx.x] = acc;
}

// End pointers, legal C++ a GPU runs: &x[n] one past the end of an argument, &s[64] of a
// __shared__ float[64], &t[r][16] the end of a row, each compared against, never read.
extern "C" __global__ void segment_sums(const float* x, const int* starts, float* out, int segs,
                                        int n) {
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= segs) return;
    const float* last = (s + 1 < segs) ? &x[starts[s + 1]] : &x[n];
    float acc = 0.0f;
    for (const float* p = &x[starts[s]]; p != last; ++p) acc += *p;
    out[s] = acc;
}

extern "C" __global__ void shared_end_pointers(const float* in, float* out) {
    __shared__ float s[64];
    __shared__ float t[4][16];
    s[threadIdx.x] = in[threadIdx.x];
    t[threadIdx.x / 16][threadIdx.x % 16] = in[threadIdx.x];
    __syncthreads();
    if (threadIdx.x < 4) {
        float acc = 0.0f;
        for (const float* p = &t[threadIdx.x][0]; p != &t[threadIdx.x][16]; ++p) acc += *p;
        out[1 + threadIdx.x] = acc;
    }
    if (threadIdx.x == 0) {
        float acc = 0.0f;
        for (const float* p = &s[0]; p != &s[64]; ++p) acc += *p;
        out[0] = acc;
    }
}

// A binary &, not an address: x[i + 1] is read, and past the end at the last thread.
extern "C" __global__ void masked_next(const int* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0xff & x[i + 1];
}

// helper_math.h's operators on float3 (operator+= once looked like a __device__ variable).
inline __host__ __device__ float3 operator+(float3 a, float3 b) {
    return make_float3(a.x + b.x, a.y + b.y, a.z + b.z);
}
inline __host__ __device__ void operator+=(float3& a, float3 b) { a.x += b.x; a.y += b.y; a.z += b.z; }
inline __host__ __device__ bool operator==(float3 a, float3 b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
__device__ float3 offset3 = {1.0f, 2.0f, 3.0f};

extern "C" __global__ void add_offsets(const float* x, float* y) {
    float3 v = make_float3(x[0], x[1], x[2]);
    v += offset3;
    v = v + offset3;
    y[threadIdx.x] = (v == make_float3(x[0] + 2.0f, x[1] + 4.0f, x[2] + 6.0f)) ? v.x + v.y + v.z : -1.0f;
}

// ---- a fourth learner batch: undefined behaviour the check mode stops at its line -------------
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// A per-thread histogram of 4 bins indexed by the data: a value of 4 writes hist[4].
extern "C" __global__ void local_histogram(const int* v, int* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int hist[4] = {0, 0, 0, 0};
    for (int k = 0; k < 8; ++k) hist[v[i * 8 + k]]++;  // the local histogram
    out[i] = hist[0] * 1000 + hist[1] * 100 + hist[2] * 10 + hist[3];
}

// A __shared__ struct whose member array one thread too many fills.
struct Tile { float v[32]; int count; };
extern "C" __global__ void fill_tile(const float* x, float* out) {
    __shared__ Tile tile;
    if (threadIdx.x == 0) tile.count = 0;
    __syncthreads();
    tile.v[threadIdx.x] = x[threadIdx.x];  // the member's fill
    __syncthreads();
    if (threadIdx.x == 0) out[0] = tile.v[0] + tile.count;
}

// Buckets by a modulus the caller may pass as 0.
extern "C" __global__ void buckets(const long long* keys, int* out, long long nbuckets, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = int(keys[i] % nbuckets);  // the modulus
}

// A pointer that a branch not taken leaves null.
extern "C" __global__ void pick_output(float* a, float* b, int which, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float* dst = nullptr;
    if (which == 1) dst = b;
    else if (which == 0) dst = a;
    dst[i] = 1.0f;  // the null write
}

// __ldg(&x[i + 1]) reads x[n] at the last thread (the address is legal, the read is not).
extern "C" __global__ void forward_difference(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __ldg(&x[i + 1]) - __ldg(&x[i]);  // the __ldg
}

// half2 loads from h + 1: a 4-byte type at a 2-byte offset.
extern "C" __global__ void half_pair_sums(const __half* h, float* out, int npairs) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= npairs) return;
    const __half2 v = reinterpret_cast<const __half2*>(h + 1)[i];  // the half2 cast
    out[i] = __low2float(v) + __high2float(v);
}

// Legal: CUDA by Example's spin lock around a plain read-modify-write, one thread a block.
__device__ void lock(int* m) { while (atomicCAS(m, 0, 1) != 0) {} __threadfence(); }
__device__ void unlock(int* m) { __threadfence(); atomicExch(m, 0); }
extern "C" __global__ void locked_total(const float* x, float* total, int* mutex, int n) {
    __shared__ float s[64];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
        float sum = 0.0f;
        for (int k = 0; k < 64; ++k) sum += s[k];
        lock(mutex);
        total[0] += sum;  // under the lock
        unlock(mutex);
    }
}

// Legal: bfloat16 arrays (their bits as uint16 from NumPy), through cuda_bf16.h.
extern "C" __global__ void bf16_axpy(const __nv_bfloat16* x, __nv_bfloat16* y, float a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(a * __bfloat162float(x[i]) + __bfloat162float(y[i]));
}

// Recursion as deep as the data: the stack overflows where a call pushes its return address.
__device__ float sum_down(const float* x, int k) { return k < 0 ? 0.0f : x[k] + sum_down(x, k - 1); }
extern "C" __global__ void recursive_total(const float* x, float* out, int n) {
    if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = sum_down(x, n - 1);
}
