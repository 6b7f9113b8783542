"""book.sgemm's repeated calls (``launch.replay``): a call at a shape, layout and alignment seen
before repeats the last one's launches on the new arrays -- right for every kind of plan, and
refused where the launches read a copy made during the call."""
import numpy as np
import pytest

from book import BACKEND, to_device, to_host, xp
from book import blas as S
from book.blas import call
from book.harness.check import TOLERANCE, random_inputs, relative_error
from book.launch import replay, streams

PLANS = {"tiles": S.Plan("64x64"), "split-K": S.Plan("64x64", 3),
         "stream-K": S.Plan("128x128", streamk=True), "skinny": S.Skinny("n", 8, 3)}


def _force(monkeypatch, plan):
    monkeypatch.setattr(call, "plan_for", lambda M, N, K, layout="nn": plan)
    monkeypatch.setenv("BOOK_SGEMM_LEARN", "0")
    replay.clear()


def _operand(x, transposed: bool):
    return to_device(np.ascontiguousarray(x.T)).T if transposed else to_device(x)


@pytest.mark.parametrize("kind", PLANS)
@pytest.mark.parametrize("layout", ["nn", "tn", "nt"])
def test_a_repeated_call_replays_its_launches_on_the_new_arrays(kind, layout, monkeypatch):
    """Two calls with the same key: the second is a replay (the table holds the first's
    launches), and right on new values, out transposed and alpha, beta included."""
    _force(monkeypatch, PLANS[kind])
    M, N, K = (7, 6, 41) if kind == "skinny" else (37, 30, 41)
    for out_t in (False, True):
        for seed in (1, 2):
            a, b = random_inputs(M, N, K, seed=seed)
            c0 = np.random.default_rng(seed).random((M, N)).astype(np.float32)
            A, B = _operand(a, layout[0] == "t"), _operand(b, layout[1] == "t")
            out = _operand(c0, out_t)
            before = len(replay.TABLE)
            S.sgemm(A, B, out=out, alpha=0.5, beta=-2.0)
            assert len(replay.TABLE) == before + (seed == 1)
            ref = 0.5 * (a.astype(np.float64) @ b) - 2.0 * c0
            assert relative_error(to_host(out), ref) < TOLERANCE, (kind, layout, out_t, seed)
            C = S.sgemm(A, B)
            assert relative_error(to_host(C), a.astype(np.float64) @ b) < TOLERANCE


def test_a_call_whose_launches_read_a_copy_is_not_replayed(monkeypatch):
    """pad_b with rows of B not on 16 bytes: B is copied into aligned rows during the call, so
    the launches read that copy; and sgemm(A, A): one array as two operands."""
    _force(monkeypatch, S.Plan("64x64", 1, True))
    a, b = random_inputs(30, 31, 30, seed=3)
    A, B = to_device(a), to_device(b)
    for _ in range(2):
        assert relative_error(to_host(S.sgemm(A, B)), a.astype(np.float64) @ b) < TOLERANCE
    assert not replay.TABLE
    _force(monkeypatch, S.Plan("64x64"))
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
