"""A plan launched by hand at a shape it does not compute raises, naming the plan, the shape and
what it covers, instead of leaving part of C unwritten (issue: silent wrong answers). Every kind of
plan -- tiles, split-K, stream-K, packed, skinny, and the 3xTF32 call's launches -- on the
backend that runs here (the emulator in CI); the checks run before any launch."""
import numpy as np
import pytest

from book import LaunchError, xp
from book import blas as S
from book.harness.check import random_inputs, relative_error, run_matmul
from book.launch import wgmma as W

OUTSIDE = {"n": (130, 258, 33), "m": (258, 130, 33), "k": (130, 258, 40)}
"""A shape outside every skinny plan of each side: N, M or K above 32, the largest PR."""


def _skinny_plans():
    return [S.Skinny(side, pr, splits, layout) for side in "nmk" for pr in S.SKINNY_PR
            for splits in ((1,) if side == "k" else (1, 4)) for layout in S.LAYOUTS]


@pytest.mark.parametrize("plan", _skinny_plans() + [S.Packed(S.Skinny("n", 8, 2), "tn"),
                                                     S.Packed(S.Skinny("m", 32, 1), "nt")],
                         ids=lambda p: p.id)
def test_a_skinny_plan_outside_its_columns_rows_or_k_raises(plan):
    side = plan.plan.side if isinstance(plan, S.Packed) else plan.side
    M, N, K = OUTSIDE[side]
    few = {"n": "N", "m": "M", "k": "K"}[side]
    with pytest.raises(LaunchError, match=rf"{plan.id} .*cannot compute {M} x {N} x {K}: it "
                                          rf"computes {few} <= \d+ only"):
        run_matmul(plan, *random_inputs(M, N, K, seed=1))


def test_a_skinny_plan_inside_its_range_is_right():
    """The control: the same kind of plan at a shape it covers runs and is right."""
    a, b = random_inputs(130, 7, 33, seed=2)
    got = run_matmul(S.Skinny("n", 8, 1), a, b)
    assert relative_error(got, a.astype(np.float64) @ b) < 1e-5


@pytest.mark.parametrize("plan", [S.Plan("64x64"), S.Plan("64x128", 3), S.Plan("128x128", streamk=True),
                                  S.Plan("64x64", layout="tn"), S.Skinny("n", 8, 1),
                                  S.Packed(S.Plan("64x64", 2), "nt")], ids=lambda p: p.id)
def test_rows_shorter_than_the_shape_raise(plan):
    """Rows of A (or of a transposed A, B, C) fewer floats apart than the shape needs: the plan
    would read or write past them."""
    M, N, K = 40, 6, 50
    lda = (K if plan.layout[0] == "n" else M) - 1
    ldb = N if plan.layout[1] == "n" else K
    A, B, C = (xp.zeros(n, dtype=xp.float32) for n in (M * K, K * N, M * N))
    with pytest.raises(LaunchError, match=rf"{plan.id} .*{M} x {N} x {K}: it needs A's rows at "
                                          rf"least {lda + 1} floats apart, not {lda}"):
        plan.run(A, B, C, M, N, K, lda, ldb, N)


def test_the_fallback_reads_contiguous_arrays_only():
    plan = S.Plan(S.FALLBACK)
    A, B, C = (xp.zeros(n, dtype=xp.float32) for n in (40 * 52, 50 * 6, 40 * 6))
    with pytest.raises(LaunchError, match=r"reads contiguous arrays only"):
        plan.run(A, B, C, 40, 6, 50, 52, 6, 6)


def test_the_3xtf32_launches_check_their_records_and_flags():
    """pack_split, rescale and the product given records or flags of a smaller shape (a
    workspace of another call), or a C too small: each raises before its launch."""
    M, N, K = 130, 70, 300
    defines = S.TF32X3_DEFINES
    A, B, C = (xp.zeros(s, dtype=xp.float32) for s in ((M, K), (K, N), (M, N)))
    ra, rb = W.records(M, K), W.records(N, K)
    small_a, small_b = W.records(M - 2, K), W.records(N, K - 40)
    ea, eb, bad = W.flags(M, N)
    ea_small = W.flags(M - 1, N)[0]
    with pytest.raises(LaunchError, match=rf"pack_split at {M} x {N} x {K}: A's records holds"):
        W.pack(A, B, small_a, rb, M, N, K, defines, ea, eb, bad)
    with pytest.raises(LaunchError, match=r"pack_split .*B's records holds"):
        W.pack(A, B, ra, small_b, M, N, K, defines, ea, eb, bad)
    with pytest.raises(LaunchError, match=r"pack_split .*: ea holds 129 elements"):
        W.pack(A, B, ra, rb, M, N, K, defines, ea_small, eb, bad)
    with pytest.raises(LaunchError, match=r"rescale .*A's records holds"):
        W.rescale(A, B, small_a, rb, M, N, K, defines, ea, eb)
    with pytest.raises(LaunchError, match=r"product .*B's records holds"):
        W.product(ra, small_b, C, M, N, K, defines, 1, ea, eb, A, B, bad)
    with pytest.raises(LaunchError, match=r"product .*C holds"):
        W.product(ra, rb, C[:-1], M, N, K, defines, 1, ea, eb, A, B, bad)
    areg = defines + (("AREG", 1),)
    with pytest.raises(LaunchError, match=r"product .*: A holds"):
        W.product(A[:-1], rb, C, M, N, K, areg, 1, ea, eb, A, B, bad)
