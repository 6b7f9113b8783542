"""What a user waits for in book.sgemm, beside cupy.matmul and torch.matmul (issue #50).

First call of a shape: wall seconds to the result, checked against float64.
  * cold: in a new process whose kernel cache is empty (BOOK_CACHE_DIR a new folder): the call
    compiles the cost model's best plan alone and runs it; the others compile in the background;
  * after: the next call of that shape once the background builds are done (it times them);
  * warm: in this process, kernels compiled, the shape's learned plan forgotten: the call times
    the model's best few (``choice.settle``).
Per call (shapes where the host's work is most of a call):
  * host us: wall time to issue 200 calls without waiting for the GPU (best of 5), per call;
  * loop us: a loop of 2,000 calls and one synchronize at the end, per call (the GPU's time
    where that is longer).

    python benchmarks/sgemm_host_time.py        # on a GPU host; prints the tables
"""
import json
import os
import subprocess
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
PER_CALL = [(64, 64, 64), (128, 128, 128), (256, 256, 256), (1000, 1000, 1000), (1, 4096, 4096)]
CALLS, ISSUED = 2000, 200


def operands(M, N, K, layout, lib="cupy", seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((K, M) if layout[0] == "t" else (M, K), dtype=np.float32)
    b = rng.standard_normal((N, K) if layout[1] == "t" else (K, N), dtype=np.float32)
    if lib == "torch":
        a, b = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    else:
        a, b = cp.asarray(a), cp.asarray(b)
    return (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)


def sync():
    cp.cuda.Device().synchronize()
    if torch is not None:
        torch.cuda.synchronize()


def wall(f):
    sync()
    t = time.perf_counter()
    f()
    sync()
    return time.perf_counter() - t


def checked(C, a, b, what):
    ref = cp.asarray(a).astype(cp.float64) @ cp.asarray(b).astype(cp.float64)
    err = float(cp.abs(cp.asarray(C) - ref).max() / cp.abs(ref).max())
    if not err < 1e-5:
        raise AssertionError(f"{what}: relative error {err:.2e}")


COLD = """
import json, sys, time, numpy as np, cupy as cp, book
from book.blas import choice
M, N, K, layout = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
a = cp.asarray(rng.standard_normal((K, M) if layout[0] == "t" else (M, K), dtype=np.float32))
b = cp.asarray(rng.standard_normal((N, K) if layout[1] == "t" else (K, N), dtype=np.float32))
a, b = (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)
ref = a.astype(cp.float64) @ b.astype(cp.float64)
out = {}
for name in ("cold", "after"):
    if name == "after":
        for process in list(choice._PENDING.values()):  # (the builds compiling behind)
            process.wait()
    cp.cuda.Device().synchronize(); t = time.perf_counter()
    C = book.sgemm(a, b); cp.cuda.Device().synchronize()
    out[name] = time.perf_counter() - t
    assert float(cp.abs(C - ref).max() / cp.abs(ref).max()) < 1e-5
print(json.dumps(out))
"""


def first_calls():
    rows = []
    for M, N, K, layout in FIRST:
        a, b = operands(M, N, K, layout)
        row = {"shape": f"{M} x {N} x {K} {layout}"}
        env = dict(os.environ, BOOK_CACHE_DIR=tempfile.mkdtemp())
        got = subprocess.run([sys.executable, "-c", COLD, json.dumps([M, N, K, layout])], env=env,
                             capture_output=True, text=True, check=True)
        cold = json.loads(got.stdout.strip().splitlines()[-1])
        row["cold s"], row["after s"] = cold["cold"], cold["after"]
        choice.tune([(M, N, K)], layout)  # (every build this shape's first call times, here)
        choice._LEARNED.clear()
        choice._learned_path = lambda: Path(tempfile.mkdtemp()) / "learned.csv"
        choice._LEARNED["loaded"], choice._LEARNED["plans"] = True, {}
        choice.plan_for.cache_clear()
        row["warm s"] = wall(lambda: checked(book.sgemm(a, b), a, b, row["shape"]))
        row["cupy.matmul s"] = wall(lambda: cp.matmul(a, b))
        if torch is not None:
            ta, tb = operands(M, N, K, layout, "torch")
            row["torch.matmul s"] = wall(lambda: torch.matmul(ta, tb))
        rows.append(row)
    return pd.DataFrame(rows)


def issued_us(f):
    """Host microseconds per call: ISSUED calls issued without waiting, best of 5 rounds."""
    best = float("inf")
    for _ in range(5):
        sync()
        t = time.perf_counter()
        for _ in range(ISSUED):
            f()
        best = min(best, (time.perf_counter() - t) / ISSUED)
        sync()
    return best * 1e6


def per_call():
    rows = []
    for M, N, K in PER_CALL:
        a, b = operands(M, N, K, "nn")
        calls = {"book.sgemm": lambda: book.sgemm(a, b),
                 "book.sgemm tf32x3": lambda: book.sgemm(a, b, precision="tf32x3"),
                 "cupy.matmul": lambda: cp.matmul(a, b)}
        if torch is not None:
            ta, tb = operands(M, N, K, "nn", "torch")
            calls["torch.matmul"] = lambda: torch.matmul(ta, tb)
        for name, f in calls.items():
            checked(f(), a, b, name)
            f()
        row = {"shape": f"{M} x {N} x {K}"}
        for name, f in calls.items():  # (host time, then the loop, for each library in turn)
            row[f"{name} host us"] = issued_us(f)
        for name, f in calls.items():
            row[f"{name} loop us"] = wall(lambda: [f() for _ in range(CALLS)]) / CALLS * 1e6
        rows.append(row)
    return pd.DataFrame(rows)


if __name__ == "__main__":
    pd.set_option("display.width", 250)
    print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    print("Per call (microseconds): host = issuing the call; loop = a loop of calls, GPU included")
    table = per_call().round(1).set_index("shape")
    print(table.filter(like="host").to_string())
    print(table.filter(like="loop").to_string())
    print("\nFirst call of a shape (wall seconds to the result):")
    print(first_calls().round(3).to_string(index=False))
