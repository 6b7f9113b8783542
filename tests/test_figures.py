"""Figures a reader can read: every legend off the data, every series visible, captions numbered;
every figure the book draws drawn at the width the page shows it, its text legible there, at
most five series a panel, no label over data (:func:`book.harness.plots.check_readable`)."""
import json
import re
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from book import ladder, landing, tune  # noqa: E402
from book.studies import alternatives, sgemm_report, tf32_models, tf32_report  # noqa: E402
from book.harness import ceilings, results  # noqa: E402
from book.harness.plots import (check_readable, loglog_fit_plot, perf_and_bandwidth_plot,  # noqa: E402
                                perf_plot)
from book.models import banks, diagrams, pitch  # noqa: E402
from book.models.accuracy import accuracy_plot, same_curves  # noqa: E402
from book.models.cpu_loop import fit_slope  # noqa: E402
from book.models.ilp import ilp_plot, ilp_table  # noqa: E402
from book.models.occupancy import report  # noqa: E402
from book.registry import KERNELS, chapter_kernels, variant  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
GPU = results.recorded_gpus()[-1]


def legends_clear_of_axes(fig) -> None:
    canvas = FigureCanvasAgg(fig)  # whatever backend made the figure
    canvas.draw()
    renderer = canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert legends, "the figure has no legend"
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), "a legend covers data"


def figures():
    steps = results.load("08_steps", GPU)
    pt = results.load("07_pitch", GPU)
    df = ladder.all_gpus()
    device, traffic = ladder.roofline_traffic(df)
    yield "perf", perf_plot(results.load("02_naive", GPU), title="t", y="pct_of_cublas")
    yield "perf+bw", perf_and_bandwidth_plot(results.load("03_coalescing", GPU), title="t")
    yield "accuracy", accuracy_plot(results.load("07_accuracy", GPU), title="t", threshold=1e-6)
    yield "tensor accuracy", accuracy_plot(results.load("10_error_vs_k", GPU), title="t")
    yield "pitch", pitch.pitch_plot(pt[pt.M < 2000], title="t")
    yield "bars", tune.bars(steps, {k: k for k in steps.kernel.unique() if k != "cublas"},
                            title="t", peak=6e4)
    yield "suite", sgemm_report.suite_plot(sgemm_report.recorded_suites())
    yield "ladder", ladder.ladder_plot(df)
    yield "roofline", ladder.roofline_plot(df, traffic, device)


@pytest.mark.parametrize("name,fig", list(figures()), ids=lambda x: x if isinstance(x, str) else "")
def test_legends_sit_off_the_data(name, fig):
    legends_clear_of_axes(fig)


def test_a_share_of_cublas_has_no_cublas_line_and_a_linear_axis():
    fig = perf_plot(results.load("04_tiling", GPU), title="t", y="pct_of_cublas", min_n=128)
    ax = fig.axes[0]
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    labels = [line.get_label() for line in ax.get_lines()]
    assert "cuBLAS SGEMM" not in labels and len(labels) >= 4
    assert min(min(line.get_xdata()) for line in ax.get_lines()) >= 128


def test_curves_that_would_hide_each_other_share_a_line():
    k = [256, 1024]
    rows = [{"kernel": kern, "fmad": "True", "kind": "mixed", "K": kk, "rel_error": e * f}
            for kern, f in (("naive", 1.0), ("tiled", 1.001), ("kahan", 0.1)) for kk, e in zip(k, (1e-6, 2e-6))]
    groups = same_curves(pd.DataFrame(rows))
    assert groups == {("naive", "True"): [("naive", "True"), ("tiled", "True")],
                      ("kahan", "True"): [("kahan", "True")]}


def test_every_figure_of_a_chapter_has_a_numbered_caption():
    missing = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            images = [o for o in cell.get("outputs", []) if {"image/png", "image/svg+xml"} & set(o.get("data", {}))]
            figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
            if images and not (figure.get("caption") and figure.get("name")):
                missing.append(f"{path.stem} cell {i}")
    assert not missing, f"figures without a caption and name: {missing}"


def test_every_captioned_figure_has_alt_text():
    """A reader of a screen reader hears the caption, not the image's file path: each figure's
    ``mystnb.image.alt`` is its caption."""
    wrong = [f"{p.stem}: {fig['name']}" for p in sorted(NOTEBOOKS.glob("*.ipynb"))
             for c in json.loads(p.read_text())["cells"]
             if (fig := c.get("metadata", {}).get("mystnb", {}).get("figure"))
             and c["metadata"]["mystnb"].get("image", {}).get("alt") != fig.get("caption")]
    assert not wrong, f"figures whose alt text is not their caption: {wrong}"


def test_figure_names_are_unique():
    names = [c["metadata"]["mystnb"]["figure"]["name"] for p in NOTEBOOKS.glob("*.ipynb")
             for c in json.loads(p.read_text())["cells"] if "figure" in c["metadata"].get("mystnb", {})]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert np.all([n.startswith("fig-") for n in names])


# Every figure the book draws, as its notebooks call it ------------------------------------------

def _diagrams():
    """The pictures, from the registry's kernels (as the notebooks draw them, on a GPU or not)."""
    k = KERNELS
    yield "02 thread_map", lambda: diagrams.thread_map(k["naive16"], M=40, N=56)
    yield "03 sector_map", lambda: diagrams.sector_map(k["naive32"], k["xrows32"])
    yield "04 tile_walk", lambda: diagrams.tile_walk(k["tiled16"], M=64, N=64, K=72)
    yield "04 tile_walk, TILE=24", lambda: diagrams.tile_walk(variant(k["tiled16"], TILE=24),
                                                                M=64, N=64, K=80)
    yield "05 bank_picture", lambda: banks.bank_picture(32)
    yield "05 bank_map", lambda: diagrams.bank_map(k["tstore32"], k["tstore_pad32"])
    yield "05 bank_map, PAD=2", lambda: diagrams.bank_map(k["tstore_pad32"],
                                                          variant(k["tstore_pad32"], PAD=2))
    yield "06 register_tile", lambda: diagrams.register_tile(k["reg128x128x16_8x8"])
    yield "06 register_tile, TN=4", lambda: diagrams.register_tile(variant(k["reg128x128x16_8x8"], TN=4))
    yield "07 pitched_rows", lambda: diagrams.pitched_rows(k["tiled_ld16"], 1001, pitch.layouts())
    yield "08 transposed_tile", lambda: diagrams.transposed_tile(chapter_kernels(8)[0])
    yield "08 warp_tiles", lambda: diagrams.warp_tiles(chapter_kernels(8)[3])
    yield "08 pipeline", lambda: diagrams.pipeline(chapter_kernels(8)[-1], tiles=8)
    yield "08 pipeline, STAGES=3", lambda: diagrams.pipeline(variant(chapter_kernels(8)[-1], STAGES=3),
                                                             tiles=8)
    yield "09 work_split", lambda: diagrams.work_split(tiles_m=4, tiles_n=3, steps=6, sms=8, splits=3)
    yield "10 fragment_picture", lambda: tf32_models.fragment_picture(lane=0)
    yield "10 split_picture", lambda: tf32_models.split_picture(np.pi, 1 / 3)
    yield "10 swizzle_picture", lambda: tf32_models.swizzle_picture()
    yield "10 pipeline", lambda: diagrams.pipeline(KERNELS["tf32x3_wgmma"], tiles=8)


def _cpu_loop(gpu):
    times = results.load("01_cpu_loop", gpu)
    fits = {m: fit_slope(times, m, min_n=64 if m != "Python loop" else 0)[0]
            for m in times.method.unique()}
    slope, intercept = fit_slope(times, "Python loop")
    return loglog_fit_plot(times, title="CPU matrix multiplication: time against n", fits=fits,
                           extrapolate={"Python loop": (4096, float(np.exp(intercept) * 4096 ** slope))})


def _ilp(gpu):
    df = results.load("06_coarsen", gpu)
    table = ilp_table(df, report([KERNELS[f"coarse{o}"] for o in (1, 2, 4, 8, 16, 32)]))
    return ilp_plot(table, f"Outputs per thread: GFLOP/s and occupancy\n{df.attrs['source']}")


def _steps(gpu):
    df = results.load("08_steps", gpu)
    labels = {s.id: s.label for s in [KERNELS["reg128x128x16_8x8"]] + chapter_kernels(8)
              if s.id in set(df.kernel)}
    return tune.bars(df, labels, title="Chapter 8's steps against cuBLAS SGEMM",
                     peak=ceilings.load(gpu)["fp32_fma_peak"])


def _tuning(gpu):
    tuned = results.load("08_tune", gpu)
    configs = tuned[tuned.kernel != "cublas"].drop_duplicates("kernel").set_index("kernel")
    return tune.bars(tuned, {k: tune.config_text(r) for k, r in configs.iterrows()},
                     title="Tuning 08_async.cu (▶ the winner)",
                     peak=ceilings.load(gpu)["fp32_fma_peak"], highlight=tune.winner(tuned).kernel)


def _recorded(gpu):
    """The figures drawn from one GPU's results files (what a notebook shows without a GPU)."""
    load = lambda name: results.load(name, gpu)  # noqa: E731
    pct = {"y": "pct_of_cublas", "ylabel": "% of cuBLAS SGEMM at the same n", "min_n": 128}
    yield "00 roofline", lambda: ceilings.roofline(load("00_ceilings"))
    yield "01 loglog_fit_plot", lambda: _cpu_loop(gpu)
    yield "02 perf_plot", lambda: perf_plot(load("02_naive"), title="Naive kernel: share of cuBLAS "
                                                                    "against size", **pct)
    yield "03 perf_and_bandwidth_plot", lambda: perf_and_bandwidth_plot(
        load("03_coalescing"), title="Coalesced against strided naive kernels",
        ceilings=ceilings.load(gpu))
    yield "04 perf_plot", lambda: perf_plot(load("04_tiling"), title="Shared-memory tiling: share of "
                                                                     "cuBLAS against size", **pct)
    yield "05 stride_plot", lambda: banks.stride_plot(load("05_bank_stride"))
    yield "05 perf_plot", lambda: perf_plot(
        load("05_bank_conflicts").query("kernel != 'cublas'"),
        title="Bank conflicts in the tiled kernel: GFLOP/s against size", logy=False)
    yield "06 ilp_plot", lambda: _ilp(gpu)
    yield "06 perf_plot", lambda: perf_plot(load("06_regtile"), ceilings=ceilings.load(gpu),
                                            title="2D register tiling: GFLOP/s against size")
    yield "07 accuracy_plot", lambda: accuracy_plot(
        load("07_accuracy"), threshold=1e-6,
        title=f"float32 matmul error against K\n{load('07_accuracy').attrs['source']}")
    yield "07 pitch_plot", lambda: pitch.pitch_plot(
        load("07_pitch").query("M < 2000"), title="Leading dimension padded or not: GFLOP/s near n = 1024")
    yield "08 bars, steps", lambda: _steps(gpu)
    yield "08 bars, tuning", lambda: _tuning(gpu)
    yield "10 accuracy_plot", lambda: accuracy_plot(
        load("10_error_vs_k"), title="Error against K, tensor cores beside chapter 7's kernels\n"
                                     f"{load('10_error_vs_k').attrs['source']}")
    yield "10 magnitude_plot", lambda: tf32_report.magnitude_plot(load("10_magnitudes"))
    yield "11 roofline_plot", lambda: ladder.roofline_plot(
        ladder.all_gpus(), load("09_traffic"), results.load_device(gpu)["name"])
    if (results.RESULTS / gpu / f"{alternatives.FILE}.csv").exists():
        yield "11 alternatives.plot", lambda: alternatives.plot(load(alternatives.FILE))


def book_figures():
    """(name, a call that draws it) for every figure of every chapter, with the results of every
    GPU recorded."""
    yield from _diagrams()
    for gpu in results.recorded_gpus():
        for name, draw in _recorded(gpu):
            yield f"{name} [{gpu}]", draw
    yield "09 suite_plot", lambda: sgemm_report.suite_plot(sgemm_report.recorded_suites())
    yield "09 heldout_plot", lambda: sgemm_report.heldout_plot(sgemm_report.recorded_heldout())
    yield "11 ladder_plot", lambda: ladder.ladder_plot(ladder.all_gpus())
    yield "11 landing_plot", lambda: landing.landing_plot(ladder.all_gpus())


def test_the_catalogue_holds_every_kind_of_figure_the_notebooks_draw():
    """Each plotting call of the notebooks is one of book_figures' (a new figure gets a line)."""
    import inspect
    called = set()
    for path in NOTEBOOKS.glob("*.ipynb"):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                called |= set(re.findall(r"(\w+_plot|\w+_picture|tune\.bars|\.roofline|diagrams\.\w+)\(",
                                         "".join(cell["source"])))
    catalogue = inspect.getsource(_diagrams) + inspect.getsource(_recorded) + inspect.getsource(
        book_figures) + inspect.getsource(_steps) + inspect.getsource(_cpu_loop) + inspect.getsource(_ilp)
    missing = {c for c in called if c.lstrip(".").split(".")[-1] not in catalogue}
    assert not missing, f"notebooks draw figures test_figures does not: {sorted(missing)}"


def _figure_params():
    """Each figure once; those drawn from a second GPU's records (the same code on other data)
    in make test-sweep."""
    gpus = results.recorded_gpus()
    return [pytest.param(name, draw, id=name, marks=[pytest.mark.sweep] if any(
        f"[{gpu}]" in name for gpu in gpus[1:]) else []) for name, draw in book_figures()]


@pytest.mark.parametrize("name,draw", _figure_params())
def test_every_figure_reads_at_the_width_the_page_shows(name, draw):
    """Drawn as the notebook draws it (each helper checks itself; checked again here): at most
    768 px wide, no text under 11 px, at most five series a panel, no label over data. (make
    test: from one GPU's records; make test-sweep: from the others'.)"""
    fig = draw()
    assert check_readable(fig) is fig


def test_the_checker_names_what_breaks_the_rules():
    with plt.rc_context({"figure.dpi": 110}):
        fig, ax = plt.subplots(figsize=(9, 3))
        for i in range(6):
            ax.plot([0, 1], [i, i + 1], label=f"series {i}")
        ax.set_title("tiny", fontsize=5)
        ax.text(0.5, 2.5, "over the data", fontsize=9)
    with pytest.raises(ValueError) as caught:
        check_readable(fig)
    text = str(caught.value)
    assert "px wide (at most 768)" in text and "'tiny' is" in text
    assert "6 labelled series (at most 5)" in text and "'over the data' lies over the data" in text
    with plt.rc_context({"figure.dpi": 110}):
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.plot([0, 1], [0, 1], label="one")
        ax.set_xlim(0, 1.5)
        ax.text(1.1, 0.2, "clear of it")
    assert check_readable(fig) is fig
    with pytest.raises(ValueError, match="texts 'a label' and 'another' overlap"):
        ax.text(1.1, 0.2, "another")
        ax.texts[0].set_text("a label")
        check_readable(fig)


def test_the_suite_and_held_out_axes_zoom_to_the_band_the_chapter_discusses():
    """Chapter 9 discusses 85-115% of cuBLAS: neither figure's value axis starts at 0, both
    show 100%, and every GPU's result lies inside the view."""
    suites = sgemm_report.recorded_suites()
    ax = sgemm_report.suite_plot(suites).axes[0]
    lo, hi = ax.get_xlim()
    every = pd.concat([d[d.kernel == "book_sgemm"].pct_of_cublas for d in suites.values()])
    assert 70 <= lo <= min(85, every.min()) and max(115, every.max()) <= hi <= 130
    assert any(list(line.get_xdata()) == [100, 100] for line in ax.get_lines())
    runs = sgemm_report.recorded_heldout()
    ax = sgemm_report.heldout_plot(runs).axes[0]
    lo, hi = ax.get_ylim()
    shown = pd.concat([d[(d.kernel == "book_sgemm") & (d.set == "held-out")].pct_of_cublas
                       for d, _ in runs.values()])
    assert 50 < lo <= shown.min() and shown.max() <= hi < 1.2 * shown.max()
    assert any(list(line.get_ydata()) == [100, 100] for line in ax.get_lines())
