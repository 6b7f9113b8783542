"""Chapter 11's comparison with what a reader would use instead (book.studies.alternatives):
its pseudo-kernels skip with a reason where PyTorch, Triton or a GPU is missing, and its rounds
reduce to one row per kernel and shape, a failed check kept as such; BOOK_ALTERNATIVES=recorded
shows the records on any machine; the ladder reads the same records as the chapter."""
import pandas as pd
import pytest

from book import BACKEND
from book.studies import alternatives as alt


def test_each_alternative_says_why_it_cannot_run_here():
    from book.registry import device_cc
    for a in alt.ALTERNATIVES:
        why = a.why_not_here()
        if BACKEND != "gpu":
            assert why == "needs a GPU" if a.gpu_only else why is None or "9.0" in why
        elif device_cc() < a.min_cc:
            assert why.startswith(f"needs compute capability {a.min_cc[0]}.{a.min_cc[1]}")
        elif any(not alt.have(m) for m in a.needs):
            assert "not installed here" in why


LIVE = {(7, 0): {"book_sgemm", "torch_fp32", "book_auto"},
        (7, 5): {"book_sgemm", "torch_fp32", "book_auto"},
        (8, 0): {"book_sgemm", "torch_fp32", "triton_fp32", "triton_tf32x3", "torch_tf32",
                 "book_auto"},
        (9, 0): {a.id for a in alt.ALTERNATIVES},
        (12, 0): {"book_sgemm", "torch_fp32", "triton_fp32", "triton_tf32x3", "torch_tf32",
                  "book_auto"}}
"""What chapter 11 times live on a GPU of each compute capability with PyTorch and Triton
installed (Colab's T4 is 7.5; an A100 8.0, an RTX 30xx 8.6, an L4 or RTX 40xx 8.9; 12.0 a
Blackwell card, where wgmma, sm_90a only, does not run)."""
LIVE[(8, 6)] = LIVE[(8, 9)] = LIVE[(8, 0)]


def _as_gpu(monkeypatch, cc, installed=("torch", "triton")):
    """This machine as a GPU host of compute capability ``cc`` with ``installed`` importable."""
    import book.registry as registry
    monkeypatch.setattr(alt, "BACKEND", "gpu")
    monkeypatch.setattr(alt, "have", lambda module: module in installed)
    monkeypatch.setattr(alt, "torch_has_cuda", lambda: True)
    monkeypatch.setattr(alt, "device_cc", lambda: cc)
    monkeypatch.setattr(registry, "device_cc", lambda: cc)
    monkeypatch.delenv(alt.SWITCH, raising=False)


@pytest.mark.parametrize("cc", sorted(LIVE))
def test_each_gpu_times_what_it_runs_and_shows_the_rest_as_recorded(monkeypatch, capsys, cc):
    """With PyTorch and Triton installed (as on Colab), a GPU of each compute capability times
    only what it runs, and the chapter shows every other alternative from a GPU that recorded
    it, with a line naming them and why; the table and the prose say which rows are recorded."""
    from book.harness import results
    _as_gpu(monkeypatch, cc)
    here, absent = alt.selection()
    assert {a.id for a in here} == LIVE[cc]
    assert set(absent) == {a.id for a in alt.ALTERNATIVES} - LIVE[cc]
    assert all(why.startswith("needs compute capability") for why in absent.values())
    h100 = results.load(alt.FILE, "nvidia-h100-80gb-hbm3")
    fake = "NVIDIA Tesla T4" if cc < (8, 0) else "NVIDIA A100"
    if "book_auto" not in set(h100.kernel):  # (an H100 record from before precision='auto':
        h100 = pd.concat([h100, h100[h100.kernel == "book_sgemm"].assign(  # its rows stand in)
            kernel="book_auto", chosen="fp32")], ignore_index=True)
    measured = lambda *a, specs, **k: (h100[h100.kernel.isin(  # noqa: E731
        [s.id for s in specs] + ["cublas"])].drop(columns=["device", "date"]).reset_index(drop=True))
    monkeypatch.setattr(alt, "measure", measured)
    monkeypatch.setattr(alt.results, "saving", lambda: False)
    monkeypatch.setattr(alt, "device_report", lambda: {"name": fake, "sms": 40})
    monkeypatch.setattr(alt.results, "device_report", lambda: {"name": fake, "sms": 40})
    monkeypatch.setattr(alt.results, "gpu_slug", lambda *a: "no-such-gpu")
    df = alt.recorded_or_live()
    said = capsys.readouterr().out
    assert said.startswith(f"The comparison with Triton and PyTorch (the last section) was "
                           f"measured in this run on {fake}") and said.count("\n") == 1
    live = df[df.device == fake]
    assert set(live.kernel) == LIVE[cc] | {"cublas"}
    assert set(df.kernel) == {a.id for a in alt.ALTERNATIVES} | {"cublas"}
    assert (df[~alt.measured_here(df)].device == "NVIDIA H100 80GB HBM3").all()
    for kernel, why in absent.items():
        assert why.split("; this GPU counts as")[0] in said and alt.numbers(df)[f"where_{kernel}"] == " (recorded on the H100)"
    table = alt.table(df)
    if absent:
        assert set(table["measured on"]) == {results.short_name(fake), "H100"}
    else:
        assert "measured on" not in table and "not run here" not in said
    words = alt.numbers(df)
    assert words["alt_device"] == results.short_name(fake)
    assert words["tf32x3_where"] == ("" if cc == (9, 0) else
                                     " (the book's recorded on the H100: this GPU cannot run it)"
                                     if cc >= (8, 0) else
                                     " (both recorded on the H100: this GPU runs neither)")
    alt.plot(df)


def test_without_the_libraries_a_gpu_still_times_the_book_and_cublas(monkeypatch):
    _as_gpu(monkeypatch, (7, 5), installed=())
    here, absent = alt.selection()
    assert [a.id for a in here] == ["book_sgemm", "book_auto"]
    assert absent["torch_fp32"] == "needs torch, not installed here"
    monkeypatch.setattr(alt, "torch_has_cuda", lambda: False)
    monkeypatch.setattr(alt, "have", lambda module: True)
    _, absent = alt.selection()
    assert absent["torch_fp32"].startswith("needs PyTorch built with CUDA")


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


AUTO_RECORDED = ("nvidia-h200",)
"""The GPUs whose chapter 11 record holds precision='auto' (the H100's predates it)."""


def test_the_figure_and_the_ladder_rows_from_each_recorded_gpu():
    """The chapter's figure passes the book's figure rules for each GPU's recorded results, and
    the ladder's rows hold cuBLAS and the six alternatives at n = 4096, each checked."""
    from book.harness import results
    for gpu in ("nvidia-h100-80gb-hbm3", "nvidia-h200"):
        df = results.load(alt.FILE, gpu)
        alt.plot(df)
        rows = alt.at_ladder_size(df)
        since = set() if gpu in AUTO_RECORDED else {"book_auto"}
        assert set(rows.kernel) == {a.id for a in alt.ALTERNATIVES} - since | {"cublas"}
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


def test_the_switch_refuses_an_unknown_value(monkeypatch):
    monkeypatch.delenv(alt.SWITCH, raising=False)
    monkeypatch.setattr(alt, "BACKEND", "gpu")
    assert alt.why_recorded() is None
    monkeypatch.setenv(alt.SWITCH, "auto")
    assert alt.why_recorded() is None
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
        if gpu in AUTO_RECORDED:  # precision='auto': chapter 12's last rung, the same record
            assert lad.loc[alt.AUTO_RUNG, "chapter"] == 12
            assert lad.loc[alt.AUTO_RUNG, "gflops"] == recorded.loc[alt.AUTO_RUNG, "gflops"]
        else:
            assert alt.AUTO_RUNG not in lad.index
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
        auto = gpu in AUTO_RECORDED
        assert t.index[0] == "cuBLAS SGEMM" and len(t) == len(alt.ALTERNATIVES) + auto
        assert set(t.arithmetic) == {"FP32 FMAs", "3xTF32", "TF32"} | (
            {f"auto: {alt.ARITHMETIC[said_chosen]}" for said_chosen in at.chosen.dropna()})
        if auto:  # (the method it chose at n, and where it took each)
            assert said["auto_at_n"] == alt.ARITHMETIC[at.loc["book_auto", "chosen"]]
            assert said["x_book_auto"] == at.loc["book_auto", "x_cublas"]
            assert said["auto_took"].startswith(("FP32 FMAs at ", "3xTF32 at ", "Ozaki"))
