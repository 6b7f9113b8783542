"""Chapter 1: matrix multiplication on the CPU -- a Python loop, a C loop, NumPy's BLAS."""
from __future__ import annotations

import ctypes
import time
from functools import lru_cache

import numpy as np
import pandas as pd

from ..launch.emulator import build_library, compiler
from ..launch.cuda_source import resolve


def python_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The triple loop in pure Python, on nested lists."""
    M, K = a.shape
    N = b.shape[1]
    A, B = a.tolist(), b.tolist()
    C = [[0.0] * N for _ in range(M)]
    for row in range(M):
        for col in range(N):
            acc = 0.0
            for k in range(K):
                acc += A[row][k] * B[k][col]
            C[row][col] = acc
    return np.array(C, dtype=np.float32)


@lru_cache(maxsize=None)
def _c_function():
    path = build_library(resolve("01_cpu_loop.c").read_text(), "01_cpu_loop",
                         ["-O2", "-shared", "-fPIC", "-x", "c"], suffix=".c")
    fn = ctypes.CDLL(str(path)).matmul_cpu
    ptr = ctypes.POINTER(ctypes.c_float)
    fn.argtypes = [ptr, ptr, ptr, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return fn


def c_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The same triple loop in C (01_cpu_loop.c, -O2), called through ctypes."""
    a, b = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
    (M, K), N = a.shape, b.shape[1]
    if b.shape[0] != K:
        raise ValueError(f"shapes {a.shape} and {b.shape} do not multiply")
    c = np.full((M, N), np.nan, dtype=np.float32)
    ptr = ctypes.POINTER(ctypes.c_float)
    _c_function()(a.ctypes.data_as(ptr), b.ctypes.data_as(ptr), c.ctypes.data_as(ptr), M, N, K)
    return c


METHODS = {"Python loop": python_matmul, "C loop (-O2)": c_matmul,
           "NumPy BLAS": lambda a, b: a @ b}


SLOW_RUN_S = 0.25
"""A run this long is timed once: its spread is far below the differences the chapter reads."""


def time_methods(sizes: dict[str, list[int]], repeats: int = 3) -> pd.DataFrame:
    """Best-of-``repeats`` wall time of each method at its sizes (one run where a run takes over
    SLOW_RUN_S); the first run's output is checked against float64 before any other run."""
    from ..harness.check import TOLERANCE, random_inputs, relative_error
    rows = []
    for method, ns in sizes.items():
        fn = METHODS[method]
        for n in ns:
            a, b = random_inputs(n, n, n, seed=n)
            t0 = time.perf_counter()
            out = fn(a, b)  # the checked run is the first timed one
            best, runs = time.perf_counter() - t0, 1
            err = relative_error(out, a.astype(np.float64) @ b)
            if not err < TOLERANCE:
                raise AssertionError(f"{method} at n={n}: relative error {err:.1e}")
            while runs < repeats and best < SLOW_RUN_S:  # one run where slow
                t0 = time.perf_counter()
                fn(a, b)
                best, runs = min(best, time.perf_counter() - t0), runs + 1
            rows.append({"method": method, "n": n, "time_s": best, "gflops": 2 * n**3 / best / 1e9,
                         "rel_error": err})
    return pd.DataFrame(rows)


def fit_slope(df: pd.DataFrame, method: str, min_n: int = 0) -> tuple[float, float]:
    """Least-squares fit log t = slope * log n + c over n >= min_n: (slope, c)."""
    g = df[(df.method == method) & (df.n >= min_n)]
    slope, intercept = np.polyfit(np.log(g.n), np.log(g.time_s), 1)
    return float(slope), float(intercept)


def compiler_name() -> str:
    return compiler()[1]
