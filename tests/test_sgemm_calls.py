"""book.sgemm's first and repeated calls. A repeated call (``launch.replay``), at a shape,
layout and alignment seen before, repeats the last one's launches on the new arrays: right for
every kind of plan, refused where the launches read a copy made during the call. A first call
never waits for more than one build (``choice.settle``), and what it compiles in the background
is what its timing then loads."""
import numpy as np
import pytest

from book import BACKEND, to_device, to_host, xp
from book import blas as S
from book.blas import call
from book.harness.check import TOLERANCE, random_inputs, relative_error
from book.launch import replay, streams

PLANS = {"tiles": S.Plan("64x64"), "split-K": S.Plan("64x64", 3),
         "stream-K": S.Plan("128x128", streamk=True), "skinny": S.Skinny("n", 8, 3),
         "B padded": S.Plan("64x64", 1, True)}  # (N = 30: B copied into rows of 32 floats)


def _force(monkeypatch, plan):
    monkeypatch.setattr(call, "plan_for", lambda M, N, K, layout="nn": plan)
    monkeypatch.setenv("BOOK_SGEMM_LEARN", "0")
    replay.clear()


def _operand(x, transposed: bool):
    return to_device(np.ascontiguousarray(x.T)).T if transposed else to_device(x)


@pytest.mark.parametrize("kind", PLANS)
@pytest.mark.parametrize("layout", ["nn", "tn", "nt"])
def test_a_repeated_call_replays_its_launches_on_the_new_arrays(kind, layout, monkeypatch):
    """Calls with the same key: the first records its launches (or, where it grew a scratch
    buffer and so cleared the table, the second does), the last is a replay, and every one is
    right on new values, out transposed and alpha, beta included."""
    _force(monkeypatch, PLANS[kind])
    M, N, K = (7, 6, 41) if kind == "skinny" else (37, 30, 41)
    for out_t in (False, True):
        for seed in (1, 2, 3):
            a, b = random_inputs(M, N, K, seed=seed)
            c0 = np.random.default_rng(seed).random((M, N)).astype(np.float32)
            A, B = _operand(a, layout[0] == "t"), _operand(b, layout[1] == "t")
            out = _operand(c0, out_t)
            key = call._key(A, B, out, 0.5, -2.0, "fp32")
            assert (key in replay.TABLE) == (seed == 3) or seed == 2  # (recorded by the
            S.sgemm(A, B, out=out, alpha=0.5, beta=-2.0)              # second, at the latest)
            assert seed == 1 or key in replay.TABLE
            ref = 0.5 * (a.astype(np.float64) @ b) - 2.0 * c0
            assert relative_error(to_host(out), ref) < TOLERANCE, (kind, layout, out_t, seed)
            C = S.sgemm(A, B)
            assert relative_error(to_host(C), a.astype(np.float64) @ b) < TOLERANCE


def test_a_call_whose_launches_read_a_copy_is_not_replayed(monkeypatch):
    """A launch given an array made during the call (neither an operand nor scratch memory of
    ``streams.buffer``) refuses the recording: the next call would read the stale copy. So does
    sgemm(A, A): one array as two operands."""
    from book.blas import kernels
    A, B = (to_device(x) for x in random_inputs(30, 31, 30, seed=3))
    C = xp.empty((30, 31), xp.float32)
    with replay.recording(A, B, C) as rec:
        copy = A.copy()
        kernels._packed(copy, 30, 30, 30, 30, slot=3)
    assert rec.replay() is None
    with replay.recording(A, B, C) as rec:
        kernels._packed(A, 30, 30, 30, 30, slot=3)
    assert rec.replay() is not None
    _force(monkeypatch, S.Plan("64x64"))
    a = random_inputs(30, 30, 30, seed=4)[0]
    A = to_device(a)
    for _ in range(2):
        assert relative_error(to_host(S.sgemm(A, A)), a.astype(np.float64) @ a) < TOLERANCE
    assert not replay.TABLE


def test_replays_are_forgotten_when_plans_or_scratch_memory_change(monkeypatch):
    _force(monkeypatch, S.Plan("64x64", 2))
    A, B = (to_device(x) for x in random_inputs(20, 20, 20, seed=5))
    S.sgemm(A, B)
    assert replay.TABLE
    streams.release()
    assert not replay.TABLE
    S.sgemm(A, B)
    S.use_plans(None)
    assert not replay.TABLE


def test_a_launch_through_the_checked_api_refuses_the_recording():
    """Only launches of ``unchecked`` are noted; a checked one would be missed by a replay."""
    from book.registry import find_kernel
    spec = find_kernel("naive16")
    A, B = (to_device(x) for x in random_inputs(8, 8, 8, seed=1))
    C = xp.empty((8, 8), xp.float32)
    with replay.recording(A, B, C) as rec:
        spec.launch(A, B, C, 8, 8, 8)
    assert rec.replay() is None


def test_a_first_call_never_waits_for_more_than_one_build(monkeypatch, tmp_path):
    """choice.settle: where the plans a first call would time are not all compiled, it returns
    None (the call runs the model's best, whose build alone it waits for) and hands the others
    to a process of its own. Once they are compiled, the shape's first call times nothing (the
    model's best, at once), each next call times one plan, and the call that times the last
    keeps the fastest and runs it."""
    from book.blas import choice
    from book.harness import measure
    monkeypatch.setattr(choice, "_PENDING", {})
    monkeypatch.setattr(choice, "_TRIALS", {})
    monkeypatch.setattr(choice, "_LEARNED", {})
    monkeypatch.setattr(choice, "_learned_path", lambda: tmp_path / "learned.csv")
    compiled, ran = [], []

    class Process:  # (subprocess.Popen's poll: None while it runs)
        running = True

        def poll(self):
            return None if self.running else 0
    monkeypatch.setattr(choice, "built", lambda builds: False)
    monkeypatch.setattr(choice, "compile_behind", lambda builds: compiled.append(builds) or Process())
    shape = (300, 200, 100)
    plans = choice.first_call_plans(*shape)
    monkeypatch.setattr(measure, "held_event_seconds",
                        lambda fn, repeats=1: [0.5 if ran[-1] == plans[2] else 1.0] * repeats)
    run = ran.append
    assert choice.settle(*shape, run=run) is None
    assert choice.settle(*shape, run=run) is None and not ran  # (still compiling)
    choice._PENDING[(*shape, "nn")].running = False
    best = S.builds_for(plans[:1], 300, 200, "nn")
    assert len(compiled) == 1 and compiled[0] and not any(b in best for b in compiled[0])
    assert choice.settle(*shape, run=run) is None and not ran  # compiled: the model's best at once
    for i in range(len(plans) - 1):
        assert choice.settle(*shape, run=run) is None and ran[-1] == plans[i]  # one plan a call
    assert choice.settle(*shape, run=run) == plans[2] and set(ran) == set(plans)
    assert choice._known(*shape, "nn") and not choice._TRIALS
    monkeypatch.setattr(choice, "built", lambda builds: True)
    assert choice.settle(5, 6, 7, run=run) is None and (5, 6, 7, "nn") in choice._TRIALS


@pytest.mark.parametrize("layout", ["nn", "tn"])
def test_tune_chooses_the_plans_of_shapes_now(layout, monkeypatch, tmp_path):
    """tune(shapes): every shape's first-call timing at once, on operands stored as the layout
    reads them (here the timing is a stand-in that runs the model's best); on the CPU backend
    it answers with the model's best."""
    from book.blas import choice
    shapes = [(20, 30, 40), (7, 5, 9)]
    monkeypatch.setattr(choice, "_LEARNED", {"loaded": True, "plans": {}})  # (nothing known,
    monkeypatch.setattr(choice, "_learned_path", lambda: tmp_path / "learned.csv")  # kept apart)
    S.plan_for.cache_clear()
    if not S.learning():
        assert S.tune(shapes, layout) == {s: S.plan_for(*s, layout) for s in shapes}
    ran = []

    def learn(M, N, K, run, layout="nn", lds=None, operands=None):
        plan = S.first_call_plans(M, N, K, layout)[0]
        run(plan)
        ran.append((M, N, K))
        return plan
    monkeypatch.setattr(choice, "learning", lambda: True)
    monkeypatch.setattr(choice, "learn", learn)
    S.tune(shapes, layout)
    assert ran == shapes
    S.plan_for.cache_clear()


def _offset(x):
    """x on this backend, contiguous, starting 4 bytes past a 16-byte boundary (a view's start)."""
    flat = xp.empty(x.size + 1, dtype=xp.float32)[1:]
    whole = flat.reshape(x.shape)
    whole[...] = to_device(x)
    return whole


@pytest.mark.sweep  # (make test-sweep runs it: 25 s of the emulator a case)
@pytest.mark.parametrize("layout, shifted", [("tt", False), ("tn", True)])
def test_builds_for_names_every_build_a_first_call_loads(layout, shifted, monkeypatch):
    """What settle compiles in the background (``builds_for``) is what the timing of the first
    call's plans then loads: each entry a run takes (spied), as a GPU builds it (one entry per
    build, its ROW_ALIGN), is among the builds named -- packed copies of B with rows rounded up
    to 4 floats and stream-K's _ld entries included."""
    from book.blas import kernels
    M, N, K = 37, 30, 41  # (tiles, stream-K, packed, B padded; N not a multiple of 4)
    taken, real = set(), kernels._entry

    def spy(config, entry, layout="nn", align=4):
        taken.add((config, entry, layout, align))
        return real(config, entry, layout, align)
    monkeypatch.setattr(kernels, "_entry", spy)
    kernels._kernel.cache_clear()
    a, b = random_inputs(M, N, K, seed=2)
    move = _offset if shifted else to_device  # (operands off 16 bytes: another ROW_ALIGN)
    A = move(np.ascontiguousarray(a.T)) if layout[0] == "t" else move(a)
    B = move(np.ascontiguousarray(b.T)) if layout[1] == "t" else move(b)
    C = xp.empty((M, N), xp.float32)
    for plan in S.first_call_plans(M, N, K, layout):
        plan.run(A, B, C, M, N, K, A.shape[1], B.shape[1], N)
    kernels._kernel.cache_clear()
    monkeypatch.setattr(kernels, "_address", kernels._address)  # (these arrays' addresses,
    if BACKEND == "cpu":                                          # the builds as a GPU makes them)
        monkeypatch.setattr(kernels, "_address", lambda x: x.ctypes.data)
    monkeypatch.setattr(kernels, "BACKEND", "gpu")
    named = S.builds_for(S.first_call_plans(M, N, K, layout), M, N, layout, K, A.shape[1],
                         B.shape[1], A, B)
    missing = [t for t in taken if not all(b in named for b in real(*t).builds())]
    assert not missing, missing


def test_a_replay_keeps_no_operand_of_the_call_it_recorded_alive(monkeypatch):
    """The table of replays holds scratch memory, never the arrays a user passed."""
    import gc
    import weakref
    _force(monkeypatch, S.Plan("64x64", 2))
    a, b = random_inputs(20, 24, 28, seed=6)
    for _ in range(2):  # (a call that grew scratch memory cleared the table: the next records)
        A, B = to_device(a), to_device(b)
        C = S.sgemm(A, B)
        if replay.TABLE:
            break
    gone = [weakref.ref(x) for x in (A, B, C)] if BACKEND == "cpu" else []
    assert replay.TABLE
    del A, B, C
    gc.collect()
    assert all(r() is None for r in gone)


def test_a_switch_that_changes_the_plan_or_new_scratch_memory_forgets_replays(monkeypatch):
    """BOOK_ASSUME_CC (an older GPU previewed: the fallback plan) and BOOK_SGEMM_LEARN are part
    of a call's key; a scratch buffer replaced by a larger one clears the table (its replays held
    the old one); a replay recorded across another thread's clear is not kept."""
    _force(monkeypatch, S.Plan("64x64", 2))
    streams.release()  # (scratch memory as a new program has it: none)
    a, b = random_inputs(20, 20, 20, seed=8)
    A, B = to_device(a), to_device(b)
    S.sgemm(A, B)
    assert len(replay.TABLE) == 1
    monkeypatch.setenv("BOOK_ASSUME_CC", "7.5")
    assert call._key(A, B, None, 1.0, 0.0, "fp32") not in replay.TABLE
    monkeypatch.delenv("BOOK_ASSUME_CC")
    a, b = random_inputs(200, 220, 240, seed=9)  # (split-K's slices: a larger workspace)
    S.sgemm(to_device(a), to_device(b))
    assert all(k[0] != (20, 20) for k in replay.TABLE)
    since = replay.generation()
    replay.clear()
    replay.keep("key", lambda *args: None, since)
    assert "key" not in replay.TABLE


def test_alpha_minus_zero_is_not_replayed_as_zero(monkeypatch):
    """-0.0 == 0.0 in Python, but C = -0.0 A B writes -0.0 where A B > 0: alpha's and beta's
    signs are part of a call's key, so a call with alpha = -0.0 is not a replay of one with 0.0."""
    _force(monkeypatch, S.Plan("64x64", 2))
    a, b = np.ones((9, 10), np.float32), np.ones((10, 11), np.float32)
    A, B = to_device(a), to_device(b)
    for _ in range(2):  # (the second call: a replay)
        assert not np.signbit(to_host(S.sgemm(A, B, alpha=0.0))).any()
    assert call._key(A, B, None, -0.0, 0.0, "fp32") not in replay.TABLE
    for _ in range(2):
        assert np.signbit(to_host(S.sgemm(A, B, alpha=-0.0))).all()


@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_a_repeated_ozaki_call_replays_its_launches_on_the_new_arrays(layout):
    """precision='ozaki' at a key seen before repeats the recorded launches (its six kernels,
    the scratch zeroed by a launch of its own): right on new values, A or B read transposed;
    alpha and beta other than 1 and 0, or out a view, take the full path every time."""
    from book.registry import device_cc
    if device_cc() < (8, 0):
        pytest.skip("precision='ozaki' needs compute capability 8.0")
    M, N, K = 37, 30, 41
    for seed in (1, 2, 3):
        a, b = random_inputs(M, N, K, seed=seed)
        a[0, :] *= 2.0 ** (seed * 9)  # (a different scale each call: nothing kept from the last)
        A, B = _operand(a, layout[0] == "t"), _operand(b, layout[1] == "t")
        out = xp.full((M, N), xp.nan, dtype=xp.float32)
        key = call._key(A, B, out, 1.0, 0.0, "ozaki")
        assert (key in replay.TABLE) == (seed > 1) or seed == 2
        S.sgemm(A, B, out=out, precision="ozaki")  # (recorded by the second call at the latest:
        assert seed == 1 or key in replay.TABLE    # the first may grow a scratch buffer)
        assert relative_error(to_host(out), a.astype(np.float64) @ b) < TOLERANCE, (layout, seed)
        half = xp.zeros((M, 2 * N), dtype=xp.float32)[:, ::2]
        S.sgemm(A, B, out=half, alpha=0.5, precision="ozaki")
        assert call._key(A, B, half, 0.5, 0.0, "ozaki") not in replay.TABLE
        assert relative_error(to_host(half), 0.5 * (a.astype(np.float64) @ b)) < TOLERANCE


def test_a_replayed_ozaki_call_gives_the_bits_of_its_full_path_on_arrays_that_alternate():
    """A replay (on a GPU, one CUDA graph whose nodes take the new addresses only where they
    changed: ``launch.graphs``) on two sets of arrays in turn, heavy-tailed so that the guard's
    fallback writes some elements: each call the bits ozaki_sgemm gives without a replay."""
    from book.blas.ozaki import ozaki_sgemm
    from book.registry import device_cc
    if device_cc() < (8, 0):
        pytest.skip("precision='ozaki' needs compute capability 8.0")
    rng = np.random.default_rng(7)
    M, N, K = 45, 70, 300
    sets = [tuple(to_device(rng.standard_t(2, s).astype(np.float32)) for s in ((M, K), (K, N)))
            for _ in range(2)]
    want = [to_host(ozaki_sgemm(A, B)) for A, B in sets]
    outs = [xp.full((M, N), xp.nan, dtype=xp.float32) for _ in sets]
    for turn in range(6):
        (A, B), out = sets[turn % 2], outs[turn % 2]
        out[...] = xp.nan
        S.sgemm(A, B, out=out, precision="ozaki")
        assert turn < 2 or call._key(A, B, out, 1.0, 0.0, "ozaki") in replay.TABLE
        np.testing.assert_array_equal(to_host(out), want[turn % 2], err_msg=f"call {turn}")


@pytest.mark.parametrize("layout", ["tn", "nt", "tt"])
def test_a_repeated_tf32x3_call_on_views_replays_with_the_copies_it_made(layout):
    """precision='tf32x3' with A or B a transposed view: the first call copies them C-contiguous;
    a repeated call replays that copy and the launches on the new arrays (no lookup of its
    plan): the full path's bits on new values each time; out a view still takes the full path."""
    from book.blas.tf32x3 import _tf32x3_why
    import os
    if _tf32x3_why(os.environ.get("BOOK_ASSUME_CC")):
        pytest.skip("precision='tf32x3' needs wgmma (compute capability 9.0)")
    M, N, K = 37, 30, 41
    for seed in (1, 2, 3):
        a, b = random_inputs(M, N, K, seed=seed)
        A, B = _operand(a, layout[0] == "t"), _operand(b, layout[1] == "t")
        out = xp.full((M, N), xp.nan, dtype=xp.float32)
        key = call._key(A, B, out, 1.0, 0.0, "tf32x3")
        assert (key in replay.TABLE) == (seed > 1) or seed == 2
        S.sgemm(A, B, out=out, precision="tf32x3")  # (recorded by the second call at the latest:
        assert seed == 1 or key in replay.TABLE      # the first may grow a scratch buffer)
        want = to_host(S.sgemm(to_device(a), to_device(b), precision="tf32x3"))
        assert np.array_equal(to_host(out), want), (layout, seed)
        half = xp.zeros((M, 2 * N), dtype=xp.float32)[:, ::2]
        S.sgemm(A, B, out=half, precision="tf32x3")
        assert call._key(A, B, half, 1.0, 0.0, "tf32x3") not in replay.TABLE
