"""The emulator's builds cost little: its header precompiled once per header and flags (g++'s
.gch), which every build of a kernel takes, with the launch's scheduler compiled once beside it
(cuda_emu_runtime.o, linked into each library), and the compiler's probe kept between processes."""
import subprocess

import pytest

from book import BACKEND

pytestmark = pytest.mark.skipif(BACKEND != "cpu", reason="the CPU emulator's builds")


@pytest.mark.parametrize("check", [False, True], ids=["plain", "check-mode"])
def test_a_kernels_build_takes_the_precompiled_header(tmp_path, check):
    """g++ -H marks the .gch it takes with "!" ("x": found but not valid for these options):
    a flag added to the builds but not to the header's breaks this, and every build would read
    the header again."""
    from book.launch import emulator
    cmd, version = emulator.compiler()
    if "clang" in version.lower():
        pytest.skip("clang (zig's c++): no precompiled header")
    base = emulator.base_flags(check)
    pch = emulator.precompiled_header(base)
    assert pch and emulator.precompiled_header(base) == pch
    unit = tmp_path / "unit.cpp"
    unit.write_text('#include "cuda_emu.h"\n'
                    'extern "C" __global__ void k(float* x) { x[threadIdx.x] = TILE; }\n')
    define, include, runtime = pch  # (the runtime object: linked, so not for -fsyntax-only)
    assert define == emulator.EXTERN_RUNTIME and runtime.endswith("cuda_emu_runtime.o")
    proc = subprocess.run([*cmd, define, include, *base, "-DTILE=16", "-fsyntax-only", "-H", str(unit)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0] == f"! {include[2:]}/cuda_emu.h.gch", proc.stderr[:300]


def test_the_compiler_probe_is_kept_until_the_compilers_version_changes(monkeypatch):
    from book.launch import emulator
    found = emulator.compiler()
    probes = []
    monkeypatch.setattr(emulator, "_probe", lambda candidates: probes.append(1) or found)
    emulator.compiler.cache_clear()  # a new process, as far as the answer can tell
    try:
        assert emulator.compiler() == found and not probes  # read from the cache
        emulator.compiler.cache_clear()
        monkeypatch.setattr(emulator, "_version_line", lambda cmd: "another version")
        assert emulator.compiler() == found and probes == [1]  # probed again
    finally:
        emulator.compiler.cache_clear()
