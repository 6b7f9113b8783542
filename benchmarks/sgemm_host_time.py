"""What a user waits for in book.sgemm, beside cupy.matmul and torch.matmul (issue #50): the first
call of a shape (wall time to the result, kernels already compiled: run it twice and read the
second run; the shapes' learned plans are forgotten first) and the host time per call (a loop
of calls at shapes where the GPU's work is shorter than the host's, one synchronize at the end).

    python benchmarks/sgemm_host_time.py        # on a GPU host; prints two tables
"""
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import book
from book import BACKEND

if BACKEND != "gpu":
    sys.exit("this benchmark needs a GPU")
import cupy as cp

try:
    import torch
except ImportError:
    torch = None

from book.blas import choice

FIRST = [(777, 5555, 3333, "tt"), (3000, 2000, 1500, "tn"), (3, 50257, 768, "nn"),
         (32, 11008, 4096, "nn"), (1000, 1000, 1000, "nn")]
PER_CALL = [(64, 64, 64), (128, 128, 128), (256, 256, 256), (1, 4096, 4096)]
CALLS = 2000


def operands(M, N, K, layout, lib="cupy"):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((K, M) if layout[0] == "t" else (M, K), dtype=np.float32)
    b = rng.standard_normal((N, K) if layout[1] == "t" else (K, N), dtype=np.float32)
    if lib == "torch":
        a, b = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    else:
        a, b = cp.asarray(a), cp.asarray(b)
    return (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)


def wall(f):
    cp.cuda.Device().synchronize()
    if torch is not None:
        torch.cuda.synchronize()
    t = time.perf_counter()
    f()
    cp.cuda.Device().synchronize()
    if torch is not None:
        torch.cuda.synchronize()
    return time.perf_counter() - t


def first_calls():
    rows = []
    for M, N, K, layout in FIRST:
        a, b = operands(M, N, K, layout)
        ref = (a.astype(cp.float64) @ b.astype(cp.float64))
        row = {"shape": f"{M} x {N} x {K} {layout}"}
        for attempt in range(2):  # the first builds what the shape needs; the second is read
            choice._LEARNED.clear()
            choice._learned_path = lambda: Path(tempfile.mkdtemp()) / "learned.csv"
            choice.plan_for.cache_clear()
            row["book.sgemm s"] = wall(lambda: book.sgemm(a, b))
        err = float(cp.abs(book.sgemm(a, b) - ref).max() / cp.abs(ref).max())
        assert err < 1e-5, (M, N, K, layout, err)
        row["cupy.matmul s"] = wall(lambda: cp.matmul(a, b))
        if torch is not None:
            ta, tb = operands(M, N, K, layout, "torch")
            row["torch.matmul s"] = wall(lambda: torch.matmul(ta, tb))
        rows.append(row)
    return pd.DataFrame(rows)


def per_call():
    rows = []
    for M, N, K in PER_CALL:
        a, b = operands(M, N, K, "nn")
        row = {"shape": f"{M} x {N} x {K}"}
        for name, f in [("book.sgemm", lambda: book.sgemm(a, b)),
                        ("book.sgemm tf32x3", lambda: book.sgemm(a, b, precision="tf32x3")),
                        ("cupy.matmul", lambda: cp.matmul(a, b))]:
            f()
            row[f"{name} us"] = wall(lambda: [f() for _ in range(CALLS)]) / CALLS * 1e6
        if torch is not None:
            ta, tb = operands(M, N, K, "nn", "torch")
            torch.matmul(ta, tb)
            row["torch.matmul us"] = wall(lambda: [torch.matmul(ta, tb) for _ in range(CALLS)]) / CALLS * 1e6
        rows.append(row)
    return pd.DataFrame(rows)


pd.set_option("display.width", 200)
print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
print("First call of a new shape (kernels compiled; wall seconds to the result):")
print(first_calls().round(3).to_string(index=False))
print(f"\nPer call, a loop of {CALLS} (microseconds of wall time a call):")
print(per_call().round(1).to_string(index=False))
