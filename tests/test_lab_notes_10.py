"""Chapter 10 and its lab notes: the chapter keeps its main line within the book's budget, states
its 4096^3 headline once (the step table's), shows the call with one small table, and shows no
stray failure lines; the notes keep what moved out of it, with the cells that load or glue their
numbers and the outputs of the runs that made them, their longest tables in scroll boxes."""
import json
import re
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTER = NOTEBOOKS / "10_tensor_cores.ipynb"
NOTES = NOTEBOOKS / "L10_tensor_cores_notes.ipynb"


def cells(path):
    return json.loads(path.read_text())["cells"]


def source(cell) -> str:
    return "".join(cell["source"])


def tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def prose(path) -> list[str]:
    return [source(c) for c in cells(path) if c["cell_type"] == "markdown"]


def words(path) -> int:
    return sum(len(re.findall(r"\S+", s)) for s in prose(path))


def code(path) -> list[dict]:
    return [c for c in cells(path) if c["cell_type"] == "code"]


def test_chapter_10_keeps_its_opening_cells_and_ends_with_the_ladder():
    first, second = code(CHAPTER)[:2]
    assert "show_device()" in source(first) and "remove-input" in tags(first)
    assert "import numpy as np" in source(second) and "hide-input" in tags(second)
    headings = [line for text in prose(CHAPTER) for line in text.splitlines() if line.startswith("## ")]
    assert headings[-1] == "## The ladder so far"
    assert "ladder.so_far(10)" in source(code(CHAPTER)[-1])


def test_chapter_10_shows_no_failure_lines_and_no_whole_long_file():
    """The step table's expected failures (3xTF32 on mma.sync at 8192^3) are in its check column
    and the prose, not in printed lines; a listing longer than 40 lines is collapsed."""
    for cell in code(CHAPTER):
        for out in cell.get("outputs", []):
            assert not (out["output_type"] == "stream" and "FAILED" in "".join(out["text"])), source(cell)
            listing = "".join(out.get("data", {}).get("text/markdown", ""))
            shown = re.sub(r"<details>.*?</details>", "", listing, flags=re.S)
            for block in re.findall(r"```cuda\n(.*?)```", shown, flags=re.S):
                assert block.count("\n") <= 40, source(cell)


def test_what_left_chapter_10_is_in_its_notes_with_its_outputs():
    """The sections that moved, and the cells that load or glue their numbers, each with the
    stored output of the run that made it -- and not left behind in the chapter."""
    text = "\n".join(prose(NOTES))
    for heading in ("## The goal, on every GPU recorded", "## One shape, five timings",
                    "## The call on chapter 9's suite", "## The held-out set", "## Error against K, every value",
                    "## Every magnitude", "## What moved these numbers", "## Where the time goes",
                    "## The power cap", "## What is left"):
        assert heading in text, heading
    for moved in ("**Finding the scaling**", "Step 4, a producer warpgroup", "Step 5, A from registers",
                  "`-ftz=true`", "The goal is met in {glue:text}`goal_met`", "**Try it.**",
                  "powers of two from $2^{-60}$ to $2^{60}$"):
        assert moved in text, moved
        assert not any(moved in t for t in prose(CHAPTER)), moved
    for call in ("tf32_report.parts_table(", "tf32_report.parts_summary(", "tf32_report.power_table(",
                 "tf32_report.power_summary(", "tf32_report.tf32x3_suite_table(speeds)",
                 "tf32_report.heldout_summary(", "tf32_report.magnitude_table(", "error_table(",
                 '"goal met": "yes"', 'glue("goal_met"', "tf32_report.magnitude_plot(", '"SMALL_FIRST": 1'):
        found = [c for c in code(NOTES) if call in source(c)]
        assert len(found) == 1 and found[0]["outputs"], call
        assert not any(call in source(c) for c in code(CHAPTER)), call


def test_the_chapter_states_the_4096_headline_from_the_step_table_only():
    """The suite's 4096^3 and 8192^3 rows of the goal table are left to the notes (the chapter's
    figure there is the step table's); the notes say why the runs differ."""
    goal = [c for c in code(CHAPTER) if "tf32x3_goal_table(" in source(c)]
    assert len(goal) == 1 and 'drop(index=["4096³", "8192³"])' in source(goal[0])
    html = "".join(goal[0]["outputs"][0]["data"]["text/html"])
    assert "4096³" not in html and "8192³" not in html and "1024 × 1024 × 16384" in html
    assert any("Why they differ" in t for t in prose(NOTES))


def test_the_notes_glue_code_is_hidden_and_their_imports_are_folded():
    first = code(NOTES)[0]
    assert "hide-input" in tags(first) and "import" in source(first)
    shown = [source(c) for c in code(NOTES) if "remove-input" not in tags(c)]
    assert not [s for s in shown if "glue(" in s]


def test_the_chapter_shows_the_call_with_one_small_table():
    """'A call for it, at any magnitude' keeps its prose and one table (the goals, without 4096^3
    and 8192^3); the magnitudes figure is the notes', beside their table of every value."""
    cs = cells(CHAPTER)
    start = next(i for i, c in enumerate(cs) if source(c).startswith("## A call for it"))
    end = next(i for i, c in enumerate(cs) if source(c).startswith("## What we learned"))
    shown = [c for c in cs[start:end] if c["cell_type"] == "code" and "remove-input" not in tags(c)]
    assert len(shown) == 1 and "tf32x3_goal_table(" in source(shown[0])
    assert not any("image/png" in o.get("data", {}) for c in shown for o in c.get("outputs", []))


def test_the_notes_long_tables_show_every_row_and_fold_their_code():
    """The notes' long reference tables show every row (the prose quotes numbers from them: a
    scroll box hid them) and the cells that load and format them show no code until asked."""
    for call in ("runs.style.format(", "tf32_report.tf32x3_suite_table(speeds)",
                 "tf32_report.tf32x3_suite_table(heldout)", "error_table(", "tf32_report.magnitude_table(",
                 "tf32_report.power_table("):
        found = [c for c in code(NOTES) if call in source(c)]
        assert len(found) == 1 and "hide-input" in tags(found[0]), call
        assert "output_scroll" not in tags(found[0]), call


def test_the_goal_the_chapter_states_holds_on_every_gpu_recorded():
    """Chapter 10's step section says step 3 meets the goal at both sizes on every GPU recorded
    (the notes' table shows it): as accurate as cuBLAS SGEMM, at twice its speed or more."""
    from book.harness import results
    assert any("the goal, met at both sizes on every GPU recorded" in " ".join(t.split()) for t in prose(CHAPTER))
    recorded = results.load_every("10_tensor_cores")
    assert recorded
    for device, df in recorded.items():
        d = df.set_index(["M", "kernel"])
        for n in (4096, 8192):
            ours, sgemm = d.loc[(n, "tf32x3_wgmma")], d.loc[(n, "cublas")]
            assert ours.status == "ok" and ours.rel_error <= sgemm.rel_error, (device, n)
            assert ours.gflops >= 2 * sgemm.gflops, (device, n)


def test_the_goals_in_words_name_each_gpu_that_meets_or_misses_them():
    import pandas as pd
    from book.studies.tf32_report import goal_words
    table = pd.DataFrame({"goal (x SGEMM)": ["2.5", "2.0", "--"],
                          "NVIDIA H100 80GB HBM3": ["2.36", "1.99", "1.75"],
                          "NVIDIA H200": ["2.51", "2.08", "1.83"]},
                         index=["4096³", "M, N ≥ 2048 and K ≥ 1024, lowest", "whole suite, geometric mean"])
    words = goal_words(table)
    assert words["met"] == ("4096³ on the H200 (2.51); every shape with M, N ≥ 2048 and K ≥ 1024 "
                            "on the H200 (lowest 2.08)")
    assert words["unmet"].startswith("4096³ on the H100 (2.36 against 2.5)")
    assert words["geomean"] == "1.75 and 1.83 (H100, H200)"
