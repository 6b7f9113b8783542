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
(``python -m book.studies.alternatives`` records them: results/<gpu>/11_alternatives.csv);
``BOOK_ALTERNATIVES=recorded`` shows the recorded results on a GPU host too (:func:`why_recorded`).
The ladder lists IN_LADDER's records at n = 4096 after cuBLAS (:func:`ladder_rows`).
"""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..harness import results
from ..harness.check import TOLERANCE
from ..harness.device import device_report
from ..harness.measure import sweep
from ..launch.runtime import BACKEND
from ..registry import KERNELS, TF32_TOLERANCE, cc_text, device_cc

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


SWITCH = "BOOK_ALTERNATIVES"
"""Unset (or ``auto``): on a GPU, chapter 11 measures every alternative this GPU runs (its
compute capability, PyTorch and Triton installed) and shows the others as recorded on a GPU
that ran them; ``recorded``: the recorded results on any machine."""


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def torch_has_cuda() -> bool:
    """Whether the installed PyTorch reaches a GPU (a CPU-only build does not)."""
    import torch
    return bool(torch.cuda.is_available())


def why_recorded() -> str | None:
    """Why chapter 11 shows only recorded results instead of measuring here, in a few words (the
    start of the line it prints); None where it measures (a GPU, and :data:`SWITCH` not set to
    ``recorded``): then it times what this GPU runs (:func:`selection`)."""
    mode = os.environ.get(SWITCH, "auto").strip().lower() or "auto"
    if mode not in ("auto", "recorded"):
        raise ValueError(f"{SWITCH}={os.environ[SWITCH]!r}: use 'recorded' (or leave it unset)")
    if mode == "recorded":
        return f"{SWITCH}=recorded"
    if BACKEND != "gpu":
        return "No GPU here"
    return None


@dataclass(frozen=True)
class Alternative:
    """A library's matmul as a pseudo-kernel of ``sweep``: ``launch(A, B, C, M, N, K)`` on CuPy
    arrays (PyTorch's and Triton's read them in place through DLPack). What it needs: a GPU
    (``gpu_only``), the modules ``needs``, a compute capability ``min_cc`` (for ``feature``),
    and whatever ``check`` (a function giving a reason or None) adds."""

    id: str
    label: str
    library: str
    precision: str  # "fp32", "tf32x3" (float32's accuracy) or "tf32" (one TF32 product)
    needs: tuple = ()
    tolerance: float = TOLERANCE
    chapter: int = 11
    run: object = field(default=None, compare=False, repr=False)
    gpu_only: bool = True  # (False: the book's kernels, which the emulator runs too)
    min_cc: tuple = (0, 0)
    feature: str = ""  # what sets min_cc, e.g. "TF32"
    check: object = field(default=None, compare=False, repr=False)

    def why_not_here(self) -> str | None:
        if self.gpu_only and BACKEND != "gpu":
            return "needs a GPU"
        cc = device_cc()
        if cc < self.min_cc:
            return (f"needs compute capability {cc_text(self.min_cc)}"
                    f"{f' ({self.feature})' if self.feature else ''}; this GPU counts as {cc_text(cc)}")
        missing = [m for m in self.needs if not have(m)]
        if missing:
            return f"needs {' and '.join(missing)}, not installed here"
        if "torch" in self.needs and BACKEND == "gpu" and not torch_has_cuda():
            return "needs PyTorch built with CUDA; this one reaches no GPU"
        return self.check() if self.check else None

    def launch(self, A, B, C, M: int, N: int, K: int) -> None:
        self.run(A, B, C)


def _wgmma_why() -> str | None:
    """Why this GPU cannot run book.sgemm's 3xTF32 (wgmma: compute capability 9.0 exactly)."""
    return KERNELS["tf32x3_wgmma"].why_not_here()


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


def learn_auto(f, key, most: int = 40) -> int:
    """Call ``f`` (precision='auto') until the shape's method is settled (``auto.settled``: chosen
    by its first calls, or nothing to choose here); how many calls it took."""
    from ..blas import auto
    for n in range(1, most + 1):
        f()
        if auto.settled(*key):
            return n
    raise AssertionError(f"precision='auto' chose nothing at {key} in {most} calls")


def _book_auto(A, B, C) -> None:
    """book.sgemm(precision='auto'): where the shape's method is not settled yet (a GPU that
    learns), its first calls run here until it is (``learn_auto``), so that a timing times the
    chosen method."""
    from ..blas import sgemm
    from ..blas.call import _fp32_shape
    learn_auto(lambda: sgemm(A, B, out=C, precision="auto"), _fp32_shape(A, B, C), most=64)


def chosen_method(M: int, N: int, K: int) -> str:
    """The method precision='auto' runs at (M, N, K) with C-contiguous operands here."""
    from ..blas import auto
    return auto.method(M, N, K, "nn")[0]


TRITON_CC = (8, 0)
"""Triton's supported NVIDIA GPUs (its README: compute capability 8.0 and up)."""

ALTERNATIVES = [
    Alternative("book_sgemm", "book.sgemm", "the book", "fp32", run=lambda A, B, C: _book(A, B, C, "fp32")),
    Alternative("triton_fp32", "Triton tl.dot, FP32", "Triton", "fp32", ("torch", "triton"),
                min_cc=TRITON_CC, feature="Triton's supported GPUs",
                run=lambda A, B, C: _triton(A, B, C, "ieee")),
    Alternative("torch_fp32", "PyTorch matmul, FP32", "PyTorch", "fp32", ("torch",),
                run=lambda A, B, C: _torch(A, B, C, False)),
    Alternative("book_tf32x3", "book.sgemm, 3xTF32", "the book", "tf32x3", min_cc=(9, 0),
                feature="Hopper's wgmma", check=_wgmma_why, run=lambda A, B, C: _book(A, B, C, "tf32x3")),
    Alternative("triton_tf32x3", "Triton tl.dot, 3xTF32", "Triton", "tf32x3", ("torch", "triton"),
                min_cc=TRITON_CC, feature="TF32 tensor cores",
                run=lambda A, B, C: _triton(A, B, C, "tf32x3")),
    Alternative("torch_tf32", "PyTorch matmul, TF32", "PyTorch", "tf32", ("torch",),
                tolerance=TF32_TOLERANCE, min_cc=(8, 0), feature="TF32 tensor cores",
                run=lambda A, B, C: _torch(A, B, C, True)),
    Alternative("book_auto", "book.sgemm, auto", "the book", "auto", run=_book_auto),
]
"""What chapter 11 compares, beside cuBLAS SGEMM (``sweep``'s baseline)."""


def selection(specs=None) -> tuple[list, dict]:
    """The alternatives (``specs``, default ALTERNATIVES) this machine runs, and {id: why not}
    for the others: the chapter's live rows and the rows it shows as recorded."""
    here, absent = [], {}
    for a in specs or ALTERNATIVES:
        why = a.why_not_here()
        if why:
            absent[a.id] = why
        else:
            here.append(a)
    return here, absent


def measure(shapes=None, rounds: int = ROUNDS, specs=None) -> pd.DataFrame:
    """Every alternative (``specs``, default ALTERNATIVES) and cuBLAS at ``shapes`` (default
    SHAPES), checked and timed by ``sweep`` ``rounds`` times in turn; one row per (kernel,
    shape): the median time over the rounds, GFLOP/s, the median of each round's time over its
    cuBLAS (``x_cublas``) and the largest relative error. Rows of alternatives this machine
    cannot run say why (status)."""
    shapes, specs = list(shapes or SHAPES), list(specs or ALTERNATIVES)
    runs = []
    budget = os.environ.get("BOOK_POINT_BUDGET_S")
    os.environ["BOOK_POINT_BUDGET_S"] = budget or "600"  # (Triton's autotuning of a first shape
    try:                                                  # is not a slow GPU: no size skipped)
        for r in range(rounds):
            runs.append(_round(shapes, r, specs))
    finally:
        if budget is None:
            del os.environ["BOOK_POINT_BUDGET_S"]
    df = summary(pd.concat(runs, ignore_index=True), specs)
    auto_rows = (df.kernel == "book_auto") & (df.status == "ok")
    df["chosen"] = [chosen_method(m, n, k) if a else None
                    for m, n, k, a in zip(df.M, df.N, df.K, auto_rows)]
    return df


def _round(shapes, r: int, specs) -> pd.DataFrame:
    """One sweep of every alternative, each time over the cuBLAS of this sweep."""
    df = sweep(specs, shapes, seed=r)
    ok = df[df.status == "ok"]
    base = ok[ok.kernel == "cublas"].set_index(["M", "N", "K"]).time_ms
    df["x_cublas"] = [base.get((m, n, k), np.nan) / t if s == "ok" else np.nan
                      for m, n, k, t, s in zip(df.M, df.N, df.K, df.get("time_ms", np.nan), df.status)]
    return df.assign(round=r)


def summary(runs: pd.DataFrame, specs=None) -> pd.DataFrame:
    """The rounds of ``measure`` as one row per (kernel, shape): medians of time and x cuBLAS,
    the largest error, the shape's name, the library and precision of each kernel (``specs``,
    default ALTERNATIVES); a kernel whose check failed in any round is kept with that status
    (never timed)."""
    meta = {a.id: (a.library, a.precision, a.label) for a in (specs or ALTERNATIVES)}
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
    """On a GPU (and :data:`SWITCH` not ``recorded``): this GPU's measurement of every alternative
    it runs (:func:`selection`), saved as FILE where saving is on (with this GPU's earlier
    records of the others kept), the others' rows taken from a GPU that recorded them
    (:func:`with_recorded`). Elsewhere the results recorded on a GPU. Either way a line says
    which rows were measured here and which are recorded, and why."""
    why = why_recorded()
    if why is not None:
        df = results.load(FILE)
        print(f"{why}: the comparison with Triton and PyTorch (the last section) uses results "
              f"{df.attrs['source']}.")
        return df
    here, absent = selection()
    live = measure(specs=here)
    own = _own_records(absent)
    record = results.keep(live, FILE, extra=own)
    df = with_recorded(record, absent)
    df.attrs.update(source=f"measured in this run on {device_report()['name']}, {live.date.iloc[0]}",
                    device=device_report(), here=device_report()["name"])
    print(f"The comparison with Triton and PyTorch (the last section) was {df.attrs['source']}"
          + (f". Not run here, {recorded_line(df, absent)}" if absent else "."))
    return df


def _own_records(absent: dict) -> pd.DataFrame | None:
    """This GPU's earlier records of the alternatives it cannot run now (kept in its FILE beside
    the new rows), or None."""
    try:
        mine = results.load(FILE, results.gpu_slug())
    except FileNotFoundError:
        return None
    mine = mine[mine.kernel.isin(absent) & (mine.status == "ok")]
    return mine if len(mine) else None


def with_recorded(df: pd.DataFrame, absent: dict) -> pd.DataFrame:
    """``df`` (this GPU's rows) with, for each alternative in ``absent`` that it lacks, the rows
    of the GPU saved last that recorded it checked (each row names its device)."""
    have_ok = set(df[df.status == "ok"].kernel)
    wanted = [k for k in absent if k not in have_ok]
    if not wanted:
        return df
    parts = [df[~df.kernel.isin(wanted)]]
    for gpu, other in results.load_every(FILE).items():
        if gpu == (df.device.iloc[0] if len(df) else None):
            continue
        rows = other[other.kernel.isin(wanted) & (other.status == "ok")]
        parts.append(rows)
        wanted = [k for k in wanted if k not in set(rows.kernel)]
    out = pd.concat(parts, ignore_index=True)
    out.attrs = dict(df.attrs)
    return out


def recorded_line(df: pd.DataFrame, absent: dict) -> str:
    """Which rows of ``df`` were recorded (on which GPU, when), and why this GPU did not run them:
    one clause per recording, each kernel with its need."""
    here = here_of(df)
    groups, counts = {}, set()
    for kernel, why in absent.items():
        rows = df[(df.kernel == kernel) & (df.status == "ok")]
        label = next(a.label for a in ALTERNATIVES if a.id == kernel)
        need, _, count = why.partition("; this GPU counts as ")
        counts.add(count)
        where = ("recorded nowhere" if rows.empty else
                 f"this GPU's record of {rows.date.iloc[0]}" if rows.device.iloc[0] == here else
                 f"recorded on the {results.short_name(rows.device.iloc[0])}, {rows.date.iloc[0]}")
        groups.setdefault(where, []).append(f"{label} {need}")
    counts.discard("")
    head = f"this GPU counting as compute capability {counts.pop()}, " if len(counts) == 1 else ""
    return head + "; ".join(f"{where}: {'; '.join(kernels)}" for where, kernels in groups.items()) + "."


def here_of(df: pd.DataFrame) -> str:
    """The GPU whose comparison ``df`` is: the device of a live run (attrs 'here'), else that of
    the recorded rows."""
    return df.attrs.get("here", df.device.iloc[0])


def measured_here(df: pd.DataFrame) -> pd.Series:
    """Which rows of ``df`` are this GPU's (:func:`here_of`)."""
    return df.device == here_of(df)


PANELS = {"float32 FMAs": ["book_sgemm", "triton_fp32", "torch_fp32"],
          "tensor cores: 3xTF32, plain TF32; book.sgemm, auto":
          ["book_tf32x3", "triton_tf32x3", "torch_tf32", "book_auto"]}
"""The figure's panels: the kernels at float32's accuracy (FFMA, or 3xTF32 on the tensor cores
in the second panel), beside plain TF32 and precision='auto' (whichever is fastest of FFMA, 3xTF32
and the Ozaki scheme)."""
LOOK = {"the book": ("#17becf", "o"), "Triton": ("#393b79", "s"), "PyTorch": ("#9c9ede", "D"),
        "book_auto": ("#d62728", "*")}
"""Each library's colour and marker (and precision='auto''s own): the book's in chapter 9's colour
(book.sgemm), Triton and PyTorch in the ladder's colour for what you would use instead
(``plots.FAMILIES``), two shades."""


def plot(df: pd.DataFrame):
    """Each library's time over cuBLAS SGEMM's, shape by shape: float32 FMAs above, the tensor
    cores below (3xTF32 at float32's accuracy, and PyTorch's one TF32 product). A kernel this
    GPU did not run shows another GPU's record, hollow, that GPU named in the legend (each
    ratio is over the cuBLAS of its own GPU's rounds)."""
    import matplotlib.pyplot as plt

    from ..harness.plots import STYLE, check_readable
    ok = df[df.status == "ok"]
    here = here_of(df)
    shapes = [s for s in SHORT if ((ok.M == s[0]) & (ok.N == s[1]) & (ok.K == s[2])).any()]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 1, figsize=(6.8, 8.8), sharey=True)
        for ax, (title, kernels) in zip(axes, PANELS.items()):
            for i, kernel in enumerate(kernels):
                rows = ok[ok.kernel == kernel].set_index(["M", "N", "K"])
                if rows.empty:
                    continue
                x = [rows.x_cublas.get(s, np.nan) for s in shapes]
                color, marker = LOOK.get(kernel, LOOK[rows.library.iloc[0]])
                label, face = rows.label.iloc[0], color
                if rows.device.iloc[0] != here:  # another GPU's record: hollow, and said
                    label, face = f"{label} ({results.short_name(rows.device.iloc[0])})", "none"
                ax.plot(x, np.arange(len(shapes)) + (i - 1) * 0.22, marker, color=color, ms=7,
                        mfc=face, label=label)
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
            mixed = not measured_here(ok).all()  # (longer labels: one column)
            ax.legend(loc="upper left", bbox_to_anchor=(0, -0.2),
                      fontsize=11, ncol=1 if mixed else 2, handletextpad=0.2, columnspacing=1.0)
        for ax, kernels in zip(axes, PANELS.values()):
            shown = list(dict.fromkeys(ok[ok.kernel.isin(kernels)].device))
            gpus = (results.short_name(here) if shown == [here] else
                    ", ".join(f"{results.short_name(d)} ({'filled' if d == here else 'hollow'})"
                              for d in shown) if here in shown else
                    ", ".join(results.short_name(d) for d in shown) + " (recorded)")
            ratio = "" if len(shown) > 1 else " (its time / this time)"
            ax.set_xlabel(f"x cuBLAS SGEMM{ratio}, {gpus}", fontsize=11)
        fig.tight_layout(h_pad=2.5)
        plt.close(fig)
    return check_readable(fig)


def at_ladder_size(df: pd.DataFrame, n: int = 4096) -> pd.DataFrame:
    """The checked rows at the ladder's n: kernel, label, precision, GFLOP/s, x cuBLAS, error,
    device."""
    rows = df[(df.M == n) & (df.N == n) & (df.K == n) & (df.status == "ok")]
    rows = rows if "chosen" in rows else rows.assign(chosen=None)  # (records before 'auto')
    return rows[["kernel", "label", "precision", "gflops", "x_cublas", "rel_error",
                 "device", "chosen"]].reset_index(drop=True)


ARITHMETIC = {"fp32": "FP32 FMAs", "tf32x3": "3xTF32", "tf32": "TF32", "ozaki": "Ozaki, INT8"}
"""Each precision in a table's words: float32 FMAs (cuBLAS SGEMM's kind), three TF32 products at
float32's accuracy (chapter 10), one TF32 product at TF32's accuracy."""


def table(df: pd.DataFrame, n: int = 4096) -> pd.DataFrame:
    """Chapter 11's table at the ladder's n: each kernel's arithmetic, GFLOP/s, time over cuBLAS
    SGEMM's in the same rounds and largest error, cuBLAS's own row first (its GFLOP/s in these
    rounds: a row's GFLOP/s over it gives the ratio, to the rounding of medians), for
    :func:`~book.harness.tables.readable`."""
    rows = at_ladder_size(df, n)
    rows = pd.concat([rows[rows.kernel == "cublas"], rows[rows.kernel != "cublas"]])
    out = pd.DataFrame({"kernel": rows.label.to_numpy(),
                        "arithmetic": [f"auto: {ARITHMETIC[c]}" if p == "auto" else ARITHMETIC[p]
                                       for p, c in zip(rows.precision, rows.chosen)],
                        "gflops": rows.gflops.to_numpy(),
                        "x cuBLAS SGEMM": rows.x_cublas.round(2).to_numpy(),
                        "rel_error": rows.rel_error.to_numpy()}).set_index("kernel")
    if rows.device.nunique() > 1:  # some rows recorded on another GPU: say which
        out["measured on"] = [results.short_name(d) for d in rows.device]
    return out


IN_LADDER = ("triton_fp32", "torch_fp32", "triton_tf32x3", "torch_tf32")
"""The alternatives the ladder (and the README's copy) lists after cuBLAS; book.sgemm's rows there
come from chapters 9 and 10."""


AUTO_RUNG = "book_auto"
"""precision='auto''s record, which the ladder lists as chapter 12's last rung (where its GPU
recorded it: ``ladder_rows(gpu, kernels=(AUTO_RUNG,))``)."""


def ladder_rows(gpu: str, n: int = 4096, kernels: tuple = IN_LADDER) -> pd.DataFrame:
    """The record of each of ``kernels`` (default IN_LADDER) at n on results folder ``gpu`` (none
    where the GPU has no FILE): kernel, label, precision, GFLOP/s, x cuBLAS, error. The one read
    of these numbers that the ladder, the README and the landing page share."""
    try:
        df = results.load(FILE, gpu)
    except FileNotFoundError:
        return at_ladder_size(pd.DataFrame(columns=["M", "N", "K", "status", "kernel", "label",
                                                    "precision", "gflops", "x_cublas", "rel_error",
                                                    "device"]), n)
    rows = at_ladder_size(df, n)
    rows = rows[rows.kernel.isin(kernels)]
    return rows.set_index("kernel").loc[[k for k in kernels if k in set(rows.kernel)]].reset_index()


WEAK = {"ffn_out": (512, 768, 3072), "decode": (16, 4096, 4096)}
"""The two shapes where Triton's kernel falls furthest behind, which the chapter explains."""


def numbers(df: pd.DataFrame, n: int = 4096) -> dict:
    """What chapter 11's prose says about the comparison, computed from ``df`` (recorded or this
    run's), by name for ``glue``: the device and its SMs, each kernel's x cuBLAS and error at n,
    its x cuBLAS at the WEAK shapes (``x_<kernel>_<shape>``) and its range over the large shapes
    (M, N and K at least 2048), how far the fastest FP32 call there passed cuBLAS (%), and the
    book's 3xTF32 over Triton's at n. ``tf32x3_where`` says, where the 3xTF32 rows are another
    GPU's record (this one runs neither), which GPU measured them; '' where this one did. A
    kernel with no checked row gives NaN, so that every name the prose reads is glued."""
    ok = df[df.status == "ok"]
    here = here_of(df)
    at = at_ladder_size(df, n).set_index("kernel")
    large = ok[(ok.M >= 2048) & (ok.N >= 2048) & (ok.K >= 2048)]
    out = {"alt_device": results.short_name(here),
           "alt_sms": int(df.attrs["device"]["sms"])}
    for kernel in ["cublas"] + [a.id for a in ALTERNATIVES]:
        out[f"x_{kernel}"] = at.x_cublas.get(kernel, np.nan)
        out[f"err_{kernel}"] = at.rel_error.get(kernel, np.nan)
        for name, (M, N, K) in WEAK.items():
            here_rows = ok[(ok.M == M) & (ok.N == N) & (ok.K == K) & (ok.kernel == kernel)].x_cublas
            out[f"x_{kernel}_{name}"] = here_rows.iloc[0] if len(here_rows) else np.nan
        mine = large[large.kernel == kernel].x_cublas
        out[f"x_{kernel}_large_min"], out[f"x_{kernel}_large_max"] = mine.min(), mine.max()
    fp32 = large[(large.precision == "fp32") & (large.kernel != "cublas")]
    out["fp32_best_large_pct"] = 100 * (fp32.x_cublas.max() - 1)
    out["book_over_triton_tf32x3"] = out["x_book_tf32x3"] / out["x_triton_tf32x3"]
    if {"book_tf32x3", "triton_tf32x3"} <= set(at.index) and (
            at.device["book_tf32x3"] != at.device["triton_tf32x3"]):  # one GPU's two rows
        other = at_ladder_size(results.load_every(FILE)[at.device["book_tf32x3"]], n)
        x = other.set_index("kernel").x_cublas
        out["book_over_triton_tf32x3"] = x.get("book_tf32x3", np.nan) / x.get("triton_tf32x3", np.nan)
    away = {who: results.short_name(at.device[k])
            for k, who in (("triton_tf32x3", "Triton's"), ("book_tf32x3", "the book's"))
            if k in at.index and at.device[k] != here}
    out["tf32x3_where"] = (
        "" if not away else
        f" (both recorded on the {next(iter(away.values()))}: this GPU runs neither)"
        if len(away) == 2 and len(set(away.values())) == 1 else
        " (" + " and ".join(f"{who} recorded on the {gpu}" for who, gpu in away.items())
        + ": this GPU cannot run " + ("it" if len(away) == 1 else "them") + ")")
    mine = ok[ok.kernel == "book_auto"]
    took = {m: [SHORT[(r.M, r.N, r.K)] for r in mine.itertuples() if r.chosen == m]
            for m in ARITHMETIC} if "chosen" in ok else {}
    out["auto_took"] = "; ".join(f"{ARITHMETIC[m]} at {', '.join(where)}"
                                 for m, where in took.items() if where) or "nothing recorded"
    out["auto_at_n"] = ARITHMETIC.get(at.chosen.get("book_auto"), "--")
    for kernel in (a.id for a in ALTERNATIVES):  # '', or where another GPU's record stands in
        d = at.device.get(kernel, here)
        out[f"where_{kernel}"] = "" if d == here else f" (recorded on the {results.short_name(d)})"
    return out


if __name__ == "__main__":
    pd.set_option("display.width", 220)
    measured = results.keep(measure(), FILE)
    print(measured.drop(columns=["device", "date"]).round(3).to_string(index=False))
