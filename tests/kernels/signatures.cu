// Kernel signatures as learners copy them from guides and tutorials, which both backends must
// accept (tests/test_learner_signatures.py): extern "C" blocks, __launch_bounds__ with
// expressions, array parameters, fixed-width and long integer types, vectors and structs by
// value, C++ linkage, templates, namespaces, __constant__ memory, and the C headers NVRTC lacks.
#include <cuda_runtime.h>
#include <device_launch_parameters.h>
#include <cstdio>
#include <cstdint>
#include <climits>
#include <cfloat>
#include <cmath>

#ifndef BM
#define BM 64
#define BN 64
#define TM 8
#define TN 8
#endif

extern "C" {

__device__ float twice(float x) { return 2.0f * x; }

// Array parameters are pointers; the block size comes from an expression in parentheses.
__global__ void __launch_bounds__((BM * BN) / (TM * TN), 1)
scale_arrays(const float in[], float out[BM], float factor, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = twice(in[i]) * factor;
}

struct Pair { float a; int n; };  // (a type between the kernels)

__device__ int64_t widen(int32_t v) { return (int64_t)v << 32; }

// Every spelling of the integer types, in one signature: each value is written back as int64.
__global__ __launch_bounds__(32) void integers(long long* out, int8_t i8, uint8_t u8, int16_t i16,
        uint16_t u16, int32_t i32, uint32_t u32, int64_t i64, uint64_t u64, long l, long int li,
        unsigned long ul, long long ll, unsigned long long ull, ptrdiff_t pd, size_t sz,
        signed s, unsigned short int usi, unsigned u, char c) {
    if (threadIdx.x != 0) return;
    out[0] = i8; out[1] = u8; out[2] = i16; out[3] = u16; out[4] = i32; out[5] = (long long)u32;
    out[6] = i64; out[7] = (long long)u64; out[8] = l; out[9] = li; out[10] = (long long)ul;
    out[11] = ll; out[12] = (long long)ull; out[13] = pd; out[14] = (long long)sz; out[15] = s;
    out[16] = usi; out[17] = u; out[18] = c; out[19] = widen(1);
}

}  // extern "C"

// The C headers' names, which NVRTC gets from the book's replacement lines.
extern "C" __global__ void limits(double* out) {
    out[0] = INT_MAX;
    out[1] = FLT_MAX;
    out[2] = M_PI;
    out[3] = INT32_MIN;
    out[4] = std::sqrt(16.0);
    out[5] = sizeof(int64_t) + sizeof(uint8_t);
}

// Vectors and a struct passed by value.
struct Params {
    float scale;
    int count;
    double offset;
};

extern "C" __global__ void by_value(float* out, float4 v, int2 q, Params p) {
    if (threadIdx.x != 0) return;
    out[0] = v.x + v.y + v.z + v.w;
    out[1] = (float)(q.x * q.y);
    out[2] = p.scale * p.count + (float)p.offset;
}

// C++ linkage: no extern "C". In a namespace, and a template.
__global__ void cpp_linkage(float* out) { out[threadIdx.x] = 3.0f; }

namespace lab {
__global__ void in_namespace(float* out) { out[threadIdx.x] = 4.0f; }
}

template <int TILE, typename T = float>
__global__ void __launch_bounds__(TILE) fill(T* out, T value, int n) {
    const int i = blockIdx.x * TILE + threadIdx.x;
    if (i < n) out[i] = value + (T)TILE;
}
// Explicit instantiations (legal; they once broke the file's every kernel: read as kernels named
// "fill<32, float>", split at the comma).
template __global__ void fill<32, float>(float*, float, int);
template __global__ void fill<16, double>(double*, double, int);

// __constant__ and __device__ memory, set from Python with Kernel.set_constant.
__constant__ float coef[4];
__device__ int bias;

extern "C" __global__ void polynomial(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = coef[0] + x[i] * (coef[1] + x[i] * (coef[2] + x[i] * coef[3])) + bias;
}

// An in-place kernel: it writes its input.
extern "C" __global__ void negate(float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = -x[i];
}
