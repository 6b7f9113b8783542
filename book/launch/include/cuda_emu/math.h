// cuda_emu/math.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
//
// The CUDA Math API's functions and intrinsics that the C and C++ libraries lack or name
// differently: special functions (erfinvf, normcdff...), trigonometry in units of pi, norms,
// Bessel functions; the fast intrinsics (__expf...), the directed roundings (__fadd_rd...), the
// conversions (__float2int_ru, __double2float_rz...) and reinterpretations (__double_as_longlong).
//
// The single-precision functions are computed in double and the double-precision ones in long
// double (64 bits of significand on x86), then rounded once: inside the ulps CUDA documents. A
// function without the f of a float argument returns a float, as CUDA's overloads do
// (erfinv(1.0f) is a float). Functions that some C libraries also have (glibc's exp10f, sincosf,
// j0f; C23's sinpi, rsqrt) are templates here: the library's own declaration, where there is
// one, takes precedence for its exact argument type, and the two never clash.
#pragma once

#include <bit>
#include <cfenv>
#include <limits>
#include <math.h>  // C++'s: float overloads in the global namespace (sqrt(float) is a float, abs(-2.5f)
                   // is 2.5f, as in CUDA) and isnan, isinf, isfinite, signbit

namespace cuda_emu::math {
template <class R> using wide = std::conditional_t<std::is_same_v<R, float>, double, long double>;
template <class X> using real = std::conditional_t<std::is_same_v<X, float>, float, double>;
template <class W> constexpr W pi = W(3.141592653589793238462643383279502884L);
template <class W> constexpr W inf = std::numeric_limits<W>::infinity();
template <class W> constexpr W nan = std::numeric_limits<W>::quiet_NaN();
template <class W> constexpr W eps = std::numeric_limits<W>::epsilon();

// ---- The inverse error functions and their relatives ----------------------------------------------
// erfinv and erfcinv: Giles' approximation (good to about 1e-7; "Approximating the erfinv
// function", GPU Computing Gems, 2011) as the start, then Halley steps on erf(y) = x or
// erfc(y) = z; in the tails the step uses erfcx, which keeps its precision where erfc underflows.
template <class W> W erfinv_start(W x, W w) {  // w = -log((1 - x)(1 + x)), w < 16
    W p;
    if (w < 5) {
        w -= 2.5;
        p = 2.81022636e-08;
        for (W c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                    -0.00417768164, 0.246640727, 1.50140941})
            p = c + p * w;
    } else {
        w = std::sqrt(w) - 3;
        p = -0.000200214257;
        for (W c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                    0.00943887047, 1.00167406, 2.83297682})
            p = c + p * w;
    }
    return p * x;
}
template <class W> W erfcx(W y) {  // exp(y^2) erfc(y)
    if (std::isinf(y)) return y > 0 ? W(0) : inf<W>;
    if (y < 26) {  // y^2 = hi + lo exactly, so that exp(y^2) keeps the precision of W
        const W hi = y * y, lo = std::fma(y, y, -hi);
        return std::exp(hi) * std::erfc(y) * (1 + lo);
    }
    // erfc(y) would underflow: the asymptotic series 1/(y sqrt(pi)) sum (-1)^k (2k-1)!!/(2y^2)^k
    const W q = 1 / (2 * y * y);
    W term = 1, sum = 1;
    for (int k = 1; k < 100 && std::fabs(term) > eps<W> * sum; ++k) {
        term *= -(2 * k - 1) * q;
        sum += term;
    }
    return sum / (y * std::sqrt(pi<W>));
}
template <class W> W erfinv_central(W x) {  // |x| <= 1/2: Halley on erf(y) = x
    W y = erfinv_start(x, -std::log((1 - x) * (1 + x)));
    for (int i = 0; i < 4; ++i) {
        const W step = (std::erf(y) - x) * std::sqrt(pi<W>) / 2 * std::exp(y * y);
        y -= step / (1 + y * step);
    }
    return y;
}
template <class W> W erfcinv_tail(W z) {  // 0 < z <= 1/2: Halley on erfc(y) = z, y > 0.47
    const W w = -std::log(z * (2 - z)), t = -std::log(z);
    W y = w < 16 ? erfinv_start(1 - z, w) : std::sqrt(t - std::log(pi<W> * t) / 2);
    for (int i = 0; i < 6; ++i) {  // step = (erfc(y) - z) / erfc'(y), as erfcx(y) - z e^(y^2)
        const W hi = y * y, lo = std::fma(y, y, -hi);
        const W step = -std::sqrt(pi<W>) / 2 * (erfcx(y) - std::exp(hi + std::log(z)) * (1 + lo));
        y -= step / (1 + y * step);
    }
    return y;
}
template <class W> W erfinv(W x) {
    if (!(std::fabs(x) < 1)) return std::fabs(x) == 1 ? std::copysign(inf<W>, x) : nan<W>;
    if (std::fabs(x) <= W(0.5)) return erfinv_central(x);
    return std::copysign(erfcinv_tail(1 - std::fabs(x)), x);  // 1 - |x|: exact
}
template <class W> W erfcinv(W z) {
    if (!(z > 0 && z < 2)) return z == 0 ? inf<W> : z == 2 ? -inf<W> : nan<W>;
    if (z <= W(0.5)) return erfcinv_tail(z);
    if (z >= W(1.5)) return -erfcinv_tail(2 - z);  // exact differences, these two
    return erfinv_central(1 - z);
}
template <class W> W normcdf(W x) { return std::erfc(-x * std::sqrt(W(0.5))) / 2; }
template <class W> W normcdfinv(W p) {
    const W y = -std::sqrt(W(2)) * erfcinv(2 * p);
    return y == 0 ? W(0) : y;  // +0 at p = 1/2, as the GPU
}

// ---- Trigonometry in units of pi ------------------------------------------------------------------
// x reduced exactly to r = remainder(x, 2) in [-1, 1]; sin and cos of pi times a reduced r whose
// product keeps W's relative precision (cos(pi r) near r = 1/2 as sin(pi (1/2 - r))).
template <class W> W sinpi(W x) {
    if (!std::isfinite(x)) return nan<W>;
    W r = std::remainder(x, W(2));
    r = r > W(0.5) ? 1 - r : r < W(-0.5) ? -1 - r : r;
    return r == 0 ? std::copysign(W(0), x) : std::sin(pi<W> * r);  // sinpi(-2) is -0
}
template <class W> W cospi(W x) {
    if (!std::isfinite(x)) return nan<W>;
    const W r = std::fabs(std::remainder(x, W(2)));
    if (r <= W(0.25)) return std::cos(pi<W> * r);
    if (r < W(0.75)) return std::sin(pi<W> * (W(0.5) - r));  // cospi(1/2) is +0
    return -std::cos(pi<W> * (1 - r));
}

// ---- Norms and modified Bessel functions ----------------------------------------------------------
// sqrt(sum of squares), or its reciprocal: Inf where an element is infinite (even beside a NaN).
template <class W, class T> W norm(int n, const T* a, bool reciprocal) {
    W sum = 0;
    for (int i = 0; i < n; ++i) {
        if (std::isinf(a[i])) return reciprocal ? W(0) : inf<W>;
        sum += W(a[i]) * W(a[i]);
    }
    return reciprocal ? 1 / std::sqrt(sum) : std::sqrt(sum);
}
// I0 and I1 by their power series (terms of one sign: no cancellation); past `overflow` the
// result overflows the type it is rounded to.
template <class W> W bessel_i(int order, W x, W overflow) {
    if (std::fabs(x) > overflow) return order && x < 0 ? -inf<W> : inf<W>;
    const W q = x * x / 4;
    W term = order ? x / 2 : W(1), sum = term;
    for (int k = 1; std::fabs(term) > eps<W> * std::fabs(sum); ++k) {
        term *= q / (W(k) * (k + order));
        sum += term;
    }
    return sum;
}
template <class R> constexpr R bessel_overflow = std::is_same_v<R, float> ? 100 : 720;
}  // namespace cuda_emu::math

// The functions of one argument: namef(x) in float, name(x) in float or double by x's type.
#define CUDA_EMU_MATH(name, value)                                                                 \
    template <class X> inline float name##f(X x_) {                                               \
        using R = float;                                                                           \
        using W = double;                                                                          \
        const W x = W(float(x_));                                                                  \
        namespace m = ::cuda_emu::math;                                                            \
        return R(value);                                                                           \
    }                                                                                              \
    template <class X> inline auto name(X x_) {                                                    \
        using R = ::cuda_emu::math::real<X>;                                                       \
        using W = ::cuda_emu::math::wide<R>;                                                       \
        const W x = W(R(x_));                                                                      \
        namespace m = ::cuda_emu::math;                                                            \
        return R(value);                                                                           \
    }
CUDA_EMU_MATH(erfinv, m::erfinv(x))
CUDA_EMU_MATH(erfcinv, m::erfcinv(x))
CUDA_EMU_MATH(erfcx, m::erfcx(x))
CUDA_EMU_MATH(normcdf, m::normcdf(x))
CUDA_EMU_MATH(normcdfinv, m::normcdfinv(x))
CUDA_EMU_MATH(sinpi, m::sinpi(x))
CUDA_EMU_MATH(cospi, m::cospi(x))
CUDA_EMU_MATH(rsqrt, 1 / std::sqrt(x))
CUDA_EMU_MATH(rcbrt, 1 / std::cbrt(x))
CUDA_EMU_MATH(exp10, std::pow(W(10), x))
CUDA_EMU_MATH(cyl_bessel_i0, m::bessel_i(0, x, W(m::bessel_overflow<R>)))
CUDA_EMU_MATH(cyl_bessel_i1, m::bessel_i(1, x, W(m::bessel_overflow<R>)))
#undef CUDA_EMU_MATH
template <class X, class R> inline void sincospi(X x, R* s, R* c) {
    *s = sinpi(R(x)), *c = cospi(R(x));
}
template <class X> inline void sincospif(X x, float* s, float* c) { *s = sinpif(x), *c = cospif(x); }
template <class X, class R> inline void sincos(X x, R* s, R* c) {
    *s = std::sin(R(x)), *c = std::cos(R(x));
}
template <class X> inline void sincosf(X x, float* s, float* c) { sincos(float(x), s, c); }
// Bessel functions of the first and second kinds in float (the double ones are POSIX's).
template <class X> inline float j0f(X x) { return float(::j0(double(float(x)))); }
template <class X> inline float j1f(X x) { return float(::j1(double(float(x)))); }
template <class X> inline float jnf(int n, X x) { return float(::jn(n, double(float(x)))); }
template <class X> inline float y0f(X x) { return float(::y0(double(float(x)))); }
template <class X> inline float y1f(X x) { return float(::y1(double(float(x)))); }
template <class X> inline float ynf(int n, X x) { return float(::yn(n, double(float(x)))); }

// Norms of an array and of 3 or 4 values, and their reciprocals (rnorm), in float and double.
inline float normf(int n, const float* a) { return float(::cuda_emu::math::norm<double>(n, a, false)); }
inline float rnormf(int n, const float* a) { return float(::cuda_emu::math::norm<double>(n, a, true)); }
inline double norm(int n, const double* a) {
    return double(::cuda_emu::math::norm<long double>(n, a, false));
}
inline double rnorm(int n, const double* a) {
    return double(::cuda_emu::math::norm<long double>(n, a, true));
}
#define CUDA_EMU_NORMS(T, suffix, norm, rnorm)                                                     \
    inline T norm3d##suffix(T a, T b, T c) { const T v[] = {a, b, c}; return norm(3, v); }         \
    inline T rnorm3d##suffix(T a, T b, T c) { const T v[] = {a, b, c}; return rnorm(3, v); }       \
    inline T norm4d##suffix(T a, T b, T c, T d) { const T v[] = {a, b, c, d}; return norm(4, v); } \
    inline T rnorm4d##suffix(T a, T b, T c, T d) { const T v[] = {a, b, c, d}; return rnorm(4, v); } \
    inline T rhypot##suffix(T a, T b) { const T v[] = {a, b}; return rnorm(2, v); }
CUDA_EMU_NORMS(float, f, normf, rnormf)
CUDA_EMU_NORMS(double, , norm, rnorm)
#undef CUDA_EMU_NORMS

// ---- The fast intrinsics ----------------------------------------------------------------------
// Computed exactly here; on a GPU they are within the ulps CUDA documents for each. __fdividef
// gives 0 (NaN for an infinite x) where 2^126 < |y| < 2^128, as CUDA documents and a GPU does.
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return float(std::pow(10.0, double(x))); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x), *c = std::cos(x); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline float __fdividef(float x, float y) {
    const float a = std::fabs(y);
    return a > 0x1p126f && a < INFINITY ? x * (std::signbit(y) ? -0.0f : 0.0f) : x / y;
}
inline float fdividef(float x, float y) { return x / y; }
inline float __frsqrt_rn(float x) { return float(1.0L / std::sqrt((long double)x)); }
inline float __saturatef(float x) { return x != x ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f); }

// ---- Directed rounding: __fadd_rd, __dmul_ru, __fmaf_rz, __double2float_rd... -----------------
// The exact result rounded to nearest even (_rn), toward zero (_rz), down (_rd) or up (_ru): the
// CPU computes it with its rounding mode set so (the _rn forms in the default mode).
namespace cuda_emu::math {
template <class T> inline T opaque(T v) {
    volatile T x = v;
    return x;
}
// f with the rounding mode set to Mode. The arguments and the result pass through volatile
// variables, so the compiler (which assumes that arithmetic ignores the mode) cannot compute f
// before the mode is set or after it is restored.
template <int Mode, class F> inline auto rounded(F f) {
    return [f](auto... args) {
        const int old = std::fegetround();
        std::fesetround(Mode);
        const auto r = opaque(f(opaque(args)...));
        std::fesetround(old);
        return r;
    };
}
inline constexpr auto add = [](auto a, auto b) { return a + b; };
inline constexpr auto sub = [](auto a, auto b) { return a - b; };
inline constexpr auto mul = [](auto a, auto b) { return a * b; };
inline constexpr auto div = [](auto a, auto b) { return a / b; };
inline constexpr auto fma = [](auto a, auto b, auto c) { return std::fma(a, b, c); };
inline constexpr auto sqrt = [](auto a) { return std::sqrt(a); };
template <class T> inline constexpr auto to = [](auto a) { return static_cast<T>(a); };
}  // namespace cuda_emu::math
// name_rn, _rz, _rd, _ru (params): cuda_emu::math::f args, rounded so.
#define CUDA_EMU_ROUNDINGS(name, R, params, args, f)                                               \
    inline R name##_rn params { return ::cuda_emu::math::f args; }                                 \
    inline R name##_rz params {                                                                    \
        return ::cuda_emu::math::rounded<FE_TOWARDZERO>(::cuda_emu::math::f) args;                 \
    }                                                                                              \
    inline R name##_rd params {                                                                    \
        return ::cuda_emu::math::rounded<FE_DOWNWARD>(::cuda_emu::math::f) args;                   \
    }                                                                                              \
    inline R name##_ru params { return ::cuda_emu::math::rounded<FE_UPWARD>(::cuda_emu::math::f) args; }
CUDA_EMU_ROUNDINGS(__fadd, float, (float a, float b), (a, b), add)
CUDA_EMU_ROUNDINGS(__fsub, float, (float a, float b), (a, b), sub)
CUDA_EMU_ROUNDINGS(__fmul, float, (float a, float b), (a, b), mul)
CUDA_EMU_ROUNDINGS(__fdiv, float, (float a, float b), (a, b), div)
CUDA_EMU_ROUNDINGS(__frcp, float, (float a), (1.0f, a), div)
CUDA_EMU_ROUNDINGS(__fsqrt, float, (float a), (a), sqrt)
CUDA_EMU_ROUNDINGS(__fmaf, float, (float a, float b, float c), (a, b, c), fma)
CUDA_EMU_ROUNDINGS(__fmaf_ieee, float, (float a, float b, float c), (a, b, c), fma)
CUDA_EMU_ROUNDINGS(__dadd, double, (double a, double b), (a, b), add)
CUDA_EMU_ROUNDINGS(__dsub, double, (double a, double b), (a, b), sub)
CUDA_EMU_ROUNDINGS(__dmul, double, (double a, double b), (a, b), mul)
CUDA_EMU_ROUNDINGS(__ddiv, double, (double a, double b), (a, b), div)
CUDA_EMU_ROUNDINGS(__drcp, double, (double a), (1.0, a), div)
CUDA_EMU_ROUNDINGS(__dsqrt, double, (double a), (a), sqrt)
CUDA_EMU_ROUNDINGS(__fma, double, (double a, double b, double c), (a, b, c), fma)
CUDA_EMU_ROUNDINGS(__double2float, float, (double a), (a), to<float>)
CUDA_EMU_ROUNDINGS(__int2float, float, (int a), (a), to<float>)
CUDA_EMU_ROUNDINGS(__uint2float, float, (unsigned a), (a), to<float>)
CUDA_EMU_ROUNDINGS(__ll2float, float, (long long a), (a), to<float>)
CUDA_EMU_ROUNDINGS(__ull2float, float, (unsigned long long a), (a), to<float>)
CUDA_EMU_ROUNDINGS(__ll2double, double, (long long a), (a), to<double>)
CUDA_EMU_ROUNDINGS(__ull2double, double, (unsigned long long a), (a), to<double>)
#undef CUDA_EMU_ROUNDINGS
inline double __int2double_rn(int a) { return a; }  // exact, these two
inline double __uint2double_rn(unsigned a) { return a; }

// ---- Float to integer: __float2int_rn, __double2ull_rd... ---------------------------------------
// Rounded as named, then clamped to the integer's range, as the GPU's cvt does. A NaN becomes 0
// from a float (or half) to 32 bits or fewer, and the pattern 0x80...0 from a double or to 64
// bits (what an H100 gives).
namespace cuda_emu::math {
template <class I, class F> inline I to_integer(F r) {  // r: an integer value, Inf or NaN
    constexpr int bits = std::numeric_limits<I>::digits;
    if (r != r)  // 0x80...0, or 0
        return sizeof(I) == 8 || std::is_same_v<F, double> ? I(1ULL << (8 * sizeof(I) - 1)) : I(0);
    const F top = std::ldexp(F(1), bits);  // one past I's largest value
    if (r >= top) return std::numeric_limits<I>::max();
    if (r < (std::is_signed_v<I> ? -top : F(0))) return std::numeric_limits<I>::min();
    return static_cast<I>(r);
}
}  // namespace cuda_emu::math
#define CUDA_EMU_TO_INTEGER(name, F, I)                                                            \
    inline I name##_rn(F x) { return ::cuda_emu::math::to_integer<I>(std::nearbyint(x)); }         \
    inline I name##_rz(F x) { return ::cuda_emu::math::to_integer<I>(std::trunc(x)); }             \
    inline I name##_rd(F x) { return ::cuda_emu::math::to_integer<I>(std::floor(x)); }             \
    inline I name##_ru(F x) { return ::cuda_emu::math::to_integer<I>(std::ceil(x)); }
CUDA_EMU_TO_INTEGER(__float2int, float, int)
CUDA_EMU_TO_INTEGER(__float2uint, float, unsigned)
CUDA_EMU_TO_INTEGER(__float2ll, float, long long)
CUDA_EMU_TO_INTEGER(__float2ull, float, unsigned long long)
CUDA_EMU_TO_INTEGER(__double2int, double, int)
CUDA_EMU_TO_INTEGER(__double2uint, double, unsigned)
CUDA_EMU_TO_INTEGER(__double2ll, double, long long)
CUDA_EMU_TO_INTEGER(__double2ull, double, unsigned long long)
#undef CUDA_EMU_TO_INTEGER

// ---- Reinterpretations: the same bits as another type ------------------------------------------
inline float __int_as_float(int i) { return std::bit_cast<float>(i); }
inline int __float_as_int(float f) { return std::bit_cast<int>(f); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline double __longlong_as_double(long long i) { return std::bit_cast<double>(i); }
inline long long __double_as_longlong(double d) { return std::bit_cast<long long>(d); }
inline int __double2hiint(double d) { return int(std::bit_cast<unsigned long long>(d) >> 32); }
inline int __double2loint(double d) { return int(std::bit_cast<unsigned long long>(d)); }
inline double __hiloint2double(int hi, int lo) {
    return std::bit_cast<double>((unsigned long long)unsigned(hi) << 32 | unsigned(lo));
}
