"""The inputs an SGEMM must survive (book.studies.adversarial): each class is what it says, the
error measures are right on results whose errors are known, precision='fp32' keeps SGEMM's
promise on every class, and so do precision='ozaki' (its kernels' accuracy guard) and the guarded
model it follows (book.models.ozaki.guarded), where the row scaling alone does not."""
import numpy as np
import pytest

from book.studies import adversarial as ad

SHAPE = (24, 20, 96)


def test_each_class_is_what_it_says():
    rng = np.random.default_rng(0)
    for name, make in ad.CLASSES.items():
        A, B = make(*SHAPE, rng)
        assert A.dtype == B.dtype == np.float32 and A.shape == (24, 96) and B.shape == (96, 20)
    A, B = ad.CLASSES["spread 48"](*SHAPE, rng)
    span = np.log2(np.abs(A[A != 0]).max() / np.abs(A[A != 0]).min())
    assert span > 80  # (2^-48 .. 2^48 and the uniform factor)
    A, B = ad.CLASSES["huge 2^40, zero partner"](*SHAPE, rng)
    assert (A[:, 0] == 2.0 ** 40).all() and (B[0] == 0).all()
    A, B = ad.CLASSES["cancellation"](*SHAPE, rng)
    assert ((A[:, 0] + A[:, 1]) == 0).all() and (B[:2] == 1).all()
    A, B = ad.CLASSES["cancellation, pair apart"](*SHAPE, rng)
    assert ((A[:, 0] + A[:, -1]) == 0).all() and (B[[0, -1]] == 1).all() and abs(A[0, 1]) < 1


def test_the_errors_are_measured_per_element_per_row_and_normwise():
    A = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    B = np.array([[1e6, 0.0], [0.0, 1.0]], np.float32)
    C = np.array([[1e6, 0.0], [0.0, 1.5]], np.float32)  # (only the small element is off, by half)
    got = ad.errors(C, A, B, reference_specials=C)
    assert got["componentwise"] == 0.5 and got["worst_row"] == 0.5
    assert got["normwise"] == pytest.approx(0.5e-6) and got["specials_as_sgemm"]
    assert not ad.errors(np.array([[np.inf, 0], [0, 1]], np.float32), A, B, C)["specials_as_sgemm"]


@pytest.mark.parametrize("name", list(ad.CLASSES))
def test_precision_fp32_keeps_sgemms_promise_on_every_class(name):
    df = ad.measure(SHAPE, precisions=("fp32",), classes={name: ad.CLASSES[name]})
    row = df.iloc[0]
    K = SHAPE[2]
    assert row.componentwise <= max(2 * row.sgemm_componentwise, K * 2.0 ** -24), row.to_dict()
    assert row.specials_as_sgemm


def test_precision_ozaki_keeps_sgemms_promise_on_every_class():
    """precision='ozaki' (its accuracy guard on): within 2x an SGEMM's componentwise and worst-row
    error on every class, Inf and NaN where the SGEMM's are; the row scaling alone
    (``ozaki_sgemm(guard=False)``, what precision='ozaki' was before the guard) loses the classes
    of a huge entry with a zero partner and of cancellation."""
    from book.registry import device_cc
    if device_cc() < (8, 0):
        pytest.skip("precision='ozaki' needs compute capability 8.0")
    df = ad.measure(SHAPE, precisions=("ozaki", ad.UNGUARDED))
    mine, alone = df[df.precision == "ozaki"], df[df.precision == ad.UNGUARDED]
    assert (mine.x_componentwise <= 2).all() and (mine.x_worst_row <= 2).all(), mine.to_string()
    assert mine.specials_as_sgemm.all()
    lost = set(alone[alone.x_worst_row > 2]["class"])
    assert {"huge 2^40, zero partner", "cancellation"} <= lost, alone.to_string()


GUARD_SHAPES = [(40, 32, 64), (40, 32, 1024), (24, 20, 4096)]


@pytest.mark.parametrize("shape", GUARD_SHAPES)
def test_the_guarded_model_keeps_sgemms_promise_where_the_scaling_alone_does_not(shape):
    """The design of the guard, in the model (book.models.ozaki.guarded): on every class and
    three seeds, its componentwise and worst-row errors within 2x an SGEMM's (a float32 FMA
    chain) on the same inputs, and its Inf and NaN where the SGEMM's are; the scaling alone
    (``ozaki``) loses the huge-entry and cancellation classes outright."""
    from book.models import ozaki as oz
    lost = set()
    for name, make in ad.CLASSES.items():
        for seed in range(3):
            A, B = make(*shape, np.random.default_rng(seed))
            ref = ad._sgemm_reference(A, B)
            base = ad.errors(ref, A, B)
            C, mask = oz.guarded(A, B)
            got = ad.errors(C, A, B, ref)
            assert got["componentwise"] <= 2 * base["componentwise"], (name, seed, got, base)
            assert got["worst_row"] <= 2 * base["worst_row"], (name, seed, got, base)
            assert got["specials_as_sgemm"], (name, seed)
            alone = ad.errors(oz.ozaki(A, B), A, B)
            if alone["worst_row"] > 2 * base["worst_row"]:
                lost.add(name)
    assert {"huge 2^40, zero partner", "1e6 feature, zero partner", "cancellation"} <= lost


@pytest.mark.parametrize("shape", GUARD_SHAPES)
def test_the_guard_leaves_plain_inputs_to_the_integer_products(shape):
    """On uniform, normal and non-negative inputs, rows of zeros, zeros and small integers the guard
    takes at most 2% of the elements another way (the price of the guard on inputs that need
    nothing; a row that no rounding moved adds nothing to the bound of its elements)."""
    from book.models import ozaki as oz
    rng = np.random.default_rng(1)
    M, N, K = shape
    for A, B in (ad.CLASSES["uniform"](M, N, K, rng),
                 (rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)),
                 (rng.random((M, K)).astype(np.float32), rng.random((K, N)).astype(np.float32)),
                 # rows of zeros (padding), all zeros, small integers: no rounding moves them
                 ((rng.standard_normal((M, K)) * (np.arange(M)[:, None] % 3 != 0)).astype(np.float32),
                  rng.standard_normal((K, N)).astype(np.float32)),
                 (np.zeros((M, K), np.float32), rng.standard_normal((K, N)).astype(np.float32)),
                 (rng.integers(-100, 100, (M, K)).astype(np.float32),
                  rng.integers(-100, 100, (K, N)).astype(np.float32))):
        _, mask = oz.guarded(A, B)
        assert mask.mean() <= 0.02, mask.mean()


@pytest.fixture
def fresh_auto(monkeypatch):
    """precision='auto' with nothing remembered of earlier calls, and nothing left for later."""
    from collections import OrderedDict

    from book.blas import auto
    monkeypatch.setattr(auto, "BY_CALL", OrderedDict())
    auto.replay.clear()
    yield auto
    auto.replay.clear()


def test_precision_auto_keeps_sgemms_promise_on_every_class_whichever_method_it_takes(
        fresh_auto, monkeypatch):
    """precision='auto' on every class, with each method this device runs first in the shape's
    order (as its race or a record may choose it): each element within an SGEMM's bound
    K u (|A||B|)_ij or 2x an SGEMM's own error there, Inf and NaN where the SGEMM's are -- the
    promise precision='fp32' keeps (test above). (3xTF32 exceeds 2x an SGEMM's own error on
    cancellation, where the SGEMM's first two FMAs happen to cancel exactly, and near overflow:
    chapter 12.) The Ozaki scheme's guard moves a shape off it only after CHECK_EVERY calls:
    each call before must keep the promise itself."""
    auto, (M, N, K) = fresh_auto, SHAPE
    methods = auto.methods_here(K)
    for first in methods:
        monkeypatch.setitem(auto.chosen(), (M, N, K, "nn"),
                            [first] + [m for m in methods if m != first])
        auto.BY_CALL.clear()
        auto.replay.clear()
        df = ad.measure(SHAPE, precisions=("auto",))
        kept = df.componentwise <= np.maximum(2 * df.sgemm_componentwise, K * 2.0 ** -24)
        assert kept.all() and df.specials_as_sgemm.all(), (first, df[~kept].to_string())
