"""Chapter 7 on whichever backend runs: Kahan summation beats plain float32 accumulation, and the
leading-dimension kernels are right on padded rows (which hold NaN) and never touch the padding."""
import numpy as np
import pytest

from book import LaunchError, xp
from book.models.accuracy import error_vs_k, growth, inputs, max_relative_error, without_fma
from book.harness.measure import padded, padded_length, sweep
from book.registry import KERNELS, KernelSpec
from conftest import ROOT

BROKEN = str(ROOT / "tests" / "kernels" / "broken.cu")
LD_KERNELS = [s for s in KERNELS.values() if s.leading_dims]
ODD = [(1, 1, 1), (33, 17, 9), (20, 37, 50), (65, 64, 63)]


def broken_ld(name):
    return KernelSpec(name, name, 0, BROKEN, name, (16, 16), (16, 16), leading_dims=True)


def test_kahan_beats_plain_accumulation():
    plain, kahan = KERNELS["naive16"], KERNELS["kahan_naive16"]
    df = error_vs_k([plain, kahan, KERNELS["kahan_tiled16"]], [64, 256, 1024], 16, 16,
                    kinds=["positive"], fmad=(True,), baseline=False)
    at = df[df.K == 1024].set_index("kernel").rel_error
    assert at["float32_exact"] < at["kahan_naive16"] < at["float32_exact"] * 3, at  # near the floor
    assert at["kahan_naive16"] < at["naive16"] / 4, at
    assert at["kahan_tiled16"] < at["naive16"] / 4, at
    assert growth(df, "naive16", "positive") > 0.3        # the plain error grows with K ...
    assert abs(growth(df, "kahan_naive16", "positive")) < 0.2  # ... the compensated one does not


def test_without_fma_compiles_and_is_checked():
    spec = without_fma(KERNELS["kahan_tiled16"])
    assert spec.options == ("--fmad=false",) and spec.id == "kahan_tiled16"
    df = error_vs_k([KERNELS["kahan_tiled16"]], [100], 17, 9, kinds=["mixed"], fmad=(False,),
                    baseline=False)
    assert df.fmad.tolist() == ["exact", "False"] and (df.rel_error < 1e-6).all()
    assert df.rel_error.iloc[0] <= df.rel_error.iloc[1]  # nothing beats the rounded exact product


def test_error_measures_see_nan_and_bad_kind():
    A, B = inputs("positive", 4, 3, 5, seed=1)
    ref = A.astype(xp.float64) @ B.astype(xp.float64)
    out = (A @ B).copy()
    assert max_relative_error(out, ref) < 1e-6
    out[0, 0] = xp.nan
    assert max_relative_error(out, ref) == float("inf")
    with pytest.raises(ValueError, match="input kind 'negative' is not one of"):
        inputs("negative", 2, 2, 2)


@pytest.mark.parametrize("align", [1, 8, 32])
@pytest.mark.parametrize("M, N, K", ODD)
def test_leading_dimension_kernels_on_padded_rows(align, M, N, K):
    df = sweep(LD_KERNELS, [(M, N, K)], baseline=False, ld_align=align)
    assert (df.status == "ok").all(), df[["kernel", "status", "rel_error"]]
    assert (df.lda == padded_length(K, align)).all() and (df.ldc == padded_length(N, align)).all()


def test_padding_catches_kernels_that_ignore_it():
    spec, writer = broken_ld("matmul_ignores_ld"), broken_ld("matmul_writes_padding")
    assert (sweep([spec, writer], [(20, 37, 50)], baseline=False).status == "ok").all()
    df = sweep([spec, writer], [(20, 37, 50)], baseline=False, ld_align=8)
    assert (df.status == "FAILED check").all() and "time_ms" not in df  # never timed


def test_padded_copies_and_poisons():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    p = padded(xp.asarray(a), 4)
    assert p.shape == (2, 4) and bool(xp.isnan(p[:, 3]).all())
    np.testing.assert_array_equal(np.asarray(p[:, :3].tolist()), a)
    assert padded(a, 1) is a


def test_shapes_are_checked():
    A, B = inputs("mixed", 8, 8, 8)
    C = xp.empty((8, 8), dtype=xp.float32)
    with pytest.raises(LaunchError, match=r"tiled16: A has shape \(8, 8\); for M=8, N=8, K=9 it "
                                          r"must be \(8, 9\)"):
        KERNELS["tiled16"].launch(A, B, C, 8, 8, 9)
    with pytest.raises(LaunchError, match=r"tiled_ld16: B has shape \(8, 8\); .* must be \(8, >= 9\)"):
        KERNELS["tiled_ld16"].launch(A, B, xp.empty((8, 9), dtype=xp.float32), 8, 9, 8)
    with pytest.raises(ValueError, match="ld_align > 1 needs kernels with leading_dims"):
        sweep([KERNELS["tiled16"]], [8], baseline=False, ld_align=8)
