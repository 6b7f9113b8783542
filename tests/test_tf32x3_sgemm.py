"""book.sgemm(precision='tf32x3'): chapter 10's 3xTF32 kernel as a call a user can trust -- any
finite magnitude (rows of A and columns of B scaled by powers of two), Inf and NaN where cuBLAS
SGEMM puts them, any shape; on whichever backend runs (on the GPU host: a Hopper GPU)."""
import numpy as np
import pytest

from book import LaunchError, to_device, to_host, xp
from book import blas as S
from book.harness.check import TOLERANCE, random_inputs, relative_error
from book.registry import KERNELS

pytestmark = pytest.mark.skipif(KERNELS["tf32x3_wgmma"].why_not_here() is not None,
                                reason="3xTF32 runs on wgmma (compute capability 9.0)")


def _tf32x3(a, b, **kw):
    return to_host(S.sgemm(to_device(a), to_device(b), precision="tf32x3", **kw))


def _per_element(got, a, b):
    """|C - A B| of each element over (|A| |B|) (in float64): float32's bound at any magnitude."""
    return np.abs(got - a.astype(np.float64) @ b) / (np.abs(a).astype(np.float64) @ np.abs(b))


@pytest.mark.parametrize("scale", [1e-30, 1e-18, 1e-6, 1e6, 1e18, 1e30])
def test_any_magnitude_keeps_float32_accuracy(scale):
    """A scaled by 1e-30 ... 1e30 (C stays inside float32's range): the split's small terms
    would fall below float32's normal range near 1e-18 without the scaling."""
    a, b = random_inputs(130, 70, 300, seed=5)
    a = (a * np.float32(scale)).astype(np.float32)
    assert relative_error(_tf32x3(a, b), a.astype(np.float64) @ b) < TOLERANCE


def test_wide_exponents_within_one_matrix():
    """Rows of A from 2^-60 to 2^60 and columns of B from 2^-60 to 2^60."""
    a, b = random_inputs(64, 48, 200, seed=6)
    rng = np.random.default_rng(6)
    a = (a * np.exp2(rng.integers(-60, 61, (64, 1)))).astype(np.float32)
    b = (b * np.exp2(rng.integers(-60, 61, (1, 48)))).astype(np.float32)
    assert np.max(_per_element(_tf32x3(a, b), a, b)) < TOLERANCE


@pytest.mark.parametrize("shape", [(130, 70, 300), (64, 40, 3000), (40, 200, 300)])  # (split-K;
# thin M, computed as C^T)
def test_one_call_leaves_nothing_for_the_next(shape):
    """Calls of one shape share a workspace with two sets of flags, taken in turn, each call's
    rescale zeroing the next call's: calls with Inf, with a huge row, with a tiny one, and plain
    ones, each as accurate as alone, and the next call's flags zero after each call."""
    from book.launch import streams
    M, N, K = shape
    a, b = random_inputs(M, N, K, seed=12)
    inf, big, tiny = a.copy(), a.copy(), a.copy()
    inf[3, 5] = np.inf
    big[M // 2] *= np.float32(2.0 ** 100)  # (a magnitude left over would scale tiny's row wrong)
    tiny[M // 2] *= np.float32(2.0 ** -100)
    for x in (inf, a, big, tiny, a):
        got = _tf32x3(x, b)
        fin = np.isfinite(x.astype(np.float64) @ b)
        assert np.isfinite(got).sum() == fin.sum()
        assert np.max(_per_element(got, x, b)[fin]) < TOLERANCE
        two, turn = streams.here()["tf32x3"][1][3:]  # (this thread's and stream's)
        assert not to_host(two[turn]).any()


def test_inf_and_nan_land_where_ieee_puts_them():
    """+Inf, -Inf and NaN in A and B, a zero meeting an Inf: the same non-finite pattern as the
    float64 product (what cuBLAS SGEMM gives), and the finite elements still right."""
    a, b = random_inputs(70, 90, 50, seed=7)
    a[3, 5], a[10, 7], a[20, 11] = np.inf, np.nan, 0.0
    b[7, 9], b[11, 40], b[5, 2], b[30, 60] = -np.inf, np.inf, 0.0, -np.inf
    with np.errstate(invalid="ignore"):
        ref = a.astype(np.float64) @ b.astype(np.float64)
    got = _tf32x3(a, b)
    with np.errstate(invalid="ignore"):  # (NumPy's matmul on the CPU warns of Inf * 0)
        library = to_host(xp.matmul(to_device(a), to_device(b)))  # cuBLAS SGEMM on a GPU
    for test in (np.isnan, np.isposinf, np.isneginf):
        assert (test(got) == test(ref)).all(), test.__name__
        assert (test(got) == test(library)).all(), f"{test.__name__}, against the library's SGEMM"
    fin = np.isfinite(ref)
    assert np.max(np.abs(got[fin] - ref[fin])) < TOLERANCE * np.abs(ref[fin]).max()


@pytest.mark.parametrize("shape", [(1, 1, 1), (33, 17, 65), (130, 300, 7), (129, 129, 257),
                                   (130, 200, 3000), (1, 5, 2000), (1, 300, 70)])
def test_odd_shapes_views_and_alpha_beta(shape):
    M, N, K = shape
    a, b = random_inputs(M, N, K, seed=8)
    c0 = np.random.default_rng(8).random((M, N)).astype(np.float32)
    A = to_device(np.ascontiguousarray(a.T).copy()).T  # a transpose: copied for the split pass
    out = to_device(c0.copy())
    S.sgemm(A, to_device(b), out=out, alpha=2.0, beta=-1.0, precision="tf32x3")
    assert relative_error(to_host(out), 2.0 * (a.astype(np.float64) @ b) - c0) < TOLERANCE


@pytest.mark.parametrize("shape", [(3, 200, 33), (64, 300, 130), (70, 257, 3000), (5, 513, 129)])
def test_thin_m_runs_as_the_transpose(shape):
    """M <= 128 < N: the call computes C^T = B^T A^T (B split in registers, A alone packed) --
    by 4 bytes a copy where M % 4 != 0, 16 where it is 0, split-K at 70 x 257 x 3000 -- with
    rows of A and columns of B from 2^-60 to 2^60 and an Inf in each; it is refused nowhere."""
    M, N, K = shape
    a, b = random_inputs(M, N, K, seed=9)
    rng = np.random.default_rng(9)
    a = (a * np.exp2(rng.integers(-60, 61, (M, 1)))).astype(np.float32)
    b = (b * np.exp2(rng.integers(-60, 61, (1, N)))).astype(np.float32)
    a[M // 2, K // 3], b[K // 2, N - 1] = np.inf, -np.inf
    with np.errstate(invalid="ignore"):
        ref = a.astype(np.float64) @ b
    got = _tf32x3(a, b)
    for test in (np.isnan, np.isposinf, np.isneginf):
        np.testing.assert_array_equal(test(got), test(ref))
    fin = np.isfinite(ref)
    assert np.max(_per_element(got, a, b)[fin]) < TOLERANCE


def test_an_unknown_precision_is_refused():
    a, b = (to_device(x) for x in random_inputs(8, 6, 5, seed=1))
    with pytest.raises(LaunchError, match=r"precision 'tf32': one of 'fp32', 'tf32x3'"):
        S.sgemm(a, b, precision="tf32")



@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 7, 5), (70, 300, 130), (33, 260, 64), (5, 513, 129),
                                   (3, 6, 2052), (4, 3, 1031)])
def test_pack_gathers_each_rows_and_columns_magnitude(shape):
    """10_wgmma.cu's pack_split (SCALED): the largest exponent field of the nonzero finite
    elements of each row of A and each column of B, plus one (0 for a zero row; at most that
    where the row holds Inf or NaN), and the rows and columns that hold Inf or NaN -- 16-byte
    loads where K is a multiple of 4, single floats elsewhere; a zero row and a subnormal one."""
    from book.launch import wgmma as W
    M, N, K = shape
    rng = np.random.default_rng(sum(shape))
    a = (rng.uniform(-1, 1, (M, K)) * np.exp2(rng.integers(-120, 120, (M, K)))).astype(np.float32)
    b = (rng.uniform(-1, 1, (K, N)) * np.exp2(rng.integers(-120, 120, (K, N)))).astype(np.float32)
    a[np.arange(M), rng.integers(0, K, M)] = np.exp2(121 + np.arange(M) % 6)  # each row's largest,
    b[rng.integers(0, K, N), np.arange(N)] = np.exp2(121 + np.arange(N) % 6)  # somewhere in it
    a[M // 2, K - 1], b[K - 1, N - 1] = np.inf, np.nan
    a[M - 1], b[:, 0] = 0.0, np.float32(2.0 ** -140)  # (when M or N is 1, these win)
    A, B = to_device(a), to_device(b)
    ea, eb, bad = W.flags(M, N)
    W.pack(A, B, W.records(M, K), W.records(N, K), M, N, K, S.TF32X3_DEFINES, ea, eb, bad)
    ea, eb, bad = (to_host(x) for x in (ea, eb, bad))
    fa, fb = np.isfinite(a).all(axis=1), np.isfinite(b).all(axis=0)  # (rows with Inf or NaN are
    # recomputed: their magnitudes are not read)
    field = lambda x: np.where(np.isfinite(x) & (x != 0), ((x.view(np.int32) >> 23) & 255) + 1, 0)
    np.testing.assert_array_equal(ea[fa], field(a).max(axis=1)[fa])
    np.testing.assert_array_equal(eb[fb], field(b).max(axis=0)[fb])
    assert (ea <= field(a).max(axis=1)).all() and (eb <= field(b).max(axis=0)).all()
    want = np.concatenate([~np.isfinite(a).all(axis=1), ~np.isfinite(b).all(axis=0)])
    np.testing.assert_array_equal(bad.astype(bool), np.append(want, want.any()))


@pytest.mark.parametrize("rows, out", [((0, 0), (0, 0)), ((-41, 0), (1, 0)), ((40, 0), (0, 0)),
                                       ((42, 0), (1, 0)), ((0, -60), (0, 1)), ((-130, 40), (1, 0))])
def test_rescale_packs_again_only_where_a_row_is_out_of_range(rows, out):
    """Rows of A and columns of B whose largest lies within 2^-40 .. 2^40 are packed once,
    unscaled; a row (column) outside it (row 5 of A, column 129 of B, multiplied by 2^rows;
    their largest near 2^rows) has its panel packed again, scaled: panel 0 of A, panel 1 of B.
    C keeps float32's accuracy either way."""
    from book.launch import wgmma as W
    M, N, K = 140, 130, 70
    a, b = random_inputs(M, N, K, seed=9)
    a[5] *= np.float32(2.0 ** rows[0])
    b[:, 129] *= np.float32(2.0 ** rows[1])
    A, B = to_device(a), to_device(b)
    got = to_host(S.sgemm(A, B, precision="tf32x3"))
    ea, eb, bad = W.flags(M, N)
    recs = W.records(M, K), W.records(N, K)
    W.pack(A, B, *recs, M, N, K, S.TF32X3_DEFINES, ea, eb, bad)
    before = [to_host(r).copy() for r in recs]
    W.rescale(A, B, *recs, M, N, K, S.TF32X3_DEFINES, ea, eb)
    after = [to_host(r) for r in recs]
    per_panel = lambda r, rows: r.reshape(-(-rows // 128), -1)
    moved = [np.flatnonzero((per_panel(x, n) != per_panel(y, n)).any(axis=1))
             for x, y, n in zip(before, after, (M, N))]
    assert list(moved[0]) == [0] * out[0] and list(moved[1]) == [1] * out[1]
    assert np.max(_per_element(got, a, b)) < TOLERANCE
