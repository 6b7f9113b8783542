"""Chapter 11's summary: read from the results files, never typed in."""
import pandas as pd
import pytest

from book import ladder, landing
from book.harness import results
from book.registry import KERNELS


def test_readme_table_matches_the_results_files():
    assert landing.readme_is_current(ladder.all_gpus()), "run `python -m book.landing`"


def test_ladder_takes_each_kernel_from_its_own_chapter():
    for gpu in results.recorded_gpus():
        df = ladder.ladder(gpu)
        assert df.kernel.is_unique
        for r in df[df.kernel.isin(list(KERNELS))].itertuples():
            assert r.chapter == KERNELS[r.kernel].chapter, r.kernel
        assert (df[df.kernel == "cublas"].pct_of_cublas == 100).all()
        # its row: chapter 0's record, within the spread of the runs that timed it beside kernels
        runs, row = ladder.cublas_runs(gpu), df[df.kernel == "cublas"].gflops.iloc[0]
        assert row == ladder.reference_cublas(gpu) and len(runs) > 1
        assert 0.97 * runs.min() <= row <= 1.03 * runs.max()


def test_cublas_spread_lists_every_gpu_with_its_runs():
    spread = ladder.cublas_spread()
    assert len(spread) == len(ladder.complete_gpus()[0])
    lo, mid, hi = (spread[f"{k} (GFLOP/s)"] for k in ("slowest", "median", "fastest"))
    assert (lo <= mid).all() and (mid <= hi).all() and (spread.runs > 1).all()


def test_roofline_leaves_out_the_tensor_core_kernels_and_triton_and_pytorch():
    df = ladder.all_gpus()
    device = df.device.iloc[0]
    left_out = df[df.chapter.isin([*ladder.TENSOR_CORES, ladder.INSTEAD_RUNG])].kernel
    assert (df.chapter == ladder.INSTEAD_RUNG).any()
    assert not set(ladder.roofline_kernels(df, device)) & set(left_out)


def test_what_you_would_use_instead_follows_cublas_in_every_view():
    """Triton's and PyTorch's rows: after cuBLAS in the table (rung "instead"), in their own
    colour on the ladder's figure, out of the milestones, the landing figure and every chapter's
    ladder so far; in the two-GPU comparison with their rung named."""
    from book.harness.plots import FAMILIES
    df = ladder.all_gpus()
    lines = ladder.markdown(df).splitlines()
    cublas = next(i for i, line in enumerate(lines) if line.startswith("| cuBLAS |"))
    assert lines[cublas + 1:] and all(line.startswith("| instead | ") for line in lines[cublas + 1:])
    assert "(TF32's accuracy)" in lines[-1]
    assert ladder.INSTEAD_RUNG in FAMILIES and ladder.rung(ladder.INSTEAD_RUNG) == "instead"
    instead = set(df[df.chapter == ladder.INSTEAD_RUNG].kernel)
    assert not instead & set(landing.landing_steps(df).kernel)
    assert not any("instead" in str(i) for i in ladder.so_far(10).index.get_level_values("chapter"))
    base, other = sorted(df.device.unique())
    two = ladder.by_ratio(ladder.compare(df, base, other))
    assert set(two.loc[two.chapter == "instead"].index) == set(df[df.kernel.isin(instead)].label)


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
    `python -m book.landing` from results/ (chapter 11 keeps the whole ladder, results/ladder.png)."""
    df = ladder.all_gpus()
    intro = landing.LANDING.read_text()
    assert landing.LANDING_FIGURE.is_file() and landing.LANDING_FIGURE.stat().st_size > 10_000
    assert landing.FIGURE.is_file() and landing.FIGURE.stat().st_size > 10_000
    assert "results/milestones.png" in intro
    sentence = landing.payoff(df)
    assert sentence in intro and "of cuBLAS SGEMM's speed" in sentence, "run `python -m book.landing`"
    steps = landing.landing_steps(df)
    assert set(steps.step) == set(landing.LANDING_STEPS.values())


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
    """Chapters 2-10 and 12 end with the ladder so far; after a run, python -m book.landing re-draws
    every one from the results files the run left, so that a kernel's number is the same on every
    page (a chapter's own table is drawn before the later chapters rewrite their files)."""
    import json

    seen = 0
    for path in sorted(landing.NOTEBOOKS.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            m = landing.LADDER_CELL.match("".join(cell["source"]).strip()) if cell["cell_type"] == "code" else None
            if m and cell.get("outputs"):
                stored = "".join(cell["outputs"][0]["data"]["text/html"])
                assert stored == ladder.so_far(int(m.group(1)))._repr_html_(), path.name
                seen += 1
    assert seen == 10


def _markdown_ladder(text: str) -> pd.DataFrame:
    """The ladder table of a README block: its header and rows, numbers as floats (blank: NaN)."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    t = pd.DataFrame(rows, columns=header)
    for col in header[2:]:
        t[col] = pd.to_numeric(t[col].str.replace(",", ""), errors="coerce")
    return t


def test_the_readme_ladder_closes_its_arithmetic():
    """Every GPU row's % of cuBLAS is its GFLOP/s over the cuBLAS row printed in the same table
    (to the table's rounding): a reader's own division agrees with the page."""
    block = landing.README.read_text().split(landing.BEGIN)[1].split(landing.END)[0]
    t = _markdown_ladder(block)
    cublas = t[t.chapter == "cuBLAS"].iloc[0]
    gpus = [c.split(":")[0] for c in t.columns if c.endswith(": GFLOP/s")]
    assert len(gpus) >= 2
    for gpu in gpus:
        rate, pct = t[f"{gpu}: GFLOP/s"], t[f"{gpu}: % of cuBLAS"]
        ours = pct.notna()
        assert ours.sum() > 10 and pct[t.chapter == "instead"].notna().all()
        expected = 100 * rate[ours] / cublas[f"{gpu}: GFLOP/s"]
        # (GFLOP/s printed to the unit, % to a tenth; the cuBLAS row to the unit)
        slack = 0.05 + 100 * 0.5 / cublas[f"{gpu}: GFLOP/s"] * (1 + rate[ours] / cublas[f"{gpu}: GFLOP/s"])
        assert ((expected - pct[ours]).abs() <= slack).all(), (gpu, (expected - pct[ours]).abs().max())


def test_headline_is_the_ladders_figure():
    """One number per claim: headline() gives every page the ladder's pair for a kernel."""
    for gpu in ladder.complete_gpus()[0]:
        df = ladder.ladder(gpu).set_index("kernel")
        device = results.load_device(gpu)["name"]
        for kernel in ("naive32", "tiled32", "book_sgemm", "cublas"):
            gflops, pct = ladder.headline(kernel, device)
            assert (gflops, pct) == (df.loc[kernel, "gflops"], df.loc[kernel, "pct_of_cublas"])
        assert ladder.headline("cublas", gpu)[1] == 100.0
        naive = results.load("02_naive", gpu)  # the record the figure comes from
        rate = naive[(naive.kernel == "naive32") & (naive.M == 4096)].gflops.iloc[0]
        assert ladder.headline("naive32", gpu) == (rate, 100 * rate / results.cublas_reference(gpu))
    with pytest.raises(KeyError):
        ladder.headline("naive32", "NVIDIA Nonexistent GPU")


@pytest.mark.parametrize("chapter", range(2, 11))
def test_every_ladder_so_far_closes_its_arithmetic(chapter):
    """Each chapter's closing table: every % of cuBLAS is the row's GFLOP/s over the cuBLAS row
    printed in the same table, to the table's rounding."""
    t = ladder.so_far(chapter)
    cublas = t.xs("cuBLAS", level="chapter").iloc[0]
    for gpu in [c.split(":")[0] for c in t.columns if c.endswith(": GFLOP/s")]:
        ref = float(cublas[f"{gpu}: GFLOP/s"].replace(",", ""))
        for _, row in t.iterrows():
            rate, pct = (row[f"{gpu}: {k}"] for k in ("GFLOP/s", "% of cuBLAS"))
            if pct == "--":
                continue
            rate = float(rate.replace(",", ""))
            assert abs(100 * rate / ref - float(pct)) <= 0.05 + 100 * 0.5 / ref * (1 + rate / ref)


def test_a_ratio_within_a_kernel_s_own_spread_between_runs_is_no_gain(monkeypatch):
    """ladder.spread: the largest fastest-over-slowest of a kernel's recorded runs on either GPU,
    or the widest quartiles within one run, never below SAME_GPU; gains() puts a ratio within it
    under 'noise', not 'rest'."""
    import pandas as pd
    from book import ladder
    runs = {("a", "k"): [100.0, 112.0], ("b", "k"): [110.0], ("a", "j"): [100.0], ("b", "j"): [100.0],
            ("a", "w"): [100.0], ("b", "w"): [120.0]}
    quartiles = {("a", "w"): [0.23]}

    def kernel_runs(gpu, kernel, n=4096, measure="gflops"):
        found = runs if measure == "gflops" else quartiles
        return pd.Series(found.get((gpu, kernel), []), dtype=float)
    monkeypatch.setattr(ladder, "kernel_runs", kernel_runs)
    monkeypatch.setattr(ladder.results, "folder_of", lambda d: d)
    assert abs(ladder.spread("k", ("a", "b")) - 0.12) < 1e-12
    assert ladder.spread("j", ("a", "b")) == ladder.SAME_GPU
    assert abs(ladder.spread("w", ("a", "b")) - 0.23) < 1e-12  # one run disturbed while it timed
