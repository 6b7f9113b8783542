"""Chapter 9 and its lab notes: the chapter keeps its main line within the book's budget, the
notes keep what moved out of it (with the cells that measure or glue it), and every number a
page glues into its prose is glued on that page."""
import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTER = NOTEBOOKS / "09_every_shape.ipynb"
NOTES = NOTEBOOKS / "L09_every_shape_notes.ipynb"
GLUED = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)")


def cells(path):
    return json.loads(path.read_text())["cells"]


def source(cell) -> str:
    return "".join(cell["source"])


def prose(path) -> list[str]:
    return [source(c) for c in cells(path) if c["cell_type"] == "markdown"]


def words(path) -> int:
    return sum(len(re.findall(r"\S+", s)) for s in prose(path))


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_glued_number_is_glued_on_its_own_page(path):
    """{glue:text}`name` reads a value that a code cell of the same notebook glued (its stored
    output): a paragraph moved to another page needs the cell that glues its numbers there too."""
    glued = {o.get("metadata", {}).get("scrapbook", {}).get("name")
             for c in cells(path) if c["cell_type"] == "code" for o in c.get("outputs", [])}
    used = {name for text in prose(path) for name in GLUED.findall(text)}
    assert not used - glued, f"glued on no cell of {path.name}: {sorted(used - glued)}"


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("[0-9]*.ipynb")), ids=lambda p: p.stem)
def test_every_chapter_keeps_to_the_prose_budget(path):
    assert words(path) <= 3000, f"{path.name}'s prose is over the book's 3,000 words"


@pytest.mark.parametrize("chapter, notes, title", [
    ("08_toward_cublas", "L08_toward_cublas_notes", "chapter 8, toward cuBLAS"),
    ("09_every_shape", "L09_every_shape_notes", "chapter 9, every shape"),
    ("10_tensor_cores", "L10_tensor_cores_notes", "chapter 10, tensor cores")])
def test_a_chapter_links_its_lab_notes_and_they_link_back(chapter, notes, title):
    """One line of the chapter links its notes; the notes open with their title and a link back,
    and fold their imports and device cells."""
    assert any(f"]({notes}.ipynb)" in text for text in prose(NOTEBOOKS / f"{chapter}.ipynb"))
    first = prose(NOTEBOOKS / f"{notes}.ipynb")[0]
    assert first.startswith(f"# Lab notes: {title}")
    assert f"({chapter}.ipynb)" in first
    opening = [c for c in cells(NOTEBOOKS / f"{notes}.ipynb") if c["cell_type"] == "code"][:2]
    for cell in opening:  # (the device line and the imports)
        assert {"hide-input", "remove-input"} & set(cell["metadata"].get("tags", [])), source(cell)


def test_what_left_chapter_9_is_in_its_notes_with_its_measurements():
    """The sections that moved, and the cells that measure or load their numbers, each with the
    stored output of the run that made it."""
    text = "\n".join(prose(NOTES))
    for heading in ("## Edge tiles, block by block", "## A second held-out set",
                    "## A third held-out set", "## Transposed operands", "## What a call costs on the host",
                    "## What is left"):
        assert heading in text, heading
    for call in ("sgemm_lab.edge_timeline()", "sgemm_lab.call_overhead()",
                 'sgemm_report.recorded_heldout("fresh")', 'sgemm_report.recorded_heldout("third")',
                 "sgemm_report.layouts_table("):
        found = [c for c in cells(NOTES) if c["cell_type"] == "code" and call in source(c)]
        assert len(found) == 1 and found[0]["outputs"], call
        assert not any(call in source(c) for c in cells(CHAPTER) if c["cell_type"] == "code"), call


def test_the_notes_glue_code_is_hidden():
    """As in the chapters: a cell that glues numbers into the prose shows no code."""
    shown = [source(c) for c in cells(NOTES) if c["cell_type"] == "code"
             and "remove-input" not in c.get("metadata", {}).get("tags", [])]
    assert not [s for s in shown if "glue(" in s]


CHAPTER_8 = NOTEBOOKS / "08_toward_cublas.ipynb"
NOTES_8 = NOTEBOOKS / "L08_toward_cublas_notes.ipynb"


def test_what_left_chapter_8_is_in_its_notes_with_its_measurements():
    """The SASS opcodes, the bank-conflict counters and the warp stalls beside cuBLAS moved, each
    with the cell that reads or measures it and the stored output of the GPU run that made it;
    the chapter keeps its steps, their check and timing, the tuning and the ladder."""
    text = "\n".join(prose(NOTES_8))
    for heading in ("## Reading the SASS", "## Bank conflicts of the vector layouts",
                    "## Where cuBLAS still wins"):
        assert heading in text, heading
        assert heading not in "\n".join(prose(CHAPTER_8)), heading
    for call in ('sass.opcodes(steps, "08_sass")', '"08_bank_ncu")', '"08_stalls")'):
        found = [c for c in cells(NOTES_8) if c["cell_type"] == "code" and call in source(c)]
        assert len(found) == 1 and found[0]["outputs"], call
        assert not any(call in source(c) for c in cells(CHAPTER_8) if c["cell_type"] == "code"), call
    chapter = [source(c) for c in cells(CHAPTER_8) if c["cell_type"] == "code"]
    for call in ("check_kernels(steps[1:], odd)", '"08_steps")', "tune.bars(df", '"08_tune")',
                 "tune.bars(tuned", "ladder.so_far(8)"):
        assert any(call in s for s in chapter), call


def test_the_notes_of_chapter_8_hide_their_glue_code():
    shown = [source(c) for c in cells(NOTES_8) if c["cell_type"] == "code"
             and "remove-input" not in c.get("metadata", {}).get("tags", [])]
    assert not [s for s in shown if "glue(" in s]
