"""Chapter 9's summary: read from the results files, never typed in."""
import pandas as pd

from book import ladder, results
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


def test_markdown_has_one_column_pair_per_gpu():
    df = pd.DataFrame([
        {"chapter": 2, "kernel": "naive16", "label": "naive", "n": 4096, "gflops": 5000.0,
         "pct_of_cublas": 10.0, "device": "GPU A"},
        {"chapter": 2, "kernel": "naive16", "label": "naive", "n": 4096, "gflops": 4000.0,
         "pct_of_cublas": 12.0, "device": "GPU B"},
        {"chapter": 10, "kernel": "cublas", "label": "cuBLAS SGEMM", "n": 4096, "gflops": 9.0e4,
         "pct_of_cublas": 100.0, "device": "GPU B"},
    ])
    lines = ladder.markdown(df).splitlines()
    assert lines[0] == ("| chapter | label | n | GPU A: GFLOP/s | GPU A: % of cuBLAS | "
                        "GPU B: GFLOP/s | GPU B: % of cuBLAS |")
    assert lines[2] == "| 2 | naive | 4096 | 5,000 | 10.0 | 4,000 | 12.0 |"
    assert lines[3] == "| cuBLAS | cuBLAS SGEMM | 4096 |  |  | 90,000 | 100.0 |"
