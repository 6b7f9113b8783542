"""The chapters' shape: what a reader sees (no glue code), a diagram and a "try it" in 2-8."""
import json
import re
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


BAD_OUTPUT = {
    "a traceback": re.compile(r"Traceback \(most recent call last\)|^\s*File \"", re.M),
    "a path of the machine that ran it": re.compile(r"(?<![\w.])/(?:work|root|home|tmp|usr|opt)/\w"),
    "a profiler or compiler dump": re.compile(r"==PROF==|\"ID\",\"Process ID\"|ptxas info"),
    "NaN or <NA> in a table": re.compile(r"<td>(?:NaN|nan|<NA>)</td>|\s(?:NaN|<NA>)\s*$", re.M),
    "a raw exponent (5.120000e+03)": re.compile(r"(?<![\d.])\d\.\d{6}e[+-]\d\d"),  # pandas default
}


def output_texts(cell):
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            yield "Traceback (most recent call last)"
        if "text" in out:
            yield "".join(out["text"])
        for kind, value in out.get("data", {}).items():
            if kind.startswith("text/"):
                yield "".join(value)


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_stored_outputs_read_as_pages(path):
    """No traceback, dump or machine path outside a cell tagged raises-exception (whose error is
    the point); no NaN, <NA> or raw exponent in any table."""
    found = []
    for i, cell in enumerate(cells(path)):
        raises = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        for text in output_texts(cell):
            for what, pattern in BAD_OUTPUT.items():
                if raises and what in ("a traceback", "a path of the machine that ran it"):
                    continue
                m = pattern.search(text)
                if m:
                    found.append(f"cell {i}: {what}: {text[max(0, m.start() - 40):m.end() + 20]!r}")
    assert not found, "\n".join(found)
