"""The check-before-timing harness catches wrong kernels and never times them."""
import re

import numpy as np
import pytest

from book import LaunchError
from book.harness.check import random_inputs, relative_error, run_matmul
from book.harness.measure import sweep
from book.registry import KERNELS, KernelSpec
from conftest import ROOT

BROKEN = str(ROOT / "tests" / "kernels" / "broken.cu")


def broken(name):
    return KernelSpec(name, name, 0, BROKEN, name, (16, 16), (16, 16))


@pytest.mark.parametrize("name", ["matmul_wrong", "matmul_skips_row", "matmul_writes_nan"])
def test_sweep_reports_failure_and_does_not_time(name):
    df = sweep([broken(name), KERNELS["naive16"]], [(33, 20, 17)], baseline=False)
    bad, good = df.iloc[0], df.iloc[1]
    assert bad.status == "FAILED check" and np.isnan(bad.get("time_ms", np.nan))
    assert good.status == "ok" and good.time_ms > 0 and good.gflops > 0


def test_unwritten_and_nan_outputs_are_infinite_error():
    a, b = random_inputs(20, 18, 7, seed=1)
    ref = a.astype(np.float64) @ b
    assert relative_error(run_matmul(broken("matmul_skips_row"), a, b), ref) == float("inf")
    assert relative_error(run_matmul(broken("matmul_writes_nan"), a, b), ref) == float("inf")
    assert relative_error(run_matmul(KERNELS["naive16"], a, b), ref) < 1e-6


def test_check_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"shape mismatch: output \(3, 4\), reference \(4, 3\)"):
        relative_error(np.zeros((3, 4)), np.zeros((4, 3)))


def test_wrong_dtype_input_is_a_clear_error():
    a, b = random_inputs(8, 8, 8, seed=2)
    with pytest.raises(LaunchError, match=r"matmul_naive: argument 1 'A' \(const float\*\) expects "
                                          r"a float32 array, got float64"):
        run_matmul(KERNELS["naive16"], a.astype(np.float64), b)


def test_cpu_loop_matches_and_rejects_bad_shapes():
    from book.models.cpu_loop import c_matmul, python_matmul
    a, b = random_inputs(7, 5, 3, seed=3)
    ref = a.astype(np.float64) @ b
    assert relative_error(c_matmul(a, b), ref) < 1e-6
    assert relative_error(python_matmul(a, b), ref) < 1e-6
    with pytest.raises(ValueError, match="do not multiply"):
        c_matmul(a, b.T)


def test_sweep_stops_growing_n_once_a_size_exceeds_the_time_budget(monkeypatch, capsys):
    monkeypatch.setenv("BOOK_POINT_BUDGET_S", "0")  # every size is over budget
    df = sweep([KERNELS["naive16"]], [8, 16, 4], baseline=False)
    assert df.status.iloc[0] == "ok"
    assert re.fullmatch(r"skipped \(8x8x8 took \d+ s, over the 0 s budget per size "
                        r"\(BOOK_POINT_BUDGET_S\)\)", df.status.iloc[1])
    assert df.status.iloc[2] == "ok"  # a smaller size still runs
    assert "skipping 16x16x16: 8x8x8 took" in capsys.readouterr().out


def test_readable_tables_round_for_a_reader_and_label_kernels():
    import pandas as pd
    from book.harness.tables import readable, significant
    df = pd.DataFrame({"kernel": ["naive16", "cublas"], "label": ["naive 16x16", "cuBLAS"],
                       "gflops": [6571.53, 50812.3], "pct_of_cublas": [12.93333, 100.0],
                       "rel_error": [1.234e-7, 3.1e-7], "other": [0.000123456, 64912.0]}).set_index("kernel")
    out = readable(df)
    assert list(out.index) == ["naive 16x16", "cuBLAS"]
    assert list(out.columns) == ["GFLOP/s", "% of cuBLAS", "relative error", "other"]
    assert out["GFLOP/s"].tolist() == ["6,572", "50,812"]
    assert out["% of cuBLAS"].tolist() == ["12.9", "--"]  # (cuBLAS is not a share of itself)
    assert out["relative error"].tolist() == ["1.2e-07", "3.1e-07"]
    assert out["other"].tolist() == ["1.23e-04", "6.49e+04"]  # one format a column
    mixed = readable(pd.DataFrame({"x": [2.0, 0.976, 0.5], "y": [2.0, 0.976, 2.62e-6],
                                   "ms": [0.141, 5700.0, 12.5]}))
    assert mixed["x"].tolist() == ["2.000", "0.976", "0.500"]
    assert mixed["y"].tolist() == ["2.00e+00", "9.76e-01", "2.62e-06"]
    assert mixed["time (ms)"].tolist() == ["0.141", "5,700.000", "12.500"]
    named = readable(pd.DataFrame({"shape": ["a", "b"], "gflops": [1.0, 2.0]}))
    assert list(named.index) == ["a", "b"]  # a first column of names, not a 0, 1 ... index
    assert significant(float("nan")) == "--"
    assert readable(df, ["gflops"], ).shape == (2, 1)
    gaps = pd.DataFrame({"pct_of_cublas": [float("nan"), 99.44], "blocks": pd.array([None, 3], "Int64"),
                         "x": [float("nan"), 5120.0], "note": [None, "ok"]})
    shown = readable(gaps).to_string()
    assert "NaN" not in shown and "<NA>" not in shown and "None" not in shown and "e+" not in shown
    assert readable(gaps)["% of cuBLAS"].tolist() == ["--", "99.4"]


def test_show_source_shows_a_file_or_the_part_between_two_markers():
    from book.harness.notebook import show_source
    from book.harness.notebook import LISTING_OPEN, _fenced, resolve
    lines = resolve("09_sgemm.cu").read_text().rstrip().splitlines()
    assert len(lines) > LISTING_OPEN
    shown = show_source("09_sgemm.cu").data  # a whole file that long: collapsed, one click away
    whole = _fenced(lines)
    assert shown.startswith("<details>") and whole in shown
    short = show_source("02_naive.cu").data
    assert len(resolve("02_naive.cu").read_text().splitlines()) <= LISTING_OPEN
    assert short.startswith("```cuda\n") and "<details>" not in short
    part = show_source("09_sgemm.cu", "// Share p = blockIdx.x", "#if !defined(ONE_ENTRY)").data
    excerpt, rest = part.split("<details>")
    assert re.match(r"`09_sgemm.cu`, lines \d+-\d+:\n\n```cuda\n// Share p = blockIdx.x", excerpt)
    assert excerpt.rstrip().endswith("}\n```")
    assert "streamk_share" in excerpt and 'extern "C"' not in excerpt
    assert len(excerpt) < len(whole) / 4
    assert rest.startswith("<summary>The whole file: 09_sgemm.cu (") and whole in rest  # collapsed
    through = show_source("08_vectorized.cu", "for (int t = 0; t < K", through="__syncthreads();").data
    assert through.split("<details>")[0].rstrip().endswith("__syncthreads();\n```")
    assert show_source("02_naive.cu", collapsed=True).data.startswith("<details><summary>")
    with pytest.raises(ValueError, match="has no line containing 'nowhere'"):
        show_source("02_naive.cu", "nowhere")
    # a Python file of the package, by its path from the repository (chapter 11's Triton kernel)
    triton = show_source("book/studies/triton_gemm.py", "@triton.jit", "def triton_matmul").data
    assert re.match(r"`book/studies/triton_gemm.py`, lines \d+-\d+:\n\n```python\n@triton.jit\n", triton)
    assert "tl.dot(" in triton and "<summary>The whole file: book/studies/triton_gemm.py (" in triton

def test_chapter_0_draws_its_ceilings_as_a_roofline():
    import pandas as pd
    from book.harness import ceilings
    ceil = pd.DataFrame({"ceiling": ["fp32_fma_peak", "copy_bandwidth", "cublas_sgemm"],
                         "value": [60000.0, 3000.0, 50000.0]})
    fig = ceilings.roofline(ceil)
    ax = fig.axes[0]
    x, y = ax.lines[0].get_data()
    assert max(y) == 60000.0 and y[0] == pytest.approx(3000.0 * x[0])  # the roof and the slope
    assert "20 FLOP/byte" in " ".join(t.get_text() for t in ax.texts)  # the ridge: 60000 / 3000


def test_show_diff_shows_only_what_changes_and_the_whole_new_file():
    from book.harness.notebook import show_diff
    md = show_diff(("02_naive.cu", "void matmul_naive(", "// 1D grid"),
                   ("03_coalescing.cu", 'extern "C"', None)).data
    body = md.split("```diff")[1].split("```")[0]
    assert "+    const int row = blockIdx.x * blockDim.x + threadIdx.x;" in body
    assert "-    const int col = blockIdx.x * blockDim.x + threadIdx.x;" in body
    lines = body.strip().splitlines()
    assert lines[0].startswith("--- 02_naive.cu, lines") and lines[1].startswith("+++ 03_coalescing.cu")
    assert all(line[:1] in " +-@" for line in lines[2:])
    assert not any("acc +=" in line for line in lines if line[:1] in "+-")  # the loop is unchanged
    assert "<details><summary>The whole file: 03_coalescing.cu" in md
    with pytest.raises(ValueError, match="the same"):
        show_diff(("02_naive.cu", "void matmul_naive(", "// 1D grid"),
                  ("02_naive.cu", "void matmul_naive(", "// 1D grid"))


def test_every_stored_kernel_listing_matches_the_kernel_sources():
    """A kernel edited after its chapter ran leaves a stale listing in the book: re-render it
    with python -m book.harness.notebook notebooks/*.ipynb (no GPU needed)."""
    from pathlib import Path

    from book.harness.notebook import stale_listings
    stale = {p.name: [i for i, *_ in stale_listings(p)]
             for p in sorted(Path(__file__).resolve().parents[1].glob("notebooks/*.ipynb"))}
    assert not any(stale.values()), {k: v for k, v in stale.items() if v}


def test_each_gpu_says_a_figure_once_where_every_gpu_has_it():
    from book.harness.notebook import each_gpu
    assert each_gpu({"NVIDIA H100 80GB HBM3": 10, "NVIDIA H200": 10}) == "10 on each GPU"
    assert (each_gpu({"NVIDIA H100 80GB HBM3": 0.04, "NVIDIA H200": 0.01}, lambda v: f"{v:.1f}%")
            == "0.0% on each GPU")  # (the same once written)
    assert (each_gpu({"NVIDIA H100 80GB HBM3": 17, "NVIDIA H200": 16})
            == "17 on the H100 and 16 on the H200")
    assert each_gpu({"NVIDIA H200": 3}) == "3 on the H200"


def test_a_disturbed_timing_is_taken_again_and_the_steadiest_kept(monkeypatch):
    """time_launch on a GPU: repeats whose quartiles lie more than STEADY apart (a clock change,
    another process) are timed again, up to RETRIES times, and the steadiest run is kept."""
    from book.harness import measure
    runs = iter([[5.0, 7.0, 5.0, 7.0], [6.0, 4.9, 6.5, 4.9], [5.0, 5.01, 4.99, 5.0]])
    monkeypatch.setattr(measure, "BACKEND", "gpu")
    monkeypatch.setattr(measure, "synchronize", lambda: None)
    pending = []

    def held(fn, repeats=1):  # the first repeat sizes the count; the rest come in one call
        if not pending:
            pending.extend(next(runs))
        out, pending[:] = pending[:repeats], pending[repeats:]
        return np.array(out) / 1e3
    monkeypatch.setattr(measure, "held_event_seconds", held)
    t = measure.time_launch(lambda: None, target_s=0.02, warmed=True)
    assert t["repeats"] == 4 and t["time_ms"] == pytest.approx(5.0, abs=0.01)
    assert measure.quartile_spread([5.0, 7.0, 5.0, 7.0]) > measure.STEADY
