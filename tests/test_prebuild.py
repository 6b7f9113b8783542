"""book.blas.prebuild: every build book.sgemm may run, compiled ahead into the cubin cache that a
GPU's load reads (NVRTC needs no GPU)."""
import pytest

from book.blas import prebuild
from book.blas.plans import Packed, Plan, Skinny, builds_for, candidates


@pytest.mark.parametrize("cc", [(9, 0), (8, 0)])
def test_every_build_of_every_candidate_is_listed(cc, monkeypatch):
    every = {(s, tuple(sorted(d.items())), o) for s, d, o in prebuild.every_build(cc)}
    monkeypatch.setenv("BOOK_ASSUME_CC", f"{cc[0]}.{cc[1]}")
    for M, N, K, layout in [(300, 200, 100, "nn"), (4093, 77, 513, "tn"), (9, 5000, 3001, "nt"),
                            (2048, 2048, 2048, "tt"), (5, 3, 70000, "nn")]:
        plans = candidates(M, N, K, layout=layout)
        assert {type(p) for p in plans} & {Plan, Skinny, Packed}
        for s, d, o in builds_for(plans, M, N, layout, K):
            assert (str(s), tuple(sorted(d.items())), tuple(o)) in every, (M, N, K, layout, s, d)
    sources = {s for s, _, _ in every}
    assert {"09_sgemm.cu", "09_skinny.cu", "09_splitk.cu", "09_transpose.cu", "12_ozaki.cu"} <= sources
    assert ("10_wgmma.cu" in sources) == (cc == (9, 0))


def test_below_8_0_the_fallback_alone():
    assert [s for s, _, _ in prebuild.every_build((7, 5))] == ["08_warptile.cu"]


def test_a_prebuilt_cubin_is_where_a_load_reads_it(tmp_path, monkeypatch):
    """Compiled for sm_80 on a machine without a GPU: a cubin (ELF) in the cache, under the key
    a GPU's load of the same build computes; a second run finds it there."""
    pytest.importorskip("cupy")
    from book.launch.runtime import build_marker, gpu_module
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path))
    build = ("02_naive.cu", {}, ())
    try:
        done = prebuild.prebuild("80", [build], workers=1)
    except Exception as exc:  # noqa: BLE001 -- no NVRTC library here
        pytest.skip(f"NVRTC is not available: {exc}")
    assert done["compiled"] == 1 and not done["failed"], done
    path, notes = gpu_module(*build)._paths("80")
    assert path.read_bytes()[:4] == b"\x7fELF" and notes.exists()
    assert build_marker(*build, arch="80").read_text() == path.name  # (found without a scan)
    assert prebuild.prebuild("80", [build])["already there"] == 1
