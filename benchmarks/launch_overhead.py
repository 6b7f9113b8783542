"""What do CUDA events time when the GPU is idle at the start event? (``measure.held_event_seconds``)

Each call is timed two ways, interleaved, in three rounds: events recorded around it on an idle
GPU (``cupyx.profiler.benchmark``: the host issues the start event, then spends its launch path
-- argument checks, CuPy's call -- while the GPU waits), and events queued behind a short busy
kernel, so the host's work overlaps the GPU's and the events time the kernel alone. Prints, per
call and n, the median microseconds of each way and what the idle-GPU way adds.

    python benchmarks/launch_overhead.py
"""
import numpy as np
import pandas as pd
from cupyx.profiler import benchmark

from book.blas import sgemm
from book.harness.check import device_inputs
from book.harness.measure import held_event_seconds
from book.launch.runtime import xp
from book.registry import KERNELS

SIZES, ROUNDS, REPEATS = [64, 256, 1024, 2048, 4096], 3, 50


def calls(n):
    A, B = device_inputs(n, n, n, seed=0)
    C = xp.empty((n, n), dtype=xp.float32)
    out = {"cuBLAS": lambda: xp.matmul(A, B, out=C), "book.sgemm": lambda: sgemm(A, B, out=C)}
    for k in ("naive32", "tiled32", "async_128x256x16_w64x64_n4_8x4_t256_s4_pad4_m1_serp"):
        if k in KERNELS:
            spec = KERNELS[k]
            out[spec.label] = lambda spec=spec: spec.launch(A, B, C, n, n, n)
    return out


def main() -> None:
    rows = []
    for n in SIZES:
        fns = calls(n)
        for r in range(ROUNDS):
            for name, fn in fns.items():
                fn()
                idle = benchmark(fn, n_repeat=REPEATS, n_warmup=3).gpu_times[0]
                held = held_event_seconds(fn, REPEATS)
                rows.append({"call": name, "n": n, "round": r,
                             "idle GPU (µs)": 1e6 * np.median(idle),
                             "held GPU (µs)": 1e6 * np.median(held)})
    df = pd.DataFrame(rows).groupby(["call", "n"], sort=False).median().drop(columns="round")
    df["added by the idle GPU (µs)"] = df["idle GPU (µs)"] - df["held GPU (µs)"]
    df["added (%)"] = 100 * df["added by the idle GPU (µs)"] / df["held GPU (µs)"]
    pd.set_option("display.width", 200)
    print(df.round(1).to_string())


if __name__ == "__main__":
    main()
