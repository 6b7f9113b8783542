"""CUDA's built-ins by class -- vector types, the Math API's float and double functions, the
rounding and conversion intrinsics, the integer and SIMD intrinsics, atomics of every scope --
each checked against a reference computed here (the math module, exact fractions, NumPy), within
the ulps CUDA documents, on whichever backend runs (cuda_fp16's and cuda_bf16's built-ins:
tests/test_builtins_16bit.py). The references are this file's
own; where CUDA's documentation leaves a case open, the expected value is what an H100 gave."""
import decimal
import math
from fractions import Fraction

import numpy as np
import pytest

from book import BACKEND, LaunchError, load_kernel, to_device, to_host, xp
from conftest import ROOT
from exact_rounding import MODES, as_int64, round_to, to_integer

BUILTINS = ROOT / "tests" / "kernels" / "builtins.cu"
# (CUDA 13 deprecates double4, long4... which the vector test uses: legal CUDA, with a warning.)
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered", "ignore:invalid value encountered",
                                        "ignore:.*was declared deprecated")


def kernel(name):
    return load_kernel(BUILTINS, name)


def ulps(got, want, dtype):
    """|got - want| in units of the last place of want in dtype (NaN and Inf must match)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    special = ~np.isfinite(want) | ~np.isfinite(got)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    spacing = np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(special, np.where(same, 0.0, np.inf), np.abs(got - want) / spacing)


def assert_ulps(got, want, dtype, limit, what):
    err = ulps(got, want, dtype)
    bad = np.flatnonzero(err > limit)
    assert not len(bad), (what, f"{len(bad)} over {limit} ulps; first:",
                          [(i, got[i], want[i], err[i]) for i in bad[:4]])


# ---- Vector types ------------------------------------------------------------------------------

def test_every_vector_type_has_cudas_size_alignment_and_make_function():
    out, made = xp.zeros(96, dtype=xp.uint32), xp.zeros(49, dtype=xp.float64)
    kernel("vector_types")(1, 1, (out, made))
    # vector_types.h: T2 and T4 aligned to their size (up to 16), T1 and T3 to their element's
    alignments = {1: [1, 2, 1, 4], 2: [2, 4, 2, 8], 4: [4, 8, 4, 16], 8: [8, 16, 8, 16]}
    # the element sizes of char uchar short ushort int uint long ulong longlong ulonglong float double
    want = [[size * count, align] for size in [1, 1, 2, 2, 4, 4, 8, 8, 8, 8, 4, 8]
            for count, align in zip((1, 2, 3, 4), alignments[size])]
    assert to_host(out).reshape(-1, 2).tolist() == want  # float3: 12 bytes, 4-aligned; double4 32, 16
    assert to_host(made).tolist() == [1, 21, 321, 4321] * 12 + [154]


# ---- The Math API ------------------------------------------------------------------------------

def _erfinv(x):
    """erfinv in float64 by Newton's method (on erfc in the tails, where it keeps its precision)."""
    if abs(x) >= 1:
        return math.copysign(math.inf, x) if abs(x) == 1 else math.nan
    if abs(x) > 0.5:
        return math.copysign(_erfcinv(1 - abs(x)), x)
    y = x * math.sqrt(math.pi) / 2
    for _ in range(50):
        y -= (math.erf(y) - x) * math.sqrt(math.pi) / 2 * math.exp(y * y)
    return y


def _erfcinv(z):
    if z <= 0 or z >= 2:
        return math.inf if z == 0 else -math.inf if z == 2 else math.nan
    if z > 1.5:
        return -_erfcinv(2 - z)
    if z > 0.5:
        return _erfinv(1 - z)
    y = math.sqrt(-math.log(z))
    for _ in range(100):
        y -= (math.erfc(y) - z) / (-2 / math.sqrt(math.pi) * math.exp(-y * y))
    return y


def _erfcx(x):
    if x > 25:  # erfc underflows: the asymptotic series, 1/(x sqrt(pi)) sum (-1)^k (2k-1)!!/(2x^2)^k
        terms, t = [1.0], 1.0
        for k in range(1, 30):
            t *= -(2 * k - 1) / (2 * x * x)
            terms.append(t)
        return math.fsum(terms) / (x * math.sqrt(math.pi))
    hi = x * x  # exp(x^2) with x^2 split exactly into hi + lo
    return math.exp(hi) * math.exp(float(Fraction(x) ** 2 - Fraction(hi))) * math.erfc(x)


def _normcdf(x):
    """erfc(-x / sqrt(2)) / 2, corrected for the rounding of -x / sqrt(2) (to first order)."""
    t = -x / math.sqrt(2)
    with decimal.localcontext() as context:
        context.prec = 40
        delta = float(decimal.Decimal(-x) / decimal.Decimal(2).sqrt() - decimal.Decimal(t))
    return (math.erfc(t) - delta * 2 / math.sqrt(math.pi) * math.exp(-t * t)) / 2


def _sinpi(x):
    r = math.remainder(x, 2)
    r = 1 - r if r > 0.5 else -1 - r if r < -0.5 else r
    return math.copysign(0.0, x) if r == 0 else math.sin(math.pi * r)


def _cospi(x):
    r = abs(math.remainder(x, 2))
    return (math.cos(math.pi * r) if r <= 0.25 else math.sin(math.pi * (0.5 - r)) if r < 0.75
            else -math.cos(math.pi * (1 - r)))


def _bessel(n, x, sign):
    """I_n (sign 1) or J_n (sign -1) by the power series sum (+-1)^k (x/2)^(2k+n) / (k! (k+n)!),
    in 50 digits: no rounding error shows, nor J's cancellation."""
    with decimal.localcontext() as context:
        context.prec = 50
        half = decimal.Decimal(x) / 2
        term = half ** n / math.factorial(n)
        total, k = term, 0
        while abs(term) > abs(total) * decimal.Decimal(10) ** -40 or k < 5:
            k += 1
            term *= sign * half * half / (k * (k + n))
            total += term
        return float(total)


# Y0, Y1 and Y2 at a few points (mpmath, 30 digits), for the Bessel functions of the second kind.
BESSEL_Y = {0.5: (-0.44451873350670656, -1.471472392670243, -5.441370837174266),
            1.0: (0.08825696421567696, -0.7812128213002887, -1.6506826068162543),
            2.5: (0.4980703596152319, 0.1459181379667858, -0.38133584924180325),
            4.0: (-0.016940739325064992, 0.3979257105571, 0.215903594603615),
            7.25: (0.04842252986520283, -0.28934799419758706, -0.12824266619557168),
            12.0: (-0.22523731263436145, -0.05709921826089652, 0.21572077625754535),
            30.0: (-0.11729573168666403, 0.08442557066174723, 0.12292410306411385)}


def _math_rows(dtype, rng, n):
    """Arguments (rows of math_float/math_double's x) and the function of each row, with its
    tolerance: the ulps CUDA documents (the test allows one more for float, four times as many
    for double) or, for Bessel functions, an absolute error."""
    single = dtype == np.float32
    u = lambda lo, hi: rng.uniform(lo, hi, n)
    tails = lambda lo, hi: 10.0 ** rng.uniform(lo, hi, n)
    near_one = 1 - tails(-7 if single else -15, -1)
    half = lambda a, b: np.concatenate([a[: n // 2], b[n // 2:]])
    signed = lambda v: v * rng.choice([-1, 1], n)
    y_points = np.resize(np.array(list(BESSEL_Y)), n)
    small = 37 if single else 300
    pair = u(-8, 8)
    rows = [
        (half(u(-1, 1), signed(near_one)), _erfinv, 2 if single else 5),
        (half(u(0, 2), tails(-small, 0)), _erfcinv, 4 if single else 6),
        (half(u(-3, 9), tails(0, 4)), _erfcx, 4),
        (u(-14, 6) if single else u(-10, 6), _normcdf, 5),
        (half(u(0, 1), tails(-small, -1)), lambda p: -math.sqrt(2) * _erfcinv(2 * p), 5 if single else 8),
        (half(u(-8, 8), np.round(u(-50, 50)) + tails(-6, -1)), _sinpi, 1),
        (half(u(-8, 8), np.round(u(-50, 50)) + 0.5 - tails(-6, -1)), _cospi, 1),
        (pair, _sinpi, 1),
        (pair, _cospi, 1),  # sincospi(x): both rows of one argument
        (u(-30, 30), lambda x: 10.0 ** x, 2 if single else 1),
        (signed(tails(-30, 30)), lambda x: math.copysign(1 / math.cbrt(abs(x)), x), 1),
        (tails(-30, 30), lambda x: 1 / math.sqrt(x), 2 if single else 1),
        (u(-80, 80) if single else u(-600, 600), lambda x: _bessel(0, x, 1), 6),
        (u(-80, 80) if single else u(-600, 600), lambda x: _bessel(1, x, 1), 6),
        (u(-10, 10), lambda x: _bessel(0, x, -1), "bessel"),
        (u(-10, 10), lambda x: _bessel(1, x, -1), "bessel"),
        (u(-10, 10), lambda x: _bessel(2, x, -1), "bessel"),
        (y_points, lambda x: BESSEL_Y[x][0], "bessel"),
        (y_points, lambda x: BESSEL_Y[x][1], "bessel"),
        (y_points, lambda x: BESSEL_Y[x][2], "bessel"),
        (half(u(0.1, 0.5), u(3, 30)), math.lgamma, 6 if single else 4),  # (not near its zeros)
        (u(0.1, 30), math.gamma, 8 if single else 10),
    ]
    norms = [signed(tails(-15, 15)) for _ in range(4)]
    args = [r[0] for r in rows] + norms + [np.zeros(n)] * 3 + [u(-10, 10)]  # rows 22-25, 29
    return np.stack(args).astype(dtype), rows, [a.astype(dtype).astype(np.float64) for a in norms]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float", "double"])
def test_the_math_apis_functions(dtype):
    single = dtype == np.float32
    rng, n = np.random.default_rng(11), 256
    x, rows, v = _math_rows(dtype, rng, n)
    out = xp.zeros((33 if single else 31) * n, dtype=dtype)
    name = "math_float" if single else "math_double"
    kernel(name)((n // 64,), (64,), (to_device(x.ravel()), out, np.int32(n)))
    got = to_host(out).reshape(-1, n).astype(np.float64)
    for k, (_, f, tolerance) in enumerate(rows):
        want = np.array([f(float(a)) for a in x[k].astype(np.float64)])
        if tolerance == "bessel":  # CUDA: 2.2e-6 absolute (float), 5e-12 (double) past small |x|
            limit = 3e-6 if single else 1e-11
            assert np.abs(got[k] - want).max() < limit, (k, np.abs(got[k] - want).max())
        else:
            assert_ulps(got[k], want, dtype, tolerance + 1 if single else max(tolerance, 8) * 4, k)
    exact = lambda *a: np.sqrt(np.sum([c * c for c in a], axis=0))  # squares of float/double: exact
    wide = [c.astype(np.longdouble) for c in v]
    norm3, norm4 = exact(*wide[:3]), exact(*wide)
    for k, want in zip(range(22, 29), [norm3, 1 / norm3, norm4, 1 / norm4, 1 / exact(*wide[:2]),
                                       norm4, 1 / norm3]):
        assert_ulps(got[k], np.asarray(want, np.float64), dtype, 4, k)
    assert_ulps(got[29], np.sin(x[29].astype(np.float64)), dtype, 2, "sincos")
    assert_ulps(got[30], np.cos(x[29].astype(np.float64)), dtype, 2, "sincos")
    if single:
        assert not got[31].any() and not got[32].any()  # erfinv(float), sinpi(float): floats


# (row of math_float/math_double, argument, result): infinities and zeros where CUDA documents
# them (an H100 gave the same); the other rows' arguments are 1 (0.5 for erfcinv, normcdfinv).
SPECIAL = [(0, 1, math.inf), (0, -1, -math.inf), (0, 0, 0.0), (0, 1.5, math.nan), (1, 0, math.inf),
           (1, 2, -math.inf), (1, 1, 0.0), (2, math.inf, 0.0), (2, -math.inf, math.inf),
           (2, -30, math.inf), (4, 0, -math.inf), (4, 1, math.inf), (4, 0.5, 0.0), (5, -2, -0.0),
           (5, 1, 0.0), (5, 1e30, 0.0), (5, math.inf, math.nan), (6, 0.5, 0.0), (6, -1.5, 0.0),
           (6, 1e30, 1.0), (10, -0.0, -math.inf), (10, math.inf, 0.0), (11, 0, math.inf),
           (11, -1, math.nan), (12, 800, math.inf), (22, math.inf, math.inf), (23, math.inf, 0.0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float", "double"])
def test_special_values_of_the_math_api(dtype):
    single, n = dtype == np.float32, 64
    x = np.ones((30, n), dtype)
    x[1] = x[4] = 0.5
    x[24] = np.nan  # norm3d(inf, 1, NaN) is Inf, rnorm3d 0
    for j, (row, arg, _) in enumerate(SPECIAL):
        x[row, j] = arg
    out = xp.zeros((33 if single else 31) * n, dtype=dtype)
    kernel("math_float" if single else "math_double")((1,), (n,), (to_device(x.ravel()), out, np.int32(n)))
    got = to_host(out).reshape(-1, n)
    for j, (row, arg, want) in enumerate(SPECIAL):
        g = float(got[row, j])
        same = g == want and math.copysign(1, g) == math.copysign(1, want)  # -0 is not +0
        assert same or (math.isnan(g) and math.isnan(want)), (row, arg, g, want)


def test_fast_intrinsics_within_their_documented_error():
    rng, n = np.random.default_rng(5), 128
    x = rng.uniform(-3, 3, n).astype(np.float32)
    y = rng.uniform(0.5, 4, n).astype(np.float32)
    y[:4] = [1.7e38, -1.7e38, 1.7e38, np.nan]  # __fdividef: 0 (NaN of an infinite x) for |y| > 2^126
    x[2], y[4], y[5] = np.inf, np.inf, -2.0
    out = xp.zeros(16 * n, dtype=xp.float32)
    kernel("fast_math")((2,), (64,), (to_device(x), to_device(y), out, np.int32(n)))
    got = to_host(out).reshape(n, 16).astype(np.float64)
    a, b = x.astype(np.float64), y.astype(np.float64)
    ok = np.isfinite(a) & np.isfinite(b) & (np.abs(b) < 1e38)
    aa = np.abs(a)
    with np.errstate(all="ignore"):
        approx = [np.exp(a), 10 ** a, np.log(aa), np.log2(aa), np.log10(aa), np.sin(a), np.cos(a),
                  np.tan(a), np.sin(a), np.cos(a), aa ** b, a / b]
    for k, want in enumerate(approx):  # 2^-21.4 absolute near 1, a few ulps in relative terms
        err = np.abs(got[ok, k] - want[ok]) / np.maximum(np.abs(want[ok]), 1)
        assert err.max() < 2e-5 * (1 + (k == 7) * 50), (k, err.max())
    assert_ulps(got[ok, 12], (a / b)[ok], np.float32, 0.5, "fdividef")  # correctly rounded
    assert_ulps(got[ok, 13], 1 / np.sqrt(aa[ok]), np.float32, 0.5, "__frsqrt_rn")
    np.testing.assert_array_equal(got[:, 14], np.clip(np.nan_to_num(a, nan=0.0), 0, 1))
    assert got[0, 11] == 0 and got[1, 11] == 0 and np.isnan(got[2, 11])  # __fdividef(inf, 1.7e38)
    assert_ulps(got[:2, 12], (a / b)[:2], np.float32, 0.5, "fdividef by 1.7e38")  # not __fdividef's 0
    assert got[0, 12] != 0
    flags = [np.isnan(v) + 2 * np.isinf(v) + 4 * np.signbit(v) for v in b]
    np.testing.assert_array_equal(got[:, 15], np.abs(x) + np.array(flags, np.float32))  # abs(float)


# ---- Directed rounding and conversions ---------------------------------------------------------

def _float_inputs(rng, n, dtype, emin, emax):
    digits = 24 if dtype == np.float32 else 53
    m = rng.integers(1 << (digits - 1), 1 << digits, n).astype(np.float64)
    v = np.ldexp(m, rng.integers(emin, emax, n) - digits) * rng.choice([-1, 1], n)
    v[rng.random(n) < 0.1] = 0
    return v.astype(dtype)


def test_directed_rounding_and_conversions_are_correctly_rounded():
    rng, n = np.random.default_rng(8), 256
    f = _float_inputs(rng, 3 * n, np.float32, -149, 62)  # subnormals to 2^62: some overflow
    d = _float_inputs(rng, 3 * n, np.float64, -1074, 300)
    d[0: 3 * (n // 4): 3] = f[: n // 4].astype(np.float64) * (1 + 2.0 ** -30)  # to float, inexact
    k = rng.integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64)
    k[: n // 2] >>= rng.integers(0, 62, n // 2)
    fo, do, io = xp.zeros(52 * n, xp.float32), xp.zeros(38 * n, xp.float64), xp.zeros(41 * n, xp.int64)
    inputs = (to_device(f), to_device(d), to_device(k))
    kernel("roundings")((n // 64,), (64,), (*inputs, fo, do, io, np.int32(n)))
    fo, do, io = (to_host(a).reshape(-1, n) for a in (fo, do, io))
    for i in range(n):
        a, b, c = (Fraction(float(v)) for v in f[3 * i: 3 * i + 3])
        x, y, z = (Fraction(float(v)) for v in d[3 * i: 3 * i + 3])
        j = int(k[i])
        j32, u32, u64 = (j + (1 << 31)) % (1 << 32) - (1 << 31), j % (1 << 32), j % (1 << 64)
        # fadd fsub fmul fdiv fmaf fmaf_ieee frcp (fsqrt) double2float int2float uint2float ll2float
        # ull2float
        exact_f = [a + b, a - b, a * b, a / b if b else None, a * b + c, a * b + c, 1 / a if a else None,
                   None, x, Fraction(j32), Fraction(u32), Fraction(j), Fraction(u64)]
        # dadd dsub dmul ddiv fma drcp (dsqrt) ll2double ull2double
        exact_d = [x + y, x - y, x * y, x / y if y else None, x * y + z, 1 / x if x else None, None,
                   Fraction(j), Fraction(u64)]
        for rows, exact, dtype in [(fo, exact_f, np.float32), (do, exact_d, np.float64)]:
            for r, q in enumerate(exact):
                for m, mode in enumerate(MODES):
                    assert q is None or rows[4 * r + m, i] == round_to(q, mode, dtype), (dtype, r, mode, i)
        for rows, row, s in [(fo, 28, abs(a)), (do, 24, abs(x))]:  # sqrt: rd and ru bracket it
            down, up = float(rows[row + 2, i]), float(rows[row + 3, i])
            assert Fraction(down) ** 2 <= s <= Fraction(up) ** 2 and rows[row + 1, i] == down, (row, i)
            assert up == down or up == np.nextafter(rows.dtype.type(down), rows.dtype.type(np.inf))
        assert do[36, i] == j32 and do[37, i] == u32
        sources = [(src, bits, signed) for src in (f[3 * i], d[3 * i]) for bits in (32, 64) for signed in (True, False)]
        for r, (src, bits, signed) in enumerate(sources):  # __float2int, 2uint, 2ll, 2ull, __double2...
            for m, mode in enumerate(MODES):
                want = to_integer(float(src), mode, bits, signed, bits == 64 or r >= 4)
                assert io[4 * r + m, i] == as_int64(want), (r, mode, i)
    first = d[: 3 * n: 3].view(np.int64)  # the reinterpretations
    for row, want in [(32, f[: 3 * n: 3].view(np.int32)), (33, f[: 3 * n: 3].view(np.uint32)), (34, first),
                      (35, first >> 32), (36, (first << 32) >> 32), (37, first), (38, (k << 32) >> 32),
                      (39, (k << 32) >> 32), (40, k)]:
        np.testing.assert_array_equal(io[row], want, err_msg=str(row))


def test_conversions_of_nan_and_out_of_range_values():
    """Clamped to the integer's range; NaN becomes 0 from a float to 32 bits, the pattern
    0x80...0 from a double or to 64 bits (an H100's answers)."""
    n = 64
    f, d = np.zeros(3 * n, np.float32), np.zeros(3 * n, np.float64)
    f[0:12:3] = d[0:12:3] = [np.nan, 3e9, -3e9, 1e30]
    io = xp.zeros(41 * n, xp.int64)
    kernel("roundings")((1,), (n,), (to_device(f), to_device(d), to_device(np.zeros(n, np.int64)),
                                     xp.zeros(52 * n, xp.float32), xp.zeros(38 * n, xp.float64), io,
                                     np.int32(n)))
    top = -(1 << 63)  # rows: the _rn form of float2int, 2uint, 2ll, 2ull, double2int, 2uint, 2ll, 2ull
    np.testing.assert_array_equal(to_host(io).reshape(-1, n)[:32:4, :4],
                                  [[0, 2147483647, -2147483648, 2147483647],
                                   [0, 3000000000, 0, 4294967295],
                                   [top, 3000000000, -3000000000, (1 << 63) - 1],
                                   [top, 3000000000, 0, -1],
                                   [-2147483648, 2147483647, -2147483648, 2147483647],
                                   [2147483648, 3000000000, 0, 4294967295],
                                   [top, 3000000000, -3000000000, (1 << 63) - 1],
                                   [top, 3000000000, 0, -1]])


# ---- Integer, SIMD and DPX intrinsics ------------------------------------------------------------

def _s32(v):
    return (v & 0xFFFFFFFF) - ((v & 0x80000000) << 1)


def _lanes(v, bits, signed):
    out = [(v >> (bits * i)) & ((1 << bits) - 1) for i in range(32 // bits)]
    return [x - ((x >> (bits - 1)) << bits) for x in out] if signed else out


def _pack(values, bits, lo=None, hi=None):
    word = 0
    for i, v in enumerate(values):
        if lo is not None:
            v = min(max(v, lo), hi)
        word |= (v & ((1 << bits) - 1)) << (bits * i)
    return word


def _simd(op, signed, saturate=False):
    """The ...2 and ...4 forms of a SIMD intrinsic: op of each pair of lanes."""
    def forms(x, y):
        result = []
        for bits in (16, 8):
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            lanes = zip(_lanes(x, bits, signed), _lanes(y, bits, signed))
            result.append(_pack([op(a, b, bits) for a, b in lanes], bits, *((lo, hi) if saturate else ())))
        return result
    return forms


def _avg_signed(a, b, bits):  # halves rounded away from zero (an H100's answer)
    return (a + b) >> 1 if a + b < 0 else (a + b + 1) >> 1


_add, _sub, _absdiff = (lambda a, b, _: a + b), (lambda a, b, _: a - b), (lambda a, b, _: abs(a - b))
_max, _min = (lambda a, b, _: max(a, b)), (lambda a, b, _: min(a, b))
SIMD = [("vadd", _simd(_add, False)), ("vaddss", _simd(_add, True, True)), ("vaddus", _simd(_add, False, True)),
        ("vsub", _simd(_sub, False)), ("vsubss", _simd(_sub, True, True)), ("vsubus", _simd(_sub, False, True)),
        ("vabsdiffs", _simd(_absdiff, True)), ("vabsdiffu", _simd(_absdiff, False)),
        ("vavgs", _simd(_avg_signed, True)), ("vavgu", _simd(lambda a, b, _: (a + b + 1) >> 1, False)),
        ("vhaddu", _simd(lambda a, b, _: (a + b) >> 1, False)), ("vmaxs", _simd(_max, True)),
        ("vmaxu", _simd(_max, False)), ("vmins", _simd(_min, True)), ("vminu", _simd(_min, False))]
COMPARES = [("eq", False, lambda a, b: a == b), ("ne", False, lambda a, b: a != b),
            ("ges", True, lambda a, b: a >= b), ("geu", False, lambda a, b: a >= b),
            ("gts", True, lambda a, b: a > b), ("gtu", False, lambda a, b: a > b),
            ("les", True, lambda a, b: a <= b), ("leu", False, lambda a, b: a <= b),
            ("lts", True, lambda a, b: a < b), ("ltu", False, lambda a, b: a < b)]


def _fns(mask, base, offset):
    if offset == 0:
        return base if base < 32 and mask >> base & 1 else 0xFFFFFFFF
    count, step = abs(offset), 1 if offset > 0 else -1
    pos = base
    while 0 <= pos < 32:
        if mask >> pos & 1:
            count -= 1
            if count == 0:
                return pos
        pos += step
    return 0xFFFFFFFF


def _dot(a, b, count, first_b, signed, part_bits):
    pa, pb = _lanes(a, part_bits, signed), _lanes(b, 8, signed)
    return sum(pa[i] * pb[first_b + i] for i in range(count))


def _dpx(op, x, y, z, relu=False):
    """name_s32, name_u32, name_s16x2, name_u16x2 (and the relu forms) of op(a, b, c)."""
    s32 = op(_s32(x), _s32(y), _s32(z), 32, True)
    halves = {sign: [op(a, b, c, 16, sign) for a, b, c in zip(*(_lanes(v, 16, sign) for v in (x, y, z)))]
              for sign in (True, False)}
    forms = [s32 & 0xFFFFFFFF, op(x, y, z, 32, False) & 0xFFFFFFFF, _pack(halves[True], 16),
             _pack(halves[False], 16)]
    if relu:
        forms = [max(s32, 0) & 0xFFFFFFFF, _pack([max(h, 0) for h in halves[True]], 16)]
    return forms


def _wrap(v, bits, signed):
    v &= (1 << bits) - 1
    return v - ((v >> (bits - 1)) << bits) if signed else v


def _integer_reference(x, y, z):
    """The rows of the integers kernel for the words x, y, z, and its 64-bit rows."""
    sx, sy, sz = _s32(x), _s32(y), _s32(z)
    pair, low = y << 32 | x, 0xFFFFFFFF
    brev = lambda v, bits: int(f"{v:0{bits}b}"[::-1], 2)
    ffs = lambda v: (v & -v).bit_length()
    swap = lambda v, size: int.from_bytes(v.to_bytes(size, "little"), "big")
    row = [sum(((pair >> (8 * ((z >> (4 * k)) & 7))) & 0xFF) << (8 * k) for k in range(4)),
           pair << (z & 31) >> 32 & low, pair << min(z, 32) >> 32 & low, pair >> (z & 31) & low,
           pair >> min(z, 32) & low, (abs(sx - sy) + z) & low, (abs(x - y) + z) & low,
           (sx + sy) >> 1 & low, (sx + sy + 1) >> 1 & low, (x + y) >> 1, (x + y + 1) >> 1,
           brev(x, 32), bin(x).count("1"), 32 - x.bit_length(), ffs(x),
           _fns(x, z % 32, int(math.fmod(sy, 40)))]
    for first, count, bits in [(0, 4, 8), (0, 2, 16), (2, 2, 16)]:  # __dp4a, __dp2a_lo, __dp2a_hi
        row += [(sz + _dot(x, y, count, first, True, bits)) & low,
                (z + _dot(x, y, count, first, False, bits)) & low]
    row += [sx * sy >> 32 & low, x * y >> 32, _wrap(x, 24, True) * _wrap(y, 24, True) & low,
            (x & 0xFFFFFF) * (y & 0xFFFFFF) & low, swap(x, 4), min(x, y), max(x, y)]
    for _, forms in SIMD:
        row += forms(x, y)
    for mask in (-1, 1):  # __vcmp*: all ones where true; __vset*: 1
        for _, signed, cmp in COMPARES:
            row += _simd(lambda a, b, _: mask * int(cmp(a, b)), signed)(x, y)
    row += [sum(abs(a - b) for a, b in zip(_lanes(x, bits, signed), _lanes(y, bits, signed)))
            for signed in (True, False) for bits in (16, 8)]  # __vsads2, 4, __vsadu2, 4
    for op, saturate in [(abs, False), (abs, True), (lambda a: -a, False), (lambda a: -a, True)]:
        row += [_pack([op(a) for a in _lanes(x, bits, True)], bits,
                      *((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if saturate else ())) for bits in (16, 8)]
    max3, min3 = (lambda a, b, c, bits, s: max(a, b, c)), (lambda a, b, c, bits, s: min(a, b, c))
    addmax = lambda a, b, c, bits, s: max(_wrap(a + b, bits, s), c)
    addmin = lambda a, b, c, bits, s: min(_wrap(a + b, bits, s), c)
    for high, low_ in [(max3, min3), (addmax, addmin)]:
        row += _dpx(high, x, y, z) + _dpx(low_, x, y, z) + _dpx(high, x, y, z, True) + _dpx(low_, x, y, z, True)
    row += _dpx(max3, x, y, y, True) + _dpx(min3, x, y, y, True)  # __vimax_s32_relu(x, y)...
    hx, hy = _lanes(x, 16, False), _lanes(y, 16, False)
    predicates = [sx >= sy, x >= y, sx <= sy, x <= y, hx[1] >= hy[1], hx[0] >= hy[0]]
    row += [max(sx, sy) & low, max(x, y), min(sx, sy) & low, min(x, y), _pack(map(max, hx, hy), 16),
            sum(int(p) << k for k, p in enumerate(predicates))]
    wx, wy = x << 32 | y, z << 32 | x
    s64 = lambda v: v - ((v >> 63) << 64)
    wide = [brev(wx, 64), (s64(wx) * s64(wy) >> 64) % (1 << 64), wx * wy >> 64, bin(wx).count("1"),
            64 - wx.bit_length(), ffs(wx), swap(wx, 8), min(s64(wx), s64(wy)) % (1 << 64), max(wx, wy)]
    return row, wide


INTEGER_ROWS = 145


def test_integer_simd_and_dpx_intrinsics():
    rng, n = np.random.default_rng(4), 192
    special = [0, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x80008000, 0x7FFF7FFF, 0x80808080, 0x7F7F7F7F,
               0x0001FFFF, 0xFFFF0001, 0x01FF80FF, 0x12345678]
    a = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    b = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    c = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    c[: n // 2] = rng.integers(0, 70, n // 2)  # shifts and selectors: small ones too
    a[: len(special)] = special
    b[len(special): 2 * len(special)] = special
    b[: len(special)] = special[::-1]
    words = [v.astype(np.uint32) for v in (a, b, c)]
    rows, wide_rows = INTEGER_ROWS, 9
    out, wide = xp.zeros(rows * n, xp.uint32), xp.zeros(wide_rows * n, xp.uint64)
    kernel("integers")((n // 64,), (64,), (*map(to_device, words), out, wide, np.int32(n)))
    got, got_wide = to_host(out).reshape(rows, n), to_host(wide).reshape(wide_rows, n)
    for i in range(n):
        want, want_wide = _integer_reference(int(a[i]), int(b[i]), int(c[i]))
        assert len(want) == rows
        bad = [k for k in range(rows) if got[k, i] != want[k]]
        assert not bad, (i, hex(a[i]), hex(b[i]), hex(c[i]), [(k, hex(got[k, i]), hex(want[k])) for k in bad[:4]])
        assert got_wide[:, i].tolist() == want_wide, (i, got_wide[:, i].tolist(), want_wide)


def test_integer_intrinsics_as_an_h100_answers_them():
    """Values an H100 gave: __byte_perm reads 3 bits of each selector nibble; __vavgs rounds
    halves away from zero; the saturating and wrapping SIMD forms."""
    n = 64
    words = np.zeros((3, n), np.uint32)
    words[:, :6] = np.array([(0x80FF7F01, 0x12345678, 0x8888), (0x80FF7F01, 0x12345678, 0xC4A0),
                             (0xFFFD0003, 0, 0), (0xFDFF0103, 0, 0), (0x7FFF8000, 0x0001FFFF, 0),
                             (0x80008001, 0, 0)], np.uint32).T
    out, wide = xp.zeros(INTEGER_ROWS * n, xp.uint32), xp.zeros(9 * n, xp.uint64)
    kernel("integers")((1,), (n,), (*map(to_device, words), out, wide, np.int32(n)))
    got = to_host(out).reshape(INTEGER_ROWS, n)
    assert got[0, 0] == 0x01010101 and got[0, 1] == 0x7878FF01  # __byte_perm
    assert got[45, 2] == 0xFFFE0002 and got[46, 3] == 0xFEFF0102  # __vavgs2, __vavgs4
    assert got[31, 4] == 0x7FFF8000  # __vaddss2 saturates both ways
    assert got[103, 5] == 0x80007FFF and got[105, 5] == 0x7FFF7FFF  # __vabs2 wraps, __vabsss2 clamps


# ---- Atomics, clocks and the calls that stop a kernel --------------------------------------------

def test_atomics_of_every_scope_and_type():
    threads = 128
    ints = np.zeros(12, np.int32)
    ints[6], ints[11] = -1, 1000
    wide, floats, doubles = np.zeros(2, np.uint64), np.zeros(1, np.float32), np.zeros(2, np.float64)
    halves, clocks = np.zeros(4, np.float16), np.zeros(2, np.int64)
    arrays = [to_device(v) for v in (ints, wide, floats, doubles, halves, clocks)]
    kernel("atomics")((2,), (64,), tuple(arrays))
    ints, wide, floats, doubles, halves, clocks = (to_host(v) for v in arrays)
    total = threads * (threads - 1) // 2
    assert ints.tolist() == [total, total, -total, threads - 1, -(threads - 1), 0x7FFFFFFF, -(1 << 31), 0, 1, 7,
                             threads, 1000 - threads]
    assert wide.tolist() == [total, threads - 1]
    assert floats[0] == threads and doubles.tolist() == [threads, threads / 2]
    assert halves.tolist() == [threads, 0, threads, 2 * threads]  # __half, and a __half2 at 2..3
    assert clocks.tolist() == [1, 1]  # clock64() and clock() count up


@pytest.mark.skipif(BACKEND != "cpu", reason="on a GPU __trap ends the CUDA context")
@pytest.mark.parametrize("which, message", [
    (0, r"__trap\(\) called: the kernel stopped itself"),
    (1, r"__brkpt\(\) called"),
    (2, r"__isGlobal\(\) is not supported by the CPU emulator: it cannot tell global, shared"),
    (3, r"__isShared\(\) is not supported by the CPU emulator")])
def test_calls_that_stop_the_kernel_are_named(which, message):
    out = np.zeros(8, np.int32)
    with pytest.raises(LaunchError, match=rf"traps: block \(0, 0, 0\), thread \(3, 0, 0\): {message}"):
        kernel("traps")((1,), (8,), (out, np.int32(which)))
    kernel("traps")((1,), (8,), (out, np.int32(9)))  # and the next launch runs
    assert (out == 1).all()
