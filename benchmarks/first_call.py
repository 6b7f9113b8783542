"""book.sgemm's first call on a fresh host, and a host's process life (issue #63).

Each call runs in a new process, wall seconds from the call to its result (``import book``,
``book.blas`` and the CUDA context apart: "import s"), checked against float64:
  * fresh host: the book's and CuPy's kernel caches empty (new folders for each call);
  * prebuild: ``python -m book.blas.prebuild`` into a new cache, its seconds;
  * ready host: the same calls, each in a new process, on that cache; then shapes new to it.
Exit: ``EXITS`` new processes each call book.sgemm on three shapes never seen (a fresh cache
shared by all, so that compiles run behind them) and end at once; every one must end cleanly.

    python benchmarks/first_call.py [--exits 50]      # on a GPU host; prints the tables
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import pandas as pd

from book import BACKEND

CALLS = [((1000, 1000, 1000), "fp32"), ((4096, 4096, 4096), "fp32"), ((3000, 2000, 1500), "fp32"),
         ((7, 9999, 4096), "fp32"), ((4096, 4096, 4096), "tf32x3"), ((4096, 4096, 4096), "ozaki")]
NEW = [((24, 32000, 4096), "fp32"), ((8, 14336, 4096), "fp32"), ((16, 4096, 4096), "fp32"),
       ((1234, 567, 891), "fp32"), ((2048, 2048, 2048), "tf32x3")]

ONE = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np, cupy as cp, book
book.sgemm  # (the library's own import, book.blas, with the rest of the import)
cp.cuda.Device().synchronize()  # (and the CUDA context)
t1 = time.perf_counter()
shapes, precision = json.loads(sys.argv[1]), sys.argv[2]
out = {"import s": t1 - t0}
for i, (M, N, K) in enumerate(shapes):
    rng = np.random.default_rng(i)
    a = cp.asarray(rng.standard_normal((M, K), dtype=np.float32))
    b = cp.asarray(rng.standard_normal((K, N), dtype=np.float32))
    cp.cuda.Device().synchronize(); t = time.perf_counter()
    c = book.sgemm(a, b, precision=precision); cp.cuda.Device().synchronize()
    out.setdefault("call s", time.perf_counter() - t)
    ref = a.astype(cp.float64) @ b.astype(cp.float64)
    err = float(cp.abs(c - ref).max() / cp.abs(ref).max())
    assert err < 1e-5, f"{M} x {N} x {K} {precision}: error {err:.1e}"
print(json.dumps(out))
"""


def run(shapes, precision, cache=None):
    """One new process: its JSON line, or its return code and last line of stderr."""
    env = dict(os.environ, BOOK_CACHE_DIR=cache or tempfile.mkdtemp(),
               CUPY_CACHE_DIR=tempfile.mkdtemp() if cache is None else cache + "-cupy")
    got = subprocess.run([sys.executable, "-c", ONE, json.dumps(shapes), precision], env=env,
                         capture_output=True, text=True, timeout=600)
    if got.returncode != 0:
        return {"rc": got.returncode, "error": (got.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(got.stdout.strip().splitlines()[-1])


def table(calls, cache=None):
    rows = []
    for (M, N, K), precision in calls:
        rows.append({"shape": f"{M} x {N} x {K}", "precision": precision,
                     **run([(M, N, K)], precision, cache)})
    return pd.DataFrame(rows).set_index(["shape", "precision"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exits", type=int, default=50)
    parser.add_argument("--skip-fresh", action="store_true")
    args = parser.parse_args()
    if BACKEND != "gpu":
        sys.exit("this benchmark needs a GPU")
    pd.set_option("display.width", 200)
    if not args.skip_fresh:
        print("First calls on a fresh host (empty kernel caches):")
        print(table(CALLS).round(2).to_string(), flush=True)
    cache = tempfile.mkdtemp()
    t = time.perf_counter()
    got = subprocess.run([sys.executable, "-m", "book.blas.prebuild"], capture_output=True,
                         text=True, env=dict(os.environ, BOOK_CACHE_DIR=cache))
    print(f"\nprebuild: {time.perf_counter() - t:.1f} s, rc {got.returncode}: {got.stdout.strip()}")
    print("\nFirst calls on the prebuilt host, each in a new process:")
    print(table(CALLS + NEW, cache).round(2).to_string(), flush=True)
    shared, ends = tempfile.mkdtemp(), []
    rng = __import__("numpy").random.default_rng(63)
    for i in range(args.exits):
        shapes = [[int(v) for v in rng.integers(1, 3000, 3)] for _ in range(3)]
        ends.append(run(shapes, "fp32", shared))
    bad = [e for e in ends if "rc" in e]
    print(f"\nExit: {len(ends) - len(bad)} of {len(ends)} processes (3 new shapes each, compiles "
          f"running behind) ended cleanly; median first call {pd.Series([e.get('call s') for e in ends]).median():.2f} s")
    for e in bad:
        print("  ", e)


if __name__ == "__main__":
    main()
