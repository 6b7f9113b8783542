"""Chapter 11's summary: read from the results files, never typed in."""
import pandas as pd
import pytest

from book import ladder
from book.harness import results
from book.registry import KERNELS


def test_readme_table_matches_the_results_files():
    assert ladder.readme_is_current(ladder.all_gpus()), "run `python -m book.ladder`"


def test_ladder_takes_each_kernel_from_its_own_chapter():
    for gpu in results.recorded_gpus():
        df = ladder.ladder(gpu)
        assert df.kernel.is_unique
        for r in df[df.kernel.isin(list(KERNELS))].itertuples():
            assert r.chapter == KERNELS[r.kernel].chapter, r.kernel
        assert (df[df.kernel == "cublas"].pct_of_cublas == 100).all()
        runs = ladder.cublas_runs(gpu)  # its row: the median of every run that timed it
        assert len(runs) > 1 and df[df.kernel == "cublas"].gflops.iloc[0] == runs.median()


def test_cublas_spread_lists_every_gpu_with_its_runs():
    spread = ladder.cublas_spread()
    assert len(spread) == len(ladder.complete_gpus()[0])
    lo, mid, hi = (spread[f"{k} (GFLOP/s)"] for k in ("slowest", "median", "fastest"))
    assert (lo <= mid).all() and (mid <= hi).all() and (spread.runs > 1).all()


def test_roofline_leaves_out_the_tensor_core_kernels():
    df = ladder.all_gpus()
    device = df.device.iloc[0]
    assert not set(ladder.roofline_kernels(df, device)) & set(df[df.chapter == ladder.TENSOR_CORES].kernel)


def test_markdown_has_one_column_pair_per_gpu():
    df = pd.DataFrame([
        {"chapter": 2, "kernel": "naive16", "label": "naive", "n": 4096, "gflops": 5000.0,
         "pct_of_cublas": 10.0, "device": "GPU A"},
        {"chapter": 2, "kernel": "naive16", "label": "naive", "n": 4096, "gflops": 4000.0,
         "pct_of_cublas": 12.0, "device": "GPU B"},
        {"chapter": ladder.CUBLAS_RUNG, "kernel": "cublas", "label": "cuBLAS SGEMM", "n": 4096, "gflops": 9.0e4,
         "pct_of_cublas": 100.0, "device": "GPU B"},
    ])
    lines = ladder.markdown(df).splitlines()
    assert lines[0] == ("| chapter | kernel | GPU A: GFLOP/s | GPU A: % of cuBLAS | "
                        "GPU B: GFLOP/s | GPU B: % of cuBLAS |")
    assert lines[2] == "| 2 | naive | 5,000 | 10.0 | 4,000 | 12.0 |"
    assert lines[3] == "| cuBLAS | cuBLAS SGEMM |  |  | 90,000 | 100.0 |"


def _partial_results(tmp_path):
    """A results folder with one complete GPU (a copy of a recorded one) and one GPU that holds
    only chapter 1's file, as a re-execution of chapter 1 alone would leave it."""
    import json
    import shutil
    complete = ladder.complete_gpus()[0][0]
    shutil.copytree(results.RESULTS / complete, tmp_path / complete)
    partial = tmp_path / "nvidia-partial-gpu"
    partial.mkdir()
    report = dict(results.load_device(complete), name="NVIDIA Partial GPU", saved="2099-01-01T00:00:00")
    (partial / "device.json").write_text(json.dumps(report))
    shutil.copy(results.RESULTS / complete / "01_cpu_loop.csv", partial / "01_cpu_loop.csv")
    return complete


def test_the_ladder_uses_only_complete_gpu_folders(tmp_path, monkeypatch, capsys):
    complete = _partial_results(tmp_path)
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    assert results.recorded_gpus()[0] == "nvidia-partial-gpu"  # saved last, yet incomplete
    gpus, left_out = ladder.complete_gpus()
    assert gpus == [complete]
    assert left_out["nvidia-partial-gpu"].startswith("lacks 00_ceilings, 02_naive")
    df = ladder.all_gpus(say=True)
    assert "left out: results/nvidia-partial-gpu/ (lacks 00_ceilings" in capsys.readouterr().out
    assert set(df.device) == {results.load_device(complete)["name"]}
    rungs = ladder.milestones(df)
    assert rungs.notna().all().all() and len(rungs) == 1
    device, traffic = ladder.roofline_traffic(df)
    assert device == results.load_device(complete)["name"] and len(traffic)
    assert "NVIDIA Partial GPU" not in ladder.markdown(df)


def test_chapter_9_notebook_runs_against_a_partial_results_folder(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient
    from conftest import ROOT
    _partial_results(tmp_path)
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("BOOK_BACKEND", "cpu")
    nb = nbformat.read(ROOT / "notebooks" / "11_ladder.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "left out: results/nvidia-partial-gpu/" in text


def test_writers_save_nothing_where_saving_is_off(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    monkeypatch.setenv("BOOK_SAVE_RESULTS", "0")  # what make test sets; off without a GPU anyway
    assert not results.saving()
    results.keep(pd.DataFrame({"x": [1]}), "00_anything")
    assert not any(tmp_path.iterdir())
    with pytest.raises(RuntimeError, match="saved only on a GPU with saving on"):
        results._save(pd.DataFrame({"x": [1]}), "00_anything")


def test_the_landing_page_states_the_payoff_with_its_figure():
    """intro.md shows results/milestones.png and a payoff sentence, both generated by
    `python -m book.ladder` from results/ (chapter 11 keeps the whole ladder, results/ladder.png)."""
    df = ladder.all_gpus()
    intro = ladder.LANDING.read_text()
    assert ladder.LANDING_FIGURE.is_file() and ladder.LANDING_FIGURE.stat().st_size > 10_000
    assert ladder.FIGURE.is_file() and ladder.FIGURE.stat().st_size > 10_000
    assert "results/milestones.png" in intro
    sentence = ladder.payoff(df)
    assert sentence in intro and "of cuBLAS SGEMM's speed" in sentence, "run `python -m book.ladder`"
    steps = ladder.landing_steps(df)
    assert set(steps.step) == set(ladder.LANDING_STEPS.values())


def test_ncu_can_launch_every_kernel_of_the_roofline():
    """Chapter 11's ncu child looks each rung up by id: an id it cannot find fails the whole
    profile (as book_sgemm once did, leaving the chapter on recorded counters). book.sgemm is
    profiled as one whole call, whatever its plan launches."""
    from book.profile import find
    from book.profile.ncu import CUBLAS, SGEMM_CALL
    df = ladder.all_gpus()
    for device in df.device.unique():
        kernels = ladder.roofline_kernels(df, device)
        assert SGEMM_CALL in kernels and "cpu" not in kernels
        for k in kernels:
            assert k in (CUBLAS, SGEMM_CALL) or find(k).id == k


def test_every_ladder_so_far_matches_the_results_files():
    """Chapters 2-10 end with the ladder so far; after a run, python -m book.ladder re-draws
    every one from the results files the run left, so that a kernel's number is the same on every
    page (a chapter's own table is drawn before the later chapters rewrite their files)."""
    import json

    seen = 0
    for path in sorted(ladder.NOTEBOOKS.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            m = ladder.LADDER_CELL.match("".join(cell["source"]).strip()) if cell["cell_type"] == "code" else None
            if m and cell.get("outputs"):
                stored = "".join(cell["outputs"][0]["data"]["text/html"])
                assert stored == ladder.so_far(int(m.group(1)))._repr_html_(), path.name
                seen += 1
    assert seen == 9
