"""``sgemm(..., precision='auto')``: float32's accuracy by whichever method is fastest here --
FFMA (``'fp32'``), 3xTF32 (``'tf32x3'``, Hopper) or the Ozaki scheme on INT8 (``'ozaki'``,
compute capability 8.0 on) -- chosen per shape, layout and GPU as plans are (``choice``):

* a shape's first calls run ``'fp32'`` while its plan is learned (``choice.settle``), then each
  of its next calls times one more method on the call's own operands (a loop of calls as the
  user runs them: the GPU's time and the host's, the larger counts), and the call that times the
  last keeps the fastest, in memory and on disk beside the plans
  (~/.cache/gpu-matmul-book/sgemm/<gpu>-auto.csv); a call seen before then replays the chosen
  method's launches, with nothing added to its host time;
* without a GPU to time on (the emulator, ``BOOK_SGEMM_LEARN=0``), the estimate from this GPU's
  records (``estimate``), which chooses fp32 where none were recorded;
* per input: where the Ozaki scheme is chosen, every CHECK_EVERY-th call reads how many rows its
  accuracy guard took another way (as FFMA chains, which keeps the result right and costs time);
  where more than GUARD_SHARE of them, the shape moves to the next fastest method.

Every method keeps SGEMM's promise for each element, |C - AB|_ij <= K u (|A||B|)_ij (on chapter
12's adversarial inputs each stays below 0.03 of it (cuBLAS's 0.015), subnormal ones apart, where underflow adds an
absolute error to every SGEMM's, cuBLAS's too; and within 2x cuBLAS SGEMM's own error but for
3xTF32 on two classes: exact cancellation, which cuBLAS's order of sums happens to favour, and
near overflow), so the choice is one of speed alone; ``precision='ozaki'`` keeps within 2x of
cuBLAS's own error on every class (tests/test_adversarial.py).
"""
from __future__ import annotations

import csv
import math
import os
import threading
import time
from collections import OrderedDict
from functools import lru_cache

from ..harness import records
from ..launch import replay
from ..launch.runtime import BACKEND
from ..registry import device_cc
from .choice import _known, learning
from .ozaki import MAX_K, MIN_CC
from .tf32x3 import _tf32x3_why

METHODS = ("fp32", "tf32x3", "ozaki")
"""What ``precision='auto'`` chooses among, in the order it prefers them where equally fast."""
CHECK_EVERY, GUARD_SHARE = 64, 1 / 16
"""Where the Ozaki scheme is chosen: how often a call reads its guard's count, and the share of
rows above which the shape moves to its next method."""
MARGIN = 1.10
"""The estimate (no timing) leaves fp32 only for a method it expects at least this much faster."""


def methods_here(K: int) -> tuple:
    """The methods this device runs at this K (BOOK_ASSUME_CC counts)."""
    found = ["fp32"]
    if not _tf32x3_why(os.environ.get("BOOK_ASSUME_CC")):
        found.append("tf32x3")
    if device_cc() >= MIN_CC and K <= MAX_K:
        found.append("ozaki")
    return tuple(found)


# ---- the estimate, from this GPU's records ---------------------------------------------------

def _by_shape(chapter: str, gpu: str, name: str, value: str) -> dict:
    """{(M, N, K): {row[name]: row[value]}} of this GPU's results file ``chapter`` (empty where
    it was not recorded)."""
    found: dict = {}
    try:
        for r in records.rows(chapter, gpu):
            found.setdefault((r["M"], r["N"], r["K"]), {})[r[name]] = r[value]
    except FileNotFoundError:
        pass
    return found


@lru_cache(maxsize=1)
def _recorded() -> dict:
    """{method: [((M, N, K), speed over fp32)]} from this GPU's records: chapter 10's suite
    (``'tf32x3'`` against book.sgemm's FFMA plans) and chapter 12's loop of calls (``'ozaki'``
    against ``'fp32'``, host included). Empty on the CPU or where none were recorded."""
    if BACKEND != "gpu":
        return {}
    from ..harness.device import device_report, gpu_slug
    gpu = gpu_slug(device_report()["name"])
    suite = _by_shape("10_tf32x3_suite", gpu, "kernel", "gflops")
    loop = _by_shape("12_loop", gpu, "call", "loop_ms")
    return {"tf32x3": [(s, v["tf32x3_sgemm"] / v["book_sgemm"]) for s, v in suite.items()
                       if v.get("tf32x3_sgemm") and v.get("book_sgemm")],
            "ozaki": [(s, v["fp32"] / v["ozaki"]) for s, v in loop.items()
                      if v.get("fp32") and v.get("ozaki")]}


def estimate(M: int, N: int, K: int, recorded: dict | None = None) -> dict:
    """{method: its expected speed over fp32} at (M, N, K): that of the recorded shape nearest
    in log2 M, N, K, where it lies within a factor of 4 in each (farther: unknown, left out);
    fp32 is 1."""
    recorded = _recorded() if recorded is None else recorded
    speeds = {"fp32": 1.0}
    here = [math.log2(v) for v in (M, N, K)]
    for method, points in recorded.items():
        best = None
        for shape, speed in points:
            d = max(abs(a - math.log2(b)) for a, b in zip(here, shape))
            if d <= 2 and (best is None or d < best[0]):
                best = (d, speed)
        if best is not None:
            speeds[method] = best[1]
    return speeds


def guess(M: int, N: int, K: int, methods: tuple, recorded: dict | None = None) -> str:
    """The method the estimate expects fastest among ``methods``: fp32 unless another's speed
    over it is at least MARGIN."""
    speeds = estimate(M, N, K, recorded)
    best = max((m for m in methods if m in speeds), key=lambda m: (speeds[m], m == "fp32"))
    return best if speeds[best] >= MARGIN else "fp32"


# ---- what the first calls learned --------------------------------------------------------------

_LOCK = threading.Lock()
_STATE: dict = {}
BY_CALL: OrderedDict = OrderedDict()
"""{a call's key (``call._key``): (its method, its shape's key)} for the calls whose method is
chosen, so that a call seen before that does not replay (a copy of a view, say) finds its method
in one lookup (``remember``); emptied wherever a shape's method changes."""


def remember(key: tuple, method_and_shape: tuple) -> None:
    """Keep ``BY_CALL[key]``, the oldest dropped beyond replay's LIMIT (as replays are)."""
    BY_CALL[key] = method_and_shape
    while len(BY_CALL) > replay.LIMIT:
        BY_CALL.popitem(last=False)


def _path():
    from ..harness.device import device_report, gpu_slug
    from ..launch.cuda_source import cache_dir
    return cache_dir("sgemm") / f"{gpu_slug(device_report()['name'])}-auto.csv"


def chosen() -> dict:
    """{(M, N, K, layout): [methods, fastest first]} that this GPU's first calls timed, kept on
    disk between sessions (the last line of a shape counts)."""
    if "chosen" not in _STATE:
        found = {}
        path = _path() if BACKEND == "gpu" else None
        if path is not None and path.exists():
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    found[(int(row["M"]), int(row["N"]), int(row["K"]), row["layout"])] = \
                        row["order"].split("|")
        _STATE["chosen"] = found
    return _STATE["chosen"]


def _keep(key: tuple, order: list) -> None:
    chosen()[key] = order
    BY_CALL.clear()
    replay.clear()
    records.append_row(_path(), "M,N,K,layout,order", ",".join(map(str, key)) + "," + "|".join(order))


class _Race:
    """The methods a shape's calls time, one a call: ``seconds[m]`` a call's time in a short loop
    of back-to-back calls, host included (``timer``)."""

    def __init__(self, methods: tuple):
        self.methods, self.seconds = list(methods), {}

    def step(self, time_call) -> bool:
        """Time the next method; whether all are timed."""
        left = [m for m in self.methods if m not in self.seconds]
        if left:
            try:
                self.seconds[left[0]] = time_call(left[0])
            except Exception:  # noqa: BLE001 -- a method that fails here is not chosen
                self.seconds[left[0]] = math.inf
        return len(self.seconds) == len(self.methods)

    def order(self) -> list:
        return sorted(self.methods, key=lambda m: (self.seconds[m], METHODS.index(m)))


LOOP = 5
"""The calls of a method's timed loop."""


def timer(run):
    """``time_call(method)`` for a _Race: ``run(method)`` runs the call's product by ``method``
    into scratch memory, through ``sgemm`` (so that its later runs are replays, as a user's loop
    of calls runs); the time is a call's in a loop of LOOP, host included, after two runs (the
    first loads, records, grows scratch memory), the least of two such loops."""
    from ..launch.runtime import synchronize

    def time_call(method: str) -> float:
        best = math.inf
        for _ in range(2):
            run(method)
            run(method)
            synchronize()
            t0 = time.perf_counter()
            for _ in range(LOOP):
                run(method)
            synchronize()
            best = min(best, (time.perf_counter() - t0) / LOOP)
        return best
    return time_call


def settled(M: int, N: int, K: int, layout: str) -> bool:
    """Whether a call at (M, N, K) in ``layout`` runs the shape's method for good: chosen by its
    first calls, or nothing to choose or time here (one method; no learning)."""
    return ((M, N, K, layout) in chosen() or len(methods_here(K)) == 1 or not learning())


def method(M: int, N: int, K: int, layout: str, time_call=None) -> tuple[str, bool]:
    """The method this call runs at (M, N, K) with operands in ``layout`` (as the fp32 plan
    sees them: ``choice``'s key): the one learned for the shape (less any the guard moved it
    from); else, while learning on a GPU, fp32 until its plan is learned, then each call times
    one more method with ``time_call(method)`` and the call that times the last keeps the
    order; without learning, the estimate's ``guess``. With it, whether the shape's method is
    settled (its calls may be replayed)."""
    key = (M, N, K, layout)
    order = chosen().get(key)
    if order is not None:
        return order[0], True
    methods = methods_here(K)
    if len(methods) == 1:
        return methods[0], True
    if not learning() or time_call is None:
        return guess(M, N, K, methods), True
    if not _known(M, N, K, layout):
        return "fp32", False  # (its plan's first calls: the method timed below is the learned plan)
    with _LOCK:
        race = _STATE.setdefault("races", {}).setdefault(key, _Race(methods))
    if not race.step(time_call):
        return min(race.seconds, key=race.seconds.get), False
    with _LOCK:
        _STATE["races"].pop(key, None)
    order = race.order()
    _keep(key, order)
    return order[0], True


def watched(again, key: tuple, rows: int, count):
    """The replay ``again`` of a call that the Ozaki scheme answers for ``precision='auto'``:
    every CHECK_EVERY-th call reads its guard's count of rows taken another way (``count()``,
    a wait for the GPU); where above GUARD_SHARE of the ``rows``, the shape moves to its next
    method (``demote``) and later calls take that method's path."""
    calls = [0]

    def run(A, B, out, stream: int) -> None:
        again(A, B, out, stream)
        calls[0] += 1
        if calls[0] % CHECK_EVERY == 0 and count() > GUARD_SHARE * rows:
            demote(key, "ozaki")
    return run


def demote(key: tuple, method: str) -> None:
    """Move ``method`` last in the shape's order (its inputs made it slow), for this process."""
    order = chosen().get(key) or [method] + [m for m in methods_here(key[2]) if m != method]
    if order[0] == method and len(order) > 1:
        chosen()[key] = order[1:] + [method]
        BY_CALL.clear()
        replay.clear()
