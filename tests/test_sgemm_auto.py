"""sgemm(precision='auto') (book/blas/auto.py): the estimate from records, the race of a shape's
first calls and what it keeps, the guard's routing away from the Ozaki scheme, and the call on
this backend (on a GPU it times the methods; on the emulator it takes the estimate: fp32)."""
from collections import OrderedDict

import numpy as np
import pytest

import book
from book import BACKEND, to_device, to_host, xp
from book.blas import auto

RECORDED = {"tf32x3": [((1024, 1024, 1024), 1.58), ((8192, 8192, 8192), 2.49),
                       ((16384, 128, 4096), 1.2)],
            "ozaki": [((8192, 8192, 8192), 2.29), ((2048, 2048, 2048), 1.20)]}


def test_the_estimate_reads_the_nearest_recorded_shape_within_a_factor_of_4():
    assert auto.estimate(8000, 8000, 9000, RECORDED) == {"fp32": 1.0, "tf32x3": 2.49, "ozaki": 2.29}
    assert auto.estimate(3000, 3000, 3000, RECORDED)["ozaki"] == 1.20  # (2048^3, not 8192^3)
    assert auto.estimate(64, 64, 64, RECORDED) == {"fp32": 1.0}  # (nothing recorded near)
    assert auto.estimate(100, 100, 100, {}) == {"fp32": 1.0}


def test_the_guess_leaves_fp32_only_for_a_clear_gain_and_a_method_this_gpu_runs():
    assert auto.guess(8192, 8192, 8192, ("fp32", "tf32x3", "ozaki"), RECORDED) == "tf32x3"
    assert auto.guess(8192, 8192, 8192, ("fp32", "ozaki"), RECORDED) == "ozaki"
    assert auto.guess(64, 64, 64, ("fp32", "tf32x3", "ozaki"), RECORDED) == "fp32"
    slight = {"tf32x3": [((512, 512, 512), auto.MARGIN - 0.01)]}
    assert auto.guess(512, 512, 512, ("fp32", "tf32x3"), slight) == "fp32"


@pytest.fixture
def racing(monkeypatch, tmp_path):
    """A GPU's learning without a GPU: three methods here, the fp32 plan known, the cache file
    in tmp_path."""
    monkeypatch.setattr(auto, "learning", lambda: True)
    monkeypatch.setattr(auto, "_known", lambda *shape: True)
    monkeypatch.setattr(auto, "methods_here", lambda K: ("fp32", "tf32x3", "ozaki"))
    monkeypatch.setattr(auto, "_path", lambda: tmp_path / "auto.csv")
    monkeypatch.setattr(auto, "_STATE", {"chosen": {}})
    monkeypatch.setattr(auto, "BY_CALL", OrderedDict())
    monkeypatch.setattr(auto.replay, "clear", lambda: None)
    return tmp_path / "auto.csv"


def test_a_shapes_calls_time_one_method_each_and_the_last_keeps_the_fastest(racing):
    seconds = {"fp32": 3e-3, "tf32x3": 1e-3, "ozaki": 2e-3}
    timed = []

    def time_call(m):
        timed.append(m)
        return seconds[m]
    got = [auto.method(300, 200, 100, "nt", time_call) for _ in range(4)]
    assert timed == ["fp32", "tf32x3", "ozaki"]  # one a call, then none
    assert got == [("fp32", False), ("tf32x3", False), ("tf32x3", True), ("tf32x3", True)]
    assert auto.chosen()[(300, 200, 100, "nt")] == ["tf32x3", "ozaki", "fp32"]
    assert racing.read_text() == "M,N,K,layout,order\n300,200,100,nt,tf32x3|ozaki|fp32\n"


def test_a_method_that_fails_in_the_race_is_never_chosen(racing):
    def time_call(m):
        if m == "tf32x3":
            raise RuntimeError("no")
        return {"fp32": 1e-3, "ozaki": 2e-3}[m]
    for _ in range(3):
        choice = auto.method(10, 10, 10, "nn", time_call)
    assert choice == ("fp32", True) and auto.chosen()[(10, 10, 10, "nn")][-1] == "tf32x3"


def test_fp32_runs_until_its_plan_is_learned(racing, monkeypatch):
    monkeypatch.setattr(auto, "_known", lambda *shape: False)
    assert auto.method(300, 200, 100, "nn", lambda m: pytest.fail("timed")) == ("fp32", False)


def test_the_guard_moves_a_shape_off_the_ozaki_scheme_where_it_recomputes_many_rows(racing):
    key, calls = (512, 512, 512, "nn"), []
    auto.chosen()[key] = ["ozaki", "tf32x3", "fp32"]
    few = auto.watched(lambda *a: calls.append(a), key, 512, lambda: 512 * auto.GUARD_SHARE)
    for _ in range(2 * auto.CHECK_EVERY):
        few(None, None, None, 0)
    assert auto.chosen()[key][0] == "ozaki" and len(calls) == 2 * auto.CHECK_EVERY
    many = auto.watched(lambda *a: None, key, 512, lambda: 512 * auto.GUARD_SHARE + 1)
    for _ in range(auto.CHECK_EVERY):
        many(None, None, None, 0)
    assert auto.chosen()[key] == ["tf32x3", "fp32", "ozaki"]
    assert auto.method(*key) == ("tf32x3", True)


CASES = [(shape, layout) for layout in ("nn", "tn", "nt")
         for shape in ((33, 45, 70), (7, 130, 9), (128, 64, 257))]


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c[1]}-{'x'.join(map(str, c[0]))}", marks=(
    () if k % 4 == 0 else pytest.mark.sweep)) for k, c in enumerate(CASES)])
def test_auto_computes_the_product_to_sgemms_accuracy(case):
    """Each shape in each layout (make test: three of the nine, one per layout and shape)."""
    (M, N, K), layout = case
    rng = np.random.default_rng(M + N + K)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    A = to_device(np.ascontiguousarray(a.T)).T if layout[0] == "t" else to_device(a)
    B = to_device(np.ascontiguousarray(b.T)).T if layout[1] == "t" else to_device(b)
    exact = a.astype(np.float64) @ b
    bound = 2 * K * 2.0 ** -24 * (np.abs(a).astype(np.float64) @ np.abs(b))  # elementwise
    for _ in range(2 if BACKEND == "cpu" else 12):  # (on a GPU: through the race, then replays)
        C = to_host(book.sgemm(A, B, precision="auto"))
        assert np.all(np.abs(C - exact) <= bound)


def test_the_readmes_auto_numbers_are_the_h200_records():
    """The README's sentence on precision='auto' quotes results/nvidia-h200/12_auto.csv, as
    chapter 12 reads it (auto_calls.numbers), rounded as printed."""
    import re

    import pandas as pd

    from book.harness.results import RESULTS
    from book.studies import auto_calls
    from conftest import ROOT
    n = auto_calls.numbers(pd.read_csv(RESULTS / "nvidia-h200" / f"{auto_calls.FILE}.csv"))
    text = " ".join((ROOT / "README.md").read_text().split())
    m = re.search(r"in a loop of calls, ([\d.]+) times cuBLAS SGEMM over the layers .*?, ([\d.]+) "
                  r"times at 8192³, never below ([\d.]+) times `\"fp32\"`, and within ([\d.]+)% of "
                  r"the fastest method on (\w+) shapes nobody tuned", text)
    assert m, "the README's sentence on precision='auto' changed: update this test"
    assert m.groups() == (f"{n['auto_geomean']:.2f}", f"{n['auto_x_8192']:.2f}",
                          f"{n['auto_fp32_min']:.3f}", f"{n['auto_regret_max']:.1f}", "six")
    assert n["auto_held"] == 6


@pytest.mark.skipif(BACKEND != "gpu", reason="the Ozaki scheme's guard on a GPU")
def test_inputs_that_defeat_the_scaling_move_a_shape_off_the_ozaki_scheme(monkeypatch):
    """A shape whose method is the Ozaki scheme, called on rows spanning 48 binades (its guard
    recomputes most rows): within 2 CHECK_EVERY calls the shape moves to its next method, and
    every result keeps SGEMM's bound."""
    from book.blas.ozaki import MIN_CC, guard_count
    from book.registry import device_cc
    from book.studies.adversarial import CLASSES
    if device_cc() < MIN_CC:
        pytest.skip("the Ozaki scheme needs compute capability 8.0")
    M, N, K = 256, 320, 512
    a, b = CLASSES["spread 48"](M, N, K, np.random.default_rng(7))
    A, B, C = to_device(a), to_device(b), xp.empty((M, N), dtype=xp.float32)
    key = (M, N, K, "nn")
    monkeypatch.setitem(auto.chosen(), key, ["ozaki"] + [m for m in auto.methods_here(K) if m != "ozaki"])
    monkeypatch.setattr(auto, "BY_CALL", OrderedDict())
    auto.replay.clear()
    book.sgemm(A, B, out=C, precision="auto")
    assert guard_count(M, N) > auto.GUARD_SHARE * M  # (an input the guard acts on)
    exact = a.astype(np.float64) @ b
    bound = 2 * K * 2.0 ** -24 * (np.abs(a).astype(np.float64) @ np.abs(b))
    for _ in range(2 * auto.CHECK_EVERY):
        book.sgemm(A, B, out=C, precision="auto")
    assert auto.chosen()[key][0] != "ozaki"
    assert np.all(np.abs(to_host(C) - exact) <= bound)
