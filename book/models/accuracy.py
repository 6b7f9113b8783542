"""How accurate is a float32 matmul, and what Kahan summation buys (chapter 7).

:func:`error_vs_k` runs kernels on inputs of two kinds as K grows and measures each output
against float64 (the same float32 inputs, upcast): the relative Frobenius error used everywhere
in the book, and the largest element-wise relative error, the measure source 004 quotes. Each
kernel runs twice, compiled with NVRTC's default FMA contraction and with ``--fmad=false``.
On the CPU emulator the two builds compute the same thing: its C++ build never fuses a * b + c.
"""
from __future__ import annotations

import dataclasses
from datetime import date

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..harness.check import random_inputs
from ..harness.device import device_report
from ..harness.measure import Baseline, relative_error_xp
from ..harness.plots import STYLE
from ..harness.progress import bar
from ..launch.runtime import to_device, xp

KINDS = {"positive": (0.0, 1.0), "mixed": (-1.0, 1.0)}
"""Input kinds: uniform in [0, 1) (every product positive: no cancellation, the sum grows with
K) and uniform in [-1, 1) (products of both signs: the sum cancels and grows like sqrt(K))."""

UNIT_ROUNDOFF = 2.0 ** -24
"""float32's unit roundoff u: the relative error of one correctly rounded operation, at most."""

NO_FMA = ("--fmad=false",)

FLOOR = "float32_exact"
"""The row of :func:`error_vs_k` that rounds the float64 reference itself to float32: the error
every float32 output has, however it was computed."""


def without_fma(spec):
    """The same registry kernel compiled with ``--fmad=false`` (no a * b + c fused into an FMA)."""
    return dataclasses.replace(spec, options=spec.options + NO_FMA)


def inputs(kind: str, M: int, N: int, K: int, seed: int = 0):
    """Device float32 A (M x K) and B (K x N), uniform on the kind's interval."""
    if kind not in KINDS:
        raise ValueError(f"input kind {kind!r} is not one of {list(KINDS)}")
    a, b = random_inputs(M, N, K, seed, *KINDS[kind])
    return to_device(a), to_device(b)


def max_relative_error(out, ref) -> float:
    """max |out - ref| / |ref| over the elements (inf if out has NaN; elements with ref = 0 skipped)."""
    if not bool(xp.isfinite(out).all()):
        return float("inf")
    nonzero = ref != 0
    return float((xp.abs(out.astype(xp.float64) - ref)[nonzero] / xp.abs(ref[nonzero])).max())


def error_vs_k(specs, Ks, M: int, N: int, kinds=tuple(KINDS), fmad=(True, False),
               baseline: bool = True, seed: int = 0) -> pd.DataFrame:
    """One row per (input kind, K, kernel, FMA contraction): relative and max element-wise error.

    Every output starts as NaN, so an unwritten element gives an infinite error. The baseline
    (cuBLAS on a GPU, NumPy's BLAS on the CPU) runs once per (kind, K), with ``fmad`` 'library';
    the floor (:data:`FLOOR`, the exact product rounded to float32) has ``fmad`` 'exact'. A
    progress bar counts the (kind, K) inputs where bars show (``harness.progress``).
    """
    variants = [(s, True) for s in specs if True in fmad] + \
               [(without_fma(s), False) for s in specs if False in fmad]
    if baseline:
        variants.append((Baseline(), "library"))
    rows = []
    for kind, K in bar([(kind, K) for kind in kinds for K in Ks], desc="error vs K", unit="input"):
        A, B = inputs(kind, M, N, K, seed=seed + K)
        ref = A.astype(xp.float64) @ B.astype(xp.float64)

        def row(kernel, label, fmad, out):
            return {"kind": kind, "M": M, "N": N, "K": K, "kernel": kernel, "label": label,
                    "fmad": fmad, "rel_error": relative_error_xp(out, ref),
                    "max_rel_error": max_relative_error(out, ref)}

        # the best any float32 output can do
        rows.append(row(FLOOR, "exact product rounded to float32", "exact", ref.astype(xp.float32)))
        C = xp.empty((M, N), dtype=xp.float32)
        for spec, contract in variants:
            C.fill(xp.nan)
            spec.launch(A, B, C, M, N, K)
            rows.append(row(spec.id, spec.label, str(contract), C))
    df = pd.DataFrame(rows)
    df["device"] = device_report()["name"]
    df["date"] = date.today().isoformat()
    return df


KIND_NAMES = {"positive": "inputs in [0, 1)", "mixed": "inputs in [-1, 1)"}
FMAD_NAMES = {"True": "FMA", "False": "no FMA", "exact": "", "library": "library"}


def error_table(df: pd.DataFrame, column: str = "rel_error") -> pd.DataFrame:
    """Kernels (rows, by label, with their build where some ran without FMA) x K (columns) of one
    error column, one block of rows per input kind, formatted to two significant digits."""
    from ..harness.tables import significant
    both = "False" in set(df.fmad)  # the builds differ only where some ran without FMA
    d = df.assign(kind=df.kind.map(KIND_NAMES).fillna(df.kind),
                  label=[f"{lab} ({FMAD_NAMES.get(f, f)})" if both and FMAD_NAMES.get(f, f) else lab
                         for lab, f in zip(df.label, df.fmad)])
    table = d.pivot_table(index=["kind", "label"], columns="K", values=column, sort=False)
    table.columns = [f"K = {k}" for k in table.columns]
    return table.rename_axis(["inputs", "kernel (build)"]).map(lambda e: significant(e, 2))


def growth(df: pd.DataFrame, kernel: str, kind: str, fmad: str = "True") -> float:
    """Slope of log(error) against log(K) for one kernel: 0.5 means the error grows like sqrt(K)."""
    d = df[(df.kernel == kernel) & (df.kind == kind) & (df.fmad == fmad)]
    return float(np.polyfit(np.log(d.K), np.log(d.rel_error), 1)[0])


def same_curves(df: pd.DataFrame, rtol: float = 0.01) -> dict[tuple, list[tuple]]:
    """Series (kernel, fmad) whose errors agree within ``rtol`` at every kind and K, grouped under
    the first of them: they would hide each other in a plot (the naive and tiled kernels add the
    same terms in the same order, so their errors are the same)."""
    curves = {key: d.sort_values(["kind", "K"]).rel_error.to_numpy()
              for key, d in df[df.kernel != FLOOR].groupby(["kernel", "fmad"], sort=False)}
    groups: dict[tuple, list[tuple]] = {}
    for key, values in curves.items():
        for head in groups:
            other = curves[head]
            if len(other) == len(values) and np.allclose(values, other, rtol=rtol, atol=0):
                groups[head].append(key)
                break
        else:
            groups[key] = [key]
    return groups


def accuracy_plot(df: pd.DataFrame, *, title: str, threshold: float | None = None):
    """Relative error against K, one panel per input kind (one above the other); dashed lines:
    compiled --fmad=false. Kernels whose errors are the same share one line and one legend entry
    ("a = b"); the legend sits under the panels. The float32 floor, the unit roundoff and the
    ``threshold`` are reference lines named in the right margin. Where there are more than
    :data:`~book.harness.plots.MAX_SERIES` curves, the newest chapter's kernels and cuBLAS are
    drawn in colour and the others in grey underneath, named in the margin."""
    from ..harness.plots import (GREY, LABEL_GREY, MAX_SERIES, chapter_of, check_readable,
                                 direct_labels, wrap)
    with plt.rc_context(STYLE):
        kinds = list(dict.fromkeys(df.kind))
        fig, axes = plt.subplots(len(kinds), 1, figsize=(STYLE["figure.figsize"][0], 1.6 + 3.0 * len(kinds)),
                                 sharex=True, squeeze=False)
        axes = axes[:, 0]
        groups = same_curves(df)
        suffix = {"False": ", --fmad=false", "True": ""}
        names = {key: df[df.kernel == key[0]].label.iloc[0] + suffix.get(key[1], "")
                 for members in groups.values() for key in members}
        shown = set(groups)
        if len(groups) > MAX_SERIES:
            chapter = {key: chapter_of(key[0]) for key in groups}
            newest = max(chapter.values())
            shown = [key for key in groups if chapter[key] in (newest, 0)][:MAX_SERIES]
        colors, margins = {}, []
        for ax, kind in zip(axes, kinds):
            here = df[df.kind == kind]
            floor = here[here.kernel == FLOOR]
            items = []
            if len(floor):
                ax.plot(floor.K, floor.rel_error, color="0.55", lw=3, alpha=0.6, zorder=1)
                items.append((floor.rel_error.iloc[-1], wrap(floor.label.iloc[0], 22), LABEL_GREY))
            for (kernel, fmad), members in groups.items():
                d = here[(here.kernel == kernel) & (here.fmad == fmad)]
                name = " = ".join(names[m] for m in members)
                if (kernel, fmad) not in shown:
                    ax.plot(d.K, d.rel_error, color=GREY, lw=1.3, zorder=1, label="_" + name,
                            ls="--" if fmad == "False" else "-")
                    items.append((d.rel_error.iloc[-1], wrap(name, 22), LABEL_GREY))
                    continue
                color = colors.setdefault(kernel, f"C{len(colors)}" if kernel != "cublas" else "k")
                style = {"ls": "--", "marker": "x"} if fmad == "False" else {"marker": "o"}
                ax.plot(d.K, d.rel_error, color=color, label=name, zorder=3, **style)
            ax.axhline(UNIT_ROUNDOFF, color="0.35", lw=1, ls=":")
            items.append((UNIT_ROUNDOFF, "float32 unit\nroundoff $u = 2^{-24}$", LABEL_GREY))
            if threshold:
                ax.axhline(threshold, color="0.35", lw=1, ls="-.")
                items.append((threshold, f"source 004's\ntarget, {threshold:g}", LABEL_GREY))
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            lo, hi = KINDS[kind]
            ax.set_title(f"{kind} inputs, uniform in [{lo:g}, {hi:g})", fontsize=10)
            ax.set_ylabel("relative error\n||C - C64|| / ||C64||")
            margins.append(items)
        axes[-1].set_xlabel("K (terms in each dot product)")
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        for ax, items in zip(axes, margins):
            direct_labels(ax, items)
        fig.tight_layout()
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=1,
                   fontsize=8)
        plt.close(fig)
    return check_readable(fig)
