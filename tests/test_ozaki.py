"""Chapter 12's Ozaki scheme II: the NumPy model (``book.models.ozaki``) -- its constants, its
bound, its exactness on integers, its error against float64 -- and the kernels of
``12_ozaki.cu`` (``book.blas.ozaki``), which must agree with the model bit for bit on odd shapes,
on the emulator in CI and on the GPU host."""
import math
import re
from pathlib import Path

import numpy as np
import pytest

import book
from book import BACKEND, LaunchError, sgemm, to_device, to_host, xp
from book.blas import ozaki
from book.blas.ozaki import MAX_K, MOST_MODULI, bits, moduli_for, ozaki_sgemm
from book.harness.check import random_inputs, relative_error
from book.models import ozaki as oz
from book.registry import device_cc
from conftest import sweep_params

needs_int8_mma = pytest.mark.skipif(device_cc() < ozaki.MIN_CC, reason=(
    "the Ozaki scheme's kernels need compute capability 8.0 (BOOK_ASSUME_CC counts)"))


@pytest.mark.parametrize("n", [1, 4, 8, 16])
def test_crt_weights_pick_out_one_modulus_each(n):
    c = oz.constants(n)
    P = c.product
    assert P == math.prod(oz.MODULI[:n]) and math.gcd(*oz.MODULI) == 1
    for l, m in enumerate(c.moduli):
        w = int(c.w_hi[l]) + int(c.w_lo[l])  # (w_lo rounded: compare modulo each m below)
        exact = (P // m) * pow(P // m, -1, m)
        assert abs(w - exact) <= abs(exact) * 2.0 ** -50
        assert exact % m == 1 and all(exact % o == 0 for o in c.moduli if o != m)
    assert int(c.p_hi) % (1 << max(1, (n * 256 * P).bit_length() - 52)) == 0


@pytest.mark.parametrize("n, K", [(2, 1), (4, 100), (8, 4096), (8, 8192), (12, 100_000)])
def test_bits_keep_every_integer_product_inside_half_the_modulus(n, K):
    p = oz.bits(n, K)
    assert K * 4 ** p <= (oz.constants(n).product - 1) // 2 or p == 30
    assert p == 30 or K * 4 ** (p + 1) > (oz.constants(n).product - 1) // 2


@pytest.mark.parametrize("n", range(1, MOST_MODULI + 1))
def test_every_product_of_the_reconstruction_is_exact(n):
    """The reconstruction multiplies residues (below 256) by the weights' parts and the quotient
    (below n 256) by P's: every such product fits float64's 53 bits, so the kernel may fuse it
    into an FMA and still give the model's bits."""
    c = oz.constants(n)
    for part in (c.w_hi, c.w_lo):
        assert all(float(w).is_integer() for w in part)
    assert max(abs(c.w_lo)) * 256 < 2 ** 53 and abs(c.p_lo) * n * 256 < 2 ** 53
    # (the high parts' products and sums: exact by constants' choice of 2^t, tested above)
    assert bits(MOST_MODULI, MAX_K) == 30  # (more moduli: no more bits)


def test_reconstruction_returns_the_integer_from_its_residues():
    """Random integers in (-P/2, P/2): their residues rebuild them (exactly where |x| < 2^53)."""
    rng = np.random.default_rng(0)
    n = 8
    P = oz.constants(n).product
    xs = [int(v) for v in rng.integers(-(1 << 52), 1 << 52, 200)] + [P // 2 - 1, -(P // 2) + 1, 0]
    r = np.array([[[x % m] for x in xs] for m in oz.MODULI[:n]], np.int64)  # n x len x 1
    got = oz.reconstruct(r, n)[:, 0]
    assert [float(x) for x in xs[:200]] == list(got[:200])
    assert got[200] == pytest.approx(P // 2 - 1, rel=1e-15) and got[202] == 0


def test_the_model_is_exact_where_the_integers_fit():
    rng = np.random.default_rng(1)
    a = rng.integers(-200, 200, (13, 40)).astype(np.float32)
    b = rng.integers(-200, 200, (40, 9)).astype(np.float32)
    assert np.array_equal(oz.ozaki(a, b, 4), (a.astype(np.float64) @ b).astype(np.float32))


def test_more_moduli_more_accuracy_until_float32_s_last_rounding():
    a, b = random_inputs(60, 50, 700, seed=3)
    ref = a.astype(np.float64) @ b
    errors = [relative_error(oz.ozaki(a, b, n), ref) for n in (5, 6, 7, 8)]
    assert errors == sorted(errors, reverse=True)
    assert errors[-1] < 2 * relative_error(ref.astype(np.float32), ref)  # the last rounding only
    assert relative_error(oz.ozaki(a, b, 7), ref) < relative_error(a @ b, ref)  # below SGEMM's


SHAPES = [(37, 30, 41), (70, 5, 200), (1, 1, 1), (33, 17, 65), (5, 70, 31)]


@needs_int8_mma
@pytest.mark.parametrize("products", ["mma", "tiled", "wgmma"])
@pytest.mark.parametrize("n", sweep_params([3, 8], [8]))  # (make test: 8; make test-sweep: 3)
@pytest.mark.parametrize("shape", SHAPES + [(130, 200, 300)])
def test_the_kernels_agree_with_the_model_bit_for_bit(shape, n, products):
    """Both INT8 product kernels: mma.sync (12_ozaki.cu) and wgmma (12_ozaki_wgmma.cu, several
    tiles of C and of k at 130 x 200 x 300)."""
    if products == "wgmma" and device_cc() != (9, 0):
        pytest.skip("wgmma: compute capability 9.0")
    M, N, K = shape
    a, b = random_inputs(M, N, K, seed=M + N + K)
    a[0] *= 2.0 ** -30  # rows and columns of very different scales
    b[:, -1] *= 2.0 ** 40
    if M > 2:
        a[1] = 0.0      # a row of zeros
    out = to_device(np.full((M, N), np.nan, np.float32))
    got = to_host(ozaki_sgemm(to_device(a), to_device(b), n, out=out, products=products,
                                guard=False))
    want = oz.ozaki(a, b, n)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (shape, n)


@needs_int8_mma
def test_the_wgmma_blocks_cover_c_in_groups_of_rows_of_tiles(monkeypatch):
    """12_ozaki_wgmma.cu takes its tiles GROUP_M (8) rows of tiles at a time: 9 rows of tiles
    (a group and a part of one) by 3 columns, k from one record and a bit of a second; 5 blocks
    (as on a GPU of 5 SMs) take the 54 tiles of both moduli in turn, their pipelines running on
    from one tile into the next."""
    if device_cc() != (9, 0):
        pytest.skip("wgmma: compute capability 9.0")
    monkeypatch.setattr(ozaki, "_sms", lambda: 5)
    a, b = random_inputs(1030, 520, 129, seed=3)
    got = to_host(ozaki_sgemm(to_device(a), to_device(b), 2, products="wgmma", guard=False))
    assert np.array_equal(got.view(np.uint32), oz.ozaki(a, b, 2).view(np.uint32))


def _record_offsets(rows: int, Kp: int) -> np.ndarray:
    """ozaki.cuh's record_offset for every (row, k): where byte (row, k) of a residue matrix is."""
    i, k = np.meshgrid(np.arange(rows), np.arange(Kp), indexing="ij")
    return ((i // 128) * (Kp // 128) + k // 128) * 16384 + (i % 128) * 128 + \
        (((k % 128) // 16) ^ (i % 8)) * 16 + k % 16


def test_every_residue_is_an_int8_congruent_to_its_integer():
    """ozaki_residues takes residues in float32 (t = v mod m through a float 1 / m): each is an
    int8 and congruent to v, for integers up to 2^30 -- random ones, and ones a hair from a
    multiple of m / 2, where the float quotient could round either way."""
    rng = np.random.default_rng(12)
    rows, K = 128, 256
    v = rng.integers(-2 ** 23, 2 ** 23, (rows, K)) << rng.integers(0, 7, (rows, K))  # (floats)
    near = [m * j // 2 + d for m in oz.MODULI for j in (1, 3, 2 ** 22 // m * 2 + 1) for d in (-1, 0, 1)]
    v.flat[1:len(near) + 1] = near
    v[:, 0] = 2 ** 29  # each row's largest in [2^29, 2^30): p = 30, its shift 0
    x = v.astype(np.float32)
    assert np.array_equal(x.astype(np.int64), v)
    n, p, Kp = 16, 30, K
    top = to_device(np.full(rows, np.float32(2 ** 29).view(np.int32), np.int32))
    R = to_device(np.zeros(n * rows * Kp, np.int8))
    ozaki._kernel("ozaki_residues")((Kp // 128, rows // 32), (32, 8), (
        to_device(x), np.int32(rows), np.int32(K), np.int64(K), np.int64(1), top, np.int32(0),
        np.int32(p), np.int32(n), R, np.int32(Kp), np.int64(rows * Kp),
        to_device(np.zeros(rows, np.uint64))))  # (the guard's sums: unused in this build)
    got = to_host(R).reshape(n, -1)[:, _record_offsets(rows, Kp)].astype(np.int64)
    for l, m in enumerate(oz.MODULI):
        assert ((got[l] - v) % m == 0).all(), m


def test_the_kernels_hold_the_same_moduli():
    text = (Path(book.__file__).parent / "kernels" / "ozaki.cuh").read_text()
    listed = re.search(r"constexpr int m\[16\] = \{([^}]*)\}", text).group(1)
    assert tuple(int(x) for x in listed.split(",")) == oz.MODULI


@needs_int8_mma
def test_eight_moduli_are_as_accurate_as_sgemm_on_random_inputs():
    a, b = random_inputs(96, 80, 1000, seed=5)
    ref = a.astype(np.float64) @ b
    got = to_host(ozaki_sgemm(to_device(a), to_device(b), 8))
    assert relative_error(got, ref) < relative_error(a @ b, ref)


def _same(got, want) -> bool:
    """Equal bit for bit, but any NaN for any NaN."""
    nan = np.isnan(want)
    return np.array_equal(np.isnan(got), nan) and np.array_equal(got[~nan].view(np.uint32),
                                                                 want[~nan].view(np.uint32))


@needs_int8_mma
def test_inf_and_nan_come_out_as_sgemm_gives_them():
    """Rows of A and columns of B that hold Inf or NaN: their elements of C from a float32 FMA
    chain (Inf, -Inf or NaN as the products and sums give them), the others by the scheme, their
    scaling blind to the specials."""
    a, b = random_inputs(20, 18, 50, seed=7)
    a[2, 5], a[4, 0], a[6, 7], a[6, 8] = np.inf, np.nan, np.inf, -np.inf
    b[3, 1], b[9, 16] = -np.inf, np.inf
    b[5, 2] = 0.0
    a[7, 5] = np.inf  # Inf times B's zero at (5, 2): NaN in C[7, 2]
    want = oz.ozaki(a, b, 8)
    got = to_host(ozaki_sgemm(to_device(a), to_device(b), 8, guard=False))
    assert _same(got, want)
    assert np.isposinf(want[2, 0]) or np.isneginf(want[2, 0])
    assert np.isnan(want[4]).all() and not np.isfinite(want[6]).any() and np.isnan(want[7, 2])
    ok = np.ones_like(want, bool)
    ok[[2, 4, 6, 7]] = False
    ok[:, [1, 16]] = False
    with np.errstate(invalid="ignore"):
        ref = a.astype(np.float64) @ b
    assert np.isfinite(want[ok]).all() and relative_error(want[ok], ref[ok]) < 1e-7


@needs_int8_mma
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_sgemm_precision_ozaki_reads_any_layout_with_alpha_and_beta(layout):
    M, N, K = 23, 19, 45
    a, b = random_inputs(M, N, K, seed=8)
    c0 = np.random.default_rng(9).random((M, N)).astype(np.float32)
    A = to_device(np.ascontiguousarray(a.T)).T if layout[0] == "t" else to_device(a)
    B = to_device(np.ascontiguousarray(b.T)).T if layout[1] == "t" else to_device(b)
    want = oz.ozaki(a, b, moduli_for(K))
    assert _same(to_host(sgemm(A, B, precision="ozaki")), want)
    out = to_device(c0)
    sgemm(A, B, out=out, alpha=0.5, beta=-2.0, precision="ozaki")
    assert relative_error(to_host(out), 0.5 * (a.astype(np.float64) @ b) - 2.0 * c0) < 1e-6


def test_an_older_gpu_is_told_what_precision_ozaki_needs(monkeypatch):
    monkeypatch.setenv("BOOK_ASSUME_CC", "7.5")
    a, b = random_inputs(8, 8, 8, seed=6)
    with pytest.raises(LaunchError, match=r"precision='ozaki' runs on INT8 mma.sync \(compute "
                                          r"capability 8.0\), and this device counts as 7.5"):
        sgemm(to_device(a), to_device(b), precision="ozaki")


@needs_int8_mma
def test_what_it_does_not_take_is_refused_before_a_launch():
    a, b = random_inputs(8, 8, 8, seed=6)
    with pytest.raises(LaunchError, match="A is 8 x 8 but B is 7 x 8"):
        ozaki_sgemm(to_device(a), to_device(b[:7]))
    with pytest.raises(LaunchError, match="11 moduli: from 1 to 10"):
        ozaki_sgemm(to_device(a), to_device(b), 11)
    with pytest.raises(LaunchError, match="K = 131072 .A's columns, B's rows.: at most 131071"):
        ozaki_sgemm(to_device(np.ones((1, 131072), np.float32)),
                    to_device(np.ones((131072, 1), np.float32)))


@pytest.mark.parametrize("bad, says", [
    ("A float64", "A must be float32, got float64"), ("B int32", "B must be float32, got int32"),
    ("out float64", "out must be float32, got float64"), ("B short", "A is 8 x 8 and B is 7 x 8"),
    ("out shape", r"out has shape \(8, 7\)"), ("A 3-D", "A must be a 2-D"),
    ("K too long", "K = 131072 .A's columns, B's rows.: at most 131071")])
@needs_int8_mma
def test_bad_input_is_named_and_out_is_left_as_it_was(bad, says):
    """sgemm(precision='ozaki') refuses what it cannot take with the argument's name, before
    anything is written: out keeps its values."""
    a, b = random_inputs(8, 8, 8, seed=6)
    K = 131072 if bad == "K too long" else 8
    A, B = (to_device(np.ones((8, K), np.float32)), to_device(np.ones((K, 8), np.float32))) \
        if K != 8 else (to_device(a), to_device(b))
    out = xp.full((8, 7) if bad == "out shape" else (8, 8), 7.0,
                  dtype=xp.float64 if bad == "out float64" else xp.float32)
    A = {"A float64": A.astype(xp.float64), "A 3-D": A[None]}.get(bad, A)
    B = {"B int32": B.astype(xp.int32), "B short": B[:7]}.get(bad, B)
    with pytest.raises(LaunchError, match=says):
        sgemm(A, B, out=out, precision="ozaki")
    assert bool((out == 7.0).all())


@needs_int8_mma
@pytest.mark.sweep  # (its own builds: make test-sweep)
@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's check mode")
def test_the_passes_are_clean_in_check_mode(monkeypatch):
    """No race, no unwritten read, no index out of bounds in the tiled passes over A and B (read
    along k, and along the rows where the operand is a transpose), the mma.sync and wgmma
    products and the reconstruction."""
    monkeypatch.setenv("BOOK_EMU_CHECK", "1")
    a, b = random_inputs(45, 70, 77, seed=11)
    b[3, 4] = np.nan
    want = oz.ozaki(a, b, 4)
    for products in ("mma", "tiled", "wgmma"):
        for B in (to_device(b), to_device(np.ascontiguousarray(b.T)).T):
            assert _same(to_host(ozaki_sgemm(to_device(a), B, 4, products=products, guard=False)), want)


@needs_int8_mma
@pytest.mark.parametrize("products", ["mma", "tiled", "wgmma"])
def test_the_guarded_kernels_are_the_guarded_model_bit_for_bit(products):
    """ozaki_sgemm (its default guard: 12_ozaki.cu built with GUARD): the same flags and the same bits as
    book.models.ozaki.guarded on every adversarial class (book.studies.adversarial), A read
    along k and B as a transpose too, odd sizes."""
    from book.studies.adversarial import CLASSES
    if products == "wgmma" and BACKEND == "gpu" and device_cc() != (9, 0):
        pytest.skip("wgmma: compute capability 9.0")
    for name, make in CLASSES.items():
        a, b = make(37, 45, 300, np.random.default_rng(3))
        want, mask = oz.guarded(a, b)
        for B in (to_device(b), to_device(np.ascontiguousarray(b.T)).T):
            got = to_host(ozaki_sgemm(to_device(a), B, products=products))
            assert _same(got, want), (name, products, mask.mean())


@needs_int8_mma
def test_the_guard_starts_afresh_at_each_call():
    """The guard's sums (by row of A, column of B, and row of C) are zeroed at every call, the
    replayed ones included: a call after one whose every row cancelled (so flagged whole) gives
    the guarded model's bits on plain inputs, as a first call does, and the other way round."""
    from book.studies.adversarial import CLASSES
    M, N, K = 200, 8, 100  # (the sums of C's rows past the flags' and magnitudes' zeroing)
    cancel = CLASSES["cancellation"](M, N, K, np.random.default_rng(5))
    plain = CLASSES["uniform"](M, N, K, np.random.default_rng(6))
    out = to_device(np.zeros((M, N), np.float32))
    for a, b in (cancel, plain, plain, cancel, plain):
        want, mask = oz.guarded(a, b)
        sgemm(to_device(a), to_device(b), out=out, precision="ozaki")
        assert _same(to_host(out), want), mask.mean()


@needs_int8_mma
def test_each_pass_run_again_alone_gives_the_same_bits():
    """Chapter 12 times each pass alone, again and again: each zeroes what it adds to and keeps
    what the next reads (the guard's flags apart from its levels), so the call's result holds."""
    a, b = random_inputs(40, 36, 200, seed=8)
    passes, C = ozaki.ozaki_passes(to_device(a), to_device(b))
    for _, run in passes:
        run()
    first = to_host(C).copy()
    for _, run in passes[1:] + passes[3:]:
        run()
    assert _same(to_host(C), first)


@needs_int8_mma
@pytest.mark.sweep  # (its own builds: make test-sweep)
@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's check mode")
def test_the_guarded_passes_are_clean_in_check_mode(monkeypatch):
    """The GUARD builds: no race, unwritten read or index out of bounds, the sums' atomics and
    the levels' slice included."""
    from book.studies.adversarial import CLASSES
    monkeypatch.setenv("BOOK_EMU_CHECK", "1")
    a, b = CLASSES["huge 2^40, zero partner"](45, 70, 77, np.random.default_rng(11))
    want, _ = oz.guarded(a, b, 4)
    for products in ("mma", "tiled", "wgmma"):
        assert _same(to_host(ozaki_sgemm(to_device(a), to_device(b), 4, products=products,
                                         guard=True)), want)


@pytest.mark.parametrize("K", [64, 1024, 16384])
@pytest.mark.parametrize("spread", [0, 40])
def test_eight_moduli_keep_the_error_below_an_fma_chain_s_along_k(K, spread):
    """moduli_for: 9 at every K (8 for the error, one more for the guard's room). The model's error stays below a float32 FMA chain's (an SGEMM's
    order of sums) on uniform inputs and where each element has its own power of two, from 2^-40
    to 2^40 -- where 7 moduli do not."""
    assert {moduli_for(k) for k in (1, 64, 4096, 131071)} == {9}
    a, b = random_inputs(8, 8, K, seed=K + spread)
    rng = np.random.default_rng(spread)
    a = (a * np.exp2(rng.integers(-spread, spread + 1, a.shape))).astype(np.float32)
    b = (b * np.exp2(rng.integers(-spread, spread + 1, b.shape))).astype(np.float32)
    ref = a.astype(np.float64) @ b
    i, j = (x.ravel() for x in np.meshgrid(np.arange(8), np.arange(8), indexing="ij"))
    chain = relative_error(oz.ffma(a, b, i, j).reshape(8, 8), ref)
    assert relative_error(oz.ozaki(a, b, moduli_for(K)), ref) < chain
    if spread and K >= 1024:
        assert relative_error(oz.ozaki(a, b, 7), ref) > chain


@pytest.mark.parametrize("n, K", [(7, 4096), (8, 2048)])
def test_the_picture_draws_this_n_and_k_s_own_numbers(n, K):
    fig = oz.flow(n, K)  # (check_readable inside: the book's figure rules)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert f"p = {oz.bits(n, K)} bits" in texts and ", ".join(map(str, oz.MODULI[:n])) in texts
