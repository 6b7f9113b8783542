"""precision='ozaki' as a user calls it (chapter 12): a loop of calls beside the GPU's clock, the
accuracy guard's cost on inputs that need nothing, and loops of seconds (the clock and the power).

Each study checks every call against float64 before it times it, interleaves what it compares
over ``rounds`` and keeps medians with their spread; ``python benchmarks/ozaki_loop.py`` prints
them. On a GPU only (``BACKEND == 'gpu'``): the emulator has no clock to measure.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..harness.measure import time_launch
from .ozaki_lab import stamp

LOOP_FILE, GUARD_FILE, SUSTAINED_FILE = "12_loop", "12_guard", "12_sustained"
LOOP_SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (3000, 5000, 2000),
               (777, 4100, 6000)]
"""The issue's squares and two shapes nobody tuned."""
GUARD_SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (3000, 5000, 2000)]
ROUNDS, ISSUED = 3, 20
"""Rounds of each study; calls ``host_us`` issues (few: 100 calls of a dozen launches fill the
GPU's queue, and then the host waits for it)."""
INPUTS = {"uniform": lambda rng, s: rng.uniform(-1, 1, s), "normal": lambda rng, s: rng.standard_normal(s),
          "non-negative": lambda rng, s: rng.random(s),
          "heavy tails (t, 3)": lambda rng, s: rng.standard_t(3, s)}
"""Inputs that need nothing of the guard, what its cost is measured on; and heavy-tailed ones, whose
rows keep too few bits of their typical entries, where it acts."""


def calls(a, b, c, products: bool = False) -> dict:
    """The calls compared, each writing ``c``: precision='ozaki' (replayed after its first call),
    the scaling alone (``ozaki_sgemm(guard=False)``: no replay), precision='fp32' and cuBLAS
    SGEMM; ``products``: also precision='ozaki''s work on the mma.sync product kernels of compute
    capability 8.x, today's and the tiled one (no replay)."""
    import cupy as cp

    from ..blas import sgemm
    from ..blas.ozaki import ozaki_sgemm
    out = {"ozaki": lambda: sgemm(a, b, out=c, precision="ozaki"),
           "ozaki unguarded": lambda: ozaki_sgemm(a, b, out=c, guard=False),
           "fp32": lambda: sgemm(a, b, out=c),
           "cublas": lambda: cp.matmul(a, b, out=c)}
    if products:
        out["ozaki on mma.sync"] = lambda: ozaki_sgemm(a, b, out=c, products="mma")
        out["ozaki on mma.sync, tiled"] = lambda: ozaki_sgemm(a, b, out=c, products="tiled")
    return out


def loop_ms(f, seconds: float = 0.3) -> float:
    """A loop of back-to-back calls of ``f`` for about ``seconds``, host included, one
    synchronize every 50 calls: ms per call."""
    import cupy as cp
    f()
    cp.cuda.Device().synchronize()
    t, n = time.perf_counter(), 0
    while time.perf_counter() - t < seconds or n < 5:
        for _ in range(5):
            f()
        n += 5
        if n % 50 == 0:  # (the queue never runs dry, nor grows without bound)
            cp.cuda.Device().synchronize()
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - t) / n * 1e3


def host_us(f) -> float:
    """Wall time to issue ISSUED calls of ``f`` without waiting for the GPU, per call (us)."""
    import cupy as cp
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(ISSUED):
        f()
    took = (time.perf_counter() - t) / ISSUED * 1e6
    cp.cuda.Device().synchronize()
    return took


def _checked(name: str, f, c, ref, shape) -> float:
    import cupy as cp
    c.fill(cp.nan)
    f()
    err = float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref))
    if not err < 1e-5:
        raise AssertionError(f"{name} at {'x'.join(map(str, shape))}: relative error {err:.2e}")
    return err


def loop(shapes=LOOP_SHAPES, rounds: int = ROUNDS, products: bool = False) -> pd.DataFrame:
    """For each shape and call (``calls``), medians over ``rounds`` of: gpu_ms (the GPU alone,
    ``time_launch``), loop_ms (``loop_ms``), host_us (``host_us``); spread: the largest over the
    smallest of the rounds' loop_ms, less 1; and the ratios x cuBLAS on the GPU clock and in the
    loop. ``products``: the mma.sync path too, on the GPU clock only."""
    import cupy as cp
    rows = []
    for r in range(rounds):
        for M, N, K in shapes:
            rng = np.random.default_rng(r + M + N + K)
            a = cp.asarray(rng.uniform(-1, 1, (M, K)).astype(np.float32))
            b = cp.asarray(rng.uniform(-1, 1, (K, N)).astype(np.float32))
            c = cp.empty((M, N), cp.float32)
            ref = a.astype(cp.float64) @ b.astype(cp.float64)
            for name, f in calls(a, b, c, products).items():
                err = _checked(name, f, c, ref, (M, N, K))
                slow = name.startswith("ozaki on mma.sync")
                rows.append({"M": M, "N": N, "K": K, "call": name, "round": r, "error": err,
                             "gpu_ms": time_launch(f)["time_ms"],
                             "loop_ms": np.nan if slow else loop_ms(f),
                             "host_us": np.nan if slow else host_us(f)})
    raw = pd.DataFrame(rows)
    df = raw.groupby(["M", "N", "K", "call"], sort=False).median().drop(columns="round")
    df["spread"] = raw.groupby(["M", "N", "K", "call"], sort=False).loop_ms.agg(
        lambda v: v.max() / v.min() - 1)
    base = df.xs("cublas", level="call")
    for col in ("gpu_ms", "loop_ms"):
        df[f"x_cublas_{col[:-3]}"] = [base.loc[i[:3], col] / v for i, v in df[col].items()]
    return df.reset_index().assign(**stamp())


def guard_cost(shapes=GUARD_SHAPES, rounds: int = ROUNDS) -> pd.DataFrame:
    """For each input kind (INPUTS) and shape: the GPU time of precision='ozaki' (with its guard)
    and of the scaling alone, interleaved over ``rounds`` (medians, and the spread of the
    unguarded times), and the share of elements the two give differently (those the guard took
    another way, or nearly)."""
    import cupy as cp

    from ..blas import sgemm
    from ..blas.ozaki import ozaki_sgemm
    rows = []
    for kind, make in INPUTS.items():
        for M, N, K in shapes:
            rng = np.random.default_rng(M + K)
            a = cp.asarray(make(rng, (M, K)).astype(np.float32))
            b = cp.asarray(make(rng, (K, N)).astype(np.float32))
            c, u = cp.empty((M, N), cp.float32), cp.empty((M, N), cp.float32)
            ref = a.astype(cp.float64) @ b.astype(cp.float64)
            guarded = lambda: sgemm(a, b, out=c, precision="ozaki")
            alone = lambda: ozaki_sgemm(a, b, out=u, guard=False)
            _checked("ozaki", guarded, c, ref, (M, N, K))
            _checked("ozaki unguarded", alone, u, ref, (M, N, K))
            differ = float((c != u).mean())
            times = {"guarded": [], "alone": []}
            for _ in range(rounds):
                times["guarded"].append(time_launch(guarded)["time_ms"])
                times["alone"].append(time_launch(alone)["time_ms"])
            g, al = np.median(times["guarded"]), np.median(times["alone"])
            rows.append({"input": kind, "M": M, "N": N, "K": K, "guarded_ms": g, "alone_ms": al,
                         "cost_pct": 100 * (g / al - 1),
                         "spread_pct": 100 * (max(times["alone"]) / min(times["alone"]) - 1),
                         "differ_pct": 100 * differ})
    return pd.DataFrame(rows).assign(**stamp())


def sustained(seconds: float = 3.0, sizes=(4096, 8192)) -> pd.DataFrame:
    """precision='ozaki' and cuBLAS SGEMM in loops of ``seconds`` each, twice in turn, at n^3:
    ms per call, the SM clock, the power and what limited the clock (``clocks_while``; medians
    of the two), and x cuBLAS."""
    import cupy as cp

    from ..harness.device import clocks_while
    rows = []
    for n in sizes:
        rng = np.random.default_rng(n)
        a = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
        b = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
        c = cp.empty((n, n), cp.float32)
        fs = calls(a, b, c)
        for name in ("ozaki", "cublas", "ozaki", "cublas"):
            rows.append({"n": n, "call": name, **clocks_while(fs[name], seconds)})
    df = pd.DataFrame(rows).groupby(["n", "call"]).agg(
        {"ms": "median", "ms_first": "median", "sm_mhz": "median", "power_w": "median",
         "limited_by": "last"}).reset_index()
    cublas = df[df.call == "cublas"].set_index("n").ms
    df["x_cublas"] = [cublas[n] / ms if call == "ozaki" else np.nan
                      for n, call, ms in zip(df.n, df.call, df.ms)]
    return df.assign(**stamp())
