"""Chapter 9's tables and figures of book.sgemm, drawn from the runs ``sgemm_lab`` records
(every GPU's results files): what helped per shape, the suite's table, summary and figure, the
held-out sets' tables, figures and the figures their prose glues, and how the cost model ranked
the candidates.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..blas import DEFAULT, FIRST_CALL, FIRST_CALL_SMALL, FIRST_STREAMK, SMALL_S
from ..blas.choice import _plan
from ..harness import results
from ..harness.notebook import each_gpu
from ..launch.runtime import BACKEND
from .sgemm_lab import (HELDOUT_FILE, MODEL_FILE, SUITE_FILE, BookSgemm, geomean_pct,
                        heldout_summary, layouts_summary)


def what_helped(candidates_df: pd.DataFrame) -> pd.DataFrame:
    """Per shape, from a tuning run: chapter 8's tile alone, the best plan of one block per tile
    of C, the best split-K plan, the best stream-K plan, and the best plan, each as % of the
    cuBLAS run timed beside them (NaN where the tuner tried none of a kind)."""
    ok = candidates_df[(candidates_df.status == "ok") & (candidates_df.kernel != "cublas")].copy()
    ok["kind"] = np.select([ok.kernel.str.contains(r"_sk(?:_padb)?$"),
                            ok.kernel.str.contains(r"_k1(?:_padb)?$")],
                           ["stream-K", "tile"], "split-K")
    rows = []
    for (M, N, K), g in ok.groupby(["M", "N", "K"], sort=False):
        fixed = g[g.kernel == DEFAULT.id].pct_of_cublas
        best = {kind: g[g.kind == kind].pct_of_cublas.max()
                for kind in ("tile", "split-K", "stream-K")}
        rows.append({"M": M, "N": N, "K": K,
                     "chapter 8's tile (%)": fixed.iloc[0] if len(fixed) else float("nan"),
                     "best tile (%)": best["tile"], "best split-K (%)": best["split-K"],
                     "best stream-K (%)": best["stream-K"],
                     "best plan (%)": g.pct_of_cublas.max(),
                     "best plan": g.loc[g.pct_of_cublas.idxmax(), "label"]})
    return pd.DataFrame(rows).set_index(["M", "N", "K"])


def summary(suite_df: pd.DataFrame) -> dict:
    """The goal's figures for one GPU's suite: geometric mean and minimum % of cuBLAS, and the
    two squares the goal names; each % over the cuBLAS timed in the same interleaved rounds (the
    ladder's over chapter 0's cuBLAS figure: ``ladder.headline``)."""
    b = suite_df[(suite_df.kernel == BookSgemm.id) & (suite_df.status == "ok")]
    pct = b.set_index(["M", "N", "K"]).pct_of_cublas
    return {"shapes": len(b), "geomean (%)": geomean_pct(pct),
            "min (%)": float(pct.min()), "at 4096³ (%)": float(pct.get((4096, 4096, 4096), np.nan)),
            "at 8192³ (%)": float(pct.get((8192, 8192, 8192), np.nan))}


def shape_label(M: int, N: int, K: int) -> str:
    """How tables and figures name a shape of the suite: ``M x N x K``."""
    return f"{M} x {N} x {K}"


def suite_table(suite_df: pd.DataFrame, plans: pd.DataFrame) -> pd.DataFrame:
    """One GPU's suite, one row per shape: the plan ``book.sgemm`` ran (from that GPU's
    ``plans``), its GFLOP/s and cuBLAS's, and the ratio (medians of the interleaved rounds)."""
    book = suite_df[suite_df.kernel == BookSgemm.id].set_index(["M", "N", "K"])
    cublas = suite_df[suite_df.kernel == "cublas"].set_index(["M", "N", "K"]).gflops
    return pd.DataFrame({
        "plan": [_plan_label(plans, shape) for shape in book.index],
        "book.sgemm GFLOP/s": book.gflops.to_numpy(),
        "cuBLAS GFLOP/s": cublas.reindex(book.index).to_numpy(),
        "% of cuBLAS": book.pct_of_cublas.to_numpy()},
        index=pd.Index([shape_label(*shape) for shape in book.index], name="M x N x K"))


def _plan_label(plans: pd.DataFrame, shape) -> str:
    row = plans[(plans.M == shape[0]) & (plans.N == shape[1]) & (plans.K == shape[2])]
    return _plan(row.iloc[0]).label if len(row) else "--"


def recorded_suites(live: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """Every GPU's recorded suite by device name, with ``live`` (this run) in place of its own."""
    out = results.load_every(SUITE_FILE)
    if live is not None and BACKEND == "gpu":
        out[live.device.iloc[0]] = live
    return dict(sorted(out.items()))


def suite_plot(suites: dict[str, pd.DataFrame]):
    """% of cuBLAS per suite shape, one marker per GPU, on an axis zoomed to the band the
    results fall in (a bar from 0 would hide the few percent the goal is about); the goal's 100%
    and 90% as lines, each GPU's value in a column to the right of the axes."""
    import matplotlib.pyplot as plt

    from ..harness.plots import FAMILIES, STYLE, check_readable, legend_below, value_column
    from ..harness.results import short_name
    color = FAMILIES[9][1]
    with plt.rc_context(STYLE):
        first = next(iter(suites.values()), None)
        shapes = [] if first is None else list(dict.fromkeys(zip(*(
            first[first.kernel == BookSgemm.id][c] for c in ("M", "N", "K")))))
        fig, ax = plt.subplots(figsize=(STYLE["figure.figsize"][0], 0.36 * len(shapes) + 2.2))
        h = 0.36 / max(len(suites) - 1, 1)
        values = []
        for i, (device, df) in enumerate(suites.items()):
            b = df[df.kernel == BookSgemm.id].set_index(["M", "N", "K"]).pct_of_cublas
            v = np.array([b.get(shape, np.nan) for shape in shapes], dtype=float)
            values.append(v)
            y = np.arange(len(shapes)) + (i - (len(suites) - 1) / 2) * h
            ax.plot(v, y, ls="none", marker=("o", "s", "D", "^")[i % 4], ms=6, color=color,
                    alpha=1.0 - 0.35 * i, mfc=color if i == 0 else "none", label=device)
            finite = np.isfinite(v)
            value_column(ax, y[finite], [f"{value:.0f}" for value in v[finite]], short_name(device),
                         offset=6 + 30 * i, color="0.2" if i == 0 else "0.45")
        for x, ls, what in ((100, "-", "cuBLAS (100%)"), (90, ":", "the goal's floor (90%)")):
            ax.axvline(x, color="k", lw=1, ls=ls, label=what, zorder=1)
        every = np.concatenate(values) if values else np.array([90.0, 100.0])
        every = every[np.isfinite(every)]
        lo, hi = min(85.0, every.min() - 3), max(115.0, every.max() + 3)
        ax.set_xlim(5 * np.floor(lo / 5), 5 * np.ceil(hi / 5))
        ax.set_yticks(np.arange(len(shapes)), [shape_label(*shape) for shape in shapes], fontsize=8.5)
        ax.set_ylim(len(shapes) - 0.5, -0.5)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("book.sgemm, % of the cuBLAS SGEMM timed beside it\n(median of interleaved rounds)")
        ax.set_title("The book's SGEMM against cuBLAS on the suite\n(goal: 100% geometric mean, "
                     "none below 90%)", fontsize=10)
        fig.tight_layout()
        legend_below(fig, ax, ncol=2)
        plt.close(fig)
    return check_readable(fig)


def recorded_heldout(which: str = "") -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """Every GPU's recorded run of a held-out set (``which``: "" the first, ``--heldout``;
    "fresh" the second, ``--fresh``; "third" the third, ``--third``) by device name: (shapes,
    candidates)."""
    tail = "_" + which if which else ""
    shapes, model = results.load_every(HELDOUT_FILE + tail), results.load_every(MODEL_FILE + tail)
    return {d: (shapes[d], model[d]) for d in shapes if d in model}


def heldout_figures(runs: dict, tail: str) -> dict:
    """The figures chapter 9 writes of a held-out set, per GPU of ``runs``
    (``recorded_heldout``), named <gpu>_<tail>_<figure> for its glue: per kind of shape (all,
    big: min(M, N) >= 64, thin) the geometric mean, lowest, count at the floor and count; the
    median regret, the slowest shape, the model's report and the first calls' seconds."""
    figures, keys = {}, {}
    for device, (df, model) in runs.items():
        key = keys[device] = results.gpu_slug(device).replace("-", "_") + tail
        s = heldout_summary(df).loc["held-out"]
        for row, name in (("all", "all"), ("min(M, N) >= 64", "big"), ("skinny (min(M, N) < 64)", "thin")):
            figures[f"{key}_{name}"] = s.loc[row, "geometric mean (% of cuBLAS)"]
            figures[f"{key}_{name}_low"] = s.loc[row, "lowest (% of cuBLAS)"]
            figures[f"{key}_{name}_floor"] = int(s.loc[row, "at or above the floor"])
            figures[f"{key}_{name}_n"] = int(s.loc[row, "shapes"])
        figures[f"{key}_regret"] = s.loc["all", "median regret (%)"]
        ours = df[(df.kernel == BookSgemm.id) & (df.set == "held-out")]
        worst = ours.loc[ours.pct_of_cublas.idxmin()]
        figures[f"{key}_worst"] = f"{worst.M} × {worst.N} × {worst.K}"
        report = model_report(model)
        figures[f"{key}_model_first"] = report["fastest was the model's first (%)"]
        figures[f"{key}_model_six"] = report[f"fastest in the model's first {FIRST_CALL} (%)"]
        figures[f"{key}_model_timed"] = report["fastest among those a first call times (%)"]
        figures[f"{key}_model_rho"] = report["rank correlation (median)"]
        figures[f"{key}_first_median"] = ours.first_call_s.median()
        figures[f"{key}_first_max"] = ours.first_call_s.max()
    for name, form in (("big_floor", str), ("thin_floor", str), ("regret", lambda v: f"{v:.1f}%"),
                       ("model_timed", lambda v: f"{v:.0f}%")):  # (the GPUs together: each_gpu)
        figures[f"every{tail}_{name}"] = each_gpu({d: figures[f"{k}_{name}"] for d, k in keys.items()},
                                                  form)
    return figures


def model_report(model: pd.DataFrame) -> dict:
    """How the cost model ranked one GPU's held-out candidates against their measured times:
    the median rank correlation per shape, the shapes whose fastest plan was the model's first,
    or among its FIRST_CALL first, or among the plans a first call times (``first_call_plans``),
    and the median measured / model time."""
    m = model.copy()
    key = ["M", "N", "K"]
    m["by_model"], m["by_clock"] = (m.groupby(key)[c].rank(method="first")
                                    for c in ("model_us", "measured_us"))
    rho = m.groupby(key)[["by_model", "by_clock"]].apply(lambda g: g.by_model.corr(g.by_clock))
    small = m.groupby(key).model_us.transform("min") < 1e6 * SMALL_S
    m["first_call"] = np.where(small, FIRST_CALL_SMALL, FIRST_CALL)
    config = m.plan.str.extract(r"^sgemm_(.+)_sk(?:_|$)", expand=False)
    sk = config.notna()
    rank = m[sk].assign(config=config[sk]).groupby(key + ["config"]).model_us.rank(method="first")
    m["timed"] = ((m.by_model <= m.first_call)
                  | (rank <= FIRST_STREAMK).reindex(m.index, fill_value=False))
    best = m[m.by_clock == 1]
    return {"shapes": int(m.groupby(key).ngroups),
            "rank correlation (median)": float(rho.median()),
            "fastest was the model's first (%)": 100 * float((best.by_model == 1).mean()),
            f"fastest in the model's first {FIRST_CALL} (%)": 100 * float((best.by_model <= FIRST_CALL).mean()),
            "fastest among those a first call times (%)": 100 * float(best.timed.mean()),
            "measured / model time (median)": float((m.measured_us / m.model_us).median())}


def layouts_table(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """``layouts_summary`` of every GPU's recorded layout run, one block of rows per GPU."""
    return pd.concat({d: layouts_summary(df) for d, df in runs.items()}, names=["GPU", "layout"])


def heldout_table(runs: dict) -> pd.DataFrame:
    """``heldout_summary`` of every GPU's recorded held-out run, one block of rows per GPU."""
    return pd.concat({d: heldout_summary(df) for d, (df, _) in runs.items()}, names=["GPU"])


def heldout_plot(runs: dict):
    """Top: book.sgemm's % of cuBLAS on every held-out shape against its FLOPs, per GPU (skinny
    shapes, min(M, N) < 64, hollow), on a log axis zoomed to the band the results fall in;
    cuBLAS and the goal's floor as lines. Bottom: the cost model's time against the measured
    time of every candidate of every held-out shape on the first GPU, the plan book.sgemm ran
    ringed."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullLocator

    from ..harness.plots import (FAMILIES, LABEL_GREY, SECOND_COLOURS, STYLE, check_readable,
                                 direct_labels)
    from ..harness.results import short_name
    color = FAMILIES[9][1]
    with plt.rc_context(STYLE):
        fig, (ax, bx) = plt.subplots(2, 1, figsize=(STYLE["figure.figsize"][0], 9.4))
        shown = []
        for i, (device, (df, _)) in enumerate(runs.items()):
            b = df[(df.kernel == BookSgemm.id) & (df.set == "held-out")]
            shown.append(b.pct_of_cublas)
            flops = 2.0 * b.M * b.N * b.K
            skinny = np.minimum(b.M, b.N) < 64
            marker = ("o", "s")[i % 2]
            name, tone = short_name(device), (color, SECOND_COLOURS[1])[i % 2]  # (a colour per GPU)
            ax.scatter(flops[~skinny], b.pct_of_cublas[~skinny], marker=marker, color=tone,
                       label=f"{name}, min(M, N) >= 64", zorder=3)
            ax.scatter(flops[skinny], b.pct_of_cublas[skinny], marker=marker, facecolors="none",
                       edgecolors=tone, label=f"{name}, skinny", zorder=3)
        for y, ls in ((100, "-"), (90, ":")):
            ax.axhline(y, color="k", lw=1, ls=ls, zorder=1)
        ax.set_xscale("log"), ax.set_yscale("log")
        pct = pd.concat(shown) if shown else pd.Series([90.0, 100.0])
        lo, hi = min(85.0, pct.min() / 1.06), max(115.0, pct.max() * 1.06)
        ax.set_ylim(lo, hi)
        ticks = [t for t in (50, 60, 70, 80, 90, 100, 115, 150, 200, 300, 400, 600, 800)
                 if lo <= t <= hi]
        ax.yaxis.set_major_locator(FixedLocator(ticks))
        ax.yaxis.set_major_formatter(plt.FixedFormatter([str(t) for t in ticks]))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("the shape's floating-point operations, 2 M N K")
        ax.set_ylabel("book.sgemm, % of cuBLAS\n(median of 3 rounds)")
        ax.set_title("Held-out shapes", fontsize=10)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8.5)
        device, (_, model) = next(iter(runs.items()))
        bx.scatter(model.model_us, model.measured_us, s=8, color="#7f7f7f", alpha=0.5,
                   label="a candidate plan")
        kept = model[model.chosen]
        bx.scatter(kept.model_us, kept.measured_us, s=40, facecolors="none", edgecolors=color,
                   label="the plan book.sgemm ran")
        lo, hi = 0.8 * min(model.model_us.min(), model.measured_us.min()), 1.2 * max(
            model.model_us.max(), model.measured_us.max())
        bx.plot([lo, hi], [lo, hi], color="k", lw=1, label="measured = model")
        bx.set_xscale("log"), bx.set_yscale("log")
        bx.set_xlabel("the cost model's time (µs)")
        bx.set_ylabel("measured time (µs)")
        bx.set_title(f"Model against clock, {device}", fontsize=10)
        bx.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8.5)
        fig.tight_layout()
        direct_labels(ax, [(100, "cuBLAS\n(100%)", LABEL_GREY), (90, "the goal's\nfloor (90%)",
                                                                   LABEL_GREY)])
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


def checks_by_kind(checked: pd.DataFrame) -> pd.DataFrame:
    """``check_kernels``' table of every plan (rows) on every shape, one row per kind of plan
    (whole tiles, split-K, stream-K): how many plans of it passed at each shape, e.g. "14 of 14
    ok"; a failed plan is named in its cell."""
    kind = ["stream-K" if "stream-K" in p else "split-K" if "split-K" in p else "whole tiles"
            for p in checked.index]
    rows = {}
    for k, g in checked.groupby(kind, sort=False):
        rows[f"{k} ({len(g)} plan{'s' * (len(g) > 1)})"] = {
            shape: (f"{(col == 'ok').sum()} of {len(col)} ok" +
                    "".join(f"; {p}: {v}" for p, v in col[col != "ok"].items()))
            for shape, col in g.items()}
    return pd.DataFrame.from_dict(rows, orient="index")
