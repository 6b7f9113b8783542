"""cuda_fp16.h's basics, as a learner uses them: __half and __half2 conversions and arithmetic,
bit for bit against NumPy's float16 (IEEE binary16, round to nearest even, as a GPU rounds), on
whichever backend runs (the emulator provides the header's basics itself)."""
import numpy as np
import pytest

from book import load_kernel, to_device, to_host, xp
from conftest import ROOT

HALVES = ROOT / "tests" / "kernels" / "halves.cu"
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # (to Inf, wanted)


def _same_bits(got, want, what=""):
    """Equal as float16 bit patterns, any NaN matching any NaN (the GPU's NaN is 0x7FFF)."""
    got, want = np.asarray(got, np.float16), np.asarray(want, np.float16)
    nan = np.isnan(want)
    odd = np.flatnonzero(np.isnan(got) != nan)
    assert not len(odd), (what, "NaN where the other has none", got[odd][:5], want[odd][:5])
    bad = np.flatnonzero(got[~nan].view(np.uint16) != want[~nan].view(np.uint16))
    assert not len(bad), (what, got[~nan][bad][:5], want[~nan][bad][:5])


def _values(n: int, seed: int) -> np.ndarray:
    """Floats of every kind a half meets: its normal and subnormal ranges, past its largest (65504)
    and below its smallest (2^-24), exact ties between two halves, zeros, Inf and NaN."""
    rng = np.random.default_rng(seed)
    x = (rng.choice([-1, 1], n) * 2.0 ** rng.uniform(-27, 17, n)).astype(np.float32)
    halves = rng.integers(0, 0x7C00, 64).astype(np.uint16).view(np.float16).astype(np.float32)
    ties = (halves + np.spacing(halves.astype(np.float16)).astype(np.float32) / 2)  # midpoints
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65519.99, 65520, 2.0 ** -24,
                        2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -14, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11],
                       dtype=np.float32)
    return np.concatenate([x, ties, special]).astype(np.float32)


def test_float_to_half_and_back_round_to_nearest_even():
    x = _values(3000, seed=1)
    n = x.size
    h, back = xp.zeros(n, dtype=xp.float16), xp.zeros(n, dtype=xp.float32)
    load_kernel(HALVES, "half_round_trip")((-(-n // 128),), (128,), (to_device(x), h, back, np.int32(n)))
    _same_bits(to_host(h), x.astype(np.float16))
    want = x.astype(np.float16).astype(np.float32)
    assert np.array_equal(to_host(back), want, equal_nan=True)


def test_half_arithmetic_is_rounded_once_as_ieee_binary16():
    rng = np.random.default_rng(2)
    a, b, c = (_values(2000, seed=s).astype(np.float16) for s in (3, 4, 5))
    a, b, c = (rng.permutation(v) for v in (a, b, c))
    n = a.size
    out = xp.zeros(6 * n, dtype=xp.float16)
    # --fmad=false: else NVRTC may fuse a * b + c into one __hfma, as it does with floats (the
    # emulator never fuses), and the last column's two roundings become one
    load_kernel(HALVES, "half_ops", options=("--fmad=false",))((-(-n // 128),), (128,),
                                    (to_device(a), to_device(b), to_device(c), out, np.int32(n)))
    got = to_host(out).reshape(n, 6)
    f, d = (lambda v: v.astype(np.float32)), (lambda v: v.astype(np.float64))
    with np.errstate(all="ignore"):
        want = [f(a) + f(b), f(a) - f(b), f(a) * f(b), f(a) / f(b), d(a) * d(b) + d(c),
                f((f(a) * f(b)).astype(np.float16)) + f(c)]
    for k, w in enumerate(want):
        _same_bits(got[:, k], w.astype(np.float16), ["+", "-", "*", "/", "fma", "a * b + c"][k])


def test_half2_products_and_a_half_argument():
    rng = np.random.default_rng(6)
    n = 1000
    a, b = (rng.uniform(-2, 2, 2 * n).astype(np.float16) for _ in range(2))
    out = xp.zeros(1, dtype=xp.float32)
    load_kernel(HALVES, "half2_dot")((1,), (128,), (to_device(a), to_device(b), np.float16(0.5),
                                                    out, np.int32(n)))
    products = (a.astype(np.float32) * b.astype(np.float32)).astype(np.float16).astype(np.float64)
    assert abs(to_host(out)[0] - 0.5 * products.sum()) < 1e-4 * np.abs(products).sum()
