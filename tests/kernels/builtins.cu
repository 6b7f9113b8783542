// CUDA's built-ins by class, as a learner calls them (tests/test_builtins.py): the vector types,
// the Math API's single- and double-precision functions, the rounding and conversion
// intrinsics, the integer and SIMD intrinsics, cuda_fp16's math, atomics of every scope, and the
// calls that stop a kernel. Each kernel computes many built-ins, one row of its output each.
#include <cuda_fp16.h>

// ---- Vector types: sizeof and alignof of each, and one made by each make_ function ----------
// (out: size, alignment per type; made: x + 10 y + 100 z + 1000 w of make_T(1, 2, 3, 4))
#define LAYOUT(T) out[n++] = sizeof(T), out[n++] = alignof(T);
#define MADE(T, make, ...)                                                                        \
    {                                                                                             \
        const T v = make(__VA_ARGS__);                                                            \
        made[m++] = weigh(&v.x, sizeof(T) / sizeof(v.x));                                         \
    }
#define VECTORS(name)                                                                             \
    LAYOUT(name##1) LAYOUT(name##2) LAYOUT(name##3) LAYOUT(name##4)                                \
    MADE(name##1, make_##name##1, 1) MADE(name##2, make_##name##2, 1, 2)                          \
    MADE(name##3, make_##name##3, 1, 2, 3) MADE(name##4, make_##name##4, 1, 2, 3, 4)
template <class T> __device__ double weigh(const T* v, int count) {
    double sum = 0, weight = 1;
    for (int i = 0; i < count; ++i, weight *= 10) sum += weight * double(v[i]);
    return sum;
}
extern "C" __global__ void vector_types(unsigned* out, double* made) {
    int n = 0, m = 0;
    VECTORS(char)
    VECTORS(uchar)
    VECTORS(short)
    VECTORS(ushort)
    VECTORS(int)
    VECTORS(uint)
    VECTORS(long)
    VECTORS(ulong)
    VECTORS(longlong)
    VECTORS(ulonglong)
    VECTORS(float)
    VECTORS(double)
    const dim3 d(4, 5);  // and dim3: unset sizes are 1; a uint3 converts
    const uint3 u = d;
    made[m++] = u.x + 10 * u.y + 100 * u.z;
}

// ---- The Math API: row k of out is function k of row k of x (the norms take rows 22 to 25;
// sincos gives rows 29 and 30 of row 29) ----------------------------------------------------------
extern "C" __global__ void math_float(const float* x, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float* a = x + i;  // a[k * n]: function k's argument
    float* o = out + i;
    float s, c;
    o[0 * n] = erfinvf(a[0 * n]);
    o[1 * n] = erfcinvf(a[1 * n]);
    o[2 * n] = erfcxf(a[2 * n]);
    o[3 * n] = normcdff(a[3 * n]);
    o[4 * n] = normcdfinvf(a[4 * n]);
    o[5 * n] = sinpif(a[5 * n]);
    o[6 * n] = cospif(a[6 * n]);
    sincospif(a[7 * n], &s, &c);
    o[7 * n] = s;
    o[8 * n] = c;
    o[9 * n] = exp10f(a[9 * n]);
    o[10 * n] = rcbrtf(a[10 * n]);
    o[11 * n] = rsqrtf(a[11 * n]);
    o[12 * n] = cyl_bessel_i0f(a[12 * n]);
    o[13 * n] = cyl_bessel_i1f(a[13 * n]);
    o[14 * n] = j0f(a[14 * n]);
    o[15 * n] = j1f(a[15 * n]);
    o[16 * n] = jnf(2, a[16 * n]);
    o[17 * n] = y0f(a[17 * n]);
    o[18 * n] = y1f(a[18 * n]);
    o[19 * n] = ynf(2, a[19 * n]);
    o[20 * n] = lgammaf(a[20 * n]);
    o[21 * n] = tgammaf(a[21 * n]);
    const float v[4] = {a[22 * n], a[23 * n], a[24 * n], a[25 * n]};
    o[22 * n] = norm3df(v[0], v[1], v[2]);
    o[23 * n] = rnorm3df(v[0], v[1], v[2]);
    o[24 * n] = norm4df(v[0], v[1], v[2], v[3]);
    o[25 * n] = rnorm4df(v[0], v[1], v[2], v[3]);
    o[26 * n] = rhypotf(v[0], v[1]);
    o[27 * n] = normf(4, v);
    o[28 * n] = rnormf(3, v);
    sincosf(a[29 * n], &s, &c);
    o[29 * n] = s;
    o[30 * n] = c;
    o[31 * n] = erfinv(a[0 * n]) - erfinvf(a[0 * n]);  // the float overloads: float results
    o[32 * n] = sinpi(a[5 * n]) - sinpif(a[5 * n]);
}

extern "C" __global__ void math_double(const double* x, double* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double* a = x + i;
    double* o = out + i;
    double s, c;
    o[0 * n] = erfinv(a[0 * n]);
    o[1 * n] = erfcinv(a[1 * n]);
    o[2 * n] = erfcx(a[2 * n]);
    o[3 * n] = normcdf(a[3 * n]);
    o[4 * n] = normcdfinv(a[4 * n]);
    o[5 * n] = sinpi(a[5 * n]);
    o[6 * n] = cospi(a[6 * n]);
    sincospi(a[7 * n], &s, &c);
    o[7 * n] = s;
    o[8 * n] = c;
    o[9 * n] = exp10(a[9 * n]);
    o[10 * n] = rcbrt(a[10 * n]);
    o[11 * n] = rsqrt(a[11 * n]);
    o[12 * n] = cyl_bessel_i0(a[12 * n]);
    o[13 * n] = cyl_bessel_i1(a[13 * n]);
    o[14 * n] = j0(a[14 * n]);
    o[15 * n] = j1(a[15 * n]);
    o[16 * n] = jn(2, a[16 * n]);
    o[17 * n] = y0(a[17 * n]);
    o[18 * n] = y1(a[18 * n]);
    o[19 * n] = yn(2, a[19 * n]);
    o[20 * n] = lgamma(a[20 * n]);
    o[21 * n] = tgamma(a[21 * n]);
    const double v[4] = {a[22 * n], a[23 * n], a[24 * n], a[25 * n]};
    o[22 * n] = norm3d(v[0], v[1], v[2]);
    o[23 * n] = rnorm3d(v[0], v[1], v[2]);
    o[24 * n] = norm4d(v[0], v[1], v[2], v[3]);
    o[25 * n] = rnorm4d(v[0], v[1], v[2], v[3]);
    o[26 * n] = rhypot(v[0], v[1]);
    o[27 * n] = norm(4, v);
    o[28 * n] = rnorm(3, v);
    sincos(a[29 * n], &s, &c);
    o[29 * n] = s;
    o[30 * n] = c;
}

// The fast intrinsics and the ones with special cases, of one float x, y (out: 16 a thread).
extern "C" __global__ void fast_math(const float* x, const float* y, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float a = x[i], b = y[i];
    float* o = out + 16 * i;
    float s, c;
    __sincosf(a, &s, &c);
    o[0] = __expf(a), o[1] = __exp10f(a), o[2] = __logf(fabsf(a)), o[3] = __log2f(fabsf(a));
    o[4] = __log10f(fabsf(a)), o[5] = __sinf(a), o[6] = __cosf(a), o[7] = __tanf(a);
    o[8] = s, o[9] = c, o[10] = __powf(fabsf(a), b), o[11] = __fdividef(a, b);
    o[12] = fdividef(a, b), o[13] = __frsqrt_rn(fabsf(a)), o[14] = __saturatef(a);
    o[15] = abs(a) + (isnan(b) ? 1.0f : 0.0f) + (isinf(b) ? 2.0f : 0.0f) + (signbit(b) ? 4.0f : 0.0f);
}

// ---- Directed rounding and conversions: rn, rz, rd, ru of each, one row a thread ------------
#define ROUNDINGS(f, ...) ROUNDINGS_AS(, f, __VA_ARGS__)
#define ROUNDINGS_AS(T, f, ...)                                                                   \
    T(f##_rn(__VA_ARGS__)), T(f##_rz(__VA_ARGS__)), T(f##_rd(__VA_ARGS__)), T(f##_ru(__VA_ARGS__))
extern "C" __global__ void roundings(const float* f, const double* d, const long long* k,
                                     float* fo, double* dout, long long* io, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float a = f[3 * i], b = f[3 * i + 1], c = f[3 * i + 2];
    const double x = d[3 * i], y = d[3 * i + 1], z = d[3 * i + 2];
    const long long j = k[i];
    const float fr[] = {ROUNDINGS(__fadd, a, b), ROUNDINGS(__fsub, a, b), ROUNDINGS(__fmul, a, b),
                        ROUNDINGS(__fdiv, a, b), ROUNDINGS(__fmaf, a, b, c),
                        ROUNDINGS(__fmaf_ieee, a, b, c), ROUNDINGS(__frcp, a),
                        ROUNDINGS(__fsqrt, fabsf(a)), ROUNDINGS(__double2float, x),
                        ROUNDINGS(__int2float, int(j)), ROUNDINGS(__uint2float, unsigned(j)),
                        ROUNDINGS(__ll2float, j), ROUNDINGS(__ull2float, (unsigned long long)j)};
    const double dr[] = {ROUNDINGS(__dadd, x, y), ROUNDINGS(__dsub, x, y), ROUNDINGS(__dmul, x, y),
                         ROUNDINGS(__ddiv, x, y), ROUNDINGS(__fma, x, y, z), ROUNDINGS(__drcp, x),
                         ROUNDINGS(__dsqrt, fabs(x)), ROUNDINGS(__ll2double, j),
                         ROUNDINGS(__ull2double, (unsigned long long)j),
                         __int2double_rn(int(j)), __uint2double_rn(unsigned(j))};
    const long long ir[] = {ROUNDINGS(__float2int, a), ROUNDINGS(__float2uint, a),
                            ROUNDINGS(__float2ll, a), ROUNDINGS_AS((long long), __float2ull, a),
                            ROUNDINGS(__double2int, x), ROUNDINGS(__double2uint, x),
                            ROUNDINGS(__double2ll, x), ROUNDINGS_AS((long long), __double2ull, x),
                            __float_as_int(a), __float_as_uint(a), __double_as_longlong(x),
                            __double2hiint(x), __double2loint(x),
                            __double_as_longlong(__hiloint2double(__double2hiint(x), __double2loint(x))),
                            __float_as_int(__int_as_float(int(j))),
                            __float_as_int(__uint_as_float(unsigned(j))),
                            __double_as_longlong(__longlong_as_double(j))};
    for (int r = 0; r < int(sizeof fr / sizeof fr[0]); ++r) fo[r * n + i] = fr[r];
    for (int r = 0; r < int(sizeof dr / sizeof dr[0]); ++r) dout[r * n + i] = dr[r];
    for (int r = 0; r < int(sizeof ir / sizeof ir[0]); ++r) io[r * n + i] = ir[r];
}

// ---- Integer intrinsics: bytes, funnel shifts, halving adds, dot products, SIMD and DPX -------
// Of the words a, b, c of a thread: out holds INTEGER_COLUMNS of them, wide the 64-bit ones.
#define SIMD2(f) f##2(x, y), f##4(x, y)
extern "C" __global__ void integers(const unsigned* a, const unsigned* b, const unsigned* c,
                                    unsigned* out, unsigned long long* wide, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned x = a[i], y = b[i], z = c[i];
    const int sx = int(x), sy = int(y), sz = int(z);
    bool p[6];
    const unsigned r[] = {
        __byte_perm(x, y, z), __funnelshift_l(x, y, z), __funnelshift_lc(x, y, z),
        __funnelshift_r(x, y, z), __funnelshift_rc(x, y, z), __sad(sx, sy, z), __usad(x, y, z),
        unsigned(__hadd(sx, sy)), unsigned(__rhadd(sx, sy)), __uhadd(x, y), __urhadd(x, y),
        __brev(x), unsigned(__popc(x)), unsigned(__clz(sx)), unsigned(__ffs(sx)),
        __fns(x, z % 32, sy % 40), unsigned(__dp4a(sx, sy, sz)), __dp4a(x, y, z),
        unsigned(__dp2a_lo(sx, sy, sz)), __dp2a_lo(x, y, z), unsigned(__dp2a_hi(sx, sy, sz)),
        __dp2a_hi(x, y, z), unsigned(__mulhi(sx, sy)), __umulhi(x, y), unsigned(__mul24(sx, sy)),
        __umul24(x, y), __nv_bswap32(x), umin(x, y), umax(x, y),
        SIMD2(__vadd), SIMD2(__vaddss), SIMD2(__vaddus), SIMD2(__vsub), SIMD2(__vsubss),
        SIMD2(__vsubus), SIMD2(__vabsdiffs), SIMD2(__vabsdiffu), SIMD2(__vavgs), SIMD2(__vavgu),
        SIMD2(__vhaddu), SIMD2(__vmaxs), SIMD2(__vmaxu), SIMD2(__vmins), SIMD2(__vminu),
        SIMD2(__vcmpeq), SIMD2(__vcmpne), SIMD2(__vcmpges), SIMD2(__vcmpgeu), SIMD2(__vcmpgts),
        SIMD2(__vcmpgtu), SIMD2(__vcmples), SIMD2(__vcmpleu), SIMD2(__vcmplts), SIMD2(__vcmpltu),
        SIMD2(__vseteq), SIMD2(__vsetne), SIMD2(__vsetges), SIMD2(__vsetgeu), SIMD2(__vsetgts),
        SIMD2(__vsetgtu), SIMD2(__vsetles), SIMD2(__vsetleu), SIMD2(__vsetlts), SIMD2(__vsetltu),
        SIMD2(__vsads), SIMD2(__vsadu), __vabs2(x), __vabs4(x), __vabsss2(x), __vabsss4(x),
        __vneg2(x), __vneg4(x), __vnegss2(x), __vnegss4(x),
        unsigned(__vimax3_s32(sx, sy, sz)), __vimax3_u32(x, y, z), __vimax3_s16x2(x, y, z),
        __vimax3_u16x2(x, y, z), unsigned(__vimin3_s32(sx, sy, sz)), __vimin3_u32(x, y, z),
        __vimin3_s16x2(x, y, z), __vimin3_u16x2(x, y, z), unsigned(__vimax3_s32_relu(sx, sy, sz)),
        __vimax3_s16x2_relu(x, y, z), unsigned(__vimin3_s32_relu(sx, sy, sz)),
        __vimin3_s16x2_relu(x, y, z), unsigned(__viaddmax_s32(sx, sy, sz)),
        __viaddmax_u32(x, y, z), __viaddmax_s16x2(x, y, z), __viaddmax_u16x2(x, y, z),
        unsigned(__viaddmin_s32(sx, sy, sz)), __viaddmin_u32(x, y, z), __viaddmin_s16x2(x, y, z),
        __viaddmin_u16x2(x, y, z), unsigned(__viaddmax_s32_relu(sx, sy, sz)),
        __viaddmax_s16x2_relu(x, y, z), unsigned(__viaddmin_s32_relu(sx, sy, sz)),
        __viaddmin_s16x2_relu(x, y, z), unsigned(__vimax_s32_relu(sx, sy)),
        __vimax_s16x2_relu(x, y), unsigned(__vimin_s32_relu(sx, sy)), __vimin_s16x2_relu(x, y),
        unsigned(__vibmax_s32(sx, sy, &p[0])), __vibmax_u32(x, y, &p[1]),
        unsigned(__vibmin_s32(sx, sy, &p[2])), __vibmin_u32(x, y, &p[3]),
        __vibmax_u16x2(x, y, &p[4], &p[5]),
        unsigned(p[0] + 2 * p[1] + 4 * p[2] + 8 * p[3] + 16 * p[4] + 32 * p[5])};
    typedef unsigned long long u64;
    const u64 wx = (u64)x << 32 | y, wy = (u64)z << 32 | x;
    const long long sx64 = (long long)wx, sy64 = (long long)wy;
    const u64 w[] = {__brevll(wx), (u64)__mul64hi(sx64, sy64), __umul64hi(wx, wy), (u64)__popcll(wx),
                     (u64)__clzll(sx64), (u64)__ffsll(sx64), __nv_bswap64(wx), (u64)llmin(sx64, sy64),
                     ullmax(wx, wy)};
    const int count = sizeof r / sizeof r[0], wide_count = sizeof w / sizeof w[0];
    for (int k = 0; k < count; ++k) out[k * n + i] = r[k];
    for (int k = 0; k < wide_count; ++k) wide[k * n + i] = w[k];
}

// ---- cuda_fp16's math on every half: row k of out is function k of the half with bits i ------
extern "C" __global__ void half_math(unsigned short* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;  // 65536 threads
    const __half h = __ushort_as_half((unsigned short)i);
    const __half2 h2 = __halves2half2(h, __hneg(h));
    const __half r[] = {hexp(h), hexp2(h), hexp10(h), hlog(h), hlog2(h), hlog10(h), hsin(h),
                        hcos(h), hrcp(h), hrsqrt(h), hsqrt(h), hceil(h), hfloor(h), htrunc(h),
                        hrint(h), __low2half(h2exp(h2)), __high2half(h2sqrt(h2)),
                        __high2half(h2rint(h2)), __hneg(h), __habs(h)};
    for (int k = 0; k < int(sizeof r / sizeof r[0]); ++k) out[k * 65536 + i] = __half_as_ushort(r[k]);
}

// Operations with special cases, of halves a, b, c, and conversions of a float f (|f| < 2^31)
// with each rounding: out holds the half results, io the others.
extern "C" __global__ void half_ops(const __half* a, const __half* b, const __half* c,
                                    const float* f, unsigned short* out, long long* io, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const __half x = a[i], y = b[i], z = c[i];
    const __half2 p = __halves2half2(x, y), q = __halves2half2(z, x);
    const float v = f[i];
    const __half2 cm = __hcmadd(p, q, __halves2half2(y, z)), mx = __hmax2(p, q), mn = __hmin2_nan(p, q);
    const __half2 lt = __hlt2(p, q), nan2 = __hisnan2(p);
    const __half r[] = {__hmax(x, y), __hmin(x, y), __hmax_nan(x, y), __hmin_nan(x, y),
                        __hadd_sat(x, y), __hsub_sat(x, y), __hmul_sat(x, y), __hfma_sat(x, y, z),
                        __hfma_relu(x, y, z), __hadd_rn(x, y), __hsub_rn(x, y), __hmul_rn(x, y),
                        __hfma(x, y, z), cm.x, cm.y, mx.x, mx.y, mn.x, mn.y, lt.x, lt.y, nan2.x,
                        nan2.y, __float2half_rn(v), __float2half_rz(v), __float2half_rd(v),
                        __float2half_ru(v), __double2half(double(v) * (1 + 1e-12))};
    const long long k[] = {__heq(x, y), __hne(x, y), __hlt(x, y), __hle(x, y), __hgt(x, y),
                           __hge(x, y), __hequ(x, y), __hneu(x, y), __hltu(x, y), __hleu(x, y),
                           __hgtu(x, y), __hgeu(x, y), __hisnan(x), __hisinf(x), __hbeq2(p, q),
                           __hbltu2(p, q), __hbge2(p, q), __heq2_mask(p, q), __hlt2_mask(p, q),
                           __hgeu2_mask(p, q), x == y, x != y, x < y, p == q,
                           __half2int_rn(x), __half2int_rz(x), __half2int_rd(x), __half2int_ru(x),
                           __half2short_rn(x), __half2ushort_rz(x), __half2uint_rd(x),
                           __half2ll_ru(x), (long long)__half2ull_rn(x), __half2char_rz(x),
                           __half2uchar_rz(x),
                           __half_as_ushort(__int2half_rd(int(v))),
                           __half_as_ushort(__uint2half_ru(unsigned(fabsf(v)))),
                           __half_as_ushort(__ll2half_rz((long long)v)),
                           __half_as_ushort(__short2half_rn(short(int(v))))};
    const int count = sizeof r / sizeof r[0], int_count = sizeof k / sizeof k[0];
    for (int j = 0; j < count; ++j) out[j * n + i] = __half_as_ushort(r[j]);
    for (int j = 0; j < int_count; ++j) io[j * n + i] = k[j];
}

// ---- Atomics of every scope and type, clocks and sleeps: each thread t of the grid adds t (or 1)
// to each counter, or takes its maximum, ... (test_builtins.py says what each ends as) ----------
extern "C" __global__ void atomics(int* ints, unsigned long long* wide, float* floats, double* doubles,
                                   __half* halves, long long* clocks) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const long long start = clock64();
    const clock_t start32 = clock();
    atomicAdd_block(&ints[0], t);
    atomicAdd_system(&ints[1], t);
    atomicSub_block(&ints[2], t);
    atomicMax_system(&ints[3], t);
    atomicMin_block(&ints[4], -t);
    atomicOr_system(&ints[5], 1 << (t % 31));
    atomicAnd_block(&ints[6], ~(1 << (t % 31)));
    atomicXor_system(&ints[7], t);
    atomicCAS_block(&ints[8], 0, 1);  // one thread finds the 0 and swaps in 1
    atomicExch_system(&ints[9], 7);
    atomicInc_block((unsigned*)&ints[10], 1000u);
    atomicDec_system((unsigned*)&ints[11], 1000u);
    atomicAdd_system(&wide[0], (unsigned long long)t);
    atomicMax_block((long long*)&wide[1], (long long)t);
    atomicAdd_block(&floats[0], 1.0f);
    atomicAdd(&doubles[0], 1.0);
    atomicAdd_system(&doubles[1], 0.5);
    atomicAdd(&halves[0], __float2half(1.0f));
    atomicAdd((__half2*)&halves[2], __floats2half2_rn(1.0f, 2.0f));
    __nanosleep(100);
    __syncthreads();
    if (t == 0) clocks[0] = clock64() >= start, clocks[1] = (unsigned)(clock() - start32) < 0x80000000u;
}

// ---- Calls that stop the kernel (the emulator names them; a GPU fails the launch) ------------
extern "C" __global__ void traps(int* out, int which) {
    if (threadIdx.x == 3) {
        if (which == 0) __trap();
        if (which == 1) __brkpt();
        if (which == 2) out[0] = __isGlobal(out);
        if (which == 3) out[0] = __isShared(out);
    }
    out[threadIdx.x] = 1;
}
