"""Every GPU from compute capability 7.0 on: each kernel compiles for every architecture at or above
its registry entry's min_cc and fails below it; a device below is refused with a clear message."""
import numpy as np
import pytest

from book import LaunchError
from book.profile.archs import ARCHS, matrix, supported_archs
from book.harness.measure import check_kernels, sweep
from book.registry import KERNELS, async_tile, device_cc, find_kernel, usable
from book.registry import TUNING_SPACE
from conftest import KERNEL_REPRESENTATIVES, sweep_params

ASYNC = KERNELS["async_128x256x16_w64x64_n4_8x4_t256_s4_pad4_m1_serp"]


@pytest.fixture(scope="module", params=sweep_params(["representatives", "the others"], ["representatives"]))
def built(request):
    """Each kernel at the edges of its minimum (benchmarks/compile_matrix.py builds them all):
    make test, the representatives of conftest.KERNEL_REPRESENTATIVES and the buggy kernels;
    make test-sweep, the other kernels and chapter 8's tuning space."""
    archs = supported_archs()
    if not archs:
        pytest.skip("NVRTC is not available")
    specs = [s for s in KERNELS.values() if s.id in KERNEL_REPRESENTATIVES or s.bug]
    if request.param != "representatives":
        specs = ([s for s in KERNELS.values() if s not in specs]
                 + [async_tile(**c) for c in TUNING_SPACE])
    return matrix(specs, archs, edges=True)


def test_a_kernel_is_built_at_the_edges_of_its_minimum():
    from book.profile.archs import edge_archs
    archs = list(ARCHS)
    assert edge_archs(KERNELS["naive16"], archs) == ["sm_70", "sm_90"]
    assert edge_archs(ASYNC, archs) == ["sm_75", "sm_80", "sm_90"]
    assert edge_archs(ASYNC, archs[1:]) == ["sm_75", "sm_80", "sm_90"]
    assert edge_archs(ASYNC, ["sm_80", "sm_86"]) == ["sm_80", "sm_86"]


def test_nvrtc_covers_every_architecture_of_the_book():
    from cupy.cuda import nvrtc
    if nvrtc.getVersion()[0] != 12:  # CUDA 13 dropped sm_70; CI installs CUDA 12's NVRTC
        pytest.skip(f"NVRTC {nvrtc.getVersion()} is not CUDA 12's")
    assert supported_archs() == list(ARCHS)


def test_each_kernel_compiles_exactly_from_its_minimum_on(built):
    wrong = built[(built.expected == "compiles") != built.compiles]
    assert wrong.empty, wrong[["kernel", "arch", "min_cc", "error"]].to_string()
    below = built[built.expected == "fails"]
    marker = {"cp.async": "cp.async", "TF32 mma.sync": ".tf32", "wgmma, sm_90a": "sm_90a"}
    named = below.apply(lambda r: marker[find_kernel(r.kernel).needs] in r.error, axis=1)
    assert len(below) and named.all(), below[~named][["kernel", "arch", "error"]].to_string()


def test_registers_are_reported_for_every_build(built):
    from cupy.cuda import nvrtc
    ok = built[built.compiles]
    registers = ok.registers if "registers" in ok else ok.kernel.map(lambda _: float("nan"))
    if nvrtc.getVersion()[0] >= 13:  # CUDA 13's NVRTC drops ptxas's report for some builds
        registers = registers.dropna()
        if registers.empty:
            pytest.skip("this NVRTC gives no ptxas report")
    assert registers.notna().all() and (registers > 0).all() and (registers <= 255).all()
    counts = ok.groupby("kernel").arch.count()
    least = counts.index.map(lambda k: 2 if find_kernel(k).min_cc <= (8, 0) else 1)
    assert (counts >= least).all()  # its minimum and sm_90; wgmma only on sm_90 (as sm_90a)


def test_a_device_below_the_minimum_refuses_with_a_clear_message(monkeypatch, capsys):
    monkeypatch.setenv("BOOK_ASSUME_CC", "7.5")
    assert device_cc() == (7, 5)
    with pytest.raises(LaunchError, match=r"async_\w+ cannot run here: it needs compute capability "
                                          r"8.0 \(cp.async\); this device counts as 7.5"):
        ASYNC.kernel()
    kept = usable([KERNELS["naive16"], ASYNC])
    assert [s.id for s in kept] == ["naive16"]
    assert capsys.readouterr().out.count("\n") == 1  # one line names what is skipped and why
    df = sweep([KERNELS["naive16"], ASYNC], [(33, 17, 9)], baseline=False)
    assert list(df.status) == ["ok", "skipped (needs compute capability 8.0 (cp.async); "
                                     "this device counts as 7.5)"]
    assert np.isnan(df.gflops.iloc[1])
    table = check_kernels([KERNELS["naive16"], ASYNC], [(33, 17, 9)])
    assert list(table.iloc[:, 0]) == ["ok", "skipped"]


def test_assume_cc_only_lowers_and_must_be_a_compute_capability(monkeypatch):
    monkeypatch.setenv("BOOK_ASSUME_CC", "12.0")
    assert device_cc() <= (12, 0) and ASYNC.why_not_here() is None
    monkeypatch.setenv("BOOK_ASSUME_CC", "sm_75")
    with pytest.raises(ValueError, match="BOOK_ASSUME_CC='sm_75': write a compute capability"):
        device_cc()


def test_chapter_8_runs_on_a_gpu_below_its_cp_async_kernels(monkeypatch):
    """A T4 (7.5) executes chapter 8 without a traceback: the cp.async kernels and their tuning
    space are skipped with one line each, the rest runs (here on the emulator)."""
    import nbformat
    from nbclient import NotebookClient
    from conftest import ROOT
    monkeypatch.setenv("BOOK_ASSUME_CC", "7.5")
    monkeypatch.setenv("BOOK_SAVE_RESULTS", "0")
    nb = nbformat.read(ROOT / "notebooks" / "08_toward_cublas.ipynb", as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert text.count("Skipped on ") == 2  # the steps, and the tuning space
    assert "needs compute capability 8.0 (cp.async); this device counts as 7.5" in text
