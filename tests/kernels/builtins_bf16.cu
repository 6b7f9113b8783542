// cuda_bf16.h's bfloat16 as a learner uses it (tests/test_builtins.py): its math on every value,
// arithmetic, comparisons and conversions with each rounding, and atomic adds. (A file of its own:
// the emulator provides cuda_bf16.h's basics once book/launch/rewrite.py lets the header through.)
#include <cuda_fp16.h>  // (the include folder NVRTC needs: book/launch/cuda_source.py adds it for this)
#include <cuda_bf16.h>

// Row k of out is function k of the bfloat16 with bits i, for all 65536 of them (the rows of
// builtins.cu's half_math).
extern "C" __global__ void bf16_math(unsigned short* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const __nv_bfloat16 h = __ushort_as_bfloat16((unsigned short)i);
    const __nv_bfloat162 h2 = __halves2bfloat162(h, __hneg(h));
    const __nv_bfloat16 r[] = {hexp(h), hexp2(h), hexp10(h), hlog(h), hlog2(h), hlog10(h), hsin(h),
                               hcos(h), hrcp(h), hrsqrt(h), hsqrt(h), hceil(h), hfloor(h), htrunc(h),
                               hrint(h), __low2bfloat16(h2exp(h2)), __high2bfloat16(h2sqrt(h2)),
                               __high2bfloat16(h2rint(h2)), __hneg(h), __habs(h)};
    for (int k = 0; k < int(sizeof r / sizeof r[0]); ++k)
        out[k * 65536 + i] = __bfloat16_as_ushort(r[k]);
}

// Arithmetic of bfloat16 a, b, c and conversions of a double d (|d| < 2^31), one column a thread.
extern "C" __global__ void bf16_ops(const unsigned short* a, const unsigned short* b,
                                    const unsigned short* c, const double* d, unsigned short* out,
                                    long long* io, float* sums, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const __nv_bfloat16 x = __ushort_as_bfloat16(a[i]), y = __ushort_as_bfloat16(b[i]),
                        z = __ushort_as_bfloat16(c[i]);
    const double v = d[i];
    const float f = float(v);
    const __nv_bfloat162 p = __floats2bfloat162_rn(__bfloat162float(x), __bfloat162float(y));
    const __nv_bfloat162 q = __hmul2(p, __halves2bfloat162(z, z));
    const __nv_bfloat16 r[] = {__hadd(x, y), __hsub(x, y), __hmul(x, y), __hdiv(x, y),
                               __hfma(x, y, z), x * y + z, __hmax(x, y), __hmin(x, y),
                               __hadd_sat(x, y), __low2bfloat16(q), __high2bfloat16(q),
                               __float2bfloat16(f), __float2bfloat16_rn(f), __float2bfloat16_rz(f),
                               __float2bfloat16_rd(f), __float2bfloat16_ru(f), __double2bfloat16(v),
                               __int2bfloat16_rd(int(v)), __ll2bfloat16_ru((long long)v)};
    const long long k[] = {__heq(x, y), __hlt(x, y), __hgeu(x, y), __hisnan(x), __hisinf(x),
                           __bfloat162int_rn(x), __bfloat162int_rz(x), __bfloat162ll_rd(x),
                           __bfloat162short_ru(x), (long long)__bfloat162ull_rn(x)};
    for (int j = 0; j < int(sizeof r / sizeof r[0]); ++j) out[j * n + i] = __bfloat16_as_ushort(r[j]);
    for (int j = 0; j < int(sizeof k / sizeof k[0]); ++j) io[j * n + i] = k[j];
    sums[i] = __low2float(q) + __high2float(q);
}

// Each thread adds 1 to a bfloat16 and (1, 2) to a pair (GPUs of compute capability 8.0 and up).
// (NumPy has no bfloat16: the arrays of one are passed as unsigned short.)
extern "C" __global__ void bf16_atomics(unsigned short* bits) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    __nv_bfloat16* counters = reinterpret_cast<__nv_bfloat16*>(bits);
    atomicAdd(&counters[0], __float2bfloat16(1.0f));
    atomicAdd((__nv_bfloat162*)&counters[2], __floats2bfloat162_rn(1.0f, 2.0f));
#endif
}
