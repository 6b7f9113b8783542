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


def legend_below(fig, ax=None, ncol: int = 2, **kw):
    """The legend of ``ax`` (default: the first axes) under the whole figure, off the data, in
    ``ncol`` columns so that it reads on a phone. Call after ``tight_layout``."""
    handles, labels = (ax or fig.axes[0]).get_legend_handles_labels()
    return fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol,
                      **kw)


def perf_plot(df: pd.DataFrame, *, title: str, ceilings: dict | None = None, x: str = "M",
              y: str = "gflops", xlabel: str = "matrix size n (M = N = K)",
              ylabel: str = "GFLOP/s", logy: bool = False, min_n: int = 64, ax=None):
    """One line per kernel label (rows that passed their check only), ceilings as lines.

    ``y="pct_of_cublas"`` plots each kernel as a share of the cuBLAS SGEMM timed beside it: the
    differences between slow kernels that a GFLOP/s axis up to cuBLAS squashes. Linear from
    ``min_n`` up, where kernels differ (below it launch latency hides them
    all; a log axis over eight decades hid the differences a chapter is about). ``ceilings``
    (from :func:`book.ceilings.load`) are drawn where their unit matches ``y`` ('gflops' or
    'gbps'); cuBLAS at 4096 only when cuBLAS is not a line of its own. Draws into ``ax`` when
    given, else returns a new closed Figure with the legend under it.
    """
    with plt.rc_context(STYLE):
        fig = None
        if ax is None:
            fig, ax = plt.subplots()
        ok = df[(df.status == "ok") & (df[x] >= min_n)]
        if y == "pct_of_cublas":  # cuBLAS is the axis itself
            ok = ok[ok.kernel != "cublas"]
        groups = list(ok.groupby("label", sort=False))
        styles = (family_styles([int(g.chapter.iloc[0]) for _, g in groups]) if "chapter" in ok
                  else [{"marker": "o"}] * len(groups))
        for (label, group), style in zip(groups, styles):
            if group.kernel.iloc[0] == "cublas":
                style = {"color": "k", "lw": 2, "marker": "o"}
            ax.plot(group[x], group[y], label=label, **style)
        drawn = set(ok.kernel)
        for key, value in (ceilings or {}).items():
            if key == "cublas_sgemm" and "cublas" in drawn:
                continue
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
        if not logy:
            ax.set_ylim(bottom=0)
        ax.set_title(title if fig is None else f"{title}\n{_source(df)}", fontsize=10)
        if fig is not None:
            fig.tight_layout()
            legend_below(fig, ax)
            plt.close(fig)
    return fig


def perf_and_bandwidth_plot(df: pd.DataFrame, *, title: str, ceilings: dict | None = None):
    """Share of cuBLAS (top) and effective bandwidth in GB/s (bottom, column 'gbps') against size,
    one legend under both."""
    with plt.rc_context(STYLE):
        fig, (left, right) = plt.subplots(2, 1, figsize=(7.5, 8.4), sharex=True)
        perf_plot(df, title="share of the cuBLAS SGEMM timed beside it", y="pct_of_cublas",
                  ylabel="% of cuBLAS SGEMM at the same n", ax=left)
        perf_plot(df[df.kernel != "cublas"], title="effective bandwidth: bytes the threads ask for / time",
                  ceilings=ceilings, y="gbps", ylabel="GB/s", ax=right)
        fig.suptitle(f"{title}\n{_source(df)}", fontsize=10)
        fig.tight_layout()
        legend_below(fig, left)
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
        fig.tight_layout()
        legend_below(fig, ax, ncol=1)
        plt.close(fig)
    return fig
