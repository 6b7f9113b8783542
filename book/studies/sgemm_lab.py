"""Chapter 9's studies of book.sgemm (the library: ``book.blas``): the tuning run, the suite
beside cuBLAS, three held-out sets, the four layouts, the host time of a call, block timelines,
waves; the summaries its command line prints, and the command line::

    python -m book.studies.sgemm_lab --tune      # on a GPU: check and time every plan on every
                                                 # suite shape, save the fastest per shape
                                                 # (results/<gpu>/09_sgemm_plans.csv)
    python -m book.studies.sgemm_lab --suite     # book.sgemm against cuBLAS on the suite
                                                 # (09_sgemm_suite.csv)
    python -m book.studies.sgemm_lab --timeline  # edge tiles in place or moved back, block by
                                                 # block (09_edge_timeline.csv)
    python -m book.studies.sgemm_lab --heldout   # book.sgemm against cuBLAS on 40 seeded shapes
                                                 # it was never tuned on, and the suite, with
                                                 # each plan's regret (09_sgemm_heldout.csv)
    python -m book.studies.sgemm_lab --fresh     # the same on a second seeded set of 40, drawn
                                                 # later (09_sgemm_heldout_fresh.csv)
    python -m book.studies.sgemm_lab --third     # and on a third, drawn last and looked at by no
                                                 # change (09_sgemm_heldout_third.csv)
    python -m book.studies.sgemm_lab --layouts   # NN, TN, NT, TT against cuBLAS in the same
                                                 # layout (09_sgemm_layouts.csv)

Every plan is checked before it is timed (``book.harness.measure.sweep``). The tables and
figures chapter 9 and its lab notes draw from the recorded runs are in ``sgemm_report``. The
long runs show progress bars where bars show (``book.harness.progress``); ``progress=False``
hides them.
"""
from __future__ import annotations

import dataclasses
import math
import sys
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..blas import (CANDIDATES_FILE, LAYOUTS, PLANS_FILE, builds_for, candidates,
                    logical_operands, model_seconds, plan_for, sgemm, use_plans)
from ..blas.kernels import _entry, _ints, _sms, _spec
from ..blas.model import _bandwidth
from ..harness import results
from ..harness.measure import build_ahead, sweep
from ..harness.progress import bar
from ..launch.direct import unchecked
from ..launch.runtime import BACKEND, build_all, xp
from ..registry import KernelSpec, ceil_div

SUITE_FILE, OVERHEAD_FILE = "09_sgemm_suite", "09_sgemm_overhead"
HELDOUT_FILE, LAYOUTS_FILE, MODEL_FILE = "09_sgemm_heldout", "09_sgemm_layouts", "09_sgemm_model"


SUITE = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
         (16384, 16384, 16384), (1000, 1000, 1000), (4097, 4097, 4097), (3000, 5000, 2000),
         (16384, 16384, 256), (8192, 8192, 512), (1024, 1024, 16384), (512, 512, 65536),
         (16384, 128, 4096), (128, 16384, 4096)]
"""The shape suite (M, N, K): square 1024 ... 16384, sizes off multiples of 32, small K
(K <= min(M, N) / 8), large K (K >= 8 max(M, N)), tall-skinny and short-wide."""

CPU_SUITE = [(64, 64, 64), (33, 17, 65), (16, 16, 600), (96, 40, 8), (130, 70, 33)]
"""Small shapes of the same kinds for the CPU emulator (timings there mean nothing)."""


class BookSgemm:
    """``sgemm`` as a pseudo-kernel for ``sweep``: its rows carry the id ``book_sgemm``."""

    id, label, chapter = "book_sgemm", "book.sgemm (tuned per shape)", 9

    @staticmethod
    def why_not_here():
        return None  # below compute capability 8.0 it runs the fallback plan

    @staticmethod
    def launch(A, B, C, M, N, K) -> None:
        sgemm(A, B, out=C)


QUICK_S, FINALISTS = 0.01, 3
"""The tuner's first timing of every candidate takes about QUICK_S of GPU time each (at least one
run after its check); only the FINALISTS fastest are then timed as carefully as any sweep, beside
cuBLAS. On an H100 the full timing of every candidate took 86 s over the suite."""


def tune(shapes=None, progress: bool = True, configs=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Check and time every candidate plan (of ``configs``, default all) on every shape; re-time
    the fastest few (FINALISTS) beside cuBLAS. Returns the plans (one row per shape: the fastest
    finalist) and every candidate's measurement (``timing`` 'quick' or 'final'; % of cuBLAS
    against the final cuBLAS run). The bar over the shapes shows the last one's best plan."""
    shapes = shapes or (SUITE if BACKEND == "gpu" else CPU_SUITE)
    sms = _sms()
    rows, every = [], []
    tuning = bar(shapes, desc="tune", unit="shape", show=progress)
    for shape in tuning:
        plans = {p.id: p for p in candidates(*shape, sms=sms, configs=configs)}
        build_all(builds_for(plans.values(), shape[0], shape[1]))
        quick = sweep(list(plans.values()), [shape], baseline=False, progress=progress,
                      target_s=QUICK_S, min_repeat=1)
        ok = quick[quick.status == "ok"]
        finalists = ok.nlargest(FINALISTS, "gflops").kernel if "gflops" in ok else []
        final = sweep([plans[k] for k in finalists], [shape], progress=progress)
        cublas = final.loc[final.kernel == "cublas", "gflops"].iloc[0]
        quick = quick[~quick.kernel.isin(finalists)].assign(
            pct_of_cublas=lambda d: 100 * d.get("gflops", np.nan) / cublas, timing="quick")
        df = pd.concat([final.assign(timing="final"), quick], ignore_index=True)
        every.append(df)
        done = final[(final.status == "ok") & (final.kernel != "cublas")]
        if not len(done):
            raise RuntimeError(f"no plan passed its check at {shape}")
        best = done.loc[done.gflops.idxmax()]
        plan = plans[best.kernel]
        rows.append({"M": shape[0], "N": shape[1], "K": shape[2], "plan": plan.id,
                     "config": plan.config,
                     "splits": plan.splits, "streamk": plan.streamk, "pad_b": plan.pad_b,
                     "gflops": best.gflops,
                     "pct_of_cublas": best.pct_of_cublas, "plans_tried": len(ok),
                     "device": best.device, "date": best.date})
        tuning.set_postfix_str(f"{shape}: {plan.label}, {best.pct_of_cublas:.1f}% of cuBLAS",
                               refresh=False)
    return pd.DataFrame(rows), pd.concat(every, ignore_index=True)


def suite(shapes=None, rounds: int = 3, progress: bool = True, specs=(BookSgemm,)) -> pd.DataFrame:
    """``book.sgemm`` (or ``specs``) and cuBLAS on every shape, checked then timed, in ``rounds``
    interleaved rounds; one row per shape and kernel with the median GFLOP/s of the rounds and
    its % of cuBLAS."""
    shapes = shapes or (SUITE if BACKEND == "gpu" else CPU_SUITE)
    med = _rounds(list(specs), shapes, rounds, progress=progress)
    base = med[med.kernel == "cublas"].set_index(["M", "N", "K"]).gflops
    med["pct_of_cublas"] = 100 * med.gflops.to_numpy() / base.reindex(
        pd.MultiIndex.from_frame(med[["M", "N", "K"]])).to_numpy()
    return med


SUITE_COLUMNS = ["M", "N", "K", "kernel", "label", "gflops", "rel_error", "status", "device",
                 "date", "pct_of_cublas"]


def _rounds(specs, shapes, rounds: int, **sweep_args) -> pd.DataFrame:
    """``specs`` on every shape, checked then timed, in ``rounds`` interleaved rounds (sweep's
    arguments as given); one row per shape and kernel: the median GFLOP/s of the rounds, the
    largest error, and 'ok' only where every round's check was. A bar counts the sweeps (none
    where ``progress`` is False)."""
    points = [(r, shape) for r in range(rounds) for shape in shapes]
    runs = pd.concat([sweep(specs, [shape], **sweep_args).assign(round=r) for r, shape in
                      bar(points, desc="rounds", unit="sweep",
                          show=sweep_args.get("progress", True))])
    return runs.groupby(["M", "N", "K", "kernel"], sort=False).agg(
        label=("label", "first"), gflops=("gflops", "median"), rel_error=("rel_error", "max"),
        status=("status", lambda s: "ok" if (s == "ok").all() else s[s != "ok"].iloc[0]),
        device=("device", "first"), date=("date", "first")).reset_index()


HELDOUT_SEED, HELDOUT_COUNT = 20261125, 40
"""The held-out shapes' seed and count: drawn once, never used to tune or to choose a rule."""
FRESH_SEED = 20261126
"""A second held-out set (``--fresh``), drawn after the first had been used to set two choices
for small products (CHAIN_S, FIRST_CALL_SMALL): nothing may be tuned or chosen on it. Its
results: 09_sgemm_heldout_fresh.csv and 09_sgemm_model_fresh.csv."""
THIRD_SEED = 20261127
"""A third held-out set (``--third``), drawn after shapes of the first two had prompted changes
(08_async.cu's ROW_ALIGN builds, the stream-K rule of the first call, skinny_outer's one wave of
blocks): no change was made or judged on it before its first recorded run. Its results:
09_sgemm_heldout_third.csv and 09_sgemm_model_third.csv."""


def heldout_shapes(count: int = HELDOUT_COUNT, seed: int = HELDOUT_SEED, top: int = 16384,
                   max_bytes: int = 6 << 30, low: int = 1) -> list[tuple[int, int, int]]:
    """Shapes no plan was tuned on: M, N and K each log-uniform from ``low`` to ``top`` (seeded),
    drawn again where A, B and C with their float64 copies would take more than ``max_bytes``."""
    rng, shapes = np.random.default_rng(seed), []
    while len(shapes) < count:
        M, N, K = (int(round(2 ** x)) for x in rng.uniform(math.log2(low), math.log2(top), 3))
        if 12 * (M * K + K * N + M * N) <= max_bytes:
            shapes.append((M, N, K))
    return shapes


REGRET_S, QUICK_REPEATS = 0.03, 20
"""The regret's timing, as the tuner's: every candidate is checked and timed first for about
QUICK_S of GPU time in at most QUICK_REPEATS runs; then the FINALISTS fastest and the chosen plan
are timed again for about REGRET_S each (after a new check). On the H100, timing every candidate
for REGRET_S took most of a held-out run of 40 shapes (about 340 s, some 110 candidates a shape)."""


def heldout(shapes=None, rounds: int = 3, progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``book.sgemm`` beside cuBLAS on the held-out shapes and the suite (``suite``: checked, then
    ``rounds`` interleaved rounds, medians), each book.sgemm row with the plan it chose (``plan``)
    and, off the suite, its regret: that plan's time over the fastest candidate's, every candidate
    of the shape checked and timed once, then the fastest and the chosen plan timed again
    (``REGRET_S``; ``regret_pct``, ``best_plan``), and the seconds of its first call in this
    process (``first_call_s``: where this GPU has not met the shape before, the choice of its
    plan). ``set`` says held-out or suite. Also returns every candidate's measured time beside
    the cost model's (``model_us``, ``measured_us``: the first timing, the same for every
    candidate; ``final_us``: the second, of the finalists; ``chosen`` marks the plan book.sgemm
    runs), one row per shape and plan. Bars over the first calls, the suite's rounds and the
    regrets (the last shape's in the regrets' bar), unless ``progress`` is False."""
    if shapes is None:
        shapes = (heldout_shapes() + SUITE if BACKEND == "gpu"
                  else heldout_shapes(4, top=96) + CPU_SUITE[:2])
    sms = _sms()
    build_all([b for M, N, K in shapes  # every candidate's build, side by side (on many cores)
               for b in builds_for(candidates(M, N, K, sms=sms), M, N)])
    first = {shape: _first_call_seconds(*shape)
             for shape in bar(shapes, desc="first calls", unit="shape", show=progress)}
    med = suite(shapes, rounds, progress)
    extra, model = {}, []
    suite_shapes = set(SUITE) | set(CPU_SUITE)
    regrets = bar(shapes, desc="regret", unit="shape", show=progress)
    for shape in regrets:
        chosen = plan_for(*shape)
        if shape in suite_shapes:  # its plan is the tuning run's best (09_sgemm_candidates)
            extra[shape] = {"plan": chosen.id, "regret_pct": np.nan, "best_plan": ""}
            continue
        plans = {p.id: p for p in candidates(*shape, sms=sms)} | {chosen.id: chosen}
        ok, best = _regret_times(plans, chosen, shape, progress)
        model += [{"M": shape[0], "N": shape[1], "K": shape[2], "plan": pid,
                   "model_us": 1e6 * model_seconds(plans[pid], *shape, sms),
                   "measured_us": 1e3 * ms, "final_us": 1e3 * best.get(pid, np.nan),
                   "chosen": pid == chosen.id} for pid, ms in ok.items()]
        regret = 100 * (best.get(chosen.id, np.nan) / best.min() - 1) if len(best) else np.nan
        extra[shape] = {"plan": chosen.id, "regret_pct": regret,
                        "best_plan": best.idxmin() if len(best) else "--"}
        regrets.set_postfix_str(f"{shape}: {chosen.label}, regret {regret:.1f}%", refresh=False)
    book = med.kernel == BookSgemm.id
    med["first_call_s"] = [first[s] if b else np.nan for s, b in
                           zip(zip(med.M, med.N, med.K), book)]
    for col in ("plan", "regret_pct", "best_plan"):
        med[col] = [extra[(m, n, k)][col] if b else (np.nan if col == "regret_pct" else "")
                    for m, n, k, b in zip(med.M, med.N, med.K, book)]
    med["set"] = ["suite" if s in suite_shapes else "held-out" for s in zip(med.M, med.N, med.K)]
    seconds = 2e-9 * med.M * med.N * med.K / med.gflops
    med["pct_of_copy"] = 100 * 4 * (med.M * med.K + med.K * med.N + med.M * med.N) / seconds / _bandwidth()
    return med, pd.DataFrame(model)


def _regret_times(plans: dict, chosen, shape,
                  progress: bool = True) -> tuple[pd.Series, pd.Series]:
    """Milliseconds of every candidate that passed its check (``plans`` by id), from a first
    timing of each (QUICK_S, QUICK_REPEATS); and of the finalists, the FINALISTS fastest and
    ``chosen``, timed again (REGRET_S) after a new check (one that fails it is left out of both)."""
    quick = sweep(list(plans.values()), [shape], baseline=False, target_s=QUICK_S, min_repeat=1,
                  max_repeat=QUICK_REPEATS, progress=progress)
    ok = quick[quick.status == "ok"].set_index("kernel").time_ms
    finalists = list(dict.fromkeys([*ok.nsmallest(FINALISTS).index]
                                   + ([chosen.id] if chosen.id in ok.index else [])))
    if not finalists:
        return ok, ok
    final = sweep([plans[k] for k in finalists], [shape], baseline=False, target_s=REGRET_S,
                  min_repeat=1, progress=progress).set_index("kernel")
    again = final.time_ms[final.status == "ok"] if "time_ms" in final else pd.Series(dtype=float)
    return ok.drop([k for k in finalists if k not in again.index]), again


def _first_call_seconds(M: int, N: int, K: int) -> float:
    """Host seconds of book.sgemm's first call at (M, N, K) in this process, to the end of its
    GPU work: on a shape off the suite, the cost model and the timing of its best few plans
    (compiles included where the book's cache lacks them)."""
    import time

    from ..harness.check import device_inputs
    from ..launch.runtime import synchronize
    A, B = device_inputs(M, N, K, seed=1)
    synchronize()
    t0 = time.perf_counter()
    sgemm(A, B)
    synchronize()
    return time.perf_counter() - t0


def geomean_pct(pct) -> float:
    """The geometric mean of percentages (of cuBLAS, say), as a percentage."""
    return 100 * float(np.exp(np.log(np.asarray(pct, dtype=float) / 100).mean()))


def heldout_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per set (held-out, suite) and kind of shape (min(M, N) < 64: skinny): how many shapes,
    the geometric mean and the minimum of book.sgemm's % of cuBLAS, how many meet the goal's
    floor (90% of cuBLAS; a skinny shape also by moving its bytes at 80% of the copy
    bandwidth), the median regret. The first row: every shape of the set."""
    b = df[(df.kernel == BookSgemm.id) & (df.status == "ok")].copy()
    skinny = np.minimum(b.M, b.N) < 64
    b["shapes"] = np.where(skinny, "skinny (min(M, N) < 64)", "min(M, N) >= 64")
    b["floor"] = (b.pct_of_cublas >= 90) | (skinny & (b.get("pct_of_copy", 0) >= 80))
    everything = b.assign(shapes="all")
    return pd.concat([everything, b]).groupby(["set", "shapes"]).agg(
        count=("pct_of_cublas", "size"),
        geomean=("pct_of_cublas", geomean_pct),
        lowest=("pct_of_cublas", "min"), floor=("floor", "sum"),
        median_regret=("regret_pct", "median")).rename(
        columns={"geomean": "geometric mean (% of cuBLAS)", "lowest": "lowest (% of cuBLAS)",
                 "floor": "at or above the floor", "median_regret": "median regret (%)",
                 "count": "shapes"})


def layouts_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per layout: book.sgemm's GFLOP/s at 4096^3 as a share of NN's, and the geometric mean of
    its % of cuBLAS in the same layout over the other shapes (the goal: >= 95% and NN within 5%)."""
    b = df[df.library == "book.sgemm"]
    big = b[(b.M == 4096) & (b.N == 4096) & (b.K == 4096)].set_index("layout").gflops
    rest = b[~((b.M == 4096) & (b.N == 4096) & (b.K == 4096))]
    out = pd.DataFrame({
        "GFLOP/s at 4096^3": big,
        "% of NN at 4096^3": 100 * big / big.get("nn", np.nan),
        "% of cuBLAS, same layout, 4096^3": b[(b.M == 4096) & (b.K == 4096)].set_index("layout").pct_of_cublas,
        f"geometric mean, the {rest[['M', 'N', 'K']].drop_duplicates().shape[0]} other shapes "
        "(% of cuBLAS, same layout)":
            rest.groupby("layout").pct_of_cublas.apply(geomean_pct)})
    out.index = out.index.str.upper()
    return out


@dataclass(frozen=True)
class InLayout:
    """``sgemm`` (or cuBLAS through cupy.matmul, ``library``) handed A and B in ``layout`` --
    transposed views of copies made once per pair of inputs -- as a pseudo-kernel for sweep."""

    layout: str
    library: bool = False
    chapter = 9

    @property
    def id(self) -> str:
        return f"{'cublas' if self.library else BookSgemm.id}_{self.layout}"

    @property
    def label(self) -> str:
        return f"{'cuBLAS' if self.library else 'book.sgemm'}, {self.layout.upper()}"

    def why_not_here(self):
        return None

    def launch(self, A, B, C, M, N, K) -> None:
        a, b = logical_operands(A, B, self.layout)
        if self.library:
            xp.matmul(a, b, out=C)
        else:
            sgemm(a, b, out=C)


def layouts(shapes=None, rounds: int = 3) -> pd.DataFrame:
    """book.sgemm and cuBLAS in each layout (NN, TN, NT, TT) on ``shapes`` (default 4096^3 and
    the first ten held-out shapes), checked, then timed in ``rounds`` interleaved rounds; the
    median GFLOP/s, % of cuBLAS in the same layout, and book.sgemm's plan."""
    if shapes is None:
        shapes = ([(4096, 4096, 4096)] + heldout_shapes()[:10] if BACKEND == "gpu"
                  else [(33, 17, 65), (64, 40, 24)])
    specs = [InLayout(lay, lib) for lay in LAYOUTS for lib in (False, True)]
    med = _rounds(specs, shapes, rounds, baseline=False)
    med["layout"] = med.kernel.str[-2:]
    med["library"] = np.where(med.kernel.str.startswith("cublas"), "cuBLAS", "book.sgemm")
    lib = med[med.library == "cuBLAS"].set_index(["M", "N", "K", "layout"]).gflops
    med["pct_of_cublas"] = 100 * med.gflops.to_numpy() / lib.reindex(
        pd.MultiIndex.from_frame(med[["M", "N", "K", "layout"]])).to_numpy()
    med["plan"] = [plan_for(m, n, k, lay).id if lib_ == "book.sgemm" else ""
                   for m, n, k, lay, lib_ in zip(med.M, med.N, med.K, med.layout, med.library)]
    return med


OVERHEAD_SHAPES = [(1000, 1000, 1000), (1024, 1024, 1024), (2048, 2048, 2048)]


def call_overhead(shapes=OVERHEAD_SHAPES, repeats: int = 200) -> pd.DataFrame:
    """On a GPU: what one call costs, per shape, for cuBLAS (CuPy's matmul), ``sgemm`` and the
    same plan launched directly (``Plan.run``): the GPU time between the events around the call
    (host work before the launch included: the GPU idles meanwhile), the host time of the call,
    and GFLOP/s, each checked first; two interleaved rounds, medians."""
    from cupyx.profiler import benchmark

    from ..harness.check import device_inputs
    from ..harness.device import device_report
    from ..harness.measure import TOLERANCE, relative_error_xp
    rows = []
    for M, N, K in shapes:
        A, B = device_inputs(M, N, K, seed=0)
        ref = A.astype(xp.float64) @ B.astype(xp.float64)
        C = xp.empty((M, N), dtype=xp.float32)
        plan = plan_for(M, N, K)
        calls = {"cuBLAS": lambda: xp.matmul(A, B, out=C),
                 "book.sgemm": lambda: sgemm(A, B, out=C),
                 f"Plan.run ({plan.label})": lambda: plan.run(A, B, C, M, N, K, K, N, N)}
        for _ in range(2):
            for name, call in calls.items():
                C.fill(xp.nan)
                call()
                err = relative_error_xp(C, ref)
                ok = err < TOLERANCE
                r = benchmark(call, n_repeat=repeats, n_warmup=10) if ok else None
                rows.append({"M": M, "N": N, "K": K, "call": name, "rel_error": err,
                             "status": "ok" if ok else "FAILED check",
                             "gpu_us": 1e6 * np.median(r.gpu_times[0]) if ok else np.nan,
                             "host_us": 1e6 * np.median(r.cpu_times) if ok else np.nan})
    df = pd.DataFrame(rows).groupby(["M", "N", "K", "call"], sort=False).agg(
        gpu_us=("gpu_us", "median"), host_us=("host_us", "median"),
        rel_error=("rel_error", "max"), status=("status", "first")).reset_index()
    df["gflops"] = 2e-3 * df.M * df.N * df.K / df.gpu_us
    return df.assign(device=device_report()["name"], date=pd.Timestamp.today().date().isoformat())


TIMELINE_FILE = "09_edge_timeline"


def block_times(config: str, n: int, move_edges: bool = True, repeats: int = 3) -> pd.DataFrame:
    """One launch of ``config`` at n x n x n, block by block (09_sgemm.cu's matmul_async_timed):
    each block's tile (bx, by), whether it is an edge tile (the last row or column of tiles, the
    ones that stick out where n is not a multiple of the tile), its start and end in microseconds
    from the first start, and its SM. ``move_edges=False``: the build whose edge tiles stay put
    and check every copy. The last of ``repeats`` launches is kept (the others warm up)."""
    from ..harness.check import device_inputs
    spec = _timed_spec(config, move_edges)
    kernel, (gx, gy) = unchecked(spec.kernel()), spec.grid(n, n)
    A, B = device_inputs(n, n, n, seed=0)
    C, T = xp.empty((n, n), dtype=xp.float32), xp.zeros(3 * gx * gy, dtype=xp.uint64)
    for _ in range(repeats):
        kernel((gx, gy), spec.block, (A, B, C, *_ints(n, n, n), T),
               shared_mem=spec.shared_mem(0))
    t = (T.get() if BACKEND == "gpu" else T).reshape(-1, 3).astype(np.int64)
    by, bx = np.divmod(np.arange(gx * gy), gx)
    return pd.DataFrame({"bx": bx, "by": by, "edge": (bx == gx - 1) | (by == gy - 1),
                         "start_us": (t[:, 0] - t[:, 0].min()) / 1e3,
                         "end_us": (t[:, 1] - t[:, 0].min()) / 1e3, "sm": t[:, 2]})


def _timed_spec(config: str, move_edges: bool) -> KernelSpec:
    """09_sgemm.cu's matmul_async_timed for a configuration, edge tiles moved back or not."""
    spec = _entry(config, "matmul_async_timed")
    return dataclasses.replace(spec, leading_dims=False,
                               defines=spec.defines + (("MOVE_EDGES", int(move_edges)),))


def edge_timeline(sizes=(1000, 1024), config: str = "64x128") -> pd.DataFrame | None:
    """Per size and build (edge tiles in place, or moved back): the kernel's span and the median
    time of an inner and of an edge block, from ``block_times``; None, with a line that says
    why, where this GPU cannot run ``config``."""
    from ..harness.device import device_report
    why = _spec(config).why_not_here()
    if why:
        print(f"No timeline here: {config} {why}.")
        return None
    build_ahead([_timed_spec(config, move) for move in (False, True)])
    rows = []
    for n in sizes:
        for move in (False, True):
            df = block_times(config, n, move)
            took = df.end_us - df.start_us
            rows.append({"n": n, "config": config,
                         "edge tiles": "moved back" if move else "in place", "blocks": len(df),
                         "kernel_us": df.end_us.max(),
                         "inner_block_us": took[~df.edge].median(),
                         "edge_block_us": took[df.edge].median()})
    return pd.DataFrame(rows).assign(device=device_report()["name"],
                                     date=pd.Timestamp.today().date().isoformat())


def waves(shapes, config: str = "128x256", sms: int = 132) -> pd.DataFrame:
    """Why one tile size cannot fit every shape: the blocks a configuration launches per shape,
    the waves they make on ``sms`` SMs (one block per SM at a time, as chapter 8's kernels run),
    and how full the last wave is."""
    spec = _spec(config)
    rows = []
    for M, N, K in shapes:
        blocks = math.prod(spec.grid(M, N))
        full, rest = divmod(blocks, sms)
        rows.append({"M": M, "N": N, "K": K, "blocks": blocks, "waves": blocks / sms,
                     "last wave full (%)": 100 * (rest or sms) / sms,
                     "k steps per block": ceil_div(K, dict(spec.defines)["BK"])})
    return pd.DataFrame(rows).set_index(["M", "N", "K"])


def main(argv: list[str]) -> int:
    pd.set_option("display.width", 200)
    if "--tune" in argv:
        plans, every = tune()
        results.keep(every, CANDIDATES_FILE)
        print(results.keep(plans, PLANS_FILE).to_string())
        use_plans(plans)
    if "--suite" in argv or "--tune" in argv:
        print(results.keep(suite(), SUITE_FILE).to_string())
    if "--heldout" in argv:
        df, model = heldout()
        results.keep(model, MODEL_FILE)
        print(results.keep(df, HELDOUT_FILE).to_string())
        if "--suite" not in argv and "--tune" not in argv:  # the suite's rows are its figures
            results.keep(df[df.set == "suite"][SUITE_COLUMNS].reset_index(drop=True), SUITE_FILE)
        print(heldout_summary(df).round(1).to_string())
    for flag, seed in (("--fresh", FRESH_SEED), ("--third", THIRD_SEED)):  # without the suite
        if flag in argv:
            df, model = heldout(heldout_shapes(seed=seed))
            results.keep(model, MODEL_FILE + "_" + flag[2:])
            print(results.keep(df, HELDOUT_FILE + "_" + flag[2:]).to_string())
            print(heldout_summary(df).round(1).to_string())
    if "--layouts" in argv:
        df = results.keep(layouts(), LAYOUTS_FILE)
        print(df.drop(columns=["label", "device", "date"]).to_string())
        print(layouts_summary(df).round(1).to_string())
    if "--timeline" in argv:
        print(results.keep(edge_timeline(), TIMELINE_FILE).round(1).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
