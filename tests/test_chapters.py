"""The chapters' shape: what a reader sees (no glue code), a diagram and a "try it" in 2-8."""
import json
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))


def cells(path):
    return json.loads(path.read_text())["cells"]


def source(cell) -> str:
    return "".join(cell["source"])


def hidden(cell) -> bool:
    return "remove-input" in cell.get("metadata", {}).get("tags", [])


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_glue_code_is_hidden(path):
    shown = [source(c) for c in cells(path) if c["cell_type"] == "code" and not hidden(c)]
    assert not [s for s in shown if "glue(" in s], "a visible cell glues numbers into the prose"


@pytest.mark.parametrize("path", [p for p in CHAPTERS if 2 <= int(p.stem[:2]) <= 8], ids=lambda p: p.stem)
def test_chapters_2_to_8_draw_a_diagram_and_invite_a_change(path):
    cs = cells(path)
    drawn = [c for c in cs if c["cell_type"] == "code" and "diagrams." in source(c)]
    assert drawn, "no diagram of the chapter's idea"
    assert any(o.get("data", {}).get("image/png") for c in drawn for o in c.get("outputs", [])), \
        "the diagram's stored output has no picture: execute the chapter"
    tries = [i for i, c in enumerate(cs) if c["cell_type"] == "markdown" and "**Try it.**" in source(c)]
    assert tries, "no 'Try it' cell"
    after = source(cs[tries[0] + 1])
    assert ("variant(" in after or "edited(" in after) and "check_kernels(" in after


@pytest.mark.parametrize("path", [p for p in CHAPTERS if int(p.stem[:2]) <= 9], ids=lambda p: p.stem)
def test_every_chapter_ends_with_the_next_step(path):
    last = [source(c) for c in cells(path) if c["cell_type"] == "markdown"][-1]
    assert "**Next.**" in last or "**The bottleneck, and what comes next.**" in last or \
        "**Where the bottleneck is now.**" in last
