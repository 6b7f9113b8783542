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
SHORT = {(4096, 4096, 4096): "4096³ (the ladder)", (8192, 8192, 8192): "8192³",
         (512, 3072, 768): "BERT FFN in", (512, 768, 3072): "BERT FFN out",
         (2048, 4096, 4096): "Llama attention", (2048, 11008, 4096): "Llama FFN in",
         (2048, 4096, 11008): "Llama FFN out", (16, 4096, 4096): "Llama decode, 16"}
"""SHAPES' names on a figure's axis."""
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


PANELS = {"float32 FMAs": ["book_sgemm", "triton_fp32", "torch_fp32"],
          "tensor cores: 3xTF32 (float32's accuracy), and plain TF32":
          ["book_tf32x3", "triton_tf32x3", "torch_tf32"]}
"""The figure's panels: the kernels at float32's accuracy (FFMA, or 3xTF32 on the tensor cores
in the second panel), beside plain TF32."""
LOOK = {"the book": ("#17becf", "o"), "Triton": ("#ff7f0e", "s"), "PyTorch": ("#9467bd", "D")}


def plot(df: pd.DataFrame):
    """Each library's time over cuBLAS SGEMM's, shape by shape: float32 FMAs above, the tensor
    cores below (3xTF32 at float32's accuracy, and PyTorch's one TF32 product)."""
    import matplotlib.pyplot as plt

    from ..harness.plots import STYLE, check_readable
    ok = df[df.status == "ok"]
    shapes = [s for s in SHORT if ((ok.M == s[0]) & (ok.N == s[1]) & (ok.K == s[2])).any()]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 1, figsize=(6.8, 8.8), sharey=True)
        for ax, (title, kernels) in zip(axes, PANELS.items()):
            for i, kernel in enumerate(kernels):
                rows = ok[ok.kernel == kernel].set_index(["M", "N", "K"])
                x = [rows.x_cublas.get(s, np.nan) for s in shapes]
                color, marker = LOOK[rows.library.iloc[0]]
                ax.plot(x, np.arange(len(shapes)) + (i - 1) * 0.22, marker, color=color, ms=7,
                        label=rows.label.iloc[0])
            ax.axvline(1, color="k", lw=1.2)
            ax.set_xscale("log")
            ticks = [0.5, 0.7, 1, 1.4, 2] if ax is axes[0] else [0.5, 1, 2, 4, 8]
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.minorticks_off()
            ax.set_xlim((0.45, 2.2) if ax is axes[0] else (0.3, 10))
            ax.set_yticks(range(len(shapes)), [SHORT[s] for s in shapes], fontsize=11)
            ax.set_ylim(len(shapes) - 0.5, -0.5)
            ax.set_title(title, fontsize=12, loc="left")
            ax.tick_params(axis="x", labelsize=11)
            ax.legend(loc="upper left", bbox_to_anchor=(0, -0.2),
                      fontsize=11, ncol=2, handletextpad=0.2, columnspacing=1.0)
        for ax in axes:
            ax.set_xlabel(f"x cuBLAS SGEMM (its time / this time), {df.device.iloc[0]}", fontsize=11)
        fig.tight_layout(h_pad=2.5)
        plt.close(fig)
    return check_readable(fig)


def at_ladder_size(df: pd.DataFrame) -> pd.DataFrame:
    """The rows at the ladder's n = 4096: kernel, label, precision, GFLOP/s, x cuBLAS, error."""
    rows = df[(df.M == 4096) & (df.N == 4096) & (df.K == 4096) & (df.status == "ok")]
    return rows[["kernel", "label", "precision", "gflops", "x_cublas", "rel_error"]].reset_index(drop=True)


if __name__ == "__main__":
    pd.set_option("display.width", 220)
    table = results.keep(measure(), FILE)
    print(table.drop(columns=["device", "date"]).round(3).to_string(index=False))
