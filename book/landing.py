"""The pages that show the ladder's numbers outside chapter 11: README.md's table and payoff,
the landing page's payoff and figure, and every chapter's "ladder so far" table.

``python -m book.landing`` writes them all from the results files (:mod:`book.ladder` reads
those); ``python -m book.landing --check`` and a test fail when the README's copy no longer
matches the results files. Nothing here is typed in.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.patches import Patch
import pandas as pd

from .harness import results
from .harness.plots import FAMILIES, STYLE, check_readable
from .ladder import OZAKI_KERNEL, all_gpus, ladder_plot, markdown, so_far

README = Path(__file__).resolve().parents[1] / "README.md"
FIGURE = README.parent / "results" / "ladder.png"
NOTEBOOKS = README.parent / "notebooks"
"""The ladder of every recorded GPU, drawn by ``python -m book.landing`` (chapter 11 draws it too)."""
LANDING = README.parent / "intro.md"
LANDING_FIGURE = README.parent / "results" / "milestones.png"
"""The landing page's figure: the milestones of the ladder, legible on a phone."""
BEGIN, END = "<!-- ladder:begin -->", "<!-- ladder:end -->"
PAYOFF_BEGIN, PAYOFF_END = "<!-- payoff:begin -->", "<!-- payoff:end -->"


LANDING_STEPS = {"naive32": "2. naive", "tiled32": "4. shared-memory\ntiles",
                 6: "6. register tiles", 8: "8. warp tiles,\ncp.async",
                 "book_sgemm": "9. book.sgemm", "tf32x3_wgmma": "10. 3xTF32 on\ntensor cores",
                 OZAKI_KERNEL: "12. INT8, the\nOzaki scheme"}
"""The landing page's rungs: a kernel id, or a chapter (its fastest kernel), and their labels."""


def landing_steps(df: pd.DataFrame) -> pd.DataFrame:
    """% of cuBLAS and GFLOP/s at the LANDING_STEPS, one row per step and GPU."""
    rows = []
    for device, g in df[df.pct_of_cublas.notna()].groupby("device", sort=True):
        for key, label in LANDING_STEPS.items():
            pick = g[g.kernel == key] if isinstance(key, str) else g[g.chapter == key]
            if len(pick):
                best = pick.loc[pick.pct_of_cublas.idxmax()]
                rows.append({"step": label, "device": device, "kernel": best.kernel,
                             "chapter": int(best.chapter),
                             "pct_of_cublas": best.pct_of_cublas, "gflops": best.gflops})
    return pd.DataFrame(rows)


def landing_plot(df: pd.DataFrame):
    """The landing page's figure: the ladder's milestones as % of cuBLAS SGEMM, one bar per GPU,
    drawn large enough to read at a phone's width."""
    steps = landing_steps(df)
    labels, gpus = list(LANDING_STEPS.values()), sorted(steps.device.unique())
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(4.8, 0.7 * len(labels) + 1.2), dpi=LANDING_DPI)
        height = 0.8 / len(gpus)
        for g, gpu in enumerate(gpus):
            sub = steps[steps.device == gpu]
            y = [labels.index(s) + (g - (len(gpus) - 1) / 2) * height for s in sub.step]
            colors = [FAMILIES[c][1] for c in sub.chapter]
            ax.barh(y, sub.pct_of_cublas, height=height * 0.92, color=colors,
                    alpha=1.0 - 0.4 * g, hatch=("", "///")[g % 2], edgecolor="white", lw=0)
            for yy, v in zip(y, sub.pct_of_cublas):  # just short of 100%: right of its line
                ax.annotate(f"{v:.0f}%", (100 if 75 < v < 100 else v, yy), xytext=(3, 0),
                            textcoords="offset points", va="center", fontsize=12)
        ax.axvline(100, color="k", lw=1.2)
        ax.annotate("cuBLAS\nSGEMM", (100, -0.85), xytext=(4, 0), textcoords="offset points",
                    ha="left", va="center", fontsize=12)
        ax.set_yticks(range(len(labels)), labels, fontsize=13)
        ax.set_ylim(len(labels) - 0.5, -1.3)
        ax.set_xlim(0, max(115, 1.22 * steps.pct_of_cublas.max()))
        ax.grid(axis="y", visible=False)
        ax.tick_params(axis="x", labelsize=12)
        ax.set_xlabel("% of cuBLAS SGEMM, n = 4096", fontsize=12)
        ax.legend(handles=[Patch(fc="0.4", alpha=1.0 - 0.4 * g, hatch=("", "///")[g % 2],
                                 label=gpu.removeprefix("NVIDIA ")) for g, gpu in enumerate(gpus)],
                  loc="upper center", fontsize=12, bbox_to_anchor=(0.3, -0.2), ncol=1,
                  frameon=False)
        plt.close(fig)
    return check_readable(fig)


LANDING_DPI = 130
"""The landing figure's resolution (``main`` saves it at this dpi): a little larger than the
chapters' figures, for a phone."""


def payoff(df: pd.DataFrame) -> str:
    """The landing page's payoff, in numbers from the results files (between its markers): the
    book's SGEMM and 3xTF32 kernel, each beside Triton's (and plain TF32 through PyTorch) where
    every GPU named recorded chapter 11's comparison."""
    steps = landing_steps(df).set_index(["device", "kernel"]).pct_of_cublas
    gpus = [d for d in sorted(df.device.unique())
            if (d, "book_sgemm") in steps.index and (d, "tf32x3_wgmma") in steps.index]
    if not gpus:
        return f"{PAYOFF_BEGIN}\n{PAYOFF_END}"
    rows = df.set_index(["device", "kernel"]).pct_of_cublas
    instead = all((d, k) in rows.index for d in gpus
                  for k in ("triton_fp32", "triton_tf32x3", "torch_tf32"))

    def each(kernel, first, rest):  # "98% of ... on the H100 and 100% on the H200"
        return " and ".join((first if i == 0 else rest)(steps[d, kernel])
                            + f" on the {results.short_name(d)}" for i, d in enumerate(gpus))

    def beside(text, kernel, form):  # " (Triton's ...: 84% and 85%)", in the GPUs' order
        return f"{text}{' and '.join(form(rows[d, kernel]) for d in gpus)}"
    return (f"{PAYOFF_BEGIN}\n\n**The payoff, at $n = 4096$:** the book's own SGEMM runs at "
            + each("book_sgemm", lambda v: f"{v:.0f}% of cuBLAS SGEMM's speed", lambda v: f"{v:.0f}%")
            + (beside(" (Triton's autotuned FP32 `tl.dot`: ", "triton_fp32", lambda v: f"{v:.0f}%")
               + ")" if instead else "")
            + "; its 3xTF32 tensor-core kernel, with float32's accuracy (chapter 10 sets its error "
            "beside SGEMM's), runs "
            + each("tf32x3_wgmma", lambda v: f"{v / 100:.2f} times as fast as cuBLAS SGEMM",
                   lambda v: f"{v / 100:.2f} times")
            + (beside(" (Triton's 3xTF32: ", "triton_tf32x3", lambda v: f"{v / 100:.2f}")
               + beside(" times; PyTorch's TF32 matmul, at TF32's accuracy: ", "torch_tf32",
                        lambda v: f"{v / 100:.2f}") + " times)" if instead else "")
            + ("; and `precision=\"ozaki\"`, float32 products from exact INT8 ones with a guard "
               "that keeps SGEMM's error bound for each element, "
               + each(OZAKI_KERNEL, lambda v: f"{v / 100:.2f} times", lambda v: f"{v / 100:.2f} times")
               if all((d, OZAKI_KERNEL) in steps.index for d in gpus) else "")
            + ". Every kernel was checked against float64 before it was timed beside cuBLAS; each "
            f"% is over that GPU's cuBLAS figure of chapter 0.\n\n{PAYOFF_END}")


def write_landing(df: pd.DataFrame, path: Path = LANDING) -> bool:
    """Replace the landing page's payoff between its markers; True if it changed."""
    text = path.read_text()
    if PAYOFF_BEGIN not in text or PAYOFF_END not in text:
        raise ValueError(f"{path.name} has no {PAYOFF_BEGIN} ... {PAYOFF_END} markers")
    new = re.sub(re.escape(PAYOFF_BEGIN) + ".*?" + re.escape(PAYOFF_END), lambda _: payoff(df),
                 text, flags=re.S)
    path.write_text(new)
    return new != text


def readme_block(df: pd.DataFrame) -> str:
    gpus = ", ".join(results.short_name(d) for d in sorted(df.device.unique()))
    return (f"{BEGIN}\n*Generated by `python -m book.landing` from `results/` ({gpus}); every "
            f"kernel checked against float64 before it was timed; the CPU row is chapter 1's "
            f"fastest method on the GPU host's CPU, at the largest n it ran.*\n\n"
            f"{markdown(df)}\n{END}")


def write_readme(df: pd.DataFrame, path: Path = README) -> bool:
    """Replace the README's table and payoff between their markers; True if either changed."""
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{path.name} has no {BEGIN} ... {END} markers")
    new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: readme_block(df), text,
                 flags=re.S)
    new = re.sub(re.escape(PAYOFF_BEGIN) + ".*?" + re.escape(PAYOFF_END), lambda _: payoff(df),
                 new, flags=re.S)
    path.write_text(new)
    return new != text


def readme_is_current(df: pd.DataFrame, path: Path = README) -> bool:
    text = path.read_text()
    return readme_block(df) in text and payoff(df) in text and payoff(df) in LANDING.read_text()


LADDER_CELL = re.compile(r"^from book import ladder\nladder\.so_far\((\d+)\)$")
"""The cell that closes chapters 2 to 10 with the ladder so far."""


def refresh_ladders(paths) -> list[str]:
    """Re-draw every "ladder so far" table of ``paths`` from the results files as they stand now.
    Each chapter draws its table when it runs, before the chapters after it rewrite their
    results files (and cuBLAS's median of the runs with them): after a run of every chapter the
    tables of the early ones would disagree with the later ones by a few tenths of a percent.
    The tables are a function of the results files alone, so the same call, here, gives every
    page the final numbers. Returns the names of the notebooks it changed."""
    import nbformat

    changed = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        hits = [(c, int(m.group(1))) for c in nb.cells if c.cell_type == "code"
                and (m := LADDER_CELL.match(c.source.strip())) and c.get("outputs")]
        for cell, chapter in hits:
            table = so_far(chapter)
            cell.outputs = [nbformat.v4.new_output(
                "execute_result", execution_count=cell.execution_count,
                data={"text/html": table._repr_html_(), "text/plain": repr(table)})]
        if hits:
            nbformat.write(nb, path)
            changed.append(path.name)
    return changed


def main(argv: list[str]) -> int:
    df = all_gpus(say=True)
    if argv == ["--check"]:
        ok = readme_is_current(df)
        print("README ladder is current" if ok else "README ladder is stale: run python -m book.landing")
        return 0 if ok else 1
    redrawn = refresh_ladders(sorted(NOTEBOOKS.glob("*.ipynb")))
    if redrawn:
        print(f"'ladder so far' re-drawn from the results files in {', '.join(redrawn)}")
    changed = write_readme(df)
    print(markdown(df))
    print("README.md updated" if changed else "README.md already current")
    print("intro.md's payoff updated" if write_landing(df) else "intro.md's payoff already current")
    ladder_plot(df).savefig(FIGURE, dpi=110, bbox_inches="tight")
    landing_plot(df).savefig(LANDING_FIGURE, dpi=130, bbox_inches="tight")
    print(f"{FIGURE.relative_to(README.parent)} and {LANDING_FIGURE.relative_to(README.parent)} "
          f"written (the landing page shows the second)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
