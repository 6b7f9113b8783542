"""precision='ozaki' as a user's loop sees it, beside the GPU's clock (issue: a loop of calls).

For each n^3 (and shapes nobody tuned), interleaved over ROUNDS rounds, each call checked first:
  * gpu ms: the call's time on the GPU alone (``time_launch``: CUDA events around repeats);
  * loop ms: a loop of back-to-back calls, host included, one synchronize at the end, per call;
  * host us: wall time to issue ISSUED calls without waiting for the GPU, per call;
the same for ozaki_sgemm(guard=False) (the row scaling alone, without precision='ozaki''s
accuracy guard; no replay: its GPU time is the guard's cost), cuBLAS SGEMM (cupy.matmul) and
precision='fp32', and the ratios x cuBLAS on the GPU clock and in the loop. Then the guard's cost
on inputs that need nothing (uniform, normal, non-negative): GPU time with and without it, and
the share of elements whose bits differ (those it took as FMA chains, or nearly). ``--sustained S``: also a loop of S seconds at 4096^3 and 8192^3 with the
SM clock, power and what limits the clock (``device.clocks_while``), ozaki and cuBLAS in turn.

    python benchmarks/ozaki_loop.py [--sustained 3]
"""
import argparse
import time

import numpy as np
import pandas as pd

import book
from book import BACKEND
from book.harness.measure import time_launch

SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
          (3000, 5000, 2000), (777, 4100, 6000)]
ROUNDS, ISSUED = 3, 100


def calls(a, b, c):
    import cupy as cp
    from book.blas.ozaki import ozaki_sgemm
    return {"ozaki": lambda: book.sgemm(a, b, out=c, precision="ozaki"),
            "ozaki unguarded": lambda: ozaki_sgemm(a, b, out=c, guard=False),
            "fp32": lambda: book.sgemm(a, b, out=c),
            "cublas": lambda: cp.matmul(a, b, out=c)}


def loop_ms(f, seconds: float = 0.3) -> float:
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
    import cupy as cp
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(ISSUED):
        f()
    took = (time.perf_counter() - t) / ISSUED * 1e6
    cp.cuda.Device().synchronize()
    return took


def measure(shapes=SHAPES, rounds: int = ROUNDS) -> pd.DataFrame:
    import cupy as cp
    rows = []
    for r in range(rounds):
        for M, N, K in shapes:
            rng = np.random.default_rng(r + M + N + K)
            a = cp.asarray(rng.uniform(-1, 1, (M, K)).astype(np.float32))
            b = cp.asarray(rng.uniform(-1, 1, (K, N)).astype(np.float32))
            c = cp.empty((M, N), cp.float32)
            ref = a.astype(cp.float64) @ b.astype(cp.float64)
            for name, f in calls(a, b, c).items():
                c.fill(cp.nan)
                f()
                err = float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref))
                if not err < 1e-5:
                    raise AssertionError(f"{name} at {M}x{N}x{K}: relative error {err:.2e}")
                rows.append({"M": M, "N": N, "K": K, "call": name, "round": r, "error": err,
                             "gpu_ms": time_launch(f)["time_ms"], "loop_ms": loop_ms(f),
                             "host_us": host_us(f)})
    df = pd.DataFrame(rows).groupby(["M", "N", "K", "call"], sort=False).median().drop(columns="round")
    base = df.xs("cublas", level="call")
    for col in ("gpu_ms", "loop_ms"):
        df[f"x cuBLAS ({col[:-3]})"] = [base.loc[i[:3], col] / v for i, v in df[col].items()]
    return df


INPUTS = {"uniform": lambda rng, s: rng.uniform(-1, 1, s), "normal": lambda rng, s: rng.standard_normal(s),
          "non-negative": lambda rng, s: rng.random(s)}


def guard_cost(shapes=((2048,) * 3, (4096,) * 3, (8192,) * 3, (3000, 5000, 2000)),
               rounds: int = ROUNDS) -> pd.DataFrame:
    """For each input kind and shape: the GPU time of precision='ozaki' (guarded) and of the
    scaling alone, interleaved over ``rounds``, and the share of elements they give differently."""
    import cupy as cp
    from book.blas.ozaki import ozaki_sgemm
    rows = []
    for kind, make in INPUTS.items():
        for M, N, K in shapes:
            rng = np.random.default_rng(M + K)
            a = cp.asarray(make(rng, (M, K)).astype(np.float32))
            b = cp.asarray(make(rng, (K, N)).astype(np.float32))
            c, u = cp.empty((M, N), cp.float32), cp.empty((M, N), cp.float32)
            guarded = lambda: book.sgemm(a, b, out=c, precision="ozaki")
            alone = lambda: ozaki_sgemm(a, b, out=u, guard=False)
            guarded(), alone()
            differ = float((c != u).mean())
            times = {"guarded": [], "alone": []}
            for _ in range(rounds):
                times["guarded"].append(time_launch(guarded)["time_ms"])
                times["alone"].append(time_launch(alone)["time_ms"])
            g, al = np.median(times["guarded"]), np.median(times["alone"])
            rows.append({"input": kind, "M": M, "N": N, "K": K, "guarded ms": g, "alone ms": al,
                         "cost %": 100 * (g / al - 1),
                         "spread %": 100 * (max(times["alone"]) / min(times["alone"]) - 1),
                         "differ %": 100 * differ})
    return pd.DataFrame(rows)


def sustained(seconds: float) -> pd.DataFrame:
    import cupy as cp

    from book.harness.device import clocks_while
    rows = []
    for n in (4096, 8192):
        rng = np.random.default_rng(n)
        a = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
        b = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
        c = cp.empty((n, n), cp.float32)
        fs = calls(a, b, c)
        for name in ("ozaki", "cublas", "ozaki", "cublas"):
            got = clocks_while(fs[name], seconds)
            rows.append({"n": n, "call": name, **got})
    df = pd.DataFrame(rows).groupby(["n", "call"]).agg(
        {"ms": "median", "ms_first": "median", "sm_mhz": "median", "power_w": "median",
         "limited_by": "last"})
    for n in (4096, 8192):
        df.loc[(n, "ozaki"), "x cuBLAS"] = df.loc[(n, "cublas"), "ms"] / df.loc[(n, "ozaki"), "ms"]
    return df


if __name__ == "__main__":
    if BACKEND != "gpu":
        raise SystemExit("this benchmark needs a GPU")
    import cupy as cp
    parser = argparse.ArgumentParser()
    parser.add_argument("--sustained", type=float, default=0.0)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--guard", action="store_true", help="only the guard's cost")
    args = parser.parse_args()
    pd.set_option("display.width", 250)
    print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    print(f"\nThe accuracy guard's cost, GPU time (medians of {args.rounds}):")
    print(guard_cost(rounds=args.rounds).round(3).to_string(index=False))
    from book.studies.ozaki_lab import passes
    both = pd.concat([passes([(n,) * 3 for n in (2048, 4096, 8192)], guard=g) for g in (False, True)])
    print("\nThe passes with and without the guard (ms, GPU time):")
    print(both.pivot_table(index=["M", "pass"], columns="guard", values="time_ms", sort=False).round(3))
    if args.guard:
        raise SystemExit
    print(measure(rounds=args.rounds).round(4).to_string())
    if args.sustained:
        print(f"\nSustained loops of {args.sustained:g} s (medians of two each):")
        print(sustained(args.sustained).round(3).to_string())
