"""Chapter 12's studies (book.studies.ozaki_lab) on whichever backend runs them: every number of
moduli checked and timed beside cuBLAS, the four passes timed and summing to about the call, the
error on chapter 10's input families (the emulator: small sizes)."""
import numpy as np

from book.studies import ozaki_lab as L


def test_moduli_checks_and_times_every_count_beside_cublas():
    df = L.moduli(L.CPU_SHAPES, ns=(6, 8), rounds=1)
    ok = df[df.status == "ok"].set_index("kernel")
    assert {"ozaki_n6", "ozaki_n8", "ozaki", "book_sgemm", "cublas"} <= set(ok.index)
    assert ok.loc["ozaki_n8", "rel_error"] < ok.loc["ozaki_n6", "rel_error"]
    assert ok.loc["ozaki_n6", "moduli"] == 6 and ok.loc["ozaki", "moduli"] == 9
    assert (ok.x_cublas > 0).all()


def test_passes_are_timed_one_by_one_after_a_check():
    df = L.passes([(40, 30, 50)]).set_index("pass")
    tiled = ["products, mma.sync tiled"] if L.products_kernel() == "wgmma" else []
    assert list(df.index) == ["magnitudes", "residues", "products", "reconstruct", "the call",
                              "cuBLAS SGEMM"] + tiled
    assert (df.time_ms > 0).all() and df.loc["the call", "of_call"] == 1.0
    assert df.rel_error.iloc[0] < 1e-6


def test_families_errors_of_the_scheme_stay_below_sgemm_s():
    df = L.families().pivot_table(index=["family", "scale"], columns="kernel", values="rel_error")
    assert len(df) == 14 + len(L.SPREADS) and np.isfinite(df.values).all()
    assert (df.ozaki <= df.book_sgemm).all() and (df.ozaki_n8 <= df.ozaki_n7).all()


def test_the_figures_keep_the_book_s_rules():
    m = L.moduli(L.CPU_SHAPES, ns=(7, 8), rounds=1).assign(device="CPU emulator")
    assert L.plot_moduli(m) is not None
    assert L.plot_passes(L.passes([(40, 30, 50)])) is not None


def test_the_int8_ceiling_says_why_it_is_not_measured_here_or_measures_it():
    df = L.int8_ceiling((256,), iters=2)
    assert len(df) == 3 and df.what.iloc[0].startswith("wgmma")
    assert df.what.iloc[1].startswith("mma.sync") and df.status.iloc[1] == "ok"
    for _, row in df.iterrows():
        assert row.status == "ok" and row.tops > 0 or row.status.startswith("skipped")
