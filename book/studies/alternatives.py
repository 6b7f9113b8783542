"""Chapter 11: what a reader would use instead of writing CUDA C, measured beside cuBLAS and the
book's own calls -- Triton's ``tl.dot`` in float32 and in 3xTF32 (``triton_gemm``), PyTorch's
``matmul`` in float32 and with TF32 allowed, cuBLAS SGEMM, ``book.sgemm`` in both precisions.

Each is a pseudo-kernel (``Alternative``) that ``measure.sweep`` checks and times as it does every
kernel of the book: random inputs, the output poisoned with NaN, the relative error against
float64 (plain TF32 with its own, larger tolerance), then CUDA events. ``measure`` runs ROUNDS
such sweeps in turn and keeps each one's median over the rounds, with its time over the cuBLAS
SGEMM of the same round (``x_cublas``), at the ladder's size and SHAPES of real models. PyTorch
and Triton are optional: where either is missing (CI, the emulator, a CPU runtime) its rows are
skipped, and the chapter shows the results recorded on a GPU
(``python -m book.studies.alternatives`` records them: results/<gpu>/11_alternatives.csv).
"""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..harness import results
from ..harness.check import TOLERANCE
from ..harness.measure import sweep
from ..launch.runtime import BACKEND
from ..registry import TF32_TOLERANCE

FILE = "11_alternatives"
SHAPES = {(4096, 4096, 4096): "the ladder's size",
          (8192, 8192, 8192): "a large square",
          (512, 3072, 768): "BERT-base, feed-forward in, 512 tokens",
          (512, 768, 3072): "BERT-base, feed-forward out, 512 tokens",
          (2048, 4096, 4096): "Llama-2-7B, attention projection, 2048 tokens",
          (2048, 11008, 4096): "Llama-2-7B, feed-forward in, 2048 tokens",
          (2048, 4096, 11008): "Llama-2-7B, feed-forward out, 2048 tokens",
          (16, 4096, 4096): "Llama-2-7B, attention projection, batch of 16 at decode"}
"""(M, N, K) of a token batch times a weight matrix (M tokens), and the ladder's n = 4096."""
ROUNDS = 3


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@dataclass(frozen=True)
class Alternative:
    """A library's matmul as a pseudo-kernel of ``sweep``: ``launch(A, B, C, M, N, K)`` on CuPy
    arrays (PyTorch's and Triton's read them in place through DLPack)."""

    id: str
    label: str
    library: str
    precision: str  # "fp32", "tf32x3" (float32's accuracy) or "tf32" (one TF32 product)
    needs: tuple = ()
    tolerance: float = TOLERANCE
    chapter: int = 11
    run: object = field(default=None, compare=False, repr=False)

    def why_not_here(self) -> str | None:
        if BACKEND != "gpu":
            return "needs a GPU"
        missing = [m for m in self.needs if not have(m)]
        return f"needs {' and '.join(missing)}, not installed here" if missing else None

    def launch(self, A, B, C, M: int, N: int, K: int) -> None:
        self.run(A, B, C)


def _torch(A, B, C, tf32: bool) -> None:
    import torch
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        torch.matmul(torch.from_dlpack(A), torch.from_dlpack(B), out=torch.from_dlpack(C))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


def _triton(A, B, C, precision: str) -> None:
    import torch

    from .triton_gemm import triton_matmul
    triton_matmul(torch.from_dlpack(A), torch.from_dlpack(B), torch.from_dlpack(C), precision)


def _book(A, B, C, precision: str) -> None:
    from ..blas import sgemm
    sgemm(A, B, out=C, precision=precision)


ALTERNATIVES = [
    Alternative("book_sgemm", "book.sgemm", "the book", "fp32", run=lambda A, B, C: _book(A, B, C, "fp32")),
    Alternative("triton_fp32", "Triton tl.dot, FP32", "Triton", "fp32", ("torch", "triton"),
                run=lambda A, B, C: _triton(A, B, C, "ieee")),
    Alternative("torch_fp32", "PyTorch matmul, FP32", "PyTorch", "fp32", ("torch",),
                run=lambda A, B, C: _torch(A, B, C, False)),
    Alternative("book_tf32x3", "book.sgemm, 3xTF32", "the book", "tf32x3",
                run=lambda A, B, C: _book(A, B, C, "tf32x3")),
    Alternative("triton_tf32x3", "Triton tl.dot, 3xTF32", "Triton", "tf32x3", ("torch", "triton"),
                run=lambda A, B, C: _triton(A, B, C, "tf32x3")),
    Alternative("torch_tf32", "PyTorch matmul, TF32", "PyTorch", "tf32", ("torch",),
                tolerance=TF32_TOLERANCE, run=lambda A, B, C: _torch(A, B, C, True)),
]
"""What chapter 11 compares, beside cuBLAS SGEMM (``sweep``'s baseline)."""


def measure(shapes=None, rounds: int = ROUNDS) -> pd.DataFrame:
    """Every alternative and cuBLAS at ``shapes`` (default SHAPES), checked and timed by
    ``sweep`` ``rounds`` times in turn; one row per (kernel, shape): the median time over the
    rounds, GFLOP/s, the median of each round's time over its cuBLAS (``x_cublas``) and the
    largest relative error. Rows of alternatives this machine cannot run say why (status)."""
    shapes = list(shapes or SHAPES)
    runs = []
    budget = os.environ.get("BOOK_POINT_BUDGET_S")
    os.environ["BOOK_POINT_BUDGET_S"] = budget or "600"  # (Triton's autotuning of a first shape
    try:                                                  # is not a slow GPU: no size skipped)
        for r in range(rounds):
            runs.append(_round(shapes, r))
    finally:
        if budget is None:
            del os.environ["BOOK_POINT_BUDGET_S"]
    return summary(pd.concat(runs, ignore_index=True))


def _round(shapes, r: int) -> pd.DataFrame:
    """One sweep of every alternative, each time over the cuBLAS of this sweep."""
    df = sweep(ALTERNATIVES, shapes, seed=r)
    ok = df[df.status == "ok"]
    base = ok[ok.kernel == "cublas"].set_index(["M", "N", "K"]).time_ms
    df["x_cublas"] = [base.get((m, n, k), np.nan) / t if s == "ok" else np.nan
                      for m, n, k, t, s in zip(df.M, df.N, df.K, df.get("time_ms", np.nan), df.status)]
    return df.assign(round=r)


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """The rounds of ``measure`` as one row per (kernel, shape): medians of time and x cuBLAS,
    the largest error, the shape's name, the library and precision of each kernel; a kernel
    whose check failed in any round is kept with that status (never timed)."""
    meta = {a.id: (a.library, a.precision, a.label) for a in ALTERNATIVES}
    meta["cublas"] = ("cuBLAS", "fp32", "cuBLAS SGEMM")
    rows = []
    for (kernel, M, N, K), g in runs.groupby(["kernel", "M", "N", "K"], sort=False):
        ok = g[g.status == "ok"]
        row = {"kernel": kernel, "M": M, "N": N, "K": K, "shape": SHAPES.get((M, N, K), ""),
               "library": meta[kernel][0], "precision": meta[kernel][1], "label": meta[kernel][2],
               "status": "ok" if len(ok) == len(g) else g.status[g.status != "ok"].iloc[0]}
        if len(ok) == len(g):
            time_ms = float(ok.time_ms.median())
            row.update(time_ms=time_ms, gflops=2e-6 * M * N * K / time_ms,
                       x_cublas=float(ok.x_cublas.median()), rel_error=float(ok.rel_error.max()))
        rows.append(row)
    return pd.DataFrame(rows)


def recorded_or_live() -> pd.DataFrame:
    """This GPU's measurement where PyTorch and Triton are installed (saved as FILE), else the
    results recorded on a GPU, announced in one line."""
    if BACKEND == "gpu" and have("torch") and have("triton"):
        df = results.keep(measure(), FILE)
        df.attrs["source"] = f"measured in this run on {df.device.iloc[0]}, {df.date.iloc[0]}"
        return df
    missing = "No GPU here" if BACKEND != "gpu" else "PyTorch or Triton is not installed here"
    df = results.load(FILE)
    print(f"{missing}: the comparison below uses results {df.attrs['source']}.")
    return df


if __name__ == "__main__":
    pd.set_option("display.width", 220)
    table = results.keep(measure(), FILE)
    print(table.drop(columns=["device", "date"]).round(3).to_string(index=False))
