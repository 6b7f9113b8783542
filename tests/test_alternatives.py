"""Chapter 11's comparison with what a reader would use instead (book.studies.alternatives):
its pseudo-kernels skip with a reason where PyTorch, Triton or a GPU is missing, and its rounds
reduce to one row per kernel and shape, a failed check kept as such; BOOK_ALTERNATIVES=recorded
shows the records on any machine; the ladder reads the same records as the chapter."""
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


def test_book_alternatives_recorded_shows_the_records_on_a_gpu_host_with_both(monkeypatch, capsys):
    """BOOK_ALTERNATIVES=recorded: the chapter as a machine without Triton runs it, on a GPU host
    that has PyTorch and Triton (how nbval runs chapter 11 'without Triton' there)."""
    monkeypatch.setattr(alt, "BACKEND", "gpu")
    monkeypatch.setattr(alt, "have", lambda module: True)
    monkeypatch.setattr(alt, "measure", lambda *a, **k: pytest.fail("measured despite the switch"))
    monkeypatch.setenv(alt.SWITCH, "recorded")
    assert alt.why_recorded() == "BOOK_ALTERNATIVES=recorded"
    df = alt.recorded_or_live()
    said = capsys.readouterr().out
    assert said.startswith("BOOK_ALTERNATIVES=recorded: the comparison with Triton and PyTorch "
                           "(the last section) uses results recorded on ")
    assert said.count("\n") == 1
    assert {a.id for a in alt.ALTERNATIVES} <= set(df.kernel) and (df.status == "ok").all()


def test_without_the_switch_a_gpu_host_with_both_measures(monkeypatch, capsys):
    monkeypatch.setattr(alt, "BACKEND", "gpu")
    monkeypatch.setattr(alt, "have", lambda module: True)
    monkeypatch.delenv(alt.SWITCH, raising=False)
    assert alt.why_recorded() is None
    monkeypatch.setenv(alt.SWITCH, "auto")
    assert alt.why_recorded() is None
    measured = pd.DataFrame({"kernel": ["cublas"], "M": [8], "N": [8], "K": [8], "status": ["ok"]})
    monkeypatch.setattr(alt, "measure", lambda *a, **k: measured)
    monkeypatch.setattr(alt.results, "saving", lambda: False)
    df = alt.recorded_or_live()
    assert df is measured and df.attrs["source"].startswith("measured in this run on ")
    assert capsys.readouterr().out.startswith("The comparison with Triton and PyTorch "
                                              "(the last section) was measured in this run on ")


def test_the_switch_names_what_is_missing_and_refuses_an_unknown_value(monkeypatch):
    monkeypatch.delenv(alt.SWITCH, raising=False)
    monkeypatch.setattr(alt, "BACKEND", "gpu")
    monkeypatch.setattr(alt, "have", lambda module: module == "torch")
    assert alt.why_recorded() == "triton not installed here"
    monkeypatch.setattr(alt, "BACKEND", "cpu")
    assert alt.why_recorded() == "No GPU here"
    monkeypatch.setenv(alt.SWITCH, "live")
    with pytest.raises(ValueError, match="BOOK_ALTERNATIVES='live': use 'recorded'"):
        alt.why_recorded()


def test_the_ladder_reads_the_same_record_as_the_chapter():
    """One number per claim: the ladder's rows after cuBLAS are the records of chapter 11's file
    at n = 4096 (its GFLOP/s, over chapter 0's cuBLAS as every row of the ladder)."""
    from book import ladder
    from book.harness import results
    for gpu in ("nvidia-h100-80gb-hbm3", "nvidia-h200"):
        recorded = alt.at_ladder_size(results.load(alt.FILE, gpu)).set_index("kernel")
        rows = alt.ladder_rows(gpu)
        assert tuple(rows.kernel) == alt.IN_LADDER
        lad = ladder.ladder(gpu).set_index("kernel")
        reference = ladder.reference_cublas(gpu)
        for kernel in alt.IN_LADDER:
            assert lad.loc[kernel, "gflops"] == recorded.loc[kernel, "gflops"]
            assert lad.loc[kernel, "chapter"] == ladder.INSTEAD_RUNG
            assert lad.loc[kernel, "pct_of_cublas"] == 100 * recorded.loc[kernel, "gflops"] / reference
        assert list(lad.index[-len(alt.IN_LADDER) - 1:]) == ["cublas", *alt.IN_LADDER]
    assert alt.ladder_rows("nvidia-no-such-gpu").empty


def test_the_chapters_numbers_and_table_from_each_recorded_gpu():
    from book.harness import results
    for gpu in ("nvidia-h100-80gb-hbm3", "nvidia-h200"):
        df = results.load(alt.FILE, gpu)
        said = alt.numbers(df)
        at = alt.at_ladder_size(df).set_index("kernel")
        assert said["x_triton_fp32"] == at.loc["triton_fp32", "x_cublas"]
        assert said["alt_sms"] == results.load_device(gpu)["sms"]
        assert 0 < said["x_triton_fp32_decode"] < said["x_triton_fp32"]  # where Triton falls
        assert said["x_triton_fp32_large_min"] <= said["x_triton_fp32"] <= said["x_triton_fp32_large_max"]
        t = alt.table(df)
        assert t.index[0] == "cuBLAS SGEMM" and len(t) == len(alt.ALTERNATIVES) + 1
        assert set(t.arithmetic) == set(alt.ARITHMETIC.values())
