"""book.sgemm: every plan (configuration x split-K) right on odd shapes, clear errors, dispatch."""
import numpy as np
import pytest

from book import LaunchError, to_device, to_host, xp
from book import gemm as S
from book.harness.check import TOLERANCE, random_inputs, relative_error, run_matmul
from book.harness.measure import check_kernels

ODD = [(1, 1, 1), (33, 17, 65), (65, 64, 63), (7, 300, 600), (130, 70, 33)]


@pytest.mark.parametrize("config", list(S.CONFIGS))
def test_every_plan_is_right_on_odd_shapes(config):
    plans = [S.Plan(config, s) for s in (1, 2, 3, 8)]
    table = check_kernels(plans, ODD)
    assert (table == "ok").all().all(), table.to_string()


def test_split_k_never_leaves_a_slice_of_k_empty():
    """K = 40 has 3 tiles of 16: 8 requested splits run as 3, and the sum is still right."""
    a, b = random_inputs(20, 24, 40, seed=2)
    out = run_matmul(S.Plan("128x256", 8), a, b)
    assert relative_error(out, a.astype(np.float64) @ b) < TOLERANCE


def test_sgemm_takes_any_shape_and_writes_into_out():
    a, b = random_inputs(37, 29, 41, seed=0)
    out = xp.full((37, 29), xp.nan, dtype=xp.float32)
    got = S.sgemm(to_device(a), to_device(b), out=out)
    assert got is out
    assert relative_error(to_host(out), a.astype(np.float64) @ b) < TOLERANCE


@pytest.mark.parametrize("args, message", [
    (lambda a, b: (a, a), r"A is 8 x 5 and B is 8 x 5; need A's columns = B's rows"),
    (lambda a, b: (a.astype(xp.float64), b), r"A must be float32, got float64"),
    (lambda a, b: (a, b[:, ::2]), r"B has strides \(24, 8\) \(bytes\): its floats must be adjacent"),
    (lambda a, b: (a, b[::-1]), r"B has strides \(-24, 4\).*rows at least 6 floats apart, in order"),
    (lambda a, b: (a, np.zeros((5, 3))) if xp is not np else (a, [[1.0]]), r"B must be a 2-D"),
])
def test_sgemm_refuses_bad_arguments_with_the_cause(args, message):
    a, b = (to_device(x) for x in random_inputs(8, 6, 5, seed=1))
    with pytest.raises(LaunchError, match=message):
        S.sgemm(*args(a, b))


def test_sgemm_refuses_an_out_of_the_wrong_shape():
    a, b = (to_device(x) for x in random_inputs(8, 6, 5, seed=1))
    with pytest.raises(LaunchError, match=r"out has shape \(6, 8\); A @ B is 8 x 6"):
        S.sgemm(a, b, out=xp.empty((6, 8), dtype=xp.float32))


@pytest.mark.parametrize("plan", [S.Plan("64x64"), S.Plan("128x256", 3), S.Plan("64x128", 1, True),
                                  S.Plan(S.FALLBACK)])
def test_sgemm_takes_rows_of_wider_arrays(plan, monkeypatch):
    """Leading dimensions: A, B and out as X[:, :n] of wider arrays (odd row lengths, so B's
    rows are not 16-byte aligned); the padding of out is left as it was."""
    monkeypatch.setattr(S, "plan_for", lambda M, N, K: plan)
    a, b = random_inputs(37, 30, 41, seed=5)
    wide = [to_device(np.pad(x, ((0, 0), (0, extra)), constant_values=np.nan))
            for x, extra in ((a, 3), (b, 5), (np.zeros((37, 30), np.float32), 7))]
    got = S.sgemm(wide[0][:, :41], wide[1][:, :30], out=wide[2][:, :30])
    assert relative_error(to_host(got), a.astype(np.float64) @ b) < TOLERANCE
    assert np.isnan(to_host(wide[2])[:, 30:]).all()


def test_pad_b_copies_only_misaligned_rows():
    assert [p.pad_b for p in S.candidates(100, 97, 100)].count(True) == len(S.candidates(100, 96, 100))
    assert not any(p.pad_b for p in S.candidates(100, 96, 100))
    a, b = random_inputs(33, 17, 65, seed=6)
    out = run_matmul(S.Plan("64x128", 2, True), a, b)
    assert relative_error(out, a.astype(np.float64) @ b) < TOLERANCE


def test_without_a_tuned_table_the_default_plan_runs():
    assert S.plan_for(100, 100, 100) == S.DEFAULT or S._table() is not None


def test_the_suite_has_every_kind_of_shape():
    shapes = S.SUITE
    assert len(shapes) >= 12
    assert {1024, 2048, 4096, 8192, 16384} <= {m for m, n, k in shapes if m == n == k}
    assert any(m % 32 for m, n, k in shapes)
    assert any(k <= min(m, n) / 8 for m, n, k in shapes)
    assert any(k >= 8 * max(m, n) for m, n, k in shapes)
    assert any(max(m, n) >= 64 * min(m, n) for m, n, k in shapes)


def test_the_tuner_tries_split_k_only_where_tiles_are_few():
    big = S.candidates(8192, 8192, 8192)
    assert all(p.splits == 1 for p in big) and len(big) == len(S.CONFIGS)
    assert any(p.splits > 1 for p in S.candidates(1024, 1024, 16384))


def test_below_compute_capability_8_the_fallback_plan_runs(monkeypatch):
    """A T4 has no cp.async: sgemm then runs chapter 8's warp-tile kernel, still right."""
    monkeypatch.setenv("BOOK_ASSUME_CC", "7.5")
    S.plan_for.cache_clear()
    try:
        assert S.plan_for(64, 64, 64) == S.Plan(S.FALLBACK)
        a, b = random_inputs(33, 17, 65, seed=4)
        assert relative_error(to_host(S.sgemm(to_device(a), to_device(b))), a.astype(np.float64) @ b) < TOLERANCE
        with pytest.raises(LaunchError, match="cannot run here: it needs compute capability 8.0"):
            S.Plan("64x64").launch(*(to_device(x) for x in (a, b)), xp.empty((33, 17), xp.float32), 33, 17, 65)
    finally:
        S.plan_for.cache_clear()


def test_plan_ids_name_their_plans_for_the_profiling_tools():
    """Results files and the tools (ncu, compute-sanitizer) name plans by id; each id maps back."""
    from book.profile import find
    plans = S.sanitizer_plans() + S.candidates(1024, 1024, 16384) + S.candidates(100, 97, 100)
    assert all(S.plan_by_id(p.id) == p and find(p.id) == p for p in plans)
    assert find("naive16").id == "naive16"
    with pytest.raises(KeyError, match=r"no book.sgemm plan 'sgemm_96x96_k1': plan ids are"):
        S.plan_by_id("sgemm_96x96_k1")
