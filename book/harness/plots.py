"""The book's one plot style (chapter 0). Helpers return a closed Figure: the cell displays it once."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

STYLE = {
    "figure.figsize": (7.5, 4.4), "figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3,
    "axes.spines.top": False, "axes.spines.right": False, "font.size": 10,
    "legend.fontsize": 8.5, "legend.frameon": False, "lines.markersize": 4,
}
CEILING_STYLE = {"fp32_fma_peak": ("FP32 FMA peak (measured)", "--", "bottom", "gflops"),
                 "cublas_sgemm": ("cuBLAS SGEMM at 4096 (measured)", ":", "top", "gflops"),
                 "copy_bandwidth": ("device-to-device copy (measured)", "--", "bottom", "gbps")}


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
        for label, group in ok.groupby("label", sort=False):
            style = {"color": "k", "lw": 2} if group.kernel.iloc[0] == "cublas" else {}
            ax.plot(group[x], group[y], marker="o", label=label, **style)
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
        ax.legend(loc="lower right")
        if fig is not None:
            plt.close(fig)
    return fig


def perf_and_bandwidth_plot(df: pd.DataFrame, *, title: str, ceilings: dict | None = None):
    """GFLOP/s (left) and effective bandwidth in GB/s (right, column 'gbps') against size."""
    with plt.rc_context(STYLE):
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
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
