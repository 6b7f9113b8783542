"""The book's one plot style (chapter 0). Helpers return a closed Figure: the cell displays it once.

Every plotting helper of the book ends with :func:`check_readable`, the book's figure rules: drawn
at most as wide as the page's content column (768 px at a 1400 px window, :data:`CONTENT_PX`), so
never scaled down; no text under 11 px there; at most five labelled series a panel (more are
highlighted, the rest grey and named in the margin, or split into panels); no label over data."""
from __future__ import annotations

import os
import sys
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

STYLE = {
    "figure.figsize": (6.8, 4.4), "figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3,
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
            9: ("every shape", "#17becf"), 10: ("tensor cores", "#bcbd22"),
            12: ("INT8 tensor cores", "#637939"), 14: ("what you would use instead", "#393b79")}
"""Kernel families -- the chapter that introduces a kernel (0: the library; INSTEAD: Triton and
PyTorch, which chapter 11 measures beside them) -- and the one colour each has in every figure of
the book."""
INSTEAD = 14
"""The family of what a reader would use instead of the book's kernels (chapter 11): the ladder's
rung after cuBLAS's."""
MARKERS = "osD^vPX*"


SECOND_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#8c564b")
"""Colours for a family's second, third ... kernel in one panel (Okabe and Ito's palette, which
stays apart for readers with colour-vision deficiencies), each used once a panel."""


def family_styles(chapters) -> list[dict]:
    """Line styles for kernels of the given chapters, in order: the first kernel of each family in
    the family's colour, each further one in a colour of its own (SECOND_COLOURS, none used twice
    in the panel, none a family colour already there), marked and dashed differently too."""
    from matplotlib.colors import to_hex
    seen, out = {}, []
    used = {to_hex(FAMILIES.get(ch, ("", "#17becf"))[1]) for ch in chapters}
    spare = [c for c in SECOND_COLOURS if to_hex(c) not in used]
    for ch in chapters:
        k = seen[ch] = seen.get(ch, -1) + 1
        color = FAMILIES.get(ch, ("", "#17becf"))[1] if k == 0 or not spare else spare.pop(0)
        out.append({"color": color, "marker": MARKERS[k % len(MARKERS)],
                    "ls": ("-", "--", "-.", ":")[k % 4]})
    return out


CONTENT_PX = 768
"""The width of the book's content column at a 1400 px window: an image wider is scaled down."""
MIN_TEXT_PX = 11
"""The smallest text a figure may show, in pixels at the width the page shows it."""
MAX_SERIES = 5
"""The most labelled series (lines, bar groups, scatter families) one panel may hold."""


def _drawn_texts(fig, renderer) -> list:
    """Draw ``fig`` with ``renderer`` and return (string, size in points, Text artist) of every
    piece of text that the draw actually put on the canvas (tick labels out of view excluded)."""
    drawn = []
    draw_text = renderer.draw_text

    def record(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        drawn.append((s, prop.get_size_in_points(), mtext))
        return draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)
    renderer.draw_text = record
    try:
        fig.draw(renderer)
    finally:
        del renderer.draw_text
    return drawn


def _text_box(text, renderer):
    """The window extent of a Text's text alone (an Annotation's arrow left out)."""
    from matplotlib.text import Annotation, Text
    if isinstance(text, Annotation):
        text.update_positions(renderer)
    return Text.get_window_extent(text, renderer)


def _series(ax) -> list[str]:
    """The distinct legend labels of ``ax``'s artists (labels that start with '_' are not
    series: matplotlib's convention for reference lines and the like)."""
    _, labels = ax.get_legend_handles_labels()
    return list(dict.fromkeys(labels))


def _over_data(ax, box) -> bool:
    """Whether the text box ``box`` (display units, shrunk a little) crosses ``ax``'s plotted
    data: a line or its markers, a scatter point, a bar."""
    from matplotlib.container import BarContainer
    for line in ax.get_lines():
        if not line.get_visible() or len(line.get_xdata()) == 0:
            continue
        path = line.get_transform().transform_path(line.get_path())
        if line.get_linestyle() not in ("None", "none", "", " ") and len(path.vertices) > 1 \
                and path.intersects_bbox(box, filled=False):
            return True
        if line.get_marker() not in (None, "None", "none", "", " "):
            r = line.get_markersize() * ax.figure.dpi / 72 / 2
            grown = box.expanded(1, 1).padded(r)
            if any(grown.contains(*xy) for xy in path.vertices):
                return True
    for coll in ax.collections:
        offsets = coll.get_offsets()
        if coll.get_visible() and len(offsets) and not coll.get_label().startswith("_child"):
            xy = coll.get_offset_transform().transform(offsets)
            if any(box.contains(*p) for p in xy):
                return True
    for container in ax.containers:
        if isinstance(container, BarContainer):
            for bar in container.patches:
                if bar.get_visible() and bar.get_window_extent().overlaps(box):
                    return True
    return False


def check_readable(fig, width_px: int = CONTENT_PX, min_px: float = MIN_TEXT_PX,
                   max_series: int = MAX_SERIES, dpi: float | None = None, overlaps: bool = True):
    """The book's figure rules, checked on the figure as the page shows it; returns ``fig``.

    The figure is drawn on an Agg canvas at ``dpi`` (default: its own, the dpi the notebook's
    inline backend and :func:`book.harness.results.save_figure` save it at) and measured as a
    tight bounding box, as the notebook saves it. Raises ValueError listing every problem:

    - the saved width is over ``width_px`` (the page would scale it down);
    - a text (title, label, tick label, legend entry, annotation, number in a cell) is smaller
      than ``min_px`` pixels at the width shown: size in points x dpi / 72 x min(1, width_px /
      saved width);
    - a panel (axes) holds more than ``max_series`` distinct labelled series (artists whose label
      does not start with '_': lines, scatters, bar groups, error bars);
    - with ``overlaps``: two texts overlap, or an annotation or text placed on a panel
      (``ax.text``, ``ax.annotate``, a legend inside it) crosses the panel's plotted data
      (lines, markers, scatter points, bars; patches drawn as diagram cells are not data).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import Bbox
    own = fig.dpi
    dpi = dpi or own
    problems = []
    try:
        fig.set_dpi(dpi)
        canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
        renderer = canvas.get_renderer()
        texts = _drawn_texts(fig, renderer)
        box = fig.get_tightbbox(renderer)  # inches
        pad = plt.rcParams["savefig.pad_inches"]
        saved = (box.width + 2 * pad) * dpi
        if saved > width_px + 0.5:
            problems.append(f"{saved:.0f} px wide (at most {width_px}): the page scales it down")
        scale = min(1.0, width_px / saved)
        small = {}
        for s, points, _ in texts:
            px = points * dpi / 72 * scale
            if px < min_px - 1e-6 and s.strip():
                small.setdefault((s.strip(), round(px, 1)), None)
        for s, px in small:
            problems.append(f"text {s[:40]!r} is {px} px (at least {min_px})")
        for i, ax in enumerate(fig.axes):
            series = _series(ax)
            if len(series) > max_series:
                problems.append(f"panel {i} ({ax.get_title()[:30]!r}) has {len(series)} labelled "
                                f"series (at most {max_series}): {series}")
        if overlaps:
            seen, boxes = set(), []
            for s, _, t in texts:
                if t is None or id(t) in seen or not s.strip():
                    continue
                seen.add(id(t))
                b = _text_box(t, renderer)
                if b.width > 2 and b.height > 2:
                    boxes.append((t, Bbox.from_extents(b.x0 + 1, b.y0 + 1, b.x1 - 1, b.y1 - 1)))
            for j, (t, b) in enumerate(boxes):
                for u, c in boxes[j + 1:]:
                    if b.overlaps(c):
                        problems.append(f"texts {t.get_text()[:30]!r} and {u.get_text()[:30]!r} "
                                        "overlap")
            for ax in fig.axes:
                placed = [(t, b) for t, b in boxes if t in ax.texts]
                legend = ax.get_legend()
                if legend is not None and legend.get_visible():
                    placed.append((legend, legend.get_window_extent(renderer).shrunk(0.98, 0.98)))
                for t, b in placed:
                    if _over_data(ax, b):
                        what = "the legend" if t is legend else repr(t.get_text()[:30])
                        problems.append(f"{what} lies over the data of panel "
                                        f"{ax.get_title()[:30]!r}")
    finally:
        fig.set_dpi(own)
    if problems:
        message = "figure breaks the book's figure rules:\n  " + "\n  ".join(problems)
        if os.environ.get("BOOK_STRICT_FIGURES", "1") == "0":
            warnings.warn(message, stacklevel=2)
        else:
            raise ValueError(message + "\n(BOOK_STRICT_FIGURES=0 draws it anyway, with a warning: "
                             "for a figure of your own, e.g. a 'try it' variant)")
    return fig


def chapter_of(kernel: str, recorded=None) -> int:
    """The chapter (kernel family, :data:`FAMILIES`) of a kernel id: the results file's own
    'chapter' column where it has one, else the registry's (files recorded before the column
    existed); cuBLAS is 0, a kernel the registry does not know the last chapter."""
    if recorded is not None and not pd.isna(recorded):
        return int(recorded)
    if kernel == "cublas":
        return 0
    # (the registry sits above the harness and is loaded wherever kernels were measured: looked
    # up, not imported, so that the harness never imports it)
    registry = sys.modules.get(f"{__package__.rsplit('.', 1)[0]}.registry")
    spec = registry.KERNELS.get(kernel) if registry is not None else None
    return spec.chapter if spec is not None else max(c for c in FAMILIES if c != INSTEAD)


def _source(df: pd.DataFrame) -> str:
    return df.attrs.get("source", "")


def legend_below(fig, ax=None, ncol: int = 2, **kw):
    """The legend of ``ax`` (default: the first axes) under the whole figure, off the data, in
    ``ncol`` columns so that it reads on a phone. Call after ``tight_layout``."""
    handles, labels = (ax or fig.axes[0]).get_legend_handles_labels()
    return fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol,
                      **kw)


def value_column(ax, ys, texts, header: str | None = None, offset: float = 6, color="black"):
    """``texts`` written in a column right of ``ax``, each at its height ``ys`` (data units), with
    ``header`` above the column: a figure's numbers beside the data, never over it. ``offset``:
    points from the axes' right edge (a second GPU's column further right)."""
    for y, text in zip(ys, texts):
        ax.annotate(text, (1.0, y), xycoords=("axes fraction", "data"), xytext=(offset, 0),
                    textcoords="offset points", va="center", fontsize=8, color=color,
                    annotation_clip=False)
    if header is not None:
        ax.annotate(header, (1.0, 1.0), xycoords="axes fraction", xytext=(offset, 2),
                    textcoords="offset points", va="bottom", fontsize=8, color=color)


GREY = "0.72"
"""The colour of context: series drawn under a figure's highlighted ones, unlabelled."""
LABEL_GREY = "0.35"


def wrap(text: str, width: int = 24) -> str:
    """``text`` broken into lines of at most ``width`` characters (a direct label's shape)."""
    import textwrap
    return "\n".join(textwrap.wrap(text, width)) or text


def direct_labels(ax, items, fontsize: float = 8, gap_pt: float = 1.5, top: float | None = None):
    """Labels in the right margin of ``ax``, each at the height of what it names: ``items`` are
    (y in data units, text, colour). Moved apart vertically so that none overlaps another; call
    after the axes' limits are final and after a first ``tight_layout`` (the spacing uses the
    axes' height). ``top``: the highest they may reach (axes fraction; default a little over
    the top of the axes). Returns the Text artists."""
    if not items:
        return []
    fig = ax.figure
    height_pt = ax.get_position().height * fig.get_figheight() * 72
    to_axes = ax.transScale + ax.transLimits  # data -> axes fraction, whatever the layout
    wanted = [float(to_axes.transform((ax.get_xlim()[0], y))[1]) for y, _, _ in items]
    sizes = [(text.count("\n") + 1) * fontsize * 1.25 / height_pt for _, text, _ in items]
    order = sorted(range(len(items)), key=lambda i: wanted[i])
    at = {i: min(max(wanted[i], 0.0), 1.0) for i in order}
    pad = gap_pt / height_pt
    for a, b in zip(order, order[1:]):  # push up
        at[b] = max(at[b], at[a] + (sizes[a] + sizes[b]) / 2 + pad)
    top = 1.0 + 0.5 * sizes[order[-1]] if top is None else top - 0.5 * sizes[order[-1]]
    if at[order[-1]] > top:  # then back down from the top where they overflow
        at[order[-1]] = top
        for a, b in zip(order[::-1], order[-2::-1]):
            at[b] = min(at[b], at[a] - (sizes[a] + sizes[b]) / 2 - pad)
    return [ax.text(1.02, at[i], text, transform=ax.transAxes, va="center", ha="left",
                    fontsize=fontsize, color=color, clip_on=False)
            for i, (_, text, color) in enumerate(items)]


def _ceilings(ceilings: dict | None, y: str, drawn: set) -> list:
    """(value, text, line style) of the ceilings whose unit matches ``y`` (cuBLAS's only where
    cuBLAS is not a line of its own)."""
    return [(value, f"{CEILING_STYLE[key][0]}: {value:,.0f}", CEILING_STYLE[key][1])
            for key, value in (ceilings or {}).items()
            if key in CEILING_STYLE and CEILING_STYLE[key][3] == y
            and not (key == "cublas_sgemm" and "cublas" in drawn)]


def _split(items: list, room: int) -> list[list]:
    """``items`` in consecutive chunks of at most ``room``, as even as possible."""
    parts = -(-len(items) // room)
    size = -(-len(items) // parts)
    return [items[i:i + size] for i in range(0, len(items), size)]


def perf_plot(df: pd.DataFrame, *, title: str, ceilings: dict | None = None, x: str = "M",
              y: str = "gflops", xlabel: str = "matrix size n (M = N = K)",
              ylabel: str = "GFLOP/s", logy: bool = False, min_n: int = 64, ax=None):
    """One line per kernel label (rows that passed their check only), ceilings as lines.

    ``y="pct_of_cublas"`` plots each kernel as a share of the cuBLAS SGEMM timed beside it: the
    differences between slow kernels that a GFLOP/s axis up to cuBLAS squashes. Linear from
    ``min_n`` up, where kernels differ (below it launch latency hides them
    all; a log axis over eight decades hid the differences a chapter is about). ``ceilings``
    (from :func:`book.ceilings.load`) are drawn where their unit matches ``y`` ('gflops' or
    'gbps'), labelled in the right margin; cuBLAS at 4096 only when cuBLAS is not a line of its
    own. Draws into ``ax`` when given, else returns a new closed Figure with the legend under it.

    At most :data:`MAX_SERIES` series per panel: where there are more, the kernels of the newest
    chapter are drawn in colour (in as many panels, one above the other, as they need) and the
    others in grey underneath, named in the right margin.
    """
    with plt.rc_context(STYLE):
        ok = df[(df.status == "ok") & (df[x] >= min_n)]
        if y == "pct_of_cublas":  # cuBLAS is the axis itself
            ok = ok[ok.kernel != "cublas"]
        groups = list(ok.groupby("label", sort=False))
        chapters = [chapter_of(g.kernel.iloc[0], g.chapter.iloc[0] if "chapter" in g else None)
                    for _, g in groups]
        is_cublas = [g.kernel.iloc[0] == "cublas" for _, g in groups]
        kernels = [i for i in range(len(groups)) if not is_cublas[i]]
        panels = [kernels]
        if len(groups) > MAX_SERIES:
            newest = max(chapters[i] for i in kernels)
            own = [i for i in kernels if chapters[i] == newest]
            lines = _ceilings(ceilings, y, set(ok.kernel))  # in each panel's legend
            panels = _split(own, max(1, MAX_SERIES - any(is_cublas) - len(lines)))
            if ax is not None:
                panels = panels[:1]
        shown = {i for p in panels for i in p}
        styles = family_styles(chapters)
        fig = None
        if ax is None:
            fig, axes = plt.subplots(len(panels), 1, sharex=True, squeeze=False, figsize=(
                STYLE["figure.figsize"][0], 1.0 + 3.4 * len(panels)) if len(panels) > 1 else None)
            axes = list(axes[:, 0])
        else:
            axes = [ax]
        margin = []
        for here, chosen in zip(axes, panels):
            for i, (label, group) in enumerate(groups):
                if is_cublas[i]:
                    here.plot(group[x], group[y], label=label, color="k", lw=2, marker="o", zorder=3)
                elif i in chosen:
                    here.plot(group[x], group[y], label=label, zorder=3, **styles[i])
                else:
                    here.plot(group[x], group[y], label="_" + label, color=GREY, lw=1.3, zorder=1)
            here.set_xscale("log", base=2)
            if logy:
                here.set_yscale("log")
            else:
                here.set_ylim(bottom=0)
            here.set_ylabel(ylabel)
            items = []
            for value, text, ls in _ceilings(ceilings, y, set(ok.kernel)):
                here.axhline(value, ls=ls, color=LABEL_GREY, lw=1, zorder=1,
                             label=text if len(panels) > 1 else "_" + text)
                if len(panels) == 1:  # named in the margin, at its height
                    items.append((value, wrap(text, 22), LABEL_GREY))
                if not logy:  # in view: how far below it the kernels are
                    here.set_ylim(top=max(here.get_ylim()[1], 1.06 * value))
            last = {label: g.sort_values(x)[y].iloc[-1] for label, g in groups}
            items += [(last[groups[i][0]], wrap(groups[i][0], 22), LABEL_GREY)
                      for i in kernels if i not in shown]
            margin.append(items)
        axes[-1].set_xlabel(xlabel)
        if fig is None:
            ax.set_title(title, fontsize=10)
            direct_labels(ax, margin[0])
            return None
        axes[0].set_title(f"{title}\n{_source(df)}", fontsize=10)
        if len(axes) > 1:
            for here in axes:
                handles, labels = here.get_legend_handles_labels()
                here.legend(handles, [wrap(t, 24) for t in labels], loc="upper left",
                            bbox_to_anchor=(1.0, 1.0), fontsize=8)
        fig.tight_layout()
        for here, items in zip(axes, margin):
            top = None
            if len(axes) > 1:  # each panel's legend in its margin, the grey names under it
                fig.canvas.draw()
                box = here.get_legend().get_window_extent()
                top = box.transformed(here.transAxes.inverted()).y0 - 0.03
            direct_labels(here, items, top=top)
        fig.tight_layout()
        if len(axes) == 1:
            legend_below(fig, axes[0])
        plt.close(fig)
    return check_readable(fig)


def _data_y(ax, frac: float) -> float:
    """The data value at height ``frac`` (axes fraction) of ``ax``."""
    return float((ax.transScale + ax.transLimits).inverted().transform((0.5, frac))[1])


def perf_and_bandwidth_plot(df: pd.DataFrame, *, title: str, ceilings: dict | None = None):
    """Share of cuBLAS (top) and effective bandwidth in GB/s (bottom, column 'gbps') against size,
    one legend under both."""
    with plt.rc_context(STYLE):
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(STYLE["figure.figsize"][0], 7.6),
                                          sharex=True)
        perf_plot(df, title="share of the cuBLAS SGEMM timed beside it", y="pct_of_cublas",
                  ylabel="% of cuBLAS SGEMM at the same n", ax=top)
        perf_plot(df[df.kernel != "cublas"], title="effective bandwidth: bytes the threads ask for / time",
                  ceilings=ceilings, y="gbps", ylabel="GB/s", ax=bottom)
        top.set_xlabel("")
        fig.suptitle(f"{title}\n{_source(df)}", fontsize=10)
        fig.tight_layout()
        legend_below(fig, top)
        plt.close(fig)
    return check_readable(fig)


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
    return check_readable(fig)
