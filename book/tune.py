"""A small autotuning sweep over 08_async.cu's tile parameters (chapter 8).

Every configuration is checked before it is timed, like every kernel of the book (``sweep``);
one that fails its check is reported and never timed. The winner is the configuration with the
highest GFLOP/s at the largest size, per GPU: it is read from that GPU's results file, never
hard-coded.
"""
from __future__ import annotations

import pandas as pd

from .harness.measure import STEADY, sweep
from .registry import TUNING_SPACE, async_tile, usable



def tune(sizes, space=TUNING_SPACE, progress: bool = True) -> pd.DataFrame:
    """Check and time every configuration this GPU can run (one printed line names the others)
    at every size; the defines are columns. ``progress``: ``sweep``'s bar (where bars show)."""
    specs = usable([async_tile(**change) for change in space])
    df = sweep(specs, sizes, progress=progress)
    defines = pd.DataFrame([{**dict(s.defines), "kernel": s.id} for s in specs] or {"kernel": []})
    return df.merge(defines, on="kernel", how="left")


def winner(df: pd.DataFrame) -> pd.Series | None:
    """The fastest checked configuration at the largest size (None where none ran)."""
    ok = df[(df.status == "ok") & (df.kernel != "cublas")]
    top = ok[ok.M == ok.M.max()]
    return top.loc[top.gflops.idxmax()] if len(top) else None


def step_table(df: pd.DataFrame, specs, peak: float) -> pd.DataFrame:
    """Chapter 8's steps side by side: GFLOP/s and % of cuBLAS at each size, % of the measured
    FMA peak at the largest, then registers and blocks per SM (compiler and occupancy model)."""
    from .models.occupancy import report
    ok = df[df.status == "ok"]
    perf = ok.pivot_table(index="kernel", columns="M", values=["gflops", "pct_of_cublas"])
    rows, sizes = [], sorted(ok.M.unique())
    for spec in specs:
        row = {"step": spec.label}
        for n in sizes:
            row[f"GFLOP/s {n}"] = perf.loc[spec.id, ("gflops", n)]
            row[f"% cuBLAS {n}"] = perf.loc[spec.id, ("pct_of_cublas", n)]
        row[f"% FMA peak {sizes[-1]}"] = 100 * perf.loc[spec.id, ("gflops", sizes[-1])] / peak
        rows.append(row)
    occ = report(specs).reset_index()[["registers", "blocks_per_sm"]]
    return pd.concat([pd.DataFrame(rows), occ], axis=1).set_index("step").round(1)


def disturbed(df: pd.DataFrame, labels: dict) -> str:
    """A sentence naming the timings of ``df`` (kernels of ``labels``: id -> text) whose repeats'
    quartiles lay more than :data:`~book.harness.measure.STEADY` apart -- runs disturbed while
    they timed, whose median reads low -- or "" where there are none."""
    ok = df[(df.status == "ok") & df.kernel.isin(labels)]
    if "time_q3_ms" not in ok:
        return ""
    spread = ok.time_q3_ms / ok.time_q1_ms - 1
    said = [f"{labels[kernel]} at n = {n} (quartiles {100 * q:.0f}% apart)"
            for kernel, n, q in zip(ok.kernel, ok.M, spread) if q > STEADY]
    if not said:
        return ""
    return f" Disturbed in this run too, and reading low: {'; '.join(said)}; compare the other size."


def bars(df: pd.DataFrame, labels: dict, *, title: str, peak: float | None = None,
         highlight: str | None = None):
    """GFLOP/s of each kernel (rows of ``labels``: id -> text) at each size, as grouped
    horizontal bars, with cuBLAS at each size and the FMA peak as lines; each bar's GFLOP/s in
    a column to the right of the axes, off the bars and lines."""
    import textwrap

    import matplotlib.pyplot as plt

    from .harness.plots import STYLE, check_readable, legend_below, value_column
    ok = df[df.status == "ok"]
    sizes = sorted(ok.M.unique())
    names = ["\n".join(textwrap.wrap(f"▶ {t}" if k == highlight else t, 30)) for k, t in labels.items()]
    rows = max(n.count("\n") + 1 for n in names)
    with plt.rc_context(STYLE):
        step = max(0.3 * len(sizes), 0.2 + 0.16 * rows)  # inches per kernel
        fig, ax = plt.subplots(figsize=(STYLE["figure.figsize"][0], step * len(labels) + 1.9))
        h = 0.8 / len(sizes)
        for s, n in enumerate(sizes):
            at = ok[ok.M == n].set_index("kernel").gflops
            y = [i + s * h for i in range(len(labels))]
            ax.barh(y, [at.get(k, float("nan")) for k in labels], height=h, label=f"n = {n}",
                    color=f"C{s}")
            cublas = at.get("cublas")
            if cublas is not None:
                ax.axvline(cublas, color=f"C{s}", ls=":", lw=1.2,
                           label=f"cuBLAS, n = {n}: {cublas:,.0f}")
            shown = [(yy, f"{at[k]:,.0f}") for yy, k in zip(y, labels) if k in at]
            value_column(ax, [yy for yy, _ in shown], [t for _, t in shown], offset=4, color=f"C{s}")
        value_column(ax, [], [], "GFLOP/s", offset=4)
        if peak:
            ax.axvline(peak, color="0.3", ls="--", lw=1,
                       label=f"FP32 FMA peak (measured): {peak:,.0f}")
        ax.set_yticks([i + h * (len(sizes) - 1) / 2 for i in range(len(labels))], names,
                      fontsize=8.5)
        ax.set_ylim(len(labels) - h / 2 - 0.1, -h / 2 - 0.1)
        ax.set_xlabel("GFLOP/s")
        ax.set_title(f"{title}\n{df.attrs.get('source', '')}", fontsize=10, pad=14)  # (above the column's label)
        fig.tight_layout()
        legend_below(fig, ax, ncol=2)
        plt.close(fig)
    return check_readable(fig)


def config_text(row: pd.Series) -> str:
    """A tuning configuration's defines in a few words."""
    per_thread = int(row.BM * row.BN / row.THREADS)
    return (f"{row.BM:.0f}x{row.BN:.0f}x{row.BK:.0f}, warp {row.WM:.0f}x{row.WN:.0f}, "
            f"{row.THREADS:.0f} thr, {per_thread} out/thr, {row.STAGES:.0f} stages"
            f"{', serp' if row.SERP else ''}{', minB 2' if row.MINB == 2 else ''}")
