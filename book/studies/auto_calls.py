"""precision='auto' as a user's loop sees it: per shape, the method its first calls chose, each
method's loop of calls beside cuBLAS SGEMM (host included), the choice's regret against the
fastest method measured in the same rounds, the host time it adds to the chosen method's call
(``host_us``: issuing 20 calls, per call), and each call's error elementwise against float64
beside cuBLAS's (``python benchmarks/auto_loop.py``; a GPU only).

Every call is checked first: the output poisoned with NaN, then its largest elementwise error in
units of K u (|A||B|)_ij, the bound an SGEMM keeps, must stay below twice cuBLAS's own and below
the bound itself.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .alternatives import SHAPES as MODEL_SHAPES
from .alternatives import learn_auto
from .ozaki_calls import host_us, loop_ms
from .ozaki_lab import stamp

FILE = "12_auto"
SQUARES = [(n, n, n) for n in (2048, 4096, 8192)]
EDGES = [(64, 64, 64), (1000, 1000, 1000), (7, 9999, 4096), (16384, 8, 1024), (3000, 2000, 1500)]
"""Tiny, odd and skinny shapes: where fp32 should win, and the choice must not lose to it."""
TRANSPOSED = [((2048, 4096, 4096), "tn"), ((1024, 3000, 2000), "nt")]
METHODS = ("auto", "fp32", "tf32x3", "ozaki", "cublas")


def held_out(count: int = 6, seed: int = 20261128) -> list:
    """Shapes nobody tuned: M, N, K log-uniform in 256 .. 8192, from ``seed``."""
    rng = np.random.default_rng(seed)
    return [tuple(int(v) for v in np.exp(rng.uniform(np.log(256), np.log(8192), 3)))
            for _ in range(count)]


def cases() -> list:
    """(shape, layout, group) of the study."""
    return ([(s, "nn", "model layer") for s in MODEL_SHAPES if s not in SQUARES]
            + [(s, "nn", "square") for s in SQUARES] + [(s, "nn", "edge") for s in EDGES]
            + [(s, lay, "transposed") for s, lay in TRANSPOSED]
            + [(s, "nn", "held out") for s in held_out()])


def _operands(M: int, N: int, K: int, layout: str, seed: int):
    import cupy as cp
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    A = cp.asarray(np.ascontiguousarray(a.T)).T if layout[0] == "t" else cp.asarray(a)
    B = cp.asarray(np.ascontiguousarray(b.T)).T if layout[1] == "t" else cp.asarray(b)
    return A, B


def reference(A, B) -> tuple:
    """(AB, K u |A||B|) in float64 (the GPU's): an SGEMM's elementwise bound's parts."""
    import cupy as cp
    A64, B64 = A.astype(cp.float64), B.astype(cp.float64)
    return A64 @ B64, (cp.abs(A64) @ cp.abs(B64)) * (A.shape[1] * 2.0 ** -24)


def elementwise(C, ref) -> float:
    """max_ij |C - AB|_ij / (K u (|A||B|)_ij); NaN left in C (a call that wrote nothing) raises."""
    import cupy as cp
    exact, scale = ref
    units = cp.abs(C.astype(cp.float64) - exact) / cp.maximum(scale, 1e-300)
    if bool(cp.isnan(units).any()):
        raise AssertionError("a call left NaN in C")
    return float(cp.max(units))


def calls(A, B, C) -> dict:
    import cupy as cp

    from ..blas import sgemm
    out = {m: (lambda m=m: sgemm(A, B, out=C, precision=m)) for m in METHODS[:4]}
    out["cublas"] = lambda: cp.matmul(A, B, out=C)
    return out


def run(rounds: int = 2, seconds: float = 0.25) -> pd.DataFrame:
    """One row per case and method, medians over ``rounds`` (interleaved) of loop_ms, with the
    spread of the rounds, each method's elementwise error and the method auto chose."""
    import cupy as cp

    from ..blas import auto
    from ..blas.auto import methods_here
    from ..blas.call import _fp32_shape
    rows = []
    for (M, N, K), layout, group in cases():
        A, B = _operands(M, N, K, layout, M + N + K)
        C = cp.empty((M, N), cp.float32)
        fs = {m: f for m, f in calls(A, B, C).items() if m in ("auto", "cublas")
              or m in methods_here(K)}
        key = _fp32_shape(A, B, C)
        first = learn_auto(fs["auto"], key)
        errors, ref = {}, reference(A, B)
        for m, f in fs.items():
            C.fill(cp.nan)
            f()
            errors[m] = elementwise(C, ref)
            if not errors[m] <= 1:  # (the bound itself; cuBLAS's is far below)
                raise AssertionError(f"{m} at {M}x{N}x{K} {layout}: elementwise error "
                                     f"{errors[m]:.3g} K u |A||B|")
        del ref
        for r in range(rounds):
            for m, f in (fs.items() if r % 2 == 0 else reversed(fs.items())):
                rows.append({"M": M, "N": N, "K": K, "layout": layout, "group": group,
                             "method": m, "round": r, "loop_ms": loop_ms(f, seconds),
                             "host_us": host_us(f),
                             "error_units": errors[m], "chosen": auto.method(*key)[0],
                             "calls_to_choose": first})
        del A, B, C
        cp.get_default_memory_pool().free_all_blocks()
    raw = pd.DataFrame(rows)
    keys = ["M", "N", "K", "layout", "group", "method"]
    df = raw.groupby(keys, sort=False).agg(
        loop_ms=("loop_ms", "median"), spread=("loop_ms", lambda v: v.max() / v.min() - 1),
        host_us=("host_us", "median"),
        error_units=("error_units", "first"), chosen=("chosen", "first"),
        calls_to_choose=("calls_to_choose", "first")).reset_index()
    return df.assign(**stamp())


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per case: the method chosen, auto's x cuBLAS and x fp32 in the loop, its regret against
    the fastest method timed (fp32, tf32x3, ozaki), its error over cuBLAS's (elementwise)."""
    out = []
    for (M, N, K, layout, group), g in df.groupby(["M", "N", "K", "layout", "group"], sort=False):
        t = g.set_index("method")
        methods = [m for m in ("fp32", "tf32x3", "ozaki") if m in t.index]
        fastest = min(methods, key=lambda m: t.loop_ms[m])
        out.append({"shape": f"{M}x{N}x{K}" + ("" if layout == "nn" else f" {layout}"),
                    "group": group, "chosen": t.chosen["auto"], "fastest": fastest,
                    "x_cublas": t.loop_ms["cublas"] / t.loop_ms["auto"],
                    "x_fp32": t.loop_ms["fp32"] / t.loop_ms["auto"],
                    "regret": t.loop_ms["auto"] / t.loop_ms[fastest] - 1,
                    "spread": t.spread["auto"],
                    "error_vs_sgemm": t.error_units["auto"] / t.error_units["cublas"],
                    "host_us_added": (t.host_us["auto"] - t.host_us[t.chosen["auto"]]
                                      if "host_us" in t else np.nan),
                    "error_units": t.error_units["auto"]})
    return pd.DataFrame(out)


GOAL_GROUPS = ("model layer", "square")


def table(df: pd.DataFrame) -> pd.DataFrame:
    """The choice on the real models' layers and the squares: per shape, the method chosen, x
    cuBLAS SGEMM and x precision='fp32' in a loop of calls, its largest elementwise error over
    cuBLAS's."""
    s = summary(df)
    s = s[s.group.isin(GOAL_GROUPS)]
    return pd.DataFrame({"shape": s["shape"], "method chosen": s.chosen,
                         "x cuBLAS, loop": s.x_cublas.round(2), "x fp32": s.x_fp32.round(2),
                         "largest |C - AB|, x cuBLAS's": s.error_vs_sgemm.round(2)}).set_index("shape")


def numbers(df: pd.DataFrame) -> dict:
    """What chapter 12's text says of the choice, each from ``summary``."""
    s = summary(df)
    goal, rest, held = (s[s.group.isin(GOAL_GROUPS)], s[~s.group.isin(GOAL_GROUPS)],
                        s[s.group == "held out"])
    wrong = (s.chosen != s.fastest).sum()
    big = df[(df.M == 8192) & (df.N == 8192) & (df.K == 8192)].set_index("method").loop_ms
    return {"auto_device": df.device.iloc[0].removeprefix("NVIDIA "),
            "auto_geomean": float(np.exp(np.log(goal.x_cublas).mean())),
            "auto_x_8192": float(s.set_index("shape").x_cublas["8192x8192x8192"]),
            "auto_tc_gap_8192": float(100 * abs(big["ozaki"] / big["tf32x3"] - 1)),
            "auto_took_8192": {"tf32x3": "3xTF32", "ozaki": "the Ozaki scheme", "fp32": "FFMA"}[
                s.set_index("shape").chosen["8192x8192x8192"]],
            "auto_fp32_min": float(s.x_fp32.min()), "auto_rest": len(rest),
            "auto_fp32_where": ", ".join(s[s.chosen == "fp32"]["shape"]),
            "auto_regret_geo": float(100 * (np.exp(np.log1p(held.regret).mean()) - 1)),
            "auto_regret_max": float(100 * held.regret.max()),
            "auto_held": len(held), "auto_matched": "every one" if not wrong else f"all but {wrong}",
            "auto_shapes": len(s), "auto_calls": int(df.calls_to_choose.max()),
            "auto_err_max": float(s.error_vs_sgemm.max()),
            "auto_err_shape": s["shape"][s.error_vs_sgemm.idxmax()].replace("x", " × "),
            "auto_err_method": s.chosen[s.error_vs_sgemm.idxmax()],
            "auto_units_max": float(s.error_units.max())}


HOST_CASES = [((512, 3072, 768), "nn"), ((64, 64, 64), "nn"), ((2048, 4096, 4096), "tn"),
              ((1024, 3000, 2000), "nt")]
"""Calls of C-contiguous operands and of transposed views (which tf32x3 copies, in its replay
too), each seen before: every one replays."""


def host_added(rounds: int = 9, calls: int = 50) -> pd.DataFrame:
    """Per case: the host's time to issue a call of precision='auto' and of the method it chose
    (``calls`` back to back, per call; medians of ``rounds`` interleaved), and the difference."""
    import time

    import cupy as cp

    from ..blas import auto, sgemm
    from ..blas.call import _fp32_shape
    rows = []
    for (M, N, K), layout in HOST_CASES:
        A, B = _operands(M, N, K, layout, 1)
        C = cp.empty((M, N), cp.float32)
        learn_auto(lambda: sgemm(A, B, out=C, precision="auto"), _fp32_shape(A, B, C))
        method = auto.method(*_fp32_shape(A, B, C))[0]
        times = {"auto": [], method: []}
        for _ in range(rounds):
            for m in times:
                sgemm(A, B, out=C, precision=m)
                cp.cuda.Device().synchronize()
                t = time.perf_counter()
                for _ in range(calls):
                    sgemm(A, B, out=C, precision=m)
                times[m].append((time.perf_counter() - t) / calls * 1e6)
                cp.cuda.Device().synchronize()
        auto_us, method_us = np.median(times["auto"]), np.median(times[method])
        rows.append({"shape": f"{M}x{N}x{K} {layout}", "method": method, "auto_us": auto_us,
                     "method_us": method_us, "added_us": auto_us - method_us})
    return pd.DataFrame(rows)
