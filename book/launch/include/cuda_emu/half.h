// cuda_emu/half.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
#pragma once

// cuda_fp16.h's basics (book/launch/worker.py drops the #include line; the types are always here): __half
// holds IEEE binary16's 16 bits, __half2 two of them. A float or double becomes a half rounded to
// nearest, ties to even, as the GPU's __float2half; NaN becomes the GPU's canonical 0x7FFF. An
// operation on halves is computed in float (double for fma) from the exact values and rounded
// once to half: float's 24 bits (53 for fma's product and sum) make that the correctly rounded
// result, the one the GPU's half units give.
namespace cuda_emu {
inline unsigned short to_half_bits(double d) {
    const unsigned short sign = std::signbit(d) ? 0x8000u : 0u;
    const double a = std::fabs(d);
    if (std::isnan(d)) return 0x7FFFu;
    if (a >= 65520.0) return sign | 0x7C00u;  // past the largest half (65504) by half a step: Inf
    if (a < 6.103515625e-05)                   // below 2^-14: a multiple of 2^-24 (subnormal)
        return sign | static_cast<unsigned short>(std::nearbyint(a * 16777216.0));
    int e;
    std::frexp(a, &e);  // a = f 2^e, f in [0.5, 1): 11 bits of significand are steps of 2^(e - 11)
    const unsigned q = static_cast<unsigned>(std::nearbyint(std::ldexp(a, 11 - e)));  // 1024..2048
    return sign | static_cast<unsigned short>(((e + 14) << 10) + q - 1024);  // 2048 carries up
}
inline float from_half_bits(unsigned short h) {
    const int e = h >> 10 & 0x1F, m = h & 0x3FF;
    const float a = e == 0x1F ? (m ? NAN : INFINITY)
                    : e ? std::ldexp(float(1024 + m), e - 25) : std::ldexp(float(m), -24);
    return h & 0x8000u ? -a : a;
}
}  // namespace cuda_emu

struct __half {
    unsigned short bits;
    __half() = default;
    __half(float f) : bits(::cuda_emu::to_half_bits(f)) {}
    __half(double d) : bits(::cuda_emu::to_half_bits(d)) {}
    __half(int i) : bits(::cuda_emu::to_half_bits(i)) {}
    operator float() const { return ::cuda_emu::from_half_bits(bits); }
};
struct alignas(4) __half2 { __half x, y; };
typedef __half half;
typedef __half2 half2;
inline __half cuda_emu_half(unsigned short bits) { __half h; h.bits = bits; return h; }
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline __half __double2half(double d) { return __half(d); }
inline __half __int2half_rn(int i) { return __half(i); }
inline float __half2float(__half h) { return float(h); }
inline int __half2int_rz(__half h) { return static_cast<int>(float(h)); }
inline int __half2int_rn(__half h) { return static_cast<int>(std::nearbyint(float(h))); }
inline short __half_as_short(__half h) { return static_cast<short>(h.bits); }
inline unsigned short __half_as_ushort(__half h) { return h.bits; }
inline __half __short_as_half(short s) { return cuda_emu_half(static_cast<unsigned short>(s)); }
inline __half __ushort_as_half(unsigned short u) { return cuda_emu_half(u); }
inline __half __hadd(__half a, __half b) { return __half(float(a) + float(b)); }
inline __half __hsub(__half a, __half b) { return __half(float(a) - float(b)); }
inline __half __hmul(__half a, __half b) { return __half(float(a) * float(b)); }
inline __half __hdiv(__half a, __half b) { return __half(float(a) / float(b)); }
inline __half __hfma(__half a, __half b, __half c) {
    return __half(double(float(a)) * double(float(b)) + double(float(c)));
}
inline __half __hneg(__half a) { return cuda_emu_half(a.bits ^ 0x8000u); }
inline __half __habs(__half a) { return cuda_emu_half(a.bits & 0x7FFFu); }
inline __half hsqrt(__half a) { return __half(std::sqrt(float(a))); }
inline bool __hisnan(__half a) { return (a.bits & 0x7FFFu) > 0x7C00u; }
// (__hmax, __hmin: a NaN gives the other operand; two give NaN)
inline __half __hmax(__half a, __half b) {
    return __hisnan(a) ? (__hisnan(b) ? cuda_emu_half(0x7FFFu) : b) : __hisnan(b) || float(a) >= float(b) ? a : b;
}
inline __half __hmin(__half a, __half b) {
    return __hisnan(a) ? (__hisnan(b) ? cuda_emu_half(0x7FFFu) : b) : __hisnan(b) || float(a) <= float(b) ? a : b;
}
inline bool __heq(__half a, __half b) { return float(a) == float(b); }
inline bool __hne(__half a, __half b) {  // ordered: false where either is NaN (operator!= is not)
    return !__hisnan(a) && !__hisnan(b) && float(a) != float(b);
}
inline bool __hlt(__half a, __half b) { return float(a) < float(b); }
inline bool __hle(__half a, __half b) { return float(a) <= float(b); }
inline bool __hgt(__half a, __half b) { return float(a) > float(b); }
inline bool __hge(__half a, __half b) { return float(a) >= float(b); }
inline int __hisinf(__half a) { return (a.bits & 0x7FFFu) == 0x7C00u ? (a.bits & 0x8000u ? -1 : 1) : 0; }
inline __half operator+(const __half& a, const __half& b) { return __hadd(a, b); }
inline __half operator-(const __half& a, const __half& b) { return __hsub(a, b); }
inline __half operator*(const __half& a, const __half& b) { return __hmul(a, b); }
inline __half operator/(const __half& a, const __half& b) { return __hdiv(a, b); }
inline __half operator-(const __half& a) { return __hneg(a); }
inline __half& operator+=(__half& a, const __half& b) { return a = __hadd(a, b); }
inline __half& operator-=(__half& a, const __half& b) { return a = __hsub(a, b); }
inline __half& operator*=(__half& a, const __half& b) { return a = __hmul(a, b); }
inline __half& operator/=(__half& a, const __half& b) { return a = __hdiv(a, b); }
inline bool operator==(const __half& a, const __half& b) { return __heq(a, b); }
inline bool operator!=(const __half& a, const __half& b) { return float(a) != float(b); }
inline bool operator<(const __half& a, const __half& b) { return __hlt(a, b); }
inline bool operator<=(const __half& a, const __half& b) { return __hle(a, b); }
inline bool operator>(const __half& a, const __half& b) { return __hgt(a, b); }
inline bool operator>=(const __half& a, const __half& b) { return __hge(a, b); }
inline __half2 make_half2(__half x, __half y) { return {x, y}; }
inline __half2 __halves2half2(__half x, __half y) { return {x, y}; }
inline __half2 __half2half2(__half a) { return {a, a}; }
inline __half2 __float2half2_rn(float f) { return {__half(f), __half(f)}; }
inline __half2 __floats2half2_rn(float x, float y) { return {__half(x), __half(y)}; }
inline __half2 __float22half2_rn(float2 f) { return {__half(f.x), __half(f.y)}; }
inline float2 __half22float2(__half2 h) { return {float(h.x), float(h.y)}; }
inline float __low2float(__half2 h) { return float(h.x); }
inline float __high2float(__half2 h) { return float(h.y); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half2 __hadd2(__half2 a, __half2 b) { return {__hadd(a.x, b.x), __hadd(a.y, b.y)}; }
inline __half2 __hsub2(__half2 a, __half2 b) { return {__hsub(a.x, b.x), __hsub(a.y, b.y)}; }
inline __half2 __hmul2(__half2 a, __half2 b) { return {__hmul(a.x, b.x), __hmul(a.y, b.y)}; }
inline __half2 __h2div(__half2 a, __half2 b) { return {__hdiv(a.x, b.x), __hdiv(a.y, b.y)}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
    return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
inline __half2 operator+(const __half2& a, const __half2& b) { return __hadd2(a, b); }
inline __half2 operator-(const __half2& a, const __half2& b) { return __hsub2(a, b); }
inline __half2 operator*(const __half2& a, const __half2& b) { return __hmul2(a, b); }
