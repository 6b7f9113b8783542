"""Chapter 10's tables, summaries and figure, drawn from the runs ``tf32_lab`` records (every
GPU's results files): the step table, ``precision='tf32x3'`` on the suite and the held-out set
against its goals, its error at every magnitude, the call's parts and the clock and power of
each GEMM.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..harness.plots import FAMILIES, STYLE, check_readable
from .tf32_lab import MAGNITUDE_FAMILIES, Tf32x3Sgemm


def size_table(df: "pd.DataFrame") -> "pd.DataFrame":
    """:func:`measure`'s rows as one row per kernel: % of cuBLAS SGEMM at each n, the largest
    error at the largest n, and the check ('ok', or the sizes where it failed), for
    :func:`~book.harness.tables.readable`."""
    import pandas as pd
    big = df.M.max()
    pct = df.pivot_table(index="kernel", columns="M", values="pct_of_cublas", sort=False, dropna=False)
    pct.columns = [f"% of SGEMM, n = {n}" for n in pct.columns]
    at = df[df.M == big].set_index("kernel")
    failed = df[df.status != "ok"].groupby("kernel", sort=False).M.agg(
        lambda m: "FAILED at n = " + ", ".join(str(v) for v in sorted(m)))
    table = pct.assign(**{f"error, n = {big}": at.rel_error.reindex(pct.index),
                          "check": failed.reindex(pct.index).fillna("ok")})
    labels = dict(zip(df.kernel, df.label))
    return table.set_axis([labels[k] for k in table.index]).rename_axis("kernel")


def heldout_summary(runs: dict) -> "pd.DataFrame":
    """:func:`tf32x3_heldout` of every GPU recorded, a row each (named by the word after
    "NVIDIA"): 'tf32x3' as a multiple of cuBLAS SGEMM -- geometric mean, lowest, highest --, how
    many shapes reach SGEMM's speed, and the geometric mean over the shapes with M, N and K all
    at least 1024 (where tensor cores can pay)."""
    import pandas as pd

    from .sgemm_lab import geomean_pct
    rows = {}
    for d, df in runs.items():
        x = df[df.kernel == Tf32x3Sgemm.id]
        big = x[(x.M >= 1024) & (x.N >= 1024) & (x.K >= 1024)]
        rows[d.replace("NVIDIA ", "").split()[0]] = {
            "shapes": len(x), "geometric mean (x SGEMM)": geomean_pct(x.pct_of_cublas) / 100,
            "lowest": x.pct_of_cublas.min() / 100, "highest": x.pct_of_cublas.max() / 100,
            "at or above SGEMM": int((x.pct_of_cublas >= 100).sum()),
            "M, N, K ≥ 1024": len(big),
            "their geometric mean": geomean_pct(big.pct_of_cublas) / 100 if len(big) else float("nan"),
            "checks": "ok" if (df.status == "ok").all() else "FAILED"}
    table = pd.DataFrame(rows).T.infer_objects()
    return table.round({c: 2 for c in ("geometric mean (x SGEMM)", "lowest", "highest",
                                        "their geometric mean")})


def power_table(runs: dict) -> "pd.DataFrame":
    """:func:`tf32x3_power` of every GPU recorded, one row per GPU (short name), shape and
    kernel, medians over its rounds: ms a call (the mean over each loop), the multiple of cuBLAS
    SGEMM's speed over the loop and over its first 50 ms (for the product alone too, as if it
    were the whole GEMM), the SM clock (MHz),
    the board's power (W) and every reason nvidia-smi gave, in any
    sample, for a clock below the maximum (the power limit is in the files: 700 W on both GPUs
    recorded)."""
    import pandas as pd
    names = {"cublas": "cuBLAS SGEMM", "cublas_tf32": "cuBLAS TF32",
             "product": "3xTF32 product alone", "sgemm_tf32x3": "3xTF32 call"}
    rows = []
    for d, df in runs.items():
        for (M, N, K), g in df.groupby(["M", "N", "K"], sort=False):
            med = g.groupby("kernel", sort=False)[["ms", "ms_first", "sm_mhz", "power_w"]].median()
            why = g.groupby("kernel", sort=False).limited_by.agg(lambda s: "+".join(sorted(set(
                w for v in s for w in v.split("+") if w != "none"))) or "none")
            for k, m in med.iterrows():
                rows.append({"GPU": d.replace("NVIDIA ", "").split()[0],
                             "shape": f"{M}³" if M == N == K else f"{M}\u00a0×\u00a0{N}\u00a0×\u00a0{K}",
                             "kernel": names.get(k, k), "ms, loop": m.ms,
                             "x SGEMM, loop": med.ms["cublas"] / m.ms,
                             "x SGEMM, first 50 ms": med.ms_first["cublas"] / m.ms_first,
                             "SM clock (MHz)": m.sm_mhz, "power (W)": m.power_w,
                             "reasons": why[k]})  # (the limit: 700 W here)
    table = pd.DataFrame(rows).set_index(["GPU", "shape", "kernel"]).round(
        {"ms, loop": 3, "x SGEMM, loop": 2, "x SGEMM, first 50 ms": 2})
    whole = ["SM clock (MHz)", "power (W)"]  # (every sample has them)
    table[whole] = table[whole].round().astype(int)
    return table


def power_summary(runs: dict, suite: dict | None = None) -> dict:
    """:func:`power_table` for the text, as ranges over the GPUs and shapes recorded
    (``_min``, ``_max``): the SM clock of cuBLAS SGEMM, the 3xTF32 product, cuBLAS TF32 and the
    3xTF32 call (``power_<sgemm|product|tf32|call>_mhz``), as % of the maximum (``_pct``) and
    the board's power (``_w``); the GPUs' maximum clock (``power_max_mhz``); in the loop, the
    call's and the product's multiple of SGEMM (``power_call_x``, ``power_product_x``), the
    bound of three cuBLAS TF32 GEMMs (``power_bound_x``), and each GPU's range of the product's
    clock as words (``power_product_mhz_<gpu>``, e.g. ``_h100``); how much faster the call
    would have to be to reach 2.5 times SGEMM (``power_faster_pct``). With ``suite``
    (:func:`tf32x3_suite` runs of the same GPUs): the suite's multiple at the same shapes
    (``power_suite_x``) and at 16384^3 (``power_suite_x_16384``), where one call lasts about
    80 ms."""
    import pandas as pd
    t = power_table(runs).reset_index()
    top = {d.replace("NVIDIA ", "").split()[0]: df.max_mhz.max() for d, df in runs.items()}
    t["% of max clock"] = 100 * t["SM clock (MHz)"] / t.GPU.map(top)
    out = {}
    calls = t[t.kernel == "3xTF32 call"]
    out["power_call_x_min"], out["power_call_x_max"] = calls["x SGEMM, loop"].min(), calls["x SGEMM, loop"].max()
    out["power_faster_pct_min"], out["power_faster_pct_max"] = (100 * (2.5 / x - 1) for x in (
        out["power_call_x_max"], out["power_call_x_min"]))  # how much faster 2.5x SGEMM asks
    alone = t[t.kernel == "3xTF32 product alone"]
    out["power_product_x_min"], out["power_product_x_max"] = alone["x SGEMM, loop"].min(), alone["x SGEMM, loop"].max()
    for name, at in (("call", calls), ("product", alone)):  # over the loop's first 50 ms
        first = at["x SGEMM, first 50 ms"]
        out[f"power_{name}_x_first_min"], out[f"power_{name}_x_first_max"] = first.min(), first.max()
    for gpu, g in alone.groupby("GPU"):  # the product's clock on each GPU, as the text's words
        lo, hi = g["SM clock (MHz)"].min(), g["SM clock (MHz)"].max()
        out[f"power_product_mhz_{gpu.lower()}"] = f"{lo}" if lo == hi else f"{lo} to {hi}"
    bound = [g.set_index("kernel")["x SGEMM, loop"]["cuBLAS TF32"] / 3  # (three of its GEMMs)
             for _, g in t.groupby(["GPU", "shape"])]
    out["power_bound_x_min"], out["power_bound_x_max"] = min(bound), max(bound)
    if suite:
        shapes = {(int(s.rstrip("³")),) * 3 for s in t["shape"] if s.endswith("³")}
        at = pd.concat(df.assign(x=df.pct_of_cublas / 100)[df.kernel == Tf32x3Sgemm.id]
                       for df in suite.values())
        loop = at[[(m, n, k) in shapes for m, n, k in zip(at.M, at.N, at.K)]].x
        big = at[(at.M == 16384) & (at.N == 16384) & (at.K == 16384)].x
        out["power_suite_x_min"], out["power_suite_x_max"] = loop.min(), loop.max()
        out["power_suite_x_16384_min"], out["power_suite_x_16384_max"] = big.min(), big.max()
    for k, name in (("cuBLAS SGEMM", "sgemm"), ("3xTF32 product alone", "product"), ("cuBLAS TF32", "tf32"),
                    ("3xTF32 call", "call")):
        at = t[t.kernel == k]
        for col, short in (("SM clock (MHz)", "mhz"), ("% of max clock", "pct"), ("power (W)", "w")):
            out[f"power_{name}_{short}_min"], out[f"power_{name}_{short}_max"] = at[col].min(), at[col].max()
    out["power_max_mhz"] = float(max(top.values()))
    return out


def parts_table(runs: dict) -> "pd.DataFrame":
    """:func:`tf32x3_parts` of every GPU recorded, one row per GPU (short name) and shape: the ms
    of each launch (scaling: ``rescale``, or in runs before it the whole scaling pass
    ``exponents``; split: ``pack``; the product) and of the whole call;
    the call and the bound that cuBLAS's own TF32 GEMM sets -- three of its GEMMs (the three
    products) with no split at all -- as multiples of cuBLAS SGEMM's speed; the product kernel's
    rate as % of cuBLAS TF32's; step 4's product kernel, without and with ping-pong, and step
    5's, as % of the time of step 3's (above 100: slower); and the call with step 5's kernel."""
    import pandas as pd
    rows = []
    for d, df in runs.items():
        for (M, N, K), g in df.groupby(["M", "N", "K"], sort=False):
            ms = g.set_index("part").ms
            shape = f"{M}³" if M == N == K else "\u00a0×\u00a0".join(map(str, (M, N, K)))  # (no wrap)
            rows.append({"GPU": d.replace("NVIDIA ", "").split()[0], "shape": shape,
                         "scaling": ms["rescale"] if "rescale" in ms else ms["exponents"],
                         "split": ms["pack"], "product": ms["product"],
                         "call": ms["sgemm_tf32x3"], "call, x SGEMM": ms["cublas"] / ms["sgemm_tf32x3"],
                         "bound, x SGEMM": ms["cublas"] / (3 * ms["cublas_tf32"]),
                         "product, % of cuBLAS TF32": 100 * 3 * ms["cublas_tf32"] / ms["product"],
                         "step 4, % of product": 100 * ms["product_producer"] / ms["product"],
                         "ping-pong, % of product": 100 * ms["product_pingpong"] / ms["product"],
                         "step 5, % of product": 100 * ms.get("product_areg", np.nan) / ms["product"],
                         "call with step 5, x SGEMM": ms["cublas"] / ms.get("sgemm_tf32x3_areg", np.nan)})
    return pd.DataFrame(rows).set_index(["GPU", "shape"])


def parts_summary(runs: dict) -> dict:
    """:func:`parts_table` for the text, as ranges over the GPUs recorded (``_min``, ``_max``):
    at n = 4096 and 8192 (n^3), the call's and the bound's multiple of SGEMM
    (``parts_call_x_<n>``, ``parts_bound_x_<n>``), the product's % of cuBLAS TF32's rate
    (``parts_product_pct_<n>``, and as the text's words without ``_min`` or ``_max``) and the
    share of the call spent outside the product (``parts_outside_pct_<n>``, and as the text's
    words, ``parts_outside_<n>``); over every
    shape, step 4's and step 5's kernels' time as % of the product's (``parts_producer``,
    ``parts_pingpong``, ``parts_areg``)."""
    t = parts_table(runs).reset_index()
    t["outside"] = 100 * (1 - t["product"] / t["call"])  # (split-K's sum and the fix included)
    out = {}
    for n in (4096, 8192):
        at = t[t["shape"] == f"{n}³"]
        for col, name in (("call, x SGEMM", "call_x"), ("bound, x SGEMM", "bound_x"),
                          ("product, % of cuBLAS TF32", "product_pct"), ("outside", "outside_pct")):
            out[f"parts_{name}_{n}_min"], out[f"parts_{name}_{n}_max"] = at[col].min(), at[col].max()
        for col, name in (("outside", "outside"), ("product, % of cuBLAS TF32", "product_pct")):
            lo, hi = (f"{v:.0f}" for v in (at[col].min(), at[col].max()))
            out[f"parts_{name}_{n}"] = lo if lo == hi else f"{lo} to {hi}"  # ("8", not "8 to 8")
    for col, name in (("step 4, % of product", "producer"), ("ping-pong, % of product", "pingpong"),
                      ("step 5, % of product", "areg")):
        out[f"parts_{name}_min"], out[f"parts_{name}_max"] = t[col].min(), t[col].max()
    return out


MAGNITUDE_STYLES = {"tf32x3": ("3xTF32, scaled", FAMILIES[10][1], "-", "o"),
                    "tf32x3_unscaled": ("3xTF32, unscaled", FAMILIES[10][1], ":", "s"),
                    "book_sgemm": ("FFMA book.sgemm", FAMILIES[9][1], "-", "^"),
                    "cublas": ("cuBLAS SGEMM", "#000000", "--", "x")}
""":func:`magnitudes`' kernels: (label, colour, line style, marker) for its figure."""


def magnitude_table(runs: dict) -> "pd.DataFrame":
    """:func:`magnitudes` of every GPU recorded: one row per GPU (by its short name, H100),
    family and magnitude, one column per kernel (relative error against float64; 3xTF32 scaled
    as book.sgemm runs it, and unscaled)."""
    import pandas as pd
    names = {"tf32x3": "3xTF32", "tf32x3_unscaled": "3xTF32 unscaled", "book_sgemm": "FFMA",
             "cublas": "cuBLAS"}
    table = pd.concat({d.replace("NVIDIA ", "").split()[0]: df.pivot_table(
        index=["family", "scale"], columns="kernel", values="rel_error", sort=False)[list(names)]
        for d, df in runs.items()}, names=["GPU"])
    return table.rename(columns=names).rename(index=lambda s: f"{s:.0e}", level="scale")


def magnitude_plot(df: "pd.DataFrame"):
    """One GPU's :func:`magnitudes`: relative error against the inputs' magnitude s, for the two
    scaled families (one panel each, one above the other), one line per kernel."""
    from ..harness.plots import legend_below
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 1, figsize=(STYLE["figure.figsize"][0], 6.6))
        for ax, family in zip(axes, list(MAGNITUDE_FAMILIES)[:2]):
            part = df[df.family == family]
            for kernel, (label, color, ls, marker) in MAGNITUDE_STYLES.items():
                k = part[part.kernel == kernel]
                ax.plot(k.scale, k.rel_error, ls=ls, marker=marker, color=color, label=label)
            ax.set_xscale("log"), ax.set_yscale("log")
            ax.set_xlabel(f"s ({family})")
            ax.set_ylabel("relative error\nagainst float64")
            ax.set_title(family, fontsize=10)
        fig.suptitle(f"{df.M.iloc[0]} x {df.N.iloc[0]} x {df.K.iloc[0]}, {df.device.iloc[0]}", fontsize=10)
        fig.tight_layout()
        legend_below(fig, axes[0], ncol=2)
        plt.close(fig)
    return check_readable(fig)


def tf32x3_suite_table(runs: dict) -> "pd.DataFrame":
    """:func:`tf32x3_suite` of every GPU recorded: per shape, book.sgemm's 'tf32x3' and 'fp32'
    as % of cuBLAS SGEMM, one pair of columns per GPU; the check's result ('ok' where all were)."""
    import pandas as pd
    cols = {}
    for d, df in runs.items():
        p = df.pivot_table(index=["M", "N", "K"], columns="kernel", values="pct_of_cublas", sort=False)
        cols[(d, "tf32x3 (% of SGEMM)")] = p["tf32x3_sgemm"]
        cols[(d, "fp32 (% of SGEMM)")] = p["book_sgemm"]
        cols[(d, "checks")] = df.groupby(["M", "N", "K"], sort=False).status.agg(
            lambda s: "ok" if (s == "ok").all() else "FAILED")
    return pd.DataFrame(cols)


def magnitude_summary(runs: dict) -> dict:
    """:func:`magnitudes` of every GPU recorded, for the text: the smallest and largest error
    of each kernel over all families, magnitudes and GPUs (``mag_<kernel>_min`` / ``_max``)."""
    import pandas as pd
    err = pd.concat(runs.values()).groupby("kernel").rel_error.agg(["min", "max"])
    return {f"mag_{k}_{m}": float(err.loc[k, m]) for k in err.index for m in ("min", "max")}


TF32X3_GOALS = {"4096³": (lambda s: (s.M == 4096) & (s.N == 4096) & (s.K == 4096), 2.5),
                "8192³": (lambda s: (s.M == 8192) & (s.N == 8192) & (s.K == 8192), 2.5),
                "M, N ≥ 2048 and K ≥ 1024, lowest": (
                    lambda s: (s.M >= 2048) & (s.N >= 2048) & (s.K >= 1024), 2.0),
                "1024³": (lambda s: (s.M == 1024) & (s.N == 1024) & (s.K == 1024), 1.5),
                "1024 × 1024 × 16384": (lambda s: (s.M == 1024) & (s.N == 1024) & (s.K == 16384), 1.5)}
"""Issue 27's speed goals for ``precision='tf32x3'`` on chapter 9's suite: (which shapes, the
least multiple of cuBLAS SGEMM's GFLOP/s each must reach)."""


def tf32x3_goal_table(runs: dict) -> "pd.DataFrame":
    """:func:`tf32x3_suite` of every GPU recorded against :data:`TF32X3_GOALS`: per goal and GPU
    the multiple of cuBLAS SGEMM reached (the lowest over the goal's shapes), the goal, and the
    geometric mean over the whole suite."""
    import pandas as pd

    from .sgemm_lab import geomean_pct
    rows = {}
    for d, df in runs.items():
        x = df[df.kernel == Tf32x3Sgemm.id].assign(x=lambda t: t.pct_of_cublas / 100)
        col = {name: x[pick(x)].x.min() for name, (pick, _) in TF32X3_GOALS.items()}
        col["whole suite, geometric mean"] = geomean_pct(x.pct_of_cublas) / 100
        rows[d] = col
    table = pd.DataFrame(rows).map(lambda x: f"{x:.2f}")  # 2.00, not 2
    table.insert(0, "goal (x SGEMM)", [f"{g:.1f}" for _, g in TF32X3_GOALS.values()] + ["--"])
    return table


def goal_words(table: "pd.DataFrame") -> dict[str, str]:
    """:func:`tf32x3_goal_table` in words: ``met`` and ``unmet``, each goal with the GPUs (short
    names) and their multiples, and ``geomean``; "none" where a list is empty."""
    gpus = [c for c in table.columns if c != "goal (x SGEMM)"]
    short = {g: g.removeprefix("NVIDIA ").split()[0] for g in gpus}
    out = {"met": [], "unmet": []}
    for goal, row in table.iterrows():
        if row["goal (x SGEMM)"] == "--":
            continue
        want = float(row["goal (x SGEMM)"])
        for key, ok in (("met", True), ("unmet", False)):
            on = [g for g in gpus if (float(row[g]) >= want) == ok]
            if not on:
                continue
            where = "both GPUs" if len(on) == len(gpus) == 2 else " and ".join(f"the {short[g]}" for g in on)
            vals = " and ".join(row[g] for g in on)
            name, vals = ((f"every shape with {goal.removesuffix(', lowest')}", f"lowest {vals}")
                          if goal.endswith(", lowest") else (goal, vals))
            out[key].append(f"{name} on {where} ({vals}{'' if ok else f' against {want:.1f}'})")
    words = {k: "; ".join(v) if v else "none" for k, v in out.items()}
    mean = table.loc["whole suite, geometric mean", gpus]
    words["geomean"] = " and ".join(mean) + (f" ({', '.join(short[g] for g in gpus)})" if len(gpus) > 1 else "")
    return words
