"""skinny_outer, chapter 9's kernel for few k (K <= 32), launched two ways beside cuBLAS: a block
per group of 16 rows of C (B's values read again for every group), or at most a wave of blocks,
each keeping B's values and walking every gridDim.y-th group. ``book.blas.kernels.OUTER_ONE_GROUP`` says
which PR take which (a block a group up to it); this prints both for every shape, so the rule can
be judged on any GPU. Each launch is checked against float64 (output poisoned with NaN), then
timed in three interleaved rounds (median µs). Without a GPU: small shapes on the emulator, to
show that it runs (its times mean nothing).

    python benchmarks/skinny_outer.py
"""
import numpy as np
import pandas as pd

from book import blas
from book.blas import kernels
from book.harness.check import TOLERANCE, device_inputs
from book.harness.measure import relative_error_xp, time_launch
from book.launch.runtime import BACKEND, xp

SHAPES = ([(4096, 4096, 8), (8192, 8192, 2), (6000, 700, 5), (20000, 3000, 3), (2048, 8192, 16),
           (3000, 3000, 32), (1500, 9000, 30), (1000, 20000, 24)] if BACKEND == "gpu"
          else [(70, 1100, 20), (40, 300, 6)])
ROUNDS = 3
WAYS = {"a block a group": blas.SKINNY_PR[-1], "one wave": 0}  # OUTER_ONE_GROUP for each


def launches(M: int, N: int, K: int):
    """The launches to compare at one shape, by name, each writing C."""
    A, B = device_inputs(M, N, K, seed=M + N + K)
    C = xp.empty((M, N), dtype=xp.float32)
    plan = blas.Skinny("k", next(p for p in blas.SKINNY_PR if p >= K))

    def way(groups):
        def run():
            saved, kernels.OUTER_ONE_GROUP = kernels.OUTER_ONE_GROUP, groups
            try:
                plan.launch(A, B, C, M, N, K)
            finally:
                kernels.OUTER_ONE_GROUP = saved
        return run
    runs = {name: way(groups) for name, groups in WAYS.items()}
    runs["cuBLAS"] = lambda: xp.matmul(A, B, out=C)
    ref = A.astype(xp.float64) @ B.astype(xp.float64)
    return plan, C, ref, runs


def main() -> None:
    rows = []
    for M, N, K in SHAPES:
        plan, C, ref, runs = launches(M, N, K)
        for name, run in runs.items():
            C.fill(xp.nan)
            run()
            error = relative_error_xp(C, ref)
            if not error < TOLERANCE:
                raise SystemExit(f"{name} at {M} x {N} x {K}: FAILED its check (relative error {error:.2e})")
        times = {name: [] for name in runs}
        for _ in range(ROUNDS):
            for name, run in runs.items():
                times[name].append(time_launch(run, warmed=True)["time_ms"] * 1e3)
        row = {"M": M, "N": N, "K": K, "PR": plan.pr}
        row.update({f"{name} (µs)": float(np.median(t)) for name, t in times.items()})
        grid = kernels._outer_grid(plan.pr, M, N)
        rule = next(name for name, one_group in WAYS.items()
                    if kernels._outer_grid(plan.pr, M, N, one_group) == grid)
        row["the rule runs"] = rule
        row["% of cuBLAS"] = 100 * row["cuBLAS (µs)"] / row[f"{rule} (µs)"]
        rows.append(row)
    pd.set_option("display.width", 200)
    print(pd.DataFrame(rows).round(1).to_string(index=False))


if __name__ == "__main__":
    main()
