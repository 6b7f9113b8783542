// cuda_emu/half.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
//
// cuda_fp16.h and cuda_bf16.h (book/launch/rewrite.py drops their #include lines; the types are
// always here). __half holds IEEE binary16's 16 bits (5 exponent bits, 10 fraction bits),
// __nv_bfloat16 bfloat16's (8 and 7: the upper half of a float); __half2 and __nv_bfloat162 hold
// two. A number becomes a 16-bit float rounded once from its exact value: to nearest, ties to
// even, unless the function names another rounding (_rz, _rd, _ru). An operation is computed from
// the exact values and rounded once -- + - * / in float, whose 24 bits make that the correctly
// rounded result (at least 2p + 2 bits); fma and the math functions (hexp, hsin...) in double,
// fma rounded to odd first -- which is what an H100 gives: correctly rounded for every input
// (seen with CUDA 13 for all 65536 of each, hexp to htanh). A NaN result is the GPU's canonical
// 0x7FFF (a double NaN converts to 0x7E00 and 0x7FC0, as the GPU's cvt does).
#pragma once

namespace cuda_emu::f16 {
// The 16-bit formats by their fraction bits, Frac: 10 (binary16) or 7 (bfloat16); an exponent of
// 15 - Frac bits.
template <int Frac> constexpr int bias = (1 << (14 - Frac)) - 1;  // 15 and 127
template <int Frac> constexpr unsigned short inf_bits = (2 * bias<Frac> + 1) << Frac;
template <int Frac> inline bool is_nan(unsigned short h) { return (h & 0x7FFFu) > inf_bits<Frac>; }
template <int Frac> inline double value(unsigned short h) {
    const int e = h >> Frac & (2 * bias<Frac> + 1), m = h & ((1 << Frac) - 1);
    const double a = e == 2 * bias<Frac> + 1 ? (m ? NAN : INFINITY)
                     : e ? std::ldexp(double((1 << Frac) + m), e - bias<Frac> - Frac)
                         : std::ldexp(double(m), 1 - bias<Frac> - Frac);
    return h & 0x8000u ? -a : a;
}
// d rounded to the nearest 16-bit float, ties to even.
template <int Frac> inline unsigned short nearest(double d) {
    const unsigned short sign = std::signbit(d) ? 0x8000u : 0u;
    const double a = std::fabs(d);
    if (std::isnan(d)) return 0x7FFFu;
    const double largest = std::ldexp(2.0 - std::ldexp(1.0, -Frac), bias<Frac>);
    if (a >= largest + std::ldexp(1.0, bias<Frac> - Frac - 1)) return sign | inf_bits<Frac>;
    if (a < std::ldexp(1.0, 1 - bias<Frac>))  // subnormal: a multiple of 2^(1 - bias - Frac)
        return sign | static_cast<unsigned short>(std::nearbyint(std::ldexp(a, bias<Frac> - 1 + Frac)));
    int e;
    std::frexp(a, &e);  // a = f 2^e, f in [0.5, 1): Frac + 1 bits are steps of 2^(e - Frac - 1)
    const unsigned q = static_cast<unsigned>(std::nearbyint(std::ldexp(a, Frac + 1 - e)));
    return sign | static_cast<unsigned short>(((e + bias<Frac> - 1) << Frac) + q - (1u << Frac));
}  // (a q of 2^(Frac + 1), rounded up, carries into the exponent)
// The next 16-bit float up and down (the next up from -0 is the smallest positive one).
inline unsigned short next_up(unsigned short h) {
    return h == 0x8000u ? 1 : h & 0x8000u ? h - 1 : h + 1;
}
inline unsigned short next_down(unsigned short h) {
    return h == 0 ? 0x8001u : h & 0x8000u ? h + 1 : h - 1;
}
enum class Round { nearest, toward_zero, down, up };
template <int Frac> inline unsigned short rounded(double d, Round mode) {
    const unsigned short h = nearest<Frac>(d);
    const double v = value<Frac>(h);
    if (mode == Round::nearest || std::isnan(d) || v == d) return h;
    if (mode == Round::up ? v < d : mode == Round::down ? v > d : std::fabs(v) > std::fabs(d))
        return mode == Round::up || (mode == Round::toward_zero && v < 0) ? next_up(h) : next_down(h);
    return h;
}
// An integer as a double rounded to odd (exact below 2^53): rounding that to 16 bits is then
// the integer's correct rounding, as rounding it twice would not be.
template <class I> inline double odd(I v) {
    const bool negative = v < 0;
    unsigned long long u = negative ? 0ull - (unsigned long long)v : (unsigned long long)v;
    const int shift = std::max(0, 64 - __builtin_clzll(u | 1) - 53);
    u = u >> shift | ((u & ((1ull << shift) - 1)) != 0);
    const double a = std::ldexp(double(u), shift);
    return negative ? -a : a;
}

// The storage and conversions both types share: the bits, a converting constructor from any
// number (rounded to nearest even), a conversion to float, and the raw type of CUDA's headers.
template <int Frac, class Raw> struct Bits16 {
    static constexpr int frac = Frac;
    unsigned short bits;
    Bits16() = default;
    template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0> Bits16(T v) {
        if constexpr (std::is_integral_v<T>) bits = nearest<Frac>(odd(v));
        else if constexpr (std::is_same_v<T, double>)  // as the GPU converts a double NaN
            bits = std::isnan(v) ? (Frac == 10 ? 0x7E00u : 0x7FC0u) : nearest<Frac>(v);
        else bits = nearest<Frac>(double(v));
    }
    Bits16(Raw r) : bits(r.x) {}
    operator float() const { return float(value<Frac>(bits)); }
    operator Raw() const { return {bits}; }
};
}  // namespace cuda_emu::f16

struct __half_raw { unsigned short x; };
struct __nv_bfloat16_raw { unsigned short x; };
struct __half : ::cuda_emu::f16::Bits16<10, __half_raw> { using Bits16::Bits16; };
struct __nv_bfloat16 : ::cuda_emu::f16::Bits16<7, __nv_bfloat16_raw> { using Bits16::Bits16; };
struct alignas(4) __half2 {
    __half x, y;
};
struct alignas(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
struct __half2_raw { unsigned short x, y; };
struct __nv_bfloat162_raw { unsigned short x, y; };
typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

namespace cuda_emu::f16 {
template <class H> concept scalar = std::is_same_v<H, __half> || std::is_same_v<H, __nv_bfloat16>;
template <class P> concept pair = std::is_same_v<P, __half2> || std::is_same_v<P, __nv_bfloat162>;
template <scalar H> inline H of_bits(unsigned short bits) {
    H h;
    h.bits = bits;
    return h;
}
template <scalar H> inline H of(double d) { return of_bits<H>(nearest<H::frac>(d)); }  // NaN: 0x7FFF
template <scalar H, class T> inline H from(T v, Round mode) {  // a number rounded as mode says
    if constexpr (std::is_integral_v<T>) return of_bits<H>(rounded<H::frac>(odd(v), mode));
    else return of_bits<H>(rounded<H::frac>(double(v), mode));
}
template <class I, scalar H> inline I to_integer(H h, Round mode) {  // as math.h's __float2int_rn...
    const float f = float(h);
    return math::to_integer<I>(mode == Round::nearest ? std::nearbyint(f) : mode == Round::toward_zero
                               ? std::trunc(f) : mode == Round::down ? std::floor(f) : std::ceil(f));
}
template <scalar H> inline bool is_nan(H h) { return is_nan<H::frac>(h.bits); }
template <scalar H> inline H canonical(H h) { return is_nan(h) ? of_bits<H>(0x7FFFu) : h; }
template <scalar H> inline H saturated(H h) {  // clamped to [0, 1]; NaN becomes +0
    return !(float(h) > 0) ? of_bits<H>(0) : float(h) > 1 ? H(1.0f) : h;
}
template <scalar H> inline H fma(H a, H b, H c) {
    const double p = double(float(a)) * double(float(b)), s = p + float(c);  // p is exact
    const double t = s - p, e = (p - (s - t)) + (float(c) - t);                // s + e = p + c
    if (e != 0 && !(std::bit_cast<unsigned long long>(s) & 1))                 // rounded to odd
        return of<H>(std::nextafter(s, e > 0 ? INFINITY : -INFINITY));
    return of<H>(s);
}
// The larger (smaller) of a and b, -0 below +0; a NaN gives the other, two give NaN; with
// Nan, any NaN gives NaN (__hmax_nan).
template <bool Nan, scalar H> inline H larger(H a, H b, bool max) {
    if (is_nan(a) || is_nan(b))
        return Nan || (is_nan(a) && is_nan(b)) ? of_bits<H>(0x7FFFu) : is_nan(a) ? b : a;
    const float x = float(a), y = float(b);
    const bool a_wins = x == y ? (std::signbit(x) != max) : (x > y) == max;
    return a_wins ? a : b;
}
// op applied to both halves of pairs.
template <pair P, class F> inline P both(P a, F op) { return {op(a.x), op(a.y)}; }
template <pair P, class F> inline P both(P a, P b, F op) { return {op(a.x, b.x), op(a.y, b.y)}; }
template <pair P, class F> inline P both(P a, P b, P c, F op) {
    return {op(a.x, b.x, c.x), op(a.y, b.y, c.y)};
}
}  // namespace cuda_emu::f16

// ---- Arithmetic, comparisons and math of __half and __nv_bfloat16 ------------------------------
// (templates over the two types; the second operand converts, as in __hadd(h, 1.0f))
#define CUDA_EMU_F16(H) template <::cuda_emu::f16::scalar H>
#define CUDA_EMU_SAME(H) std::type_identity_t<H>
CUDA_EMU_F16(H) inline H __hadd(H a, CUDA_EMU_SAME(H) b) { return H(float(a) + float(b)); }
CUDA_EMU_F16(H) inline H __hsub(H a, CUDA_EMU_SAME(H) b) { return H(float(a) - float(b)); }
CUDA_EMU_F16(H) inline H __hmul(H a, CUDA_EMU_SAME(H) b) { return H(float(a) * float(b)); }
CUDA_EMU_F16(H) inline H __hdiv(H a, CUDA_EMU_SAME(H) b) { return H(float(a) / float(b)); }
CUDA_EMU_F16(H) inline H __hadd_rn(H a, CUDA_EMU_SAME(H) b) { return __hadd(a, b); }  // never fused
CUDA_EMU_F16(H) inline H __hsub_rn(H a, CUDA_EMU_SAME(H) b) { return __hsub(a, b); }
CUDA_EMU_F16(H) inline H __hmul_rn(H a, CUDA_EMU_SAME(H) b) { return __hmul(a, b); }
CUDA_EMU_F16(H) inline H __hfma(H a, CUDA_EMU_SAME(H) b, CUDA_EMU_SAME(H) c) {
    return ::cuda_emu::f16::fma(a, b, c);
}
CUDA_EMU_F16(H) inline H __hadd_sat(H a, CUDA_EMU_SAME(H) b) {
    return ::cuda_emu::f16::saturated(__hadd(a, b));
}
CUDA_EMU_F16(H) inline H __hsub_sat(H a, CUDA_EMU_SAME(H) b) {
    return ::cuda_emu::f16::saturated(__hsub(a, b));
}
CUDA_EMU_F16(H) inline H __hmul_sat(H a, CUDA_EMU_SAME(H) b) {
    return ::cuda_emu::f16::saturated(__hmul(a, b));
}
CUDA_EMU_F16(H) inline H __hfma_sat(H a, CUDA_EMU_SAME(H) b, CUDA_EMU_SAME(H) c) {
    return ::cuda_emu::f16::saturated(__hfma(a, b, c));
}
CUDA_EMU_F16(H) inline H __hfma_relu(H a, CUDA_EMU_SAME(H) b, CUDA_EMU_SAME(H) c) {  // NaN stays
    const H r = __hfma(a, b, c);
    return float(r) < 0 ? ::cuda_emu::f16::of_bits<H>(0) : r;
}
CUDA_EMU_F16(H) inline H __hneg(H a) {
    return ::cuda_emu::f16::canonical(::cuda_emu::f16::of_bits<H>(a.bits ^ 0x8000u));
}
CUDA_EMU_F16(H) inline H __habs(H a) {
    return ::cuda_emu::f16::canonical(::cuda_emu::f16::of_bits<H>(a.bits & 0x7FFFu));
}
#define CUDA_EMU_LARGER(name, nan, max)                                                            \
    CUDA_EMU_F16(H) inline H name(H a, CUDA_EMU_SAME(H) b) {                                       \
        return ::cuda_emu::f16::larger<nan>(a, b, max);                                            \
    }
CUDA_EMU_LARGER(__hmax, false, true)
CUDA_EMU_LARGER(__hmin, false, false)
CUDA_EMU_LARGER(__hmax_nan, true, true)
CUDA_EMU_LARGER(__hmin_nan, true, false)
#undef CUDA_EMU_LARGER
CUDA_EMU_F16(H) inline bool __hisnan(H a) { return ::cuda_emu::f16::is_nan(a); }
CUDA_EMU_F16(H) inline int __hisinf(H a) {
    return (a.bits & 0x7FFFu) == ::cuda_emu::f16::inf_bits<H::frac> ? (a.bits & 0x8000u ? -1 : 1) : 0;
}
// Comparisons: ordered (false where either is NaN) and, with u, unordered (true there).
#define CUDA_EMU_COMPARE(name, cmp)                                                                \
    CUDA_EMU_F16(H) inline bool name(H a, CUDA_EMU_SAME(H) b) {                                    \
        return !__hisnan(a) && !__hisnan(b) && float(a) cmp float(b); /* NaN != 1 too is false */  \
    }                                                                                              \
    CUDA_EMU_F16(H) inline bool name##u(H a, CUDA_EMU_SAME(H) b) {                                 \
        return __hisnan(a) || __hisnan(b) || float(a) cmp float(b);                                \
    }
CUDA_EMU_COMPARE(__heq, ==)
CUDA_EMU_COMPARE(__hne, !=)
CUDA_EMU_COMPARE(__hlt, <)
CUDA_EMU_COMPARE(__hle, <=)
CUDA_EMU_COMPARE(__hgt, >)
CUDA_EMU_COMPARE(__hge, >=)
#undef CUDA_EMU_COMPARE
// The math functions, of the exact value in double, rounded once (as an H100 gives them).
#define CUDA_EMU_F16_MATH(name, f)                                                                 \
    CUDA_EMU_F16(H) inline H name(H a) {                                                           \
        const double x = float(a);                                                                 \
        return ::cuda_emu::f16::of<H>(f);                                                          \
    }
CUDA_EMU_F16_MATH(hsqrt, std::sqrt(x))
CUDA_EMU_F16_MATH(hrsqrt, 1 / std::sqrt(x))
CUDA_EMU_F16_MATH(hrcp, 1 / x)
CUDA_EMU_F16_MATH(hexp, std::exp(x))
CUDA_EMU_F16_MATH(hexp2, std::exp2(x))
CUDA_EMU_F16_MATH(hexp10, std::pow(10.0, x))
CUDA_EMU_F16_MATH(hlog, std::log(x))
CUDA_EMU_F16_MATH(hlog2, std::log2(x))
CUDA_EMU_F16_MATH(hlog10, std::log10(x))
CUDA_EMU_F16_MATH(hsin, std::sin(x))
CUDA_EMU_F16_MATH(hcos, std::cos(x))
CUDA_EMU_F16_MATH(htanh, std::tanh(x))
CUDA_EMU_F16_MATH(htanh_approx, std::tanh(x))
CUDA_EMU_F16_MATH(hceil, std::ceil(x))
CUDA_EMU_F16_MATH(hfloor, std::floor(x))
CUDA_EMU_F16_MATH(htrunc, std::trunc(x))
CUDA_EMU_F16_MATH(hrint, std::nearbyint(x))
#undef CUDA_EMU_F16_MATH
CUDA_EMU_F16(H) inline H operator+(H a, CUDA_EMU_SAME(H) b) { return __hadd(a, b); }
CUDA_EMU_F16(H) inline H operator-(H a, CUDA_EMU_SAME(H) b) { return __hsub(a, b); }
CUDA_EMU_F16(H) inline H operator*(H a, CUDA_EMU_SAME(H) b) { return __hmul(a, b); }
CUDA_EMU_F16(H) inline H operator/(H a, CUDA_EMU_SAME(H) b) { return __hdiv(a, b); }
CUDA_EMU_F16(H) inline H operator-(H a) { return __hneg(a); }
CUDA_EMU_F16(H) inline H operator+(H a) { return a; }
CUDA_EMU_F16(H) inline H& operator+=(H& a, CUDA_EMU_SAME(H) b) { return a = __hadd(a, b); }
CUDA_EMU_F16(H) inline H& operator-=(H& a, CUDA_EMU_SAME(H) b) { return a = __hsub(a, b); }
CUDA_EMU_F16(H) inline H& operator*=(H& a, CUDA_EMU_SAME(H) b) { return a = __hmul(a, b); }
CUDA_EMU_F16(H) inline H& operator/=(H& a, CUDA_EMU_SAME(H) b) { return a = __hdiv(a, b); }
CUDA_EMU_F16(H) inline H& operator++(H& a) { return a = __hadd(a, H(1.0f)); }
CUDA_EMU_F16(H) inline H& operator--(H& a) { return a = __hsub(a, H(1.0f)); }
CUDA_EMU_F16(H) inline H operator++(H& a, int) { const H old = a; ++a; return old; }
CUDA_EMU_F16(H) inline H operator--(H& a, int) { const H old = a; --a; return old; }
CUDA_EMU_F16(H) inline bool operator==(H a, CUDA_EMU_SAME(H) b) { return __heq(a, b); }
CUDA_EMU_F16(H) inline bool operator!=(H a, CUDA_EMU_SAME(H) b) { return __hneu(a, b); }
CUDA_EMU_F16(H) inline bool operator<(H a, CUDA_EMU_SAME(H) b) { return __hlt(a, b); }
CUDA_EMU_F16(H) inline bool operator<=(H a, CUDA_EMU_SAME(H) b) { return __hle(a, b); }
CUDA_EMU_F16(H) inline bool operator>(H a, CUDA_EMU_SAME(H) b) { return __hgt(a, b); }
CUDA_EMU_F16(H) inline bool operator>=(H a, CUDA_EMU_SAME(H) b) { return __hge(a, b); }
#undef CUDA_EMU_SAME
#undef CUDA_EMU_F16

// ---- The same on pairs, half by half (__hadd2, h2exp, __hbeq2...) ------------------------------
#define CUDA_EMU_PAIR(P) template <::cuda_emu::f16::pair P>
#define CUDA_EMU_PAIR1(name, f) CUDA_EMU_PAIR(P) inline P name(P a) {                              \
        return ::cuda_emu::f16::both(a, [](auto x) { return f(x); });                              \
    }
#define CUDA_EMU_PAIR2(name, f) CUDA_EMU_PAIR(P) inline P name(P a, P b) {                         \
        return ::cuda_emu::f16::both(a, b, [](auto x, auto y) { return f(x, y); });                \
    }
#define CUDA_EMU_PAIR3(name, f) CUDA_EMU_PAIR(P) inline P name(P a, P b, P c) {                    \
        return ::cuda_emu::f16::both(a, b, c, [](auto x, auto y, auto z) { return f(x, y, z); });  \
    }
CUDA_EMU_PAIR2(__hadd2, __hadd)
CUDA_EMU_PAIR2(__hsub2, __hsub)
CUDA_EMU_PAIR2(__hmul2, __hmul)
CUDA_EMU_PAIR2(__h2div, __hdiv)
CUDA_EMU_PAIR2(__hadd2_rn, __hadd)
CUDA_EMU_PAIR2(__hsub2_rn, __hsub)
CUDA_EMU_PAIR2(__hmul2_rn, __hmul)
CUDA_EMU_PAIR2(__hadd2_sat, __hadd_sat)
CUDA_EMU_PAIR2(__hsub2_sat, __hsub_sat)
CUDA_EMU_PAIR2(__hmul2_sat, __hmul_sat)
CUDA_EMU_PAIR3(__hfma2, __hfma)
CUDA_EMU_PAIR3(__hfma2_sat, __hfma_sat)
CUDA_EMU_PAIR3(__hfma2_relu, __hfma_relu)
CUDA_EMU_PAIR1(__hneg2, __hneg)
CUDA_EMU_PAIR1(__habs2, __habs)
CUDA_EMU_PAIR2(__hmax2, __hmax)
CUDA_EMU_PAIR2(__hmin2, __hmin)
CUDA_EMU_PAIR2(__hmax2_nan, __hmax_nan)
CUDA_EMU_PAIR2(__hmin2_nan, __hmin_nan)
CUDA_EMU_PAIR1(h2sqrt, hsqrt)
CUDA_EMU_PAIR1(h2rsqrt, hrsqrt)
CUDA_EMU_PAIR1(h2rcp, hrcp)
CUDA_EMU_PAIR1(h2exp, hexp)
CUDA_EMU_PAIR1(h2exp2, hexp2)
CUDA_EMU_PAIR1(h2exp10, hexp10)
CUDA_EMU_PAIR1(h2log, hlog)
CUDA_EMU_PAIR1(h2log2, hlog2)
CUDA_EMU_PAIR1(h2log10, hlog10)
CUDA_EMU_PAIR1(h2sin, hsin)
CUDA_EMU_PAIR1(h2cos, hcos)
CUDA_EMU_PAIR1(h2tanh, htanh)
CUDA_EMU_PAIR1(h2tanh_approx, htanh_approx)
CUDA_EMU_PAIR1(h2ceil, hceil)
CUDA_EMU_PAIR1(h2floor, hfloor)
CUDA_EMU_PAIR1(h2trunc, htrunc)
CUDA_EMU_PAIR1(h2rint, hrint)
// Comparisons of pairs: __heq2 gives 1.0 or 0.0 in each half, __heq2_mask 0xFFFF or 0 in each
// half of an unsigned, __hbeq2 whether both halves compare true.
#define CUDA_EMU_PAIR_COMPARE(op)                                                                  \
    CUDA_EMU_PAIR2(__h##op##2, [](auto x, auto y) { return decltype(x)(__h##op(x, y) ? 1 : 0); })  \
    CUDA_EMU_PAIR(P) inline unsigned __h##op##2_mask(P a, P b) {                                   \
        return (__h##op(a.x, b.x) ? 0xFFFFu : 0u) | (__h##op(a.y, b.y) ? 0xFFFF0000u : 0u);        \
    }                                                                                              \
    CUDA_EMU_PAIR(P) inline bool __hb##op##2(P a, P b) {                                           \
        return __h##op(a.x, b.x) && __h##op(a.y, b.y);                                             \
    }
#define CUDA_EMU_PAIR_COMPARES(op)                                                                 \
    CUDA_EMU_PAIR_COMPARE(op)                                                                      \
    CUDA_EMU_PAIR_COMPARE(op##u)
CUDA_EMU_PAIR_COMPARES(eq)
CUDA_EMU_PAIR_COMPARES(ne)
CUDA_EMU_PAIR_COMPARES(lt)
CUDA_EMU_PAIR_COMPARES(le)
CUDA_EMU_PAIR_COMPARES(gt)
CUDA_EMU_PAIR_COMPARES(ge)
#undef CUDA_EMU_PAIR_COMPARES
#undef CUDA_EMU_PAIR_COMPARE
CUDA_EMU_PAIR1(__hisnan2, [](auto x) { return decltype(x)(__hisnan(x) ? 1.0f : 0.0f); })
// __hcmadd: the complex a b + c, in two fused steps as CUDA computes it.
CUDA_EMU_PAIR(P) inline P __hcmadd(P a, P b, P c) {
    return {__hfma(__hneg(a.y), b.y, __hfma(a.x, b.x, c.x)), __hfma(a.y, b.x, __hfma(a.x, b.y, c.y))};
}
CUDA_EMU_PAIR(P) inline P __lowhigh2highlow(P a) { return {a.y, a.x}; }
CUDA_EMU_PAIR(P) inline float __low2float(P a) { return float(a.x); }
CUDA_EMU_PAIR(P) inline float __high2float(P a) { return float(a.y); }
CUDA_EMU_PAIR(P) inline P operator+(P a, P b) { return __hadd2(a, b); }
CUDA_EMU_PAIR(P) inline P operator-(P a, P b) { return __hsub2(a, b); }
CUDA_EMU_PAIR(P) inline P operator*(P a, P b) { return __hmul2(a, b); }
CUDA_EMU_PAIR(P) inline P operator/(P a, P b) { return __h2div(a, b); }
CUDA_EMU_PAIR(P) inline P operator-(P a) { return __hneg2(a); }
CUDA_EMU_PAIR(P) inline P operator+(P a) { return a; }
CUDA_EMU_PAIR(P) inline P& operator+=(P& a, P b) { return a = __hadd2(a, b); }
CUDA_EMU_PAIR(P) inline P& operator-=(P& a, P b) { return a = __hsub2(a, b); }
CUDA_EMU_PAIR(P) inline P& operator*=(P& a, P b) { return a = __hmul2(a, b); }
CUDA_EMU_PAIR(P) inline P& operator/=(P& a, P b) { return a = __h2div(a, b); }
CUDA_EMU_PAIR(P) inline bool operator==(P a, P b) { return __hbeq2(a, b); }
CUDA_EMU_PAIR(P) inline bool operator!=(P a, P b) { return __hbneu2(a, b); }
CUDA_EMU_PAIR(P) inline bool operator<(P a, P b) { return __hblt2(a, b); }
CUDA_EMU_PAIR(P) inline bool operator<=(P a, P b) { return __hble2(a, b); }
CUDA_EMU_PAIR(P) inline bool operator>(P a, P b) { return __hbgt2(a, b); }
CUDA_EMU_PAIR(P) inline bool operator>=(P a, P b) { return __hbge2(a, b); }
#undef CUDA_EMU_PAIR3
#undef CUDA_EMU_PAIR2
#undef CUDA_EMU_PAIR1
#undef CUDA_EMU_PAIR

// ---- Conversions, named by type: __float2half_rz, __bfloat162int_rd, __halves2half2... ----------
// name: half or bfloat16; pair: half2 or bfloat162. Conversions to integers are rounded as named
// and clamped to the integer's range (a NaN becomes 0, or 0x80...0 for 64 bits), as math.h's.
// __src2name_rn, _rz, _rd, _ru: the number v rounded to H; __name2to_rn...: the H v rounded to
// the integer type I.
#define CUDA_EMU_ROUND(f, mode, H) ::cuda_emu::f16::f<H>(v, ::cuda_emu::f16::Round::mode)
#define CUDA_EMU_FROM(H, name, src, T)                                                             \
    inline H __##src##2##name##_rn(T v) { return CUDA_EMU_ROUND(from, nearest, H); }               \
    inline H __##src##2##name##_rz(T v) { return CUDA_EMU_ROUND(from, toward_zero, H); }           \
    inline H __##src##2##name##_rd(T v) { return CUDA_EMU_ROUND(from, down, H); }                  \
    inline H __##src##2##name##_ru(T v) { return CUDA_EMU_ROUND(from, up, H); }
#define CUDA_EMU_TO(H, name, to, I)                                                                \
    inline I __##name##2##to##_rn(H v) { return CUDA_EMU_ROUND(to_integer, nearest, I); }          \
    inline I __##name##2##to##_rz(H v) { return CUDA_EMU_ROUND(to_integer, toward_zero, I); }      \
    inline I __##name##2##to##_rd(H v) { return CUDA_EMU_ROUND(to_integer, down, I); }             \
    inline I __##name##2##to##_ru(H v) { return CUDA_EMU_ROUND(to_integer, up, I); }
#define CUDA_EMU_CONVERSIONS(H, P, name, pair)                                                     \
    inline H __float2##name(float f) { return H(f); }                                              \
    inline H __double2##name(double d) { return H(d); }                                            \
    inline float __##name##2float(H h) { return float(h); }                                        \
    CUDA_EMU_FROM(H, name, float, float)                                                           \
    CUDA_EMU_FROM(H, name, int, int)                                                               \
    CUDA_EMU_FROM(H, name, uint, unsigned)                                                         \
    CUDA_EMU_FROM(H, name, short, short)                                                           \
    CUDA_EMU_FROM(H, name, ushort, unsigned short)                                                 \
    CUDA_EMU_FROM(H, name, ll, long long)                                                          \
    CUDA_EMU_FROM(H, name, ull, unsigned long long)                                                \
    CUDA_EMU_TO(H, name, int, int)                                                                 \
    CUDA_EMU_TO(H, name, uint, unsigned)                                                           \
    CUDA_EMU_TO(H, name, ll, long long)                                                            \
    CUDA_EMU_TO(H, name, ull, unsigned long long)                                                  \
    CUDA_EMU_TO(H, name, short, short)                                                             \
    CUDA_EMU_TO(H, name, ushort, unsigned short)                                                   \
    inline signed char __##name##2char_rz(H v) {                                                   \
        return CUDA_EMU_ROUND(to_integer, toward_zero, signed char);                               \
    }                                                                                              \
    inline unsigned char __##name##2uchar_rz(H v) {                                                \
        return CUDA_EMU_ROUND(to_integer, toward_zero, unsigned char);                             \
    }                                                                                              \
    inline short __##name##_as_short(H h) { return short(h.bits); }                                \
    inline unsigned short __##name##_as_ushort(H h) { return h.bits; }                             \
    inline H __short_as_##name(short s) { return ::cuda_emu::f16::of_bits<H>((unsigned short)s); } \
    inline H __ushort_as_##name(unsigned short u) { return ::cuda_emu::f16::of_bits<H>(u); }       \
    inline P make_##pair(H x, H y) { return {x, y}; }                                              \
    inline P __halves2##pair(H x, H y) { return {x, y}; }                                          \
    inline P __##name##2##name##2(H a) { return {a, a}; }                                          \
    inline H __low2##name(P a) { return a.x; }                                                     \
    inline H __high2##name(P a) { return a.y; }                                                    \
    inline P __low2##pair(P a) { return {a.x, a.x}; }                                              \
    inline P __high2##pair(P a) { return {a.y, a.y}; }                                             \
    inline P __lows2##pair(P a, P b) { return {a.x, b.x}; }                                        \
    inline P __highs2##pair(P a, P b) { return {a.y, b.y}; }                                       \
    inline P __float2##pair##_rn(float f) { return {H(f), H(f)}; }                                 \
    inline P __floats2##pair##_rn(float x, float y) { return {H(x), H(y)}; }                       \
    inline P __float22##pair##_rn(float2 f) { return {H(f.x), H(f.y)}; }                           \
    inline float2 __##pair##2float2(P a) { return {float(a.x), float(a.y)}; }
CUDA_EMU_CONVERSIONS(__half, __half2, half, half2)
CUDA_EMU_CONVERSIONS(__nv_bfloat16, __nv_bfloat162, bfloat16, bfloat162)
#undef CUDA_EMU_CONVERSIONS
#undef CUDA_EMU_TO
#undef CUDA_EMU_FROM
#undef CUDA_EMU_ROUND
#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)
#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)

// ---- Atomic adds of 16-bit floats and pairs: a compare-and-swap loop on their bits ---------------
namespace cuda_emu::f16 {
template <class T, class Bits> inline T atomic_add(T* p, T v) {
    std::atomic_ref<Bits> a(*reinterpret_cast<Bits*>(p));
    Bits old = a.load();
    T sum;
    do sum = std::bit_cast<T>(old) + v;
    while (!a.compare_exchange_weak(old, std::bit_cast<Bits>(sum)));
    return std::bit_cast<T>(old);
}
}  // namespace cuda_emu::f16
inline __half atomicAdd(__half* p, __half v) {
    return ::cuda_emu::f16::atomic_add<__half, unsigned short>(p, v);
}
inline __half2 atomicAdd(__half2* p, __half2 v) {
    return ::cuda_emu::f16::atomic_add<__half2, unsigned>(p, v);
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) {
    return ::cuda_emu::f16::atomic_add<__nv_bfloat16, unsigned short>(p, v);
}
inline __nv_bfloat162 atomicAdd(__nv_bfloat162* p, __nv_bfloat162 v) {
    return ::cuda_emu::f16::atomic_add<__nv_bfloat162, unsigned>(p, v);
}
