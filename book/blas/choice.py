"""Which plan book.sgemm runs at a shape (``plan_for``): on the suite's shapes the one a tuning
run on this GPU found fastest (results/<gpu>/09_sgemm_plans.csv, or the table ``use_plans``
sets); on any other shape, the fastest of the cost model's best few (``first_call_plans``),
timed on the shape's first call on this GPU and remembered (``learn``: in memory and in the
book's cache folder, ~/.cache/gpu-matmul-book/sgemm/<gpu>.csv); without a GPU, the model's best.

A call never waits for the compiler beyond one build (``settle``), as cuBLASLt's heuristic
answers at once and Triton's autotuner keeps what it timed: where the plans a first call would
time are not all compiled, it runs the model's best and compiles the others in a process of its
own, timing them on a later call of the shape. ``python -m book.blas.prebuild`` compiles every
build ahead, so that no call compiles at all. ``tune(shapes)`` chooses now, waiting.
"""
from __future__ import annotations

import csv
import os
import threading
from functools import lru_cache

import numpy as np

from ..harness import records
from ..launch import replay
from ..launch.runtime import BACKEND, build_all, built, gpu_arch, xp
from .kernels import FALLBACK, _sms
from .model import PLANS_FILE, _rates, model_seconds, ranked
from .plans import (DEFAULT, STREAMK_CONFIGS, Packed, Plan, builds_for, in_layout, packed_plans,
                    plan_by_id)


_PLANS: list = [None]  # plans set in this process (use_plans), before any saved table


def use_plans(plans) -> None:
    """Make ``sgemm`` dispatch with these plans (a tuning run's first table, a DataFrame) in this
    process."""
    _PLANS[0] = None if plans is None else plans.to_dict("records")
    _table.cache_clear()
    _tuned.cache_clear()
    _rates.cache_clear()
    plan_for.cache_clear()
    replay.clear()


@lru_cache(maxsize=1)
def _table() -> dict | None:
    """The plans in use, {(M, N, K): row}: set by ``use_plans``, else this GPU's saved tuning
    run (None on the CPU or where none was saved for this GPU). Plain rows: the library reads no
    table through pandas (``harness.records``)."""
    found = _PLANS[0]
    if found is None and BACKEND == "gpu":
        from ..harness.device import device_report, gpu_slug
        try:
            found = records.rows(PLANS_FILE, gpu_slug(device_report()["name"]))
        except FileNotFoundError:
            return None
    if found is None:
        return None
    table = {}
    for row in found:
        table.setdefault((int(row["M"]), int(row["N"]), int(row["K"])), row)
    return table


FIRST_CALL = 6
"""How many of the model's best plans the first call of a new shape times on a GPU."""
FIRST_CALL_SMALL, SMALL_S = 16, 1e-3
"""Where the model's best plan takes under SMALL_S, the first call times FIRST_CALL_SMALL: there
the model ranks less well (launch and latency, not throughput, set the time; on the H100 probe of
17 small shapes, held-out ones among them, the fastest plan was within the model's first 16 on
all but three, within its first 6 on eleven), and each timing costs microseconds."""
FIRST_STREAMK = 1
"""How many stream-K plans per configuration (the model's best of each) a first call also times,
where they are not among those: the model ranks stream-K's shares least well. On the H100's first
held-out set, at 2141 x 250 x 681, 64x128/3s with stream-K ran 19-25% faster than the plan
chosen from the model's first sixteen (a small product); the model put it 41st, behind 128x256
with stream-K (33rd), which ran slower (H100 runs after 08_async.cu's ROW_ALIGN builds: a rule
set on that set's shape, so judged on the second set)."""
FIRST_PACKED = 2
"""For transposed operands, how many of the model's best packed plans it also times (where they
are not among those)."""
_LEARNED: dict = {}


def _learned_path():
    from ..harness.device import device_report, gpu_slug
    from ..launch.cuda_source import cache_dir
    return cache_dir("sgemm") / f"{gpu_slug(device_report()['name'])}.csv"


def _learned() -> dict:
    """{(M, N, K, layout): plan} this GPU's first calls chose, kept on disk between sessions (the
    book's cache folder: ~/.cache/gpu-matmul-book/sgemm/<gpu>.csv, or $BOOK_CACHE_DIR)."""
    if "loaded" not in _LEARNED:
        _LEARNED["loaded"], _LEARNED["plans"] = True, {}
        path = _learned_path() if BACKEND == "gpu" else None
        if path is not None and path.exists():
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    _LEARNED["plans"][(int(row["M"]), int(row["N"]), int(row["K"]),
                                       row["layout"])] = plan_by_id(row["plan"])
    return _LEARNED["plans"]


def learning() -> bool:
    """Whether a new shape's first call times the model's best plans (on a GPU, unless
    BOOK_SGEMM_LEARN=0)."""
    import os
    return BACKEND == "gpu" and os.environ.get("BOOK_SGEMM_LEARN", "1") != "0"


@lru_cache(maxsize=4096)
def plan_for(M: int, N: int, K: int, layout: str = "nn"):
    """The plan ``sgemm`` runs at (M, N, K) with operands in ``layout``: the tuning run's for a
    shape of its suite; else the one a first call on this GPU chose (``learn``); else the cost
    model's best."""
    if DEFAULT.why_not_here():
        return Plan(FALLBACK)
    tuned = _tuned(M, N, K, layout)
    if tuned is not None:
        return tuned
    if (M, N, K, layout) in _learned():
        return _learned()[(M, N, K, layout)]
    return ranked(M, N, K, _sms(), layout)[0]


@lru_cache(maxsize=4096)
def _tuned(M: int, N: int, K: int, layout: str):
    """The tuning run's plan for this shape, in ``layout`` (None off the suite, or where that
    plan cannot read the layout)."""
    row = (_table() or {}).get((M, N, K))
    if row is None:
        return None
    plan = _plan(row)
    if layout == "nn" or plan.config == FALLBACK:
        return plan
    sms = _sms()
    ways = [p for p in (in_layout(plan, layout), *packed_plans([plan], layout)) if p is not None]
    return min(ways, key=lambda p: model_seconds(p, M, N, K, sms), default=None)


def first_call_plans(M: int, N: int, K: int, layout: str = "nn", sms: int = 132) -> list:
    """The plans a first call times: the model's FIRST_CALL best (FIRST_CALL_SMALL where its best
    takes under SMALL_S), its FIRST_STREAMK best stream-K plans, and for transposed operands its
    FIRST_PACKED best packed ones (those of the last two not among the first)."""
    order = ranked(M, N, K, sms, layout)
    small = model_seconds(order[0], M, N, K, sms) < SMALL_S
    plans = order[:FIRST_CALL_SMALL if small else FIRST_CALL]
    for config in STREAMK_CONFIGS:
        streamk = [p for p in order if getattr(p, "streamk", False) and p.config == config]
        plans += [p for p in streamk[:FIRST_STREAMK] if p not in plans]
    return plans + [p for p in order if isinstance(p, Packed) and p not in plans][:FIRST_PACKED]


class _Trial:
    """The plans a first call would time (``first_call_plans``) at one shape, timed one at a time:
    :meth:`step` times the next with ``run(plan)`` (the call's own operands, into scratch
    memory): a first launch, then the least of two runs on the GPU's clock. A plan that does not
    load is not chosen."""

    def __init__(self, plans: list):
        self.plans, self.seconds, self.failed = plans, {}, []

    @property
    def tried(self) -> int:
        return len(self.seconds) + len(self.failed)

    def step(self, run) -> bool:
        """Time the next plan; whether every plan has been timed."""
        from ..harness.measure import held_event_seconds
        if self.tried == len(self.plans):
            return True  # (another thread's call timed the last)
        plan = self.plans[self.tried]
        try:
            run(plan)  # (its first launch: the module's load)
            self.seconds[plan] = float(np.min(held_event_seconds(lambda: run(plan), repeats=2)))
        except Exception as exc:  # noqa: BLE001
            self.failed.append(exc)
        return self.tried == len(self.plans)

    def best(self):
        if not self.seconds:
            raise self.failed[0]
        return min(self.seconds, key=self.seconds.get)


def learn(M: int, N: int, K: int, run, layout: str = "nn", lds: tuple = (None, None),
          operands: tuple = (None, None)):
    """Time the model's FIRST_CALL best plans at a shape (FIRST_CALL_SMALL for a small shape) now
    (``_Trial``), keep the fastest for this GPU (:func:`_keep`) and return it (``tune``; a call
    spreads the same timings over its shape's next calls: ``settle``). Costs their compiles
    where they are new (seconds each, once per GPU: the book keeps them on disk)."""
    plans = first_call_plans(M, N, K, layout, _sms())
    build_all(builds_for(plans, M, N, layout, K, *lds, *operands))
    trial = _Trial(plans)
    while not trial.step(run):
        pass
    return _keep(M, N, K, layout, trial.best())


def _keep(M: int, N: int, K: int, layout: str, best):
    """Remember ``best`` as the plan of this shape on this GPU, in memory and on disk."""
    _learned()[(M, N, K, layout)] = best
    plan_for.cache_clear()
    replay.clear()
    records.append_row(_learned_path(), "M,N,K,layout,plan", f"{M},{N},{K},{layout},{best.id}")
    return best


_PENDING: dict = {}
"""{(M, N, K, layout): the process compiling the builds its first call would time}."""


_LOCK = threading.Lock()


_TRIALS: dict = {}
"""{(M, N, K, layout): the ``_Trial`` of a shape whose calls are timing its plans}."""


def settle(M: int, N: int, K: int, run, layout: str = "nn", lds: tuple = (None, None),
           operands: tuple = (None, None)):
    """What a call of a shape not yet known does on a GPU; the plan it learned, or None (the call
    runs the model's best). Never a wait for the compiler nor for a round of timings:

    * where the builds of the plans a first call would time (``first_call_plans``) are not all
      compiled (loaded, or their cubins in the book's cache: ``python -m book.blas.prebuild``
      puts them all there), it hands them to a process of its own (:func:`compile_behind`);
    * the shape's first call with them compiled times nothing: the model's best runs at once;
    * each of its next calls times one more of them (``_Trial``: three runs into scratch memory,
      on the call's own operands), and the call that times the last keeps the fastest
      (``_keep``) and runs it.

    ``tune`` (and ``learn``) times them all at once. ``lds``: the rows of A and B, floats apart
    (default: contiguous); ``operands``: A and B as the plans read them (their addresses choose
    builds). No thread of the caller's process compiles: its exit never waits for a compile nor
    meets one half done."""
    key = (M, N, K, layout)
    with _LOCK:
        pending = _PENDING.get(key)
        if pending is not None and pending.poll() is None:
            return None
        trial = _TRIALS.get(key)
        if pending is None and trial is None:
            plans = first_call_plans(M, N, K, layout, _sms())
            builds = builds_for(plans, M, N, layout, K, *lds, *operands)
            if not built(builds):
                best = builds_for(plans[:1], M, N, layout, K, *lds, *operands)  # (this call's)
                _PENDING[key] = compile_behind([b for b in builds if b not in best])
                return None
        _PENDING.pop(key, None)
        if trial is None:
            _TRIALS[key] = _Trial(first_call_plans(M, N, K, layout, _sms()))
            return None
    if not trial.step(run):
        return None
    _TRIALS.pop(key, None)
    return _keep(M, N, K, layout, trial.best())


def compile_behind(builds):
    """Start ``python -m book.blas.prebuild --builds`` on ``builds``, for this GPU, in a process
    of its own session (it goes on, and fills the cache, if this one exits first); its Popen."""
    import json
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([[str(s), dict(d), list(o)] for s, d, o in builds], f)
    root = str(Path(__file__).resolve().parents[2])  # (where ``book`` imports from)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    return subprocess.Popen(
        [sys.executable, "-m", "book.blas.prebuild", "--arch", gpu_arch(), "--builds", f.name,
         "--remove", "--workers", "2"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True, env=env)


def tune(shapes, layout: str = "nn") -> dict:
    """Choose the plans of these shapes (M, N, K) in ``layout`` now, as their first calls would,
    waiting for every compile (side by side) and timing the model's best few of each on random
    operands; returns {shape: plan}. On the CPU backend (nothing to time): the model's best."""
    shapes = [tuple(int(v) for v in shape) for shape in shapes]
    if not learning():
        return {shape: plan_for(*shape, layout) for shape in shapes}
    sms = _sms()
    build_all([b for M, N, K in shapes
               for b in builds_for(first_call_plans(M, N, K, layout, sms), M, N, layout, K)])
    chosen, rng = {}, xp.random.default_rng(0)
    for M, N, K in shapes:
        if not _known(M, N, K, layout):
            a = rng.standard_normal((K, M) if layout[0] == "t" else (M, K), dtype=xp.float32)
            b = rng.standard_normal((N, K) if layout[1] == "t" else (K, N), dtype=xp.float32)
            c = xp.empty((M, N), dtype=xp.float32)
            learn(M, N, K, lambda p: p.run(a, b, c, M, N, K, a.shape[1], b.shape[1], N), layout)
        chosen[M, N, K] = plan_for(M, N, K, layout)
    return chosen


def _known(M: int, N: int, K: int, layout: str) -> bool:
    """Whether the tuning run or an earlier first call chose the plan of this shape."""
    return (M, N, K, layout) in _learned() or _tuned(M, N, K, layout) is not None


def _plan(row) -> Plan:
    """The plan of one row of a plans table, a dict (tables saved before ``pad_b`` or ``streamk``
    existed lack them; those saved since the skinny kernel name the plan by id)."""
    if isinstance(row.get("plan"), str):
        return plan_by_id(row["plan"])
    return Plan(row["config"], int(row["splits"]), _flag(row.get("pad_b")), _flag(row.get("streamk")))


def _flag(value) -> bool:
    return value is not None and value == value and bool(value)  # (None or NaN: absent)
