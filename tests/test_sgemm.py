"""book.sgemm: every plan (configuration x split-K / stream-K) right on odd shapes, clear errors,
dispatch."""
import numpy as np
import pytest

from book import BACKEND, LaunchError, to_device, to_host, xp
from book import blas as S
from book.blas import call, choice, kernels
from book.studies import sgemm_lab, sgemm_report
from book.harness.check import TOLERANCE, random_inputs, relative_error, run_matmul
from book.harness.measure import check_kernels
from conftest import sweep_params

ODD = [(1, 1, 1), (33, 17, 65), (65, 64, 63), (7, 300, 600), (130, 70, 33), (151, 269, 37)]
"""Odd sizes. In the last two the rows of B (N = 70, 269) and of a transposed A (M = 130, 151)
start on 8 bytes, then on 4 only (08_async.cu's ROW_ALIGN builds), with edge tiles moved back
to an edge that is not a multiple of 4 (tiles of up to 128 x 256)."""
REPRESENTATIVES = ("128x256", "32x32/k8")
"""The configurations make test checks on every plan (each of BK 8, 16 and 32, 2 to 4 stages,
64 to 256 threads, 8 x 4 and 4 x 4 thread tiles, MINB 1 and 2, serpentine or not); make
test-sweep checks the other nine."""


@pytest.mark.parametrize("config", sweep_params(list(S.CONFIGS), REPRESENTATIVES))
def test_every_plan_is_right_on_odd_shapes(config):
    plans = [S.Plan(config, s) for s in (1, 2, 3, 8)] + [S.Plan(config, streamk=True)]
    table = check_kernels(plans, ODD)
    assert (table == "ok").all().all(), table.to_string()


TRANSPOSED = [(layout, kind) for layout in S.LAYOUTS[1:] for kind in ("64x64", "128x256", "stream-K")]


@pytest.mark.parametrize("case", sweep_params(
    TRANSPOSED, [("tn", "64x64"), ("nt", "stream-K"), ("tt", "64x64")]))
def test_every_kind_of_plan_reads_transposed_operands(case):
    """TRANS_A / TRANS_B builds of 08_async.cu, through Plan.launch (transposed copies made
    once per pair of inputs), on odd shapes: whole tiles and split-K of two tile shapes, and
    stream-K. (make test: each of TRANS_A, TRANS_B and both once; make test-sweep the rest: each
    build costs the emulator seconds.)"""
    layout, kind = case
    plans = ([S.Plan("64x128", streamk=True, layout=layout)] if kind == "stream-K"
             else [S.Plan(kind, s, layout=layout) for s in (1, 3)])
    table = check_kernels(plans, ODD)
    assert (table == "ok").all().all(), table.to_string()


@pytest.mark.parametrize("layout", S.LAYOUTS[1:])
def test_packed_plans_transpose_then_run_the_row_major_kernels(layout):
    """Packed: the transposed operands copied by 09_transpose.cu into row-major workspaces
    (B's rows rounded up to 4 floats), then an NN plan -- tiles, split-K, stream-K, skinny --
    on odd shapes; the ids read back as the same plans."""
    tiles = [S.Packed(S.Plan(c, s), layout) for c in ("64x64", "128x256") for s in (1, 3)]
    tiles.append(S.Packed(S.Plan("64x128", streamk=True), layout))
    table = check_kernels(tiles, ODD)
    assert (table == "ok").all().all(), table.to_string()
    skinny = {(70, 5, 40): S.Packed(S.Skinny("n", 8, 3), layout),
              (5, 70, 9): S.Packed(S.Skinny("m", 8, 1), layout)}
    for shape, plan in skinny.items():
        assert (check_kernels([plan], [shape]) == "ok").all().all(), plan.id
    assert all(S.plan_by_id(p.id) == p for p in tiles + list(skinny.values()))


def test_packing_is_chosen_where_it_pays():
    """The cost model packs a transposed B at 4096^3 (its copy costs less than the slower
    reads), every transposed layout's candidates include packed plans, and an NN plan with a
    padded B is packed without the padding."""
    assert isinstance(S.ranked(4096, 4096, 4096, layout="nt")[0], S.Packed)
    assert all(any(isinstance(p, S.Packed) for p in S.candidates(100, 97, 100, layout=lay))
               for lay in S.LAYOUTS[1:])
    assert not any(isinstance(p, S.Packed) for p in S.candidates(100, 97, 100))
    assert S.packed_plans([S.Plan("64x64", 1, True)], "tn") == [S.Packed(S.Plan("64x64"), "tn")]
    with pytest.raises(ValueError, match="no packed plan"):
        S.Packed(S.Plan("64x64", layout="nt"), "nt")


def _as_layout(x, transposed: bool):
    """x on this backend: C-contiguous, or the transpose of a C-contiguous copy of x.T."""
    return to_device(np.ascontiguousarray(x.T).copy()).T if transposed else to_device(x.copy())


def _force(monkeypatch, plan):
    """sgemm runs ``plan`` whatever the shape (and a GPU's first call does not time others)."""
    monkeypatch.setattr(call, "plan_for", lambda M, N, K, layout="nn": plan)
    monkeypatch.setenv("BOOK_SGEMM_LEARN", "0")


VIEWS = [(plan, layout, out) for plan in ("64x64", "64x64/3", "128x128/stream-K")
         for layout in S.LAYOUTS for out in "nt"]


@pytest.mark.parametrize("case", sweep_params(VIEWS, [  # each plan, layout and out layout once
    ("64x64", "nn", "n"), ("64x64", "tt", "t"), ("64x64/3", "tn", "n"), ("128x128/stream-K", "nt", "t")]))
def test_sgemm_takes_transposed_views_without_a_copy_and_alpha_beta(case, monkeypatch):
    """A and B C- or F-contiguous (X.T), out too (C^T = B^T A^T is computed then); C = alpha A B
    + beta C; where beta is 0, NaN in out does not reach C (out is written, not read). (make
    test: each plan, layout and out layout once; make test-sweep the other 20.)"""
    name, layout, out_layout = case
    plan = {"64x64": S.Plan("64x64"), "64x64/3": S.Plan("64x64", 3),
            "128x128/stream-K": S.Plan("128x128", streamk=True)}[name]
    _force(monkeypatch, plan)
    M, N, K = 37, 30, 41
    a, b = random_inputs(M, N, K, seed=7)
    c0 = np.random.default_rng(3).random((M, N)).astype(np.float32)
    A, B = _as_layout(a, layout[0] == "t"), _as_layout(b, layout[1] == "t")
    ref = a.astype(np.float64) @ b
    out = _as_layout(np.full((M, N), np.nan, np.float32), out_layout == "t")
    assert relative_error(to_host(S.sgemm(A, B, out=out)), ref) < TOLERANCE
    out = _as_layout(c0, out_layout == "t")
    S.sgemm(A, B, out=out, alpha=0.5, beta=-2.0)
    assert relative_error(to_host(out), 0.5 * ref - 2.0 * c0) < TOLERANCE
    out = _as_layout(np.full((M, N), np.nan, np.float32), out_layout == "t")
    S.sgemm(A, B, out=out, alpha=3.0)
    assert relative_error(to_host(out), 3.0 * ref) < TOLERANCE


def test_beta_needs_out():
    a, b = (to_device(x) for x in random_inputs(8, 6, 5, seed=1))
    with pytest.raises(LaunchError, match=r"beta = 1.0 adds beta \* out to the product: pass out"):
        S.sgemm(a, b, beta=1.0)


SKINNY = [(5, 1, 700), (37, 3, 129), (300, 17, 1000), (64, 32, 33), (3, 9, 2), (1, 1, 1),
          (7, 300, 1000), (31, 64, 33), (6, 301, 77), (301, 6, 77)]  # (301: rows not on 16 bytes)


SKINNY_CASES = [(side, layout, splits) for side in "nm" for layout in S.LAYOUTS for splits in (1, 3)]


@pytest.mark.parametrize("case", sweep_params(SKINNY_CASES, [  # each side, layout and split twice
    ("n", "nn", 1), ("m", "nt", 3), ("n", "tn", 3), ("m", "tt", 1)]))
def test_the_skinny_kernels_are_right_on_odd_shapes(case):
    """09_skinny.cu for few columns (side n) or few rows (side m) of C, in every layout (the
    layout picks skinny_dots or skinny_rows), its k's split among blocks or not; each shape with
    the smallest PR that holds its few side, and with PR = 32. (make test: each layout once;
    make test-sweep the other 12.)"""
    side, layout, splits = case
    for M, N, K in SKINNY:
        few = N if side == "n" else M
        if few > 32:
            continue
        prs = {next(p for p in S.SKINNY_PR if p >= few), 32}
        table = check_kernels([S.Skinny(side, pr, splits, layout) for pr in prs], [(M, N, K)])
        assert (table == "ok").all().all(), table.to_string()


@pytest.mark.parametrize("layout", S.LAYOUTS)
def test_the_few_k_kernel_is_right_on_odd_shapes(layout):
    """09_skinny.cu's skinny_outer (K <= PR; C is the cost) in every layout, with the smallest
    PR that holds K and with PR = 32; C's rows unaligned to 16 bytes as well (N odd)."""
    shapes = [(5, 7, 1), (37, 300, 3), (130, 517, 16), (64, 33, 32), (1, 1, 1), (17, 1029, 9),
              (70, 129, 2), (65, 200, 6)]  # (PR 2 and 8, M past a group of OUTER_ROWS)
    for M, N, K in shapes:
        prs = {next(p for p in S.SKINNY_PR if p >= K), 32}
        table = check_kernels([S.Skinny("k", pr, 1, layout) for pr in prs], [(M, N, K)])
        assert (table == "ok").all().all(), table.to_string()


def test_skinny_plans_apply_where_c_has_few_rows_or_columns():
    assert {p.side for p in S.skinny_plans(4096, 7, 4096)} == {"n"}
    assert {(p.side, p.dots) for p in S.skinny_plans(7, 4096, 4096)} == {("m", False)}
    assert {(p.side, p.dots) for p in S.skinny_plans(7, 4096, 4096, "nt")} == {("m", True)}
    assert {(p.side, p.dots) for p in S.skinny_plans(4096, 7, 4096, "tn")} == {("n", False)}
    assert all(p.pr == 8 for p in S.skinny_plans(4096, 7, 4096))
    assert S.skinny_plans(4096, 33, 4096) == []
    assert [p.id for p in S.skinny_plans(4096, 4096, 5)] == ["sgemm_skinnyk8_k1"]
    assert S.plan_by_id("sgemm_skinnyk8_k1_tn") == S.Skinny("k", 8, 1, "tn")
    assert S.ranked(8192, 1, 8192)[0].config == "skinny"  # GEMV: read A once
    with pytest.raises(ValueError, match="no skinny plan"):
        S.Skinny("m", 7, 1, "nn")


def test_the_few_k_kernel_walks_its_groups_of_rows_on_a_two_by_two_grid(monkeypatch):
    """skinny_outer with fewer blocks than groups of rows along y and two columns of blocks:
    each block walks every gridDim.y-th group (a wave of 4 blocks, as on a GPU that holds 4);
    wide products (columns over half a wave) take a block a group."""
    monkeypatch.setattr(kernels, "_outer_wave", lambda pr: 4)
    for shape in [(70, 1100, 20), (70, 2100, 20)]:  # grid (2, 2), then (3, 5)
        table = check_kernels([S.Skinny("k", 32, 1, layout) for layout in ("nn", "tt")], [shape])
        assert (table == "ok").all().all(), table.to_string()


@pytest.mark.parametrize("shape, layout", [((300, 5, 200), "nn"), ((5, 300, 200), "nt"),
                                           ((5, 300, 200), "tt"), ((300, 5, 200), "nt"),
                                           ((5, 300, 200), "nn"), ((300, 5, 200), "tn"),
                                           ((130, 517, 16), "nn"), ((70, 1100, 20), "tt")])
def test_sgemm_runs_a_skinny_plan_with_alpha_beta(shape, layout, monkeypatch):
    M, N, K = shape
    plan = S.skinny_plans(M, N, K, layout)[0]
    _force(monkeypatch, plan)
    a, b = random_inputs(M, N, K, seed=11)
    c0 = np.random.default_rng(4).random((M, N)).astype(np.float32)
    A, B = _as_layout(a, layout[0] == "t"), _as_layout(b, layout[1] == "t")
    out = _as_layout(c0, False)
    S.sgemm(A, B, out=out, alpha=2.0, beta=0.5)
    assert relative_error(to_host(out), 2.0 * (a.astype(np.float64) @ b) + 0.5 * c0) < TOLERANCE


@pytest.mark.parametrize("shape, layout", [((5, 700, 300), "nn"), ((5, 700, 300), "nt"),
                                           ((700, 3, 300), "nn"), ((700, 3, 300), "tn")])
def test_skinny_splits_are_summed_by_their_last_block_in_one_launch(shape, layout, monkeypatch):
    """A split skinny plan (skinny_rows and skinny_dots) adds its slices in its own launch: alpha
    and beta applied, its counters back at zero, and a second call bit for bit the first (the
    slices added in one order, whichever block finishes last)."""
    M, N, K = shape
    plan = next(p for p in S.skinny_plans(M, N, K, layout) if p.splits == 4)
    _force(monkeypatch, plan)
    a, b = random_inputs(M, N, K, seed=12)
    c0 = np.random.default_rng(5).random((M, N)).astype(np.float32)
    A, B = _as_layout(a, layout[0] == "t"), _as_layout(b, layout[1] == "t")
    outs = []
    for _ in range(2):
        out = to_device(c0.copy())
        S.sgemm(A, B, out=out, alpha=2.0, beta=0.5)
        outs.append(to_host(out))
    assert relative_error(outs[0], 2.0 * (a.astype(np.float64) @ b) + 0.5 * c0) < TOLERANCE
    assert np.array_equal(outs[0], outs[1])
    assert not to_host(kernels._tickets(1)).any()


def test_split_k_never_leaves_a_slice_of_k_empty():
    """K = 40 has 3 tiles of 16: 8 requested splits run as 3, and the sum is still right."""
    a, b = random_inputs(20, 24, 40, seed=2)
    out = run_matmul(S.Plan("128x256", 8), a, b)
    assert relative_error(out, a.astype(np.float64) @ b) < TOLERANCE


@pytest.mark.parametrize("shares", [1, 2, 4, 7, 15, 16, 75])
def test_stream_k_is_right_however_the_steps_are_shared(shares):
    """130 x 300 x 70 in 64 x 64 tiles: 15 tiles of 5 k-steps. With 1 and 15 shares every tile
    goes whole; with 2, 4 and 7, 14, 12 and 14 tiles go whole and the 1, 3 and 1 tiles left are
    shared (7 shares of 5 steps: some are empty); 16 and 75 shares share all 75 steps, 75 one
    step each."""
    a, b = random_inputs(130, 300, 70, seed=shares)
    C = xp.full((130, 300), xp.nan, dtype=xp.float32)
    S.Plan("64x64", streamk=True).run(to_device(a), to_device(b), C, 130, 300, 70, 70, 300, 300,
                                      shares=shares)
    assert relative_error(to_host(C), a.astype(np.float64) @ b) < TOLERANCE


def test_a_plan_is_split_k_or_stream_k():
    with pytest.raises(ValueError, match="split-K or stream-K, not both"):
        S.Plan("64x64", 3, streamk=True)


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
    (lambda a, b: (a, xp.zeros((10, 12), xp.float32)[::2, ::2]),
     r"B has strides \(96, 8\) \(bytes\).*or adjacent along each column.*like its transpose, X.T"),
    (lambda a, b: (a, b[::-1]), r"B has strides \(-24, 4\).*rows at least 6 floats apart, in order"),
    (lambda a, b: (a, np.zeros((5, 3))) if BACKEND == "gpu" else (a, [[1.0]]), r"B must be a 2-D"),
])
def test_sgemm_refuses_bad_arguments_with_the_cause(args, message):
    a, b = (to_device(x) for x in random_inputs(8, 6, 5, seed=1))
    with pytest.raises(LaunchError, match=message):
        S.sgemm(*args(a, b))


def test_sgemm_refuses_an_out_of_the_wrong_shape():
    a, b = (to_device(x) for x in random_inputs(8, 6, 5, seed=1))
    with pytest.raises(LaunchError, match=r"out has shape \(6, 8\); A @ B is 8 x 6"):
        S.sgemm(a, b, out=xp.empty((6, 8), dtype=xp.float32))


def _sgemm_on_wider_arrays(plan, monkeypatch, M, N, K, extras, seed):
    """sgemm(A, B, out) with each of them X[:, :n] of an array `extras` floats wider (NaN
    there); asserts that C is right and that out's padding is left as it was."""
    _force(monkeypatch, plan)
    a, b = random_inputs(M, N, K, seed=seed)
    wide = [to_device(np.pad(x, ((0, 0), (0, extra)), constant_values=np.nan))
            for x, extra in zip((a, b, np.zeros((M, N), np.float32)), extras)]
    got = S.sgemm(wide[0][:, :K], wide[1][:, :N], out=wide[2][:, :N])
    assert relative_error(to_host(got), a.astype(np.float64) @ b) < TOLERANCE
    assert np.isnan(to_host(wide[2])[:, N:]).all()


@pytest.mark.parametrize("plan", [S.Plan("64x64"), S.Plan("128x256", 3), S.Plan("64x128", 1, True),
                                  S.Plan("64x64", streamk=True), S.Plan(S.FALLBACK)])
def test_sgemm_takes_rows_of_wider_arrays(plan, monkeypatch):
    """Leading dimensions: odd row lengths, so B's rows are not 16-byte aligned."""
    _sgemm_on_wider_arrays(plan, monkeypatch, 37, 30, 41, (3, 5, 7), seed=5)


@pytest.mark.parametrize("plan", [S.Plan("128x256"), S.Plan("64x64", 3), S.Plan("128x64", 1, True),
                                  S.Plan("64x128", streamk=True)])
def test_edge_tiles_moved_back_store_only_their_own_part(plan, monkeypatch):
    """N = 517 in rows of 520 (16-byte aligned): the edge tiles move back over their neighbours
    and read B's padding past N (NaN here), which reaches only columns of C past N."""
    _sgemm_on_wider_arrays(plan, monkeypatch, 300, 517, 70, (2, 3, 3), seed=9)


def test_block_times_has_one_row_per_block_and_marks_the_edges():
    df = sgemm_lab.block_times("64x64", 100)  # 2 x 2 tiles: all but (0, 0) stick out
    assert list(df.edge) == [False, True, True, True]
    assert (df.end_us >= df.start_us).all() and df.start_us.min() == 0
    table = sgemm_lab.edge_timeline((100,), "64x64")
    assert list(table["edge tiles"]) == ["in place", "moved back"]


def test_pad_b_copies_only_misaligned_rows():
    assert [p.pad_b for p in S.candidates(100, 97, 100)].count(True) == len(S.candidates(100, 96, 100))
    assert not any(p.pad_b for p in S.candidates(100, 96, 100))
    a, b = random_inputs(33, 17, 65, seed=6)
    out = run_matmul(S.Plan("64x128", 2, True), a, b)
    assert relative_error(out, a.astype(np.float64) @ b) < TOLERANCE


def test_a_shape_off_the_table_gets_the_cost_models_best_plan():
    """No tuning table here (the emulator): every shape gets the model's first plan."""
    if choice._table() is None:
        assert S.plan_for(100, 100, 100) == S.ranked(100, 100, 100)[0]


def test_the_cost_model_prefers_what_the_waves_say():
    """Tiny shapes: small tiles (more blocks); a long K over few tiles: split-K or stream-K; a big square:
    the large tile; every candidate gets a finite positive time."""
    assert S.ranked(31, 20, 64)[0].config == "64x64"
    long_k = S.ranked(256, 256, 65536)[0]
    assert long_k.splits > 1 or long_k.streamk  # K shared among many blocks
    big = S.ranked(8192, 8192, 8192)[0]
    assert big.config in ("128x256", "256x128") and big.splits == 1
    for shape in [(1, 1, 1), (7, 9999, 4096), (4097, 4097, 4097), (16384, 128, 4096)]:
        times = [S.model_seconds(p, *shape) for p in S.candidates(*shape)]
        assert all(0 < t < 10 for t in times), shape


def test_a_first_call_times_the_models_best_few_and_remembers_the_fastest(monkeypatch, tmp_path):
    """learn(): the model's best plans timed (FIRST_CALL_SMALL of them at a shape the model puts
    under SMALL_S; here a fake clock makes the third fastest),
    the winner kept in memory and on disk, and plan_for answers with it from then on."""
    from book.harness import measure
    monkeypatch.setattr(choice, "_learned_path", lambda: tmp_path / "learned.csv")
    monkeypatch.setattr(choice, "_LEARNED", {})
    monkeypatch.setattr(choice, "build_all", lambda builds: 0)
    shape = (300, 200, 100)
    order = S.ranked(*shape)
    top = order[:S.FIRST_CALL_SMALL]
    streamk = [[p for p in order if getattr(p, "streamk", False) and p.config == c][0]
               for c in S.STREAMK_CONFIGS]
    assert S.model_seconds(top[0], *shape) < S.SMALL_S
    assert S.first_call_plans(*shape) == top + [p for p in streamk if p not in top]
    big = S.first_call_plans(4096, 4096, 4096)  # (seconds per timing there)
    assert {p.config for p in big if p.streamk} == set(S.STREAMK_CONFIGS)
    assert len(big) <= S.FIRST_CALL + len(S.STREAMK_CONFIGS)
    ran = []
    monkeypatch.setattr(measure, "held_event_seconds",
                        lambda fn, repeats=1: [1.0 if ran[-1] != top[2] else 0.5] * repeats)
    best = S.learn(*shape, lambda plan: ran.append(plan))
    assert best == top[2] and set(ran) == set(S.first_call_plans(*shape))
    S.plan_for.cache_clear()
    assert S.plan_for(*shape) == top[2] or choice._table() is not None
    saved = (tmp_path / "learned.csv").read_text().splitlines()
    assert saved == ["M,N,K,layout,plan", f"300,200,100,nn,{top[2].id}"]
    S.plan_for.cache_clear()


def test_the_suite_has_every_kind_of_shape():
    shapes = sgemm_lab.SUITE
    assert len(shapes) >= 12
    assert {1024, 2048, 4096, 8192, 16384} <= {m for m, n, k in shapes if m == n == k}
    assert any(m % 32 for m, n, k in shapes)
    assert any(k <= min(m, n) / 8 for m, n, k in shapes)
    assert any(k >= 8 * max(m, n) for m, n, k in shapes)
    assert any(max(m, n) >= 64 * min(m, n) for m, n, k in shapes)


def test_the_tuner_tries_split_k_only_where_tiles_are_few():
    big = S.candidates(8192, 8192, 8192)
    assert all(p.splits == 1 for p in big) and len(big) == len(S.CONFIGS) + len(S.STREAMK_CONFIGS)
    assert {p.config for p in big if p.streamk} == set(S.STREAMK_CONFIGS)
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
    plans = (S.sanitizer_plans() + S.candidates(1024, 1024, 16384) + S.candidates(100, 97, 100)
             + S.candidates(100, 97, 100, layout="nt") + S.candidates(4096, 3, 9000)
             + S.candidates(3, 4096, 9000, layout="tt"))
    assert all(S.plan_by_id(p.id) == p and find(p.id) == p for p in plans)
    assert find("naive16").id == "naive16"
    with pytest.raises(KeyError, match=r"no book.sgemm plan 'sgemm_96x96_k1': plan ids are"):
        S.plan_by_id("sgemm_96x96_k1")


def test_the_held_out_shapes_are_seeded_log_uniform_and_fit():
    shapes = sgemm_lab.heldout_shapes()
    assert shapes == sgemm_lab.heldout_shapes() and len(shapes) == sgemm_lab.HELDOUT_COUNT >= 40
    assert all(1 <= v <= 16384 for shape in shapes for v in shape)
    assert all(12 * (m * k + k * n + m * n) <= 6 << 30 for m, n, k in shapes)
    assert not set(shapes) & set(sgemm_lab.SUITE)


@pytest.mark.parametrize("seed", ["FRESH_SEED", "THIRD_SEED"])
def test_the_later_held_out_sets_are_other_draws(seed):
    shapes = sgemm_lab.heldout_shapes(seed=getattr(sgemm_lab, seed))
    earlier = sgemm_lab.heldout_shapes() + sgemm_lab.SUITE + (sgemm_lab.heldout_shapes(seed=sgemm_lab.FRESH_SEED)
                                              if seed == "THIRD_SEED" else [])
    assert len(shapes) == sgemm_lab.HELDOUT_COUNT and not set(shapes) & set(earlier)
    assert all(12 * (M * K + K * N + M * N) <= 6 << 30 for M, N, K in shapes)


@pytest.mark.sweep  # (chapter 9's held-out study, every candidate built: make test-sweep)
def test_heldout_records_the_plan_its_regret_and_the_first_call():
    df, model = sgemm_lab.heldout([(5, 3, 40), (40, 33, 9)], rounds=1)
    b = df[df.kernel == sgemm_lab.BookSgemm.id]
    assert (model.groupby(["M", "N", "K"]).chosen.sum() == 1).all()
    assert (model.model_us > 0).all() and (model.measured_us > 0).all()
    assert (b.status == "ok").all() and (b.regret_pct >= 0).all() and (b.first_call_s > 0).all()
    assert all(S.plan_by_id(p) for p in b.plan) and set(b.set) == {"held-out"}
    assert not model.duplicated(["M", "N", "K", "plan"]).any()  # a time per candidate
    for r in b.itertuples():  # the fastest finalist, timed again no slower than the chosen plan
        times = model[(model.M == r.M) & (model.N == r.N)].set_index("plan").final_us.dropna()
        assert r.best_plan in times.index and r.plan in times.index
        assert times[r.best_plan] == times.min() <= times[r.plan]
        assert r.regret_pct == pytest.approx(100 * (times[r.plan] / times.min() - 1))
    summary = sgemm_lab.heldout_summary(df)
    assert summary.loc[("held-out", "all"), "shapes"] == 2


def test_tf32x3_is_refused_clearly_without_wgmma(monkeypatch):
    """An A100 (8.0) has no wgmma: precision='tf32x3' says so and names the way that runs."""
    monkeypatch.setenv("BOOK_ASSUME_CC", "8.0")
    a, b = (to_device(x) for x in random_inputs(8, 6, 5, seed=1))
    with pytest.raises(LaunchError, match=r"precision='tf32x3' runs on Hopper's wgmma, and this "
                                          r"device needs compute capability 9.0 exactly.*"
                                          r"precision='fp32' runs on every GPU"):
        S.sgemm(a, b, precision="tf32x3")


def test_split_k_where_tiles_are_few():
    """precision='tf32x3': few 128 x 128 tiles of C and a long K: split-K fills the SMs; never
    slices under 8 k-tiles, never more than 16, none where the tiles fill the GPU."""
    assert S.tf32x3_splits(1024, 1024, 1024, 132) == 2
    assert S.tf32x3_splits(512, 512, 65536, 132) == 8
    assert S.tf32x3_splits(130, 200, 3000, 132) == 11
    assert S.tf32x3_splits(4096, 4096, 4096, 132) == 1
    assert S.tf32x3_splits(64, 64, 200, 132) == 1  # K too short to split


def test_chapter_9s_written_figures_hold_in_every_gpus_recorded_runs():
    """The held-out and layout figures chapter 9 and its lab notes (L09_every_shape_notes) write
    by hand (not glued) hold in each GPU's files: a new run that moves them fails here, and the
    prose is read again."""
    from book.harness import results
    runs, layouts = sgemm_report.recorded_heldout(), results.load_every(sgemm_lab.LAYOUTS_FILE)
    assert runs and layouts
    for device, (df, model) in runs.items():
        d = df[(df.kernel == sgemm_lab.BookSgemm.id) & (df.set == "held-out")].copy()
        d["few"] = d[["M", "N"]].min(axis=1)
        shape = lambda r: (r.M, r.N, r.K)
        thin = d[(d.few < 64) & (d.pct_of_cublas < 90) & (d.pct_of_copy < 80)]
        assert {shape(r) for r in thin.itertuples()} == {(4, 10390, 236), (3, 3961, 261),
                                                          (9, 1404, 120), (5, 1, 2175)}, device
        others = thin[(thin.M != 4)]
        assert others.pct_of_cublas.round().between(79, 84).all(), device      # "79 to 84%"
        us = 2e-3 * thin.M * thin.N * thin.K / thin.gflops
        assert us.round().between(7, 10).all(), device                          # "7 to 10 µs"
        big = d[(d.few >= 64) & (d.pct_of_cublas < 90)]
        assert {shape(r) for r in big.itertuples()} == {(775, 122, 1150), (348, 9369, 165)}, device
        assert big.regret_pct.round().between(0, 1).all(), device                # "chosen"
        at = lambda m, n: d[(d.M == m) & (d.N == n)].iloc[0]
        assert 93.5 <= at(539, 819).pct_of_cublas < 95.5, device               # "94-95%"
        assert round(at(128, 2039).pct_of_cublas) == 96, device                  # "96%"
        sk = at(2141, 250)                                     # "its fastest plan ... 96 to 98%"
        assert sk.plan == sk.best_plan == "sgemm_64x128/3s_sk" and 95.5 <= sk.pct_of_cublas < 98.5
        assert 36.5 <= at(2673, 16).pct_of_copy < 38.5, device                 # "37 to 38%"
        assert 92.5 <= at(2673, 16).pct_of_cublas < 97.5, device               # "93 to 97%"
        small = d[d.M.isin([91, 102]) & d.N.isin([207, 968])].pct_of_cublas
        assert len(small) == 2 and small.between(101.5, 105.5).all(), device   # "102 to 105%"
        outer = d[(d.few >= 64) & (d.K <= 8)].pct_of_cublas
        assert len(outer) == 2 and outer.between(118.5, 148.5).all(), device   # "119% to 148%"
        assert big.pct_of_cublas.between(84.5, 90).all(), device                # "85 to 90%"
        assert (big.regret_pct.round(1) <= 0.6).all(), device         # "or one within 0.6%"
        h100 = "H100" in device
        assert round(at(348, 9369).pct_of_cublas, 0 if h100 else 1) == (88 if h100 else 89.9)
        if h100:  # "puts 64 x 128 with stream-K 41st ... runs 23% faster ... than ... first sixteen"
            m = model[(model.M == 2141) & (model.N == 250)].sort_values("model_us")
            rank = list(m.plan).index("sgemm_64x128/3s_sk") + 1
            first16 = m.head(16).measured_us.min()
            assert rank == 41 and round(first16 / m.set_index("plan").measured_us["sgemm_64x128/3s_sk"] * 100 - 100) == 23
        s = df[(df.kernel == sgemm_lab.BookSgemm.id) & (df.set == "suite")].set_index(["M", "N", "K"]).pct_of_cublas
        assert (round(s[(1000,) * 3], 1), round(s[(8192,) * 3], 1)) == ((90.8, 100.2) if h100 else (91.6, 100.8))
        assert 98 <= s[(4096,) * 3] < 99.5, device                   # "98 to 99%" ("What is left")
        assert round(sgemm_lab.geomean_pct(s), 1) == (100.4 if h100 else 100.6), device
    fresh = sgemm_report.recorded_heldout("fresh")
    assert fresh.keys() == runs.keys()
    for device, (df, model) in fresh.items():  # the second set's prose, and "What is left"
        d = df[(df.kernel == sgemm_lab.BookSgemm.id) & (df.set == "held-out")].copy()
        few = d[["M", "N"]].min(axis=1)
        big = d[(few >= 64) & (d.pct_of_cublas < 90)]
        h100 = "H100" in device  # the H200's run predates the one-wave skinny_outer
        assert {(r.M, r.N, r.K) for r in big.itertuples()} == ({(2758, 619, 222)} if h100 else
                                                              {(2758, 619, 222), (2776, 6942, 18)})
        assert round(big[big.M == 2758].pct_of_cublas.iloc[0]) in (86, 87), device  # "86 to 87%"
        wide = d[(d.M == 2776) & (d.N == 6942)].iloc[0]
        assert (wide.plan.startswith("sgemm_skinnyk") and round(wide.pct_of_cublas) == 124) if h100 \
            else round(wide.pct_of_cublas) == 81, device                      # "124%", "(81%)"
        if not h100:  # "our tile kernels write it at 40% ... (H200) where cuBLAS reaches 47 to 49%"
            assert round(wide.pct_of_copy) == 40, device
        assert 46.5 <= wide.pct_of_copy / wide.pct_of_cublas * 100 < 49.5, device
        outer_mid = d[d.plan.str.startswith("sgemm_skinnyk") & (d.K > 8)]
        assert len(outer_mid) == (1 if h100 else 0), device                  # "the one held-out shape"
        first = runs[device][0]
        first = first[(first.kernel == sgemm_lab.BookSgemm.id) & (first.set == "held-out")]
        thin = d[(few < 64) & (d.pct_of_cublas < 90) & (d.pct_of_copy < 80) & (d.M != 12)]
        first_thin = first[(first[["M", "N"]].min(axis=1) < 64) & (first.pct_of_cublas < 90)
                           & (first.pct_of_copy < 80)]
        pcts = list(thin.pct_of_cublas) + list(first_thin.pct_of_cublas)
        assert all(75.5 <= p < 84.5 for p in pcts), device                    # "76 to 84%"
        met = sum(((x[["M", "N"]].min(axis=1) >= 64) & (x.pct_of_cublas >= 90)).sum() for x in (d, first))
        assert met == (27 if "H100" in device else 26), device                  # "27 (H100) and 26"
        worst = d.loc[d.pct_of_cublas.idxmin()]
        cublas_copy = worst.pct_of_copy / worst.pct_of_cublas * 100
        assert (worst.M, worst.N) == (12, 14942) and 62.5 <= cublas_copy < 67.5  # "63 to 67%"
        assert 42.5 <= worst.pct_of_copy < 47.5, device                       # "43 to 47%"
    third = sgemm_report.recorded_heldout("third")
    assert third and set(third) <= set(runs)
    written = {"H100": (134, 23.6, 14.4, 23.8, 43, (125, 129, 132)),  # the third set's prose
               "H200": (136, 23.4, 14.2, 23.7, 42, (145, 134, 141))}
    for device, (df, model) in third.items():  # the third set's prose, and "What is left"
        geo, ours, theirs, tiles32, thin, outer_pcts = written[device.split()[1]]
        d = df[(df.kernel == sgemm_lab.BookSgemm.id) & (df.set == "held-out")].copy()
        few = d[["M", "N"]].min(axis=1)
        s = sgemm_lab.heldout_summary(df).loc["held-out"]
        assert round(s.loc["all", "geometric mean (% of cuBLAS)"]) == geo, device  # "134%", "136%"
        below = {(r.M, r.N, r.K): r.pct_of_cublas for r in d.itertuples()
                 if r.pct_of_cublas < 90 and not (min(r.M, r.N) < 64 and r.pct_of_copy >= 80)}
        assert below.keys() == {(855, 304, 13996), (21, 100, 8482)}, device     # "11 of 12", "27 of 28"
        assert round(below[(855, 304, 13996)]) == 89 and round(below[(21, 100, 8482)]) == 61
        at = lambda m, n: d[(d.M == m) & (d.N == n)].iloc[0]
        slow, cublas = at(21, 100), df[(df.kernel == "cublas") & (df.M == 21) & (df.N == 100)].iloc[0]
        us = lambda r: 2e-3 * r.M * r.N * r.K / r.gflops
        assert round(us(slow), 1) == ours and round(us(cublas), 1) == theirs, device  # "23.6 µs ... 14.4"
        assert slow.plan == slow.best_plan == "sgemm_64x32_k16", device        # "the fastest candidate"
        times = model[(model.M == 21) & (model.N == 100)].set_index("plan").final_us
        assert round(times["sgemm_32x32_k16"], 1) == tiles32, device            # "23.8"
        outer = d[d.plan.str.startswith("sgemm_skinnyk")]
        assert len(outer) == 7 and (outer.K <= 8).all(), device                # "Seven ... K <= 8"
        skinny = model[(model.M == 21) & model.plan.str.startswith("sgemm_skinny")]
        assert skinny.measured_us.min() >= thin, device                          # "43 µs or more"
        for (m, n), pct in zip(((10003, 3831), (174, 12610), (4032, 1811)), outer_pcts):
            assert at(m, n).plan.startswith("sgemm_skinnyk") and round(at(m, n).pct_of_cublas) == pct
        assert (d.K <= 32).sum() == 17                                           # "17 of these 40"
    for device, df in layouts.items():
        book = df[df.library == "book.sgemm"]
        slow = {(r.M, r.N, r.K) for r in book[book.pct_of_cublas < 90].itertuples()}
        assert slow <= {(5, 1, 2175), (128, 2039, 1945), (2673, 16, 3387)}, device


def test_a_plan_takes_the_build_for_its_rows_alignment():
    """Rows of B on 16, 8 or 4 bytes: ROW_ALIGN 4 (the default build), 2 or 1; a transposed A
    counts too; the builds a shape needs name the same."""
    B = xp.zeros((8, 12), dtype=xp.float32)
    assert kernels._row_align("nn", 12, 12, B, B) == 4
    assert kernels._row_align("nn", 12, 10, B, B) == 2
    assert kernels._row_align("nn", 12, 12, B, B[:, 1:]) == 1
    assert kernels._row_align("tn", 10, 12, B, B) == 2
    assert kernels._row_align("nt", 12, 7, B, B) == 4  # a transposed B is read along k: no pieces
    defines = lambda n: {d.get("ROW_ALIGN", 4) for _, d, _ in S.builds_for([S.Plan("64x64")], 8, n)}
    assert [defines(n) for n in (8, 6, 7)] == [{4}, {2}, {1}]


def test_the_skinny_outer_benchmark_checks_and_times_both_launches(capsys):
    """benchmarks/skinny_outer.py runs (small shapes on the emulator): both launch geometries
    pass their check and get a time beside cuBLAS."""
    import runpy
    from pathlib import Path
    runpy.run_path(str(Path(__file__).parents[1] / "benchmarks" / "skinny_outer.py"),
                   run_name="__main__")
    out = capsys.readouterr().out
    assert "a block a group (µs)" in out and "one wave (µs)" in out and "FAILED" not in out


def test_the_checks_of_every_plan_read_as_one_row_per_kind_naming_a_failure():
    import pandas as pd
    from book.studies.sgemm_report import checks_by_kind
    checked = pd.DataFrame({"1x1x1": ["ok", "ok", "FAILED", "ok"], "7x300x600": ["ok"] * 4},
                           index=["64x64 tiles", "32x32 tiles", "64x64 tiles, split-K 3",
                                  "128x128 tiles, stream-K"])
    t = checks_by_kind(checked)
    assert list(t.index) == ["whole tiles (2 plans)", "split-K (1 plan)", "stream-K (1 plan)"]
    assert t.loc["whole tiles (2 plans)", "1x1x1"] == "2 of 2 ok"
    assert t.loc["split-K (1 plan)", "1x1x1"] == "0 of 1 ok; 64x64 tiles, split-K 3: FAILED"


@pytest.mark.parametrize("plan_id", ["sgemm_32x32/k8_k2_padb_tn", "sgemm_64x64_k1_padb_tn"])
def test_a_padded_b_beside_a_on_4_byte_rows_reads_whole_pieces_only_on_16_bytes(plan_id):
    """A transposed on rows of 33 floats picks the ROW_ALIGN 1 build, which moves the last column
    of tiles back to the edge, N - BN = 13: B's padded copy has rows on 16 bytes, and its last
    tile of K (checked copies) read 16 bytes at column 13 -- 'misaligned address' on an H200
    (found by precision='auto''s first calls); the emulator now checks cp.async's alignment."""
    from book.blas import plan_by_id
    M, N, K, lda = 33, 45, 70, 33
    rng = np.random.default_rng(148)
    a, b = rng.standard_normal((M, K), dtype=np.float32), rng.standard_normal((K, N), dtype=np.float32)
    stored = np.zeros((K, lda), np.float32)
    stored[:, :M] = a.T
    C = to_device(np.full((M, N), np.nan, np.float32))
    plan_by_id(plan_id).run(to_device(stored), to_device(b), C, M, N, K, lda, N, N)
    assert relative_error(to_host(C), a.astype(np.float64) @ b) < 1e-6
