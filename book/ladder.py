"""Chapter 11: every kernel of the book on one page, read from the results files of every GPU.

:func:`ladder` collects each kernel's checked measurement at n = 4096 from the chapter that
introduced it (for the host's CPU, chapter 1's fastest method at the largest size it ran), with
its % of cuBLAS SGEMM (over chapter 0's cuBLAS record of that GPU, :func:`reference_cublas`: the
cuBLAS row the table prints, so its arithmetic closes), then, after cuBLAS, what a reader would use
instead (Triton and PyTorch, chapter 11's records: ``alternatives.ladder_rows``); :func:`table`
lays the GPUs side by side.
:mod:`book.landing` puts that table into README.md between two markers: ``python -m book.landing``
regenerates it, and a test fails when the README's copy no longer matches the results files.
Nothing here is typed in.
"""
from __future__ import annotations


import matplotlib.pyplot as plt
from matplotlib.patches import Patch
import numpy as np
import pandas as pd

from .harness import ceilings, results
from .harness.plots import FAMILIES, GREY, INSTEAD, STYLE, check_readable, value_column, wrap
from .registry import KERNELS
from .harness.sources import DATA

OZAKI_FILE, OZAKI_KERNEL = "12_moduli", "ozaki"
"""Chapter 12's file times other numbers of moduli (less accurate than SGEMM, or slower) and
chapters 9's and 10's calls again beside it: its rung is precision='ozaki' alone."""
FILES = ["02_naive", "03_coalescing", "04_tiling", "05_bank_conflicts", "06_coarsen",
         "06_regtile", "07_kahan_speed", "08_steps", "09_sgemm_suite", "10_tensor_cores", OZAKI_FILE]
"""The results files that time kernels at n = 4096, in chapter order: a kernel is taken from the
first file holding it, and listed under the chapter that introduced it."""
TUNE = "08_tune"
REQUIRED = ["00_ceilings", "01_cpu_loop"] + [f for f in FILES if f != OZAKI_FILE] + [TUNE]
"""The results files a GPU folder must hold (with device.json) to stand in the ladder (chapter
12's not among them: its INT8 call needs compute capability 8.0 and a GPU without its record
still stands, without that row)."""
TENSOR_CORES = (10, 12)
"""The chapters of the tensor-core kernels (TF32, INT8): not on the FP32 FMA roofline."""
CUBLAS_RUNG = 13
"""The chapter number the ladder gives cuBLAS SGEMM's row, to list it after every chapter's kernels."""
INSTEAD_RUNG = INSTEAD
"""The chapter number the ladder gives what a reader would use instead (Triton, PyTorch), to list
those rows after cuBLAS's: measured in chapter 11, they are not rungs the book climbed."""


OFF_THE_ROOF = (*TENSOR_CORES, INSTEAD_RUNG)
"""The rungs the roofline leaves out: the tensor cores (other units, above the FP32 FMA roof), and
Triton and PyTorch (not the book's kernels; ncu launches kernels of the registry)."""


def rung(chapter) -> str:
    """A ladder row's chapter as a table shows it: its number, "cuBLAS", or "instead"."""
    return {CUBLAS_RUNG: "cuBLAS", INSTEAD_RUNG: "instead"}.get(int(chapter), str(int(chapter)))


def _chapter(name: str) -> int:
    return int(name[:2])


def ladder(gpu: str, n: int = 4096) -> pd.DataFrame:
    """One GPU's rows: chapter, kernel, label, n, GFLOP/s, % of cuBLAS (over the cuBLAS row,
:func:`reference_cublas`), device."""
    rows, seen = [], set()
    device = results.load_device(gpu)["name"]
    try:
        cpu = results.load("01_cpu_loop", gpu)
        best = cpu[cpu.n == cpu.n.max()].sort_values("gflops").iloc[-1]
        rows.append({"chapter": 1, "kernel": "cpu", "label": f"CPU: {best.method} (the host's CPU)",
                     "n": best.n, "gflops": best.gflops, "pct_of_cublas": np.nan,
                     "device": device})
    except FileNotFoundError:
        pass
    for name in FILES + [TUNE]:
        try:
            df = results.load(name, gpu)
        except FileNotFoundError:
            continue
        ok = df[(df.M == n) & (df.N == n) & (df.K == n) & (df.status == "ok")]
        if name == OZAKI_FILE:
            ok = ok[ok.kernel == OZAKI_KERNEL]
        if name == TUNE and len(ok):  # only the winner of the search (picked at its largest n)
            from .tune import winner
            best = winner(df)
            ok = ok[ok.kernel == (best.kernel if best is not None else None)]
            ok = ok.assign(label="autotuned winner: " + ok.label)
        for r in ok.itertuples():
            if r.kernel in seen or r.kernel == "cublas_tf32":  # that one: TF32's accuracy
                continue
            seen.add(r.kernel)
            chapter = KERNELS[r.kernel].chapter if r.kernel in KERNELS else _chapter(name)
            rows.append({"chapter": chapter,
                         "kernel": r.kernel, "label": r.label, "n": n, "gflops": r.gflops,
                         "pct_of_cublas": getattr(r, "pct_of_cublas", np.nan), "device": r.device})
    from .studies.alternatives import AUTO_RUNG, ladder_rows
    for r in ladder_rows(gpu, n, (AUTO_RUNG,)).itertuples():  # (chapter 12's choice of method)
        rows.append({"chapter": 12, "kernel": r.kernel, "n": n, "gflops": r.gflops,
                     "label": "book.sgemm, precision='auto'", "pct_of_cublas": np.nan,
                     "device": device})
    for r in ladder_rows(gpu, n).itertuples():  # (after cuBLAS: INSTEAD_RUNG)
        rows.append({"chapter": INSTEAD_RUNG, "kernel": r.kernel, "n": n, "gflops": r.gflops,
                     "label": r.label + (" (TF32's accuracy)" if r.precision == "tf32" else ""),
                     "pct_of_cublas": np.nan, "device": device})
    df = pd.DataFrame(rows)
    if len(df):  # in chapter order (stable), then cuBLAS, then what you would use instead
        cublas = df.kernel == "cublas"
        df.loc[cublas, "chapter"] = CUBLAS_RUNG
        df.loc[cublas, "label"] = CUBLAS_LABEL
        reference = reference_cublas(gpu, n)
        df.loc[cublas, "gflops"] = reference
        gpu_rows = df.kernel != "cpu"  # (the CPU row has no cuBLAS beside it)
        df.loc[gpu_rows, "pct_of_cublas"] = 100.0 * df.loc[gpu_rows, "gflops"] / reference
        df = df.sort_values("chapter", kind="stable")
    return df.reset_index(drop=True)


CUBLAS_LABEL = "cuBLAS SGEMM (chapter 0's measurement)"
"""cuBLAS is timed beside the kernels in every results file, and its speed moves from run to run
(clocks, power, what ran before it) by a few percent (:func:`cublas_spread`). The ladder's row
shows one record, :func:`reference_cublas`, and every kernel's % of cuBLAS divides by that row,
so that a reader's own division of the table's numbers agrees with it (:func:`headline` gives
the same pair to every page)."""


def reference_cublas(gpu: str, n: int = 4096) -> float:
    """cuBLAS SGEMM's GFLOP/s at n on results folder ``gpu`` that every % of cuBLAS at n divides
    by: chapter 0's ceiling (one checked sweep, recorded before every other chapter runs;
    ``results.cublas_reference``) where it was measured at n, else the median of the runs that
    timed cuBLAS at n."""
    ref = results.cublas_reference(gpu, n)
    return ref if ref is not None else float(cublas_runs(gpu, n).median())


def headline(kernel: str, device: str, n: int = 4096) -> tuple[float, float]:
    """(GFLOP/s, % of cuBLAS) of ``kernel`` at n on ``device`` (a GPU's name or folder) as the
    ladder has them: the first results file that times it, over :func:`reference_cublas` of that
    GPU. Every page that states a kernel's headline figure reads it here. KeyError where the
    GPU or kernel was not recorded."""
    gpu = results.folder_of(device)
    if not (results.RESULTS / gpu).is_dir():
        raise KeyError(f"no results recorded for {device}")
    row = ladder(gpu, n).set_index("kernel").loc[kernel]
    return float(row.gflops), float(row.pct_of_cublas)


def glue_headline(name: str, kernel: str, device: str, measure: str = "x_cublas",
                  n: int = 4096) -> float:
    """Glue ``kernel``'s :func:`headline` at n on ``device`` under ``name``, as the claim
    (kernel, n, GPU, measure) that ``tests/test_claims.py`` holds to one value on every page:
    measure 'gflops', 'pct_of_cublas' or 'x_cublas' (that % over 100). Returns the value."""
    from .harness.notebook import glue
    gflops, pct = headline(kernel, device, n)
    value = {"gflops": gflops, "pct_of_cublas": pct, "x_cublas": pct / 100}[measure]
    glue(name, value, claim=(kernel, n, results.folder_of(device), measure))
    return value


def rerun_note(kernel: str, device: str, gflops: float, n: int = 4096) -> str:
    """How a page's own run of ``kernel`` at n (``gflops``) stands beside the ladder's figure of
    it (:func:`headline`), in words: how far apart, and whether the ladder's run was disturbed
    while it timed (its repeats' quartiles more than :data:`SAME_GPU` apart)."""
    gpu = results.folder_of(device)
    runs = kernel_runs(gpu, kernel, n)
    ladder_gflops = headline(kernel, device, n)[0]
    apart = gflops / ladder_gflops - 1
    said = f"the ladder's {ladder_gflops:,.0f} GFLOP/s from chapter {int(runs.index[0][:2])}'s run"
    said += f" at n = {n}"
    if abs(apart) <= SAME_GPU:
        return f"{gflops:,.0f} GFLOP/s, within {100 * abs(apart):.1f}% of {said}"
    wide = kernel_runs(gpu, kernel, n, "quartiles").get(runs.index[0], 0.0)
    why = (f", whose repeats' quartiles lay {100 * wide:.0f}% apart: a run disturbed while it timed"
           if wide > SAME_GPU else "")
    return f"{gflops:,.0f} GFLOP/s, {100 * abs(apart):.0f}% {'above' if apart > 0 else 'below'} {said}{why}"


def kernel_runs(gpu: str, kernel: str, n: int = 4096, measure: str = "gflops") -> pd.Series:
    """``kernel``'s GFLOP/s at n in each of the ladder's results files of ``gpu`` that timed it
    ({file: GFLOP/s}): more than one where two chapters ran the same kernel. ``measure="quartiles"``:
    instead, how far apart the quartiles of each run's repeats lie (third over first, less 1): a
    wide one is a run disturbed while it timed (clocks, another process)."""
    runs = {}
    for name in FILES + [TUNE]:
        try:
            df = results.load(name, gpu)
        except FileNotFoundError:
            continue
        c = df[(df.M == n) & (df.N == n) & (df.K == n) & (df.kernel == kernel) & (df.status == "ok")]
        if len(c) and measure == "gflops":
            runs[name] = c.gflops.median()
        elif len(c) and {"time_q1_ms", "time_q3_ms"} <= set(c.columns):
            runs[name] = (c.time_q3_ms / c.time_q1_ms).max() - 1
    return pd.Series(runs, dtype=float, name=f"{kernel} {measure}")


def cublas_runs(gpu: str, n: int = 4096) -> pd.Series:
    """cuBLAS SGEMM's GFLOP/s at n in each results file of ``gpu`` that timed it ({file: GFLOP/s})."""
    return kernel_runs(gpu, "cublas", n).rename("cuBLAS GFLOP/s")


def spread(kernel: str, devices, n: int = 4096) -> float:
    """How far apart two figures of ``kernel`` at n must be to differ: the largest of its
    run-to-run spread on any of ``devices`` (fastest over slowest recorded run, less 1), the
    spread within any one of those runs (:func:`kernel_runs`' quartiles) and :data:`SAME_GPU`."""
    gpus = [results.folder_of(d) for d in devices]
    return _spread([kernel_runs(g, kernel, n) for g in gpus],
                   [kernel_runs(g, kernel, n, "quartiles") for g in gpus])


def _spread(runs, within=()) -> float:
    """:func:`spread` of the recorded runs given, a Series per GPU (and each run's quartiles)."""
    return max([SAME_GPU] + [r.max() / r.min() - 1 for r in runs if len(r) > 1]
               + [w.max() for w in within if len(w)])


def cublas_spread(n: int = 4096) -> pd.DataFrame:
    """Per recorded GPU: how many runs timed cuBLAS at n, their minimum, median and maximum --
    the run-to-run spread behind every page's % of cuBLAS."""
    rows = {}
    for gpu in complete_gpus()[0]:
        r = cublas_runs(gpu, n)
        rows[results.load_device(gpu)["name"].removeprefix("NVIDIA ")] = {
            "runs": len(r), "slowest (GFLOP/s)": r.min(), "median (GFLOP/s)": r.median(),
            "fastest (GFLOP/s)": r.max(), "slowest run": r.idxmin() + ".csv"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("GPU")


def so_far(chapter: int, n: int = 4096) -> pd.DataFrame:
    """The ladder up to ``chapter``, for the end of every chapter from 2 on: the fastest kernel of
    each earlier chapter that climbed (chapters 3, 5 and 7 study slower variants; chapter 1: the
    host's CPU), every kernel of this one, and cuBLAS, with
    GFLOP/s and % of cuBLAS at n = ``n`` for each recorded GPU. The numbers are those of the
    results files (the first file that times a kernel at n), so a kernel carries the same number
    on every page; formatted by :func:`~book.harness.tables.readable`."""
    from .harness.tables import readable
    df = all_gpus(n)
    mean = df.groupby("kernel").pct_of_cublas.mean()
    keep, record = [], 0.0
    for ch, g in df[df.chapter < chapter].groupby("chapter"):
        ranked = mean.reindex(g.kernel.unique())
        if ranked.isna().all():  # the CPU row: no cuBLAS in its run
            keep.append(g.kernel.iloc[0])
        elif ranked.max() > record:  # a new rung: faster than every chapter before it
            keep.append(ranked.idxmax())
            record = ranked.max()
    keep += list(df[df.chapter == chapter].kernel.unique()) + ["cublas"]
    t = table(df[df.kernel.isin(keep)])
    t = t.assign(chapter=[rung(c) for c in t.chapter])
    t.columns = [c.removeprefix("NVIDIA ") for c in t.columns]
    return readable(t.drop(columns="n").rename(columns={"label": "kernel"}).set_index(["chapter", "kernel"]))


def complete_gpus() -> tuple[list[str], dict[str, str]]:
    """The GPU folders that hold every REQUIRED file (newest first), and {folder: what it lacks}
    for the others -- e.g. a GPU whose chapters were re-executed with saving off, or only some."""
    complete, left_out = [], {}
    for gpu in results.recorded_gpus():
        missing = [f for f in REQUIRED if not (results.RESULTS / gpu / f"{f}.csv").exists()]
        if missing:
            left_out[gpu] = f"lacks {', '.join(missing)}"
        else:
            complete.append(gpu)
    return complete, left_out


def all_gpus(n: int = 4096, say: bool = False) -> pd.DataFrame:
    """:func:`ladder` for every GPU whose results are complete, stacked; with ``say``, prints
    which folders it used and which it left out, and why."""
    complete, left_out = complete_gpus()
    if say:
        names = [results.short_name(results.load_device(g)["name"]) for g in complete]
        print(f"GPUs with complete results: {', '.join(names) or 'none'}")
        for gpu, why in left_out.items():
            print(f"left out: results/{gpu}/ ({why})")
    frames = [f for f in (ladder(gpu, n) for gpu in complete) if len(f)]
    if not frames:
        raise FileNotFoundError(f"no GPU folder in {results.RESULTS} holds every file of {REQUIRED}")
    return pd.concat(frames, ignore_index=True)


MILESTONES = {"naive 32x32 (ch. 2)": "naive32", "tiled 32 (ch. 4)": "tiled32",
              "best register tile (ch. 6)": 6, "best of chapter 8": 8}
"""The rungs chapter 11's prose reads per GPU: a kernel id, or a chapter (its best kernel)."""


def milestones(df: pd.DataFrame) -> pd.DataFrame:
    """% of cuBLAS at the MILESTONES per GPU (rows), with cuBLAS's GFLOP/s."""
    rows = {}
    for device, g in df[df.pct_of_cublas.notna()].groupby("device", sort=False):
        pct = g.set_index("kernel").pct_of_cublas
        row = {f"{name}, % of cuBLAS": pct[k] for name, k in zip(MILESTONES, milestone_kernels(g))}
        row["cuBLAS GFLOP/s (median of the runs)"] = g[g.kernel == "cublas"].gflops.max()
        rows[device] = row
    return pd.DataFrame(rows).T.rename_axis("GPU")


def milestone_kernels(df: pd.DataFrame, device: str | None = None) -> list[str]:
    """The kernel at each of the MILESTONES on ``device`` (default: the one GPU of ``df``): the
    kernel named, or the fastest of the chapter named."""
    g = df[df.pct_of_cublas.notna() & ((df.device == device) if device else True)]
    picks = [g[g.kernel == key] if isinstance(key, str) else g[g.chapter == key]
             for key in MILESTONES.values()]
    return [p.loc[p.pct_of_cublas.idxmax(), "kernel"] for p in picks]


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Kernels as rows, each GPU's GFLOP/s and % of cuBLAS side by side."""
    keys = ["chapter", "kernel", "label", "n"]
    wide = df.set_index(keys + ["device"])[["gflops", "pct_of_cublas"]].unstack("device")
    rows = df[keys].drop_duplicates().sort_values("chapter", kind="stable")  # cuBLAS (CUBLAS_RUNG) last
    wide = wide.reindex(pd.MultiIndex.from_frame(rows))
    wide.columns = [f"{results.short_name(dev)}: {'GFLOP/s' if v == 'gflops' else '% of cuBLAS'}"
                    for v, dev in wide.columns]
    order = sorted(wide.columns, key=lambda c: (c.split(":")[0], "%" in c))
    return wide[order].reset_index().drop(columns="kernel")


def markdown(df: pd.DataFrame) -> str:
    """The side-by-side table as GitHub markdown (numbers rounded, blanks where not measured)."""
    t = table(df).drop(columns="n").rename(columns={"label": "kernel"})  # n: stated above the table
    t["chapter"] = [rung(c) for c in t.chapter]

    def cell(col, v):
        if isinstance(v, float):
            return "" if np.isnan(v) else (f"{v:.1f}" if "%" in col else f"{v:,.0f}")
        return str(v)
    lines = ["| " + " | ".join(t.columns) + " |", "|" + " --- |" * len(t.columns)]
    lines += ["| " + " | ".join(cell(c, v) for c, v in zip(t.columns, row)) + " |"
              for row in t.itertuples(index=False)]
    return "\n".join(lines)


def suite_markdown() -> str:
    """Chapter 9's suite: book.sgemm as % of cuBLAS per shape, one column per recorded GPU, with
    the goal's figures (geometric mean, minimum) as the last rows."""
    from .studies.sgemm_lab import SUITE_FILE, BookSgemm
    from .studies.sgemm_report import recorded_suites, shape_label, summary
    suites = recorded_suites()
    if not suites:
        return "*No GPU has recorded the suite yet (`python -m book.studies.sgemm_lab --suite`).*"
    cols = {}
    for device, df in suites.items():
        b = df[df.kernel == BookSgemm.id]
        pct = {shape_label(m, n, k): f"{v:.1f}" for m, n, k, v in zip(b.M, b.N, b.K, b.pct_of_cublas)}
        s = summary(df)
        pct["**geometric mean**"] = f"**{s['geomean (%)']:.1f}**"
        pct["**minimum**"] = f"**{s['min (%)']:.1f}**"
        cols[f"{device}: % of cuBLAS"] = pct
    table = pd.DataFrame(cols).rename_axis("M x N x K").reset_index()
    return table.to_markdown(index=False) + f"\n\n*From `results/<gpu>/{SUITE_FILE}.csv`.*"


def heldout_markdown() -> str:
    """Chapter 9's held-out sets per recorded GPU: shapes, geometric mean and lowest % of cuBLAS,
    shapes at or above the goal's floor, median regret; all shapes, then by kind. A set a GPU
    has not run is left out."""
    from .studies.sgemm_lab import HELDOUT_COUNT, HELDOUT_FILE
    from .studies.sgemm_report import heldout_table, recorded_heldout
    sets = {name: recorded_heldout(which) for name, which in
            (("first", ""), ("second", "fresh"), ("third", "third"))}
    parts = {name: heldout_table(runs).xs("held-out", level="set") for name, runs in sets.items() if runs}
    if not parts:
        return "*No GPU has recorded the held-out set yet (`python -m book.studies.sgemm_lab --heldout`).*"
    t = pd.concat(parts, names=["set"]).rename(columns={"shapes": "count"})
    t = t.rename_axis(["set", "GPU", "shapes"]).reset_index()
    return (t.round(1).to_markdown(index=False)
            + f"\n\n*From `results/<gpu>/{HELDOUT_FILE}.csv` (first set), `..._fresh.csv` (second) "
            f"and `..._third.csv` (third): {HELDOUT_COUNT} seeded random shapes each, M, N and K "
            "log-uniform from 1 to 16384, never tuned on (chapter 9 says which shapes prompted a "
            "change); the floor is 90% of cuBLAS, or for a skinny shape 80% of the copy "
            "bandwidth; regret is the chosen plan's time over the fastest candidate's.*")


SOURCE_MARKS = {
    "naive32": ("source003_naive", 4096, "32x32", "naive 32x32"),
    "tiled32": ("source003_tiled", 4096, "32x32", "tiled 32x32"),
}
"""Kernels of ours that the source articles timed too: (table in book/data, n, column, text)."""


def source_marks() -> dict[str, str]:
    """{kernel id: what source 003 reported for its counterpart} (its GPU is not named)."""
    marks = {}
    for kernel, (table_name, n, column, text) in SOURCE_MARKS.items():
        t = pd.read_csv(DATA / f"{table_name}.csv", comment="#")
        value = t.loc[t.n == n, column].iloc[0]
        marks[kernel] = f"source 003, {text}: {value:,.0f} GFLOP/s (n = {n}, its GPU)"
    ilp = pd.read_csv(DATA / "source003_ilp.csv", comment="#")
    marks["coarse8"] = (f"source 003, 8 outputs: {ilp.loc[ilp.outputs == 8, 'tflops'].iloc[0] * 1000:,.0f}"
                        f" GFLOP/s (n = 1024, its GPU)")
    return marks


def ladder_plot(df: pd.DataFrame):
    """Horizontal bars: % of cuBLAS at n = 4096 for every kernel, one bar per GPU, coloured by
    the kernel's family (the chapter that introduced it); the GPUs told apart by hatching; each
    GPU's value in a column right of the axes. ◆ marks the kernels source 003 timed too, its
    figures in the title. After the book's kernels, what a reader would use instead (Triton,
    PyTorch); the axis ends past the fastest at float32's accuracy, and a bar beyond it (PyTorch's
    TF32) stops at its edge, cut, its value in the column."""
    from .studies.alternatives import ALTERNATIVES
    gpu_rows = df[df.pct_of_cublas.notna() & (df.kernel != "cublas")]
    gpu_rows = gpu_rows.assign(label=[f"{rung(c)}{': ' if c == INSTEAD_RUNG else '. '}{lab}"
                                      for c, lab in zip(gpu_rows.chapter, gpu_rows.label)])
    tf32_only = {a.id for a in ALTERNATIVES if a.precision == "tf32"}
    right = max(110, 1.05 * gpu_rows[~gpu_rows.kernel.isin(tf32_only)].pct_of_cublas.max())
    labels = list(dict.fromkeys(gpu_rows.label))
    gpus = sorted(gpu_rows.device.unique())
    marks = source_marks()
    marked = {lab: gpu_rows.loc[gpu_rows.label == lab, "kernel"].iloc[0] for lab in labels}
    marked = {lab: k for lab, k in marked.items() if k in marks}
    names = [wrap(lab + (" ◆" if lab in marked else ""), 36) for lab in labels]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(STYLE["figure.figsize"][0], 0.3 * len(labels) + 2.0))
        height, handles = 0.8 / len(gpus), []
        for g, gpu in enumerate(gpus):
            sub = gpu_rows[gpu_rows.device == gpu].set_index("label")
            y = [labels.index(lab) + g * height for lab in sub.index]
            colors = [FAMILIES[int(c)][1] for c in sub.chapter]
            ax.barh(y, sub.pct_of_cublas.clip(upper=right), height=height, color=colors,
                    alpha=1.0 - 0.45 * g, hatch=("", "///", "...", "xx")[g % 4], edgecolor="white",
                    lw=0)
            for yy in (yy for yy, v in zip(y, sub.pct_of_cublas) if v > right):  # cut: a break
                ax.plot([right * 0.96, right * 0.98], [yy + height / 2, yy - height / 2],
                        color="white", lw=2, solid_capstyle="butt", label="_cut")
            value_column(ax, y, [f"{v:.1f}" for v in sub.pct_of_cublas], results.short_name(gpu),
                         offset=6 + 30 * g, color="0.2" if g == 0 else "0.45")
            handles.append(Patch(fc="0.4", alpha=1.0 - 0.45 * g, hatch=("", "///", "...", "xx")[g % 4],
                                 label=gpu))
        ax.axvline(100, color="k", lw=1)
        ax.set_yticks([i + 0.4 - height / 2 for i in range(len(labels))], names, fontsize=8.5)
        ax.set_ylim(len(labels) - 0.1, -0.3)  # first chapter on top, no empty rows
        ax.set_xlim(0, right)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("% of cuBLAS SGEMM at n = 4096\n(chapter 0's record for each GPU)")
        source = "; ".join(marks[k].removeprefix("source 003, ") for k in marked.values())
        ax.set_title("Every kernel of the book at n = 4096, coloured by chapter\n" + wrap(
            f"◆ source 003 timed the same kernel, each on its own GPU: {source}", 80), fontsize=9)
        fig.tight_layout()
        fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=9)
        plt.close(fig)
    return check_readable(fig)


def intensity(df: pd.DataFrame, traffic: pd.DataFrame, device: str) -> pd.DataFrame:
    """One GPU's kernels with FLOPs per DRAM byte (read + written), per byte read from L2, and
    the share of the roofline (min of FMA peak and copy bandwidth x intensity) reached."""
    d = df[(df.device == device) & (df.kernel != "cpu") & ~df.chapter.isin(OFF_THE_ROOF)].merge(
        traffic[["kernel", "M", "dram_read_bytes", "dram_write_bytes", "l2_read_sectors"]],
        on="kernel")
    flops = 2.0 * d.M.astype(float) ** 3
    d = d.assign(ai_dram=flops / (d.dram_read_bytes + d.dram_write_bytes),
                 ai_l2=flops / (32.0 * d.l2_read_sectors))
    peak, bw = ceilings_of(device)
    return d.assign(of_roof=d.gflops / (bw * d.ai_dram).clip(upper=peak)).set_index("kernel")


def compare(df: pd.DataFrame, base: str, other: str) -> pd.DataFrame:
    """Each GPU kernel's GFLOP/s at n = 4096 on two GPUs, and ``other`` over ``base`` (not the
    CPU row: it measures the host, not the GPU; Triton's and PyTorch's rows where both GPUs
    recorded them)."""
    two = df[df.device.isin([base, other]) & df.gflops.notna() & (df.kernel != "cpu")]
    wide = two.pivot_table(index=["chapter", "kernel", "label"], columns="device", values="gflops",
                           sort=False)[[base, other]].dropna()
    return wide.assign(ratio=wide[other] / wide[base]).reset_index()


def by_ratio(two: pd.DataFrame) -> pd.DataFrame:
    """:func:`compare`'s table for a reader: one row per kernel by its label, its rung named
    (:func:`rung`), the largest ratio first."""
    return (two.assign(chapter=[rung(c) for c in two.chapter]).set_index("label")
            .drop(columns="kernel").rename_axis("kernel").sort_values("ratio", ascending=False))


SAME_GPU = 0.05
"""How far apart two GPUs' figures of one kernel may be and still read as the same speed: about
cuBLAS's own spread between runs (:func:`cublas_spread`)."""


def gains(df: pd.DataFrame, two: pd.DataFrame, base: str, other: str) -> dict[str, str]:
    """The kernels of :func:`compare` that run more than :data:`SAME_GPU` faster on ``other``,
    in words, split by the roofline: ``dram``, those left of both GPUs' ridge points (DRAM
    bandwidth limits them); ``rest``, the others (the roofline does not account for their gain);
    ``noise``, those whose ratio lies within their own spread on either GPU, between recorded runs
    or between the quartiles of one (:func:`spread`: no gain at all); "none" where there are none. Each kernel as its label, its
    ratio and its FLOPs per DRAM byte on both GPUs (the recorded counters of each)."""
    ai = {d: intensity(df, results.load("09_traffic", results.gpu_slug(d)), d).ai_dram
          for d in (base, other)}
    ridge = {d: ceilings_of(d)[0] / ceilings_of(d)[1] for d in (base, other)}
    out = {"dram": [], "rest": [], "noise": []}
    for _, row in two[two.ratio > 1 + SAME_GPU].sort_values("ratio", ascending=False).iterrows():
        gpus = [results.folder_of(d) for d in (base, other)]
        runs = [kernel_runs(g, row.kernel) for g in gpus]
        within = [kernel_runs(g, row.kernel, measure="quartiles") for g in gpus]
        noise = _spread(runs, within)
        if row.ratio <= 1 + noise:  # (within the kernel's own spread: no gain)
            wide = [w.max() if len(w) else 0.0 for w in within]
            if max(wide) >= _spread(runs):
                d = (base, other)[int(np.argmax(wide))]
                why = f"the quartiles of its {d.removeprefix('NVIDIA ').split()[0]} run {100 * noise:.0f}% apart"
            else:
                why = f"its runs {100 * noise:.0f}% apart"
            out["noise"].append(f"{row.label} ({row.ratio:.2f}x, {why})")
            continue
        a = [ai[d].get(row.kernel, float("nan")) for d in (base, other)]
        left = all(v < ridge[d] for v, d in zip(a, (base, other)))
        once = (f"; one run on each GPU, its repeats' quartiles within {100 * noise:.0f}%"
                if all(len(r) < 2 for r in runs) else "")
        out["dram" if left else "rest"].append(
            f"{row.label} ({row.ratio:.2f}x; {a[0]:.1f} and {a[1]:.1f} FLOPs per DRAM byte on the "
            f"{base.removeprefix('NVIDIA ').split()[0]} and the {other.removeprefix('NVIDIA ').split()[0]}{once})"
            if a[0] == a[0] else f"{row.label} ({row.ratio:.2f}x{once})")
    return {k: "; ".join(v) if v else "none" for k, v in out.items()}


def compare_ceilings(base: str, other: str) -> pd.DataFrame:
    """The measured ceilings of two GPUs (FMA peak, copy bandwidth, cuBLAS at 4096, and the ridge
    point where the copy-bandwidth slope meets the FMA peak), and ``other`` over ``base``."""
    cols = {}
    for device in (base, other):
        c = ceilings.load(results.gpu_slug(device))
        cols[device] = {"FP32 FMA peak (GFLOP/s)": c["fp32_fma_peak"],
                        "copy bandwidth (GB/s)": c["copy_bandwidth"],
                        "cuBLAS SGEMM, n = 4096 (GFLOP/s)": c["cublas_sgemm"],
                        "ridge point (FLOP/byte)": c["fp32_fma_peak"] / c["copy_bandwidth"]}
    t = pd.DataFrame(cols)
    return t.assign(ratio=t[other] / t[base])


def ceilings_of(device: str) -> tuple[float, float]:
    """The FMA peak and copy bandwidth recorded for ``device``."""
    c = ceilings.load(results.gpu_slug(device))
    return c["fp32_fma_peak"], c["copy_bandwidth"]


def roofline_kernels(df: pd.DataFrame, device: str) -> list[str]:
    """The rungs of ``device`` that ncu profiles for the roofline: every kernel but the CPU loop,
    each one launch, but chapter 10's (tensor cores: above the FP32 FMA roof, on other units)
    and Triton's and PyTorch's (OFF_THE_ROOF); book.sgemm as one whole call (its plan may launch
    two or three kernels: ncu.profile_call sums their counters)."""
    return list(df[(df.device == device) & (df.kernel != "cpu") & ~df.chapter.isin(OFF_THE_ROOF)].kernel)


def roofline_traffic(df: pd.DataFrame, n: int = 4096):
    """(device, ncu's byte counts at n) for the roofline: measured now on this GPU where the
    ladder holds its results and ncu works, else recorded with the first GPU of the ladder that
    has them; (None, None) where there are none. Prints where they come from."""
    from .profile import ncu
    from .harness.device import device_report
    from .launch.runtime import BACKEND
    here = device_report()["name"] if BACKEND == "gpu" else None
    if here in set(df.device):
        traffic = ncu.counters([(k, (n,) * 3) for k in roofline_kernels(df, here)],
                               ncu.MEMORY_TRAFFIC, "09_traffic")
        if traffic is not None:
            return here, traffic
    for device in df.device.unique():
        try:
            traffic = results.load("09_traffic", results.gpu_slug(device))
        except FileNotFoundError:
            continue
        print(f"Counters {traffic.attrs['source']} (ncu).")
        return device, traffic
    print("No ncu counters recorded for the GPUs of the ladder: no roofline.")
    return None, None


def roofline_plot(df: pd.DataFrame, traffic: pd.DataFrame, device: str):
    """GFLOP/s against FLOPs per DRAM byte (filled) and per byte read from L2 (hollow), for one
    GPU, under its measured FMA peak and copy bandwidth: small multiples, one panel per kernel
    family (chapter) in its colour, every other kernel in grey underneath; each chapter's
    fastest kernel ringed and named in its panel's title."""
    from matplotlib.lines import Line2D
    d = intensity(df, traffic, device)
    peak, bw = ceilings_of(device)
    d = d.assign(family=d.chapter.where(d.chapter != CUBLAS_RUNG, 0).astype(int))
    families = sorted(d.family.unique())
    cols = 3
    rows = -(-len(families) // cols)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(rows, cols, figsize=(STYLE["figure.figsize"][0], 2.45 * rows + 1.6),
                                 sharex=True, sharey=True, squeeze=False)
        x = np.logspace(-1, 3.5, 200)
        for ax, family in zip(axes.flat, families):
            name, color = FAMILIES[family]
            ax.plot(x, np.minimum(peak, bw * x), color="0.3", lw=1.0)
            ax.plot(d.ai_dram, d.gflops, "o", color=GREY, ms=3, zorder=1)
            group = d[d.family == family]
            for r in group.itertuples():
                ax.plot([r.ai_l2, r.ai_dram], [r.gflops, r.gflops], color=color, lw=0.6, alpha=0.6)
            ax.plot(group.ai_dram, group.gflops, "o", color=color, ms=4.5, zorder=3)
            ax.plot(group.ai_l2, group.gflops, "o", mfc="none", color=color, ms=4.5, zorder=3)
            best = group.loc[group.gflops.idxmax()]
            ax.plot(best.ai_dram, best.gflops, "o", color=color, ms=9, mec="k", mew=1.1, zorder=4)
            head = "cuBLAS" if family == 0 else f"{family}. {name}"
            what = best.label if family == 0 else f"fastest: {best.label}"
            ax.set_title(f"{head}\n{wrap(what, 30)}", fontsize=8, loc="left")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.tick_params(labelsize=8)
        for ax in list(axes.flat)[len(families):]:
            ax.axis("off")
        fig.supxlabel("arithmetic intensity: FLOPs per byte", fontsize=9.5)
        fig.supylabel("GFLOP/s", fontsize=9.5)
        fig.suptitle(f"Roofline at n = 4096, {device}: ncu's byte counts under the measured\n"
                     f"FP32 FMA peak ({peak:,.0f} GFLOP/s) and copy bandwidth ({bw:,.0f} GB/s)",
                     fontsize=10)
        fig.tight_layout()
        key = [Line2D([], [], ls="none", marker="o", color="0.3", label="FLOPs per DRAM byte"),
               Line2D([], [], ls="none", marker="o", mfc="none", color="0.3",
                      label="FLOPs per byte read from L2"),
               Line2D([], [], ls="none", marker="o", ms=9, mec="k", color="0.6",
                      label="the chapter's fastest kernel"),
               Line2D([], [], ls="none", marker="o", ms=3, color=GREY,
                      label="the other chapters' kernels")]
        fig.legend(handles=key, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=8.5)
        plt.close(fig)
    return check_readable(fig)

