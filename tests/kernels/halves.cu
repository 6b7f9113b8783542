// Half precision as a learner writes it (cuda_fp16.h): conversions, arithmetic on __half and
// __half2, a __half kernel argument. tests/test_halves.py checks every result bit for bit against
// NumPy's float16 (IEEE binary16, rounded to nearest, ties to even, as the GPU rounds).
#include <cuda_fp16.h>

extern "C" __global__ void half_round_trip(const float* x, __half* h, float* back, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    h[i] = __float2half(x[i]);
    back[i] = __half2float(h[i]);
}

// out[6 i ...]: a + b, a - b, a b, a / b, fma(a, b, c) (one rounding), a b + c (two roundings).
extern "C" __global__ void half_ops(const __half* a, const __half* b, const __half* c,
                                    __half* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[6 * i + 0] = __hadd(a[i], b[i]);
    out[6 * i + 1] = __hsub(a[i], b[i]);
    out[6 * i + 2] = __hmul(a[i], b[i]);
    out[6 * i + 3] = __hdiv(a[i], b[i]);
    out[6 * i + 4] = __hfma(a[i], b[i], c[i]);
    out[6 * i + 5] = a[i] * b[i] + c[i];
}

// A dot product of half2 pairs, each product rounded to half, the sums in float; scale is a
// __half argument: out[0] = scale * sum over i of (low and high halves of a[i] * b[i]).
extern "C" __global__ void half2_dot(const __half2* a, const __half2* b, __half scale, float* out,
                                     int n) {
    __shared__ float sums[128];
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const __half2 p = __hmul2(a[i], b[i]);
        s += __low2float(p) + __high2float(p);
    }
    sums[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int t = 0; t < blockDim.x; ++t) total += sums[t];
        out[0] = __half2float(scale) * total;
    }
}
