"""Figures a reader can read: every legend off the data, every series visible, captions numbered."""
import json
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from book import gemm, ladder, tune  # noqa: E402
from book.harness import results  # noqa: E402
from book.harness.plots import perf_and_bandwidth_plot, perf_plot  # noqa: E402
from book.models import pitch  # noqa: E402
from book.models.accuracy import accuracy_plot, same_curves  # noqa: E402

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
    yield "suite", gemm.suite_plot(gemm.recorded_suites())
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


def test_figure_names_are_unique():
    names = [c["metadata"]["mystnb"]["figure"]["name"] for p in NOTEBOOKS.glob("*.ipynb")
             for c in json.loads(p.read_text())["cells"] if "figure" in c["metadata"].get("mystnb", {})]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert np.all([n.startswith("fig-") for n in names])
