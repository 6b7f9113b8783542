"""The book's one plot style (chapter 0). Helpers return a closed Figure: the cell displays it once."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

STYLE = {
    "figure.figsize": (7.5, 4.4), "figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3,
    "axes.spines.top": False, "axes.spines.right": False, "font.size": 10,
    "legend.fontsize": 8.5, "legend.frameon": False, "lines.markersize": 4,
}
CEILING_STYLE = {"fp32_fma_peak": ("FP32 FMA peak (measured)", "--", "bottom", "gflops"),
                 "cublas_sgemm": ("cuBLAS SGEMM at 4096 (measured)", ":", "top", "gflops"),
                 "copy_bandwidth": ("device-to-device copy (measured)", "--", "bottom", "gbps")}


FAMILIES = {0: ("cuBLAS", "#000000"), 1: ("CPU loop", "#7f7f7f"), 2: ("naive", "#1f77b4"),
            3: ("coalescing", "#ff7f0e"), 4: ("shared-memory tiles", "#2ca02c"),
            5: ("bank conflicts", "#d62728"), 6: ("register tiles", "#9467bd"),
            7: ("Kahan, pitched rows", "#8c564b"), 8: ("toward cuBLAS", "#e377c2"),
            9: ("every shape", "#17becf"), 10: ("tensor cores", "#bcbd22")}
"""Kernel families -- the chapter that introduces a kernel (0: the library) -- and the one colour
each has in every figure of the book."""
MARKERS = "osD^vPX*"


def family_styles(chapters) -> list[dict]:
    """Line styles for kernels of the given chapters, in order: each family's colour, shaded and
    marked differently for the second, third ... kernel of the same family."""
    from matplotlib.colors import to_rgb
    seen, out = {}, []
    for ch in chapters:
        k = seen[ch] = seen.get(ch, -1) + 1
        name, color = FAMILIES.get(ch, ("", "#17becf"))
        rgb = np.array(to_rgb(color))
        shade = (0.0, -0.35, 0.4, -0.2, 0.6, -0.5)[k % 6]  # darker / lighter, never black or white
        rgb = rgb * (1 + shade) if shade < 0 else rgb + (1 - rgb) * shade
        out.append({"color": tuple(rgb), "marker": MARKERS[k % len(MARKERS)],
                    "ls": ("-", "--", "-.", ":")[k % 4]})
    return out


def _source(df: pd.DataFrame) -> str:
    return df.attrs.get("source", "")


def perf_plot(df: pd.DataFrame, *, title: str, ceilings: dict | None = None, x: str = "M",
              y: str = "gflops", xlabel: str = "matrix size n (M = N = K)",
              ylabel: str = "GFLOP/s", logy: bool = True, ax=None):
    """One line per kernel label (rows that passed their check only), ceilings as lines.

    ``ceilings`` (from :func:`book.ceilings.load`) are drawn where their unit matches ``y``
    ('gflops' or 'gbps'). Draws into ``ax`` when given, else returns a new closed Figure.
    """
    with plt.rc_context(STYLE):
        fig = None
        if ax is None:
            fig, ax = plt.subplots()
        ok = df[df.status == "ok"]
        groups = list(ok.groupby("label", sort=False))
        styles = (family_styles([int(g.chapter.iloc[0]) for _, g in groups]) if "chapter" in ok
                  else [{"marker": "o"}] * len(groups))
        for (label, group), style in zip(groups, styles):
            if group.kernel.iloc[0] == "cublas":
                style = {"color": "k", "lw": 2, "marker": "o"}
            ax.plot(group[x], group[y], label=label, **style)
        for key, value in (ceilings or {}).items():
            if key in CEILING_STYLE and CEILING_STYLE[key][3] == y:
                text, ls, va, _ = CEILING_STYLE[key]  # labels above / below their lines
                ax.axhline(value, ls=ls, color="0.35", lw=1)
                ax.annotate(f"{text}: {value:,.0f}", (0.01, value), xycoords=("axes fraction", "data"),
                            va=va, fontsize=8, color="0.25")
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title if fig is None else f"{title}\n{_source(df)}", fontsize=10)
        ax.legend(loc="lower right" if logy else "best")
        if fig is not None:
            plt.close(fig)
    return fig


def perf_and_bandwidth_plot(df: pd.DataFrame, *, title: str, ceilings: dict | None = None):
    """GFLOP/s (left) and effective bandwidth in GB/s (right, column 'gbps') against size."""
    with plt.rc_context(STYLE):
        fig, (left, right) = plt.subplots(2, 1, figsize=(7.5, 8.4), sharex=True)
        perf_plot(df, title="GFLOP/s", ceilings=ceilings, ax=left)
        perf_plot(df[df.kernel != "cublas"], title="effective bandwidth: bytes the threads ask for / time",
                  ceilings=ceilings, y="gbps", ylabel="GB/s", ax=right)
        fig.suptitle(f"{title}\n{_source(df)}", fontsize=10)
        fig.tight_layout()
        plt.close(fig)
    return fig


def loglog_fit_plot(df: pd.DataFrame, *, title: str, fits: dict, extrapolate: dict | None = None):
    """Time against n on log-log axes, one line per method, with the fitted slope in the legend."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        for method, group in df.groupby("method", sort=False):
            ax.plot(group.n, group.time_s, marker="o",
                    label=f"{method} (slope {fits[method]:.2f})")
        for method, (n, t) in (extrapolate or {}).items():
            ax.plot([n], [t], marker="x", ms=9, ls="none", color="k",
                    label=f"{method}, extrapolated to n = {n}: {t / 3600:.1f} h")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("matrix size n (M = N = K)")
        ax.set_ylabel("time (s)")
        ax.set_title(f"{title}\n{_source(df)}", fontsize=10)
        ax.legend(loc="upper left")
        plt.close(fig)
    return fig
