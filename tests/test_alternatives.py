"""Chapter 11's comparison with what a reader would use instead (book.studies.alternatives):
its pseudo-kernels skip with a reason where PyTorch, Triton or a GPU is missing, and its rounds
reduce to one row per kernel and shape, a failed check kept as such."""
import pandas as pd
import pytest

from book import BACKEND
from book.studies import alternatives as alt


def test_each_alternative_says_why_it_cannot_run_here():
    for a in alt.ALTERNATIVES:
        why = a.why_not_here()
        if BACKEND != "gpu":
            assert why == "needs a GPU"
        elif any(not alt.have(m) for m in a.needs):
            assert "not installed here" in why
        else:
            assert why is None


def test_a_sweep_without_a_gpu_or_the_libraries_skips_their_rows():
    if BACKEND == "gpu" and alt.have("torch") and alt.have("triton"):
        pytest.skip("every alternative runs here (the GPU host's test is the chapter itself)")
    df = alt.sweep([a for a in alt.ALTERNATIVES if a.why_not_here()], [(8, 12, 16)], baseline=False,
                   progress=False)
    assert len(df) and df.status.str.startswith("skipped (needs").all()


def test_rounds_reduce_to_medians_and_a_failed_check_stays_failed():
    rows = []
    for r, (t_cublas, t_book, t_triton) in enumerate([(1.0, 1.1, 2.0), (1.2, 1.0, 2.2), (0.9, 1.2, 1.8)]):
        for kernel, t in (("cublas", t_cublas), ("book_sgemm", t_book), ("triton_fp32", t_triton)):
            rows.append({"kernel": kernel, "M": 512, "N": 3072, "K": 768, "status": "ok",
                         "time_ms": t, "x_cublas": t_cublas / t, "rel_error": 1e-7 * (r + 1),
                         "round": r})
    rows.append({"kernel": "torch_tf32", "M": 512, "N": 3072, "K": 768, "status": "FAILED check",
                 "rel_error": 1.0, "round": 0})
    out = alt.summary(pd.DataFrame(rows)).set_index("kernel")
    assert out.loc["book_sgemm", "time_ms"] == 1.1
    assert out.loc["book_sgemm", "x_cublas"] == sorted([1.0 / 1.1, 1.2 / 1.0, 0.9 / 1.2])[1]
    assert out.loc["triton_fp32", "rel_error"] == 3e-7
    assert out.loc["torch_tf32", "status"] == "FAILED check" and pd.isna(out.loc["torch_tf32", "time_ms"])
    assert out.loc["cublas", "shape"] == "BERT-base, feed-forward in, 512 tokens"
    assert out.loc["triton_fp32", "library"] == "Triton"


def test_the_figure_and_the_ladder_rows_from_each_recorded_gpu():
    """The chapter's figure passes the book's figure rules for each GPU's recorded results, and
    the ladder's rows hold cuBLAS and the six alternatives at n = 4096, each checked."""
    from book.harness import results
    for gpu in ("nvidia-h100-80gb-hbm3", "nvidia-h200"):
        df = results.load(alt.FILE, gpu)
        alt.plot(df)
        rows = alt.at_ladder_size(df)
        assert set(rows.kernel) == {a.id for a in alt.ALTERNATIVES} | {"cublas"}
        assert (rows.rel_error < 1e-2).all()
