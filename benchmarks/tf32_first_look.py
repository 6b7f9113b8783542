"""Tensor cores, a first look (issue 16, before its chapter): error and speed of cuBLAS SGEMM,
cuBLAS with TF32 tensor cores, and 10_tf32.cu's kernels (naive: one warp per 16 x 8 tile;
tiled: 128 x 128 shared-memory tiles, a warp 64 x 32; TF32 and 3xTF32; accumulated in the
tensor core or, _fadd, with float32 adds), at 4096^3 and 8192^3. Inputs uniform in [-1, 1); error: relative Frobenius norm
against float64; every result checked for NaN (C poisoned first); two interleaved rounds,
median GPU time.

    python benchmarks/tf32_first_look.py          # on a GPU host
    python benchmarks/tf32_first_look.py --vs-k   # error only, 1024 x 1024 x K, K = 256 ... 16384
"""
import sys

import numpy as np
import pandas as pd

from book import BACKEND, load_kernel, xp

if BACKEND != "gpu":
    sys.exit("this benchmark needs a GPU")
from cupyx.profiler import benchmark

from book.harness.check import device_inputs
from book.harness.device import device_report
from book.harness.measure import relative_error_xp

cublas = xp.cuda.cublas
DEFAULT_MATH, TF32_MATH = 0, 3  # CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH


def cublas_call(math_mode):
    def call(A, B, C, M, N, K):
        handle = xp.cuda.device.get_cublas_handle()
        cublas.setMathMode(handle, math_mode)
        try:
            xp.matmul(A, B, out=C)
        finally:
            cublas.setMathMode(handle, DEFAULT_MATH)
    return call


def ours(split, fadd=0, tiled=False):
    name, (bm, bn, threads) = (("matmul_tf32_tiled", (128, 128, 256)) if tiled
                               else ("matmul_tf32", (32, 16, 128)))
    kernel = load_kernel("10_tf32.cu", name, {"SPLIT": split, "FADD": fadd})
    return lambda A, B, C, M, N, K: kernel((-(-N // bn), -(-M // bm)), threads,
                                           (A, B, C, *map(np.int32, (M, N, K))))


CALLS = {"cublas": cublas_call(DEFAULT_MATH), "cublas_tf32": cublas_call(TF32_MATH),
         "tf32_naive": ours(1), "tf32x3_naive": ours(3), "tf32_naive_fadd": ours(1, 1),
         "tf32x3_naive_fadd": ours(3, 1), "tf32_tiled": ours(1, 0, True),
         "tf32x3_tiled": ours(3, 0, True), "tf32x3_tiled_fadd": ours(3, 1, True)}

if "--vs-k" in sys.argv:
    rows = []
    for K in (256, 1024, 4096, 16384):
        A, B = device_inputs(1024, 1024, K, seed=0)
        ref = A.astype(xp.float64) @ B.astype(xp.float64)
        C = xp.empty((1024, 1024), dtype=xp.float32)
        for name, call in CALLS.items():
            C.fill(xp.nan)
            call(A, B, C, 1024, 1024, K)
            rows.append({"K": K, "kernel": name, "rel_error": relative_error_xp(C, ref)})
    table = pd.DataFrame(rows).pivot(index="kernel", columns="K", values="rel_error")
    print(device_report()["name"], "-- relative error, M = N = 1024")
    print(table.to_string(float_format=lambda v: f"{v:.2e}"))
    sys.exit(0)

rows = []
for n in (4096, 8192):
    A, B = device_inputs(n, n, n, seed=0)
    ref = A.astype(xp.float64) @ B.astype(xp.float64)
    C = xp.empty((n, n), dtype=xp.float32)
    for rnd in range(2):
        for name, call in CALLS.items():
            C.fill(xp.nan)
            call(A, B, C, n, n, n)
            err = relative_error_xp(C, ref)
            ok = bool(np.isfinite(err))
            t = benchmark(call, (A, B, C, n, n, n), n_repeat=5 if n > 4096 else 10, n_warmup=2)
            rows.append({"M": n, "N": n, "K": n, "kernel": name, "round": rnd, "rel_error": err,
                         "gflops": 2e-9 * n**3 / np.median(t.gpu_times[0]),
                         "status": "ok" if ok else "FAILED check"})
    del ref
df = pd.DataFrame(rows).groupby(["M", "N", "K", "kernel"], sort=False).agg(
    gflops=("gflops", "median"), rel_error=("rel_error", "max"), status=("status", "first"))
base = df.xs("cublas", level="kernel").gflops
df["x_cublas_sgemm"] = df.gflops / base.reindex(df.index.droplevel("kernel")).to_numpy()
pd.set_option("display.width", 200)
print(device_report()["name"])
print(df.to_string(float_format=lambda v: f"{v:.3g}"))
