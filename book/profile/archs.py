"""Which GPUs each kernel builds for: NVRTC compiles every registered kernel for the architectures
readers own, no GPU needed (``python benchmarks/compile_matrix.py`` prints the table).

A kernel must compile for every architecture at or above its registry entry's ``min_cc`` and fail
to compile below it (so the stated minimum is the real one); CI checks both
(tests/test_archs.py). The registers and spills ptxas reports differ per architecture, and a
cp.async pipeline that fits an H100's shared memory may not fit an RTX 4090's: :func:`matrix`
reports both.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pandas as pd

from ..launch import compiler_log, cuda_source
from ..launch.cuda_source import KernelSourceError
from ..registry import cc_text

ARCHS = {"sm_70": "V100", "sm_75": "T4, RTX 20xx", "sm_80": "A100", "sm_86": "RTX 30xx, A10",
         "sm_89": "L4, RTX 40xx", "sm_90": "H100, H200"}
"""The architectures the book is compiled for, with GPUs that have them."""

SHARED_OPTIN_BYTES = {"sm_70": 96 * 1024, "sm_75": 64 * 1024, "sm_80": 163 * 1024,
                      "sm_86": 99 * 1024, "sm_89": 99 * 1024, "sm_90": 227 * 1024}
"""Shared memory one block may opt in to, per architecture (CUDA C Programming Guide, "Technical
Specifications per Compute Capability")."""


def arch_cc(arch: str) -> tuple[int, int]:
    """'sm_86' -> (8, 6)."""
    return int(arch[3:-1]), int(arch[-1])


def supported_archs() -> list[str]:
    """The architectures of ARCHS that this machine's NVRTC can compile for (CUDA 13 dropped
    sm_70); empty without NVRTC."""
    try:
        from cupy.cuda import nvrtc
        have = set(nvrtc.getSupportedArchs())
    except Exception:
        return []
    return [a for a in ARCHS if int(a[3:]) in have]


def _compile(source: str, defines: tuple, options: tuple, arch: str) -> dict | str:
    """ptxas's report for every kernel of one module built for ``arch``, or the first error line
    (remembered: each module is compiled once per architecture and process)."""
    key = (source, defines, options, arch)
    if key not in _built:
        path = cuda_source.resolve(source)
        text = cuda_source.read_source(path)
        defaults = cuda_source.default_defines(text)  # (as load_kernel: the same build without)
        flags = tuple(f"-D{k}={v}" for k, v in defines if defaults.get(str(k)) != str(v)) + options
        try:
            _built[key] = compiler_log.ptxas_report(text, path.name, flags, arch)
        except KernelSourceError as exc:
            errors = [line for line in str(exc).splitlines() if "error" in line]
            _built[key] = (errors or str(exc).splitlines()[-1:])[0].strip()
        except RuntimeError:  # it compiled, but this NVRTC (CUDA 13) gives no resource report
            _built[key] = {}
    return _built[key]


_built: dict[tuple, dict | str] = {}


def compile_for(spec, arch: str) -> dict:
    """One kernel built for one architecture: whether it should and did compile, its registers
    and spills, and whether its shared memory fits that architecture's limit."""
    expected = arch_cc(arch) >= spec.min_cc
    # A kernel that names its own target (wgmma: -arch=sm_90a) is built for that target where it
    # is a variant of `arch`, and for plain `arch` elsewhere, where it must fail.
    pinned = [o.split("=", 1)[1] for o in spec.options if o.startswith("-arch=")]
    options = tuple(o for o in spec.options if not o.startswith("-arch="))
    target = pinned[0] if pinned and pinned[0].rstrip("a") == arch else arch
    if pinned and target == arch:
        expected = False
    out = _compile(spec.source, spec.defines, options, target)
    row = {"kernel": spec.id, "arch": arch, "min_cc": cc_text(spec.min_cc),
           "expected": "compiles" if expected else "fails", "compiles": isinstance(out, dict)}
    if isinstance(out, dict) and spec.name in out:
        report = out[spec.name]
        row.update(registers=report["num_regs"], spill_stores=report["spill_stores"],
                   spill_loads=report["spill_loads"],
                   shared_fits=report["shared_size_bytes"] + spec.stage_bytes
                   <= SHARED_OPTIN_BYTES[arch])
    else:
        row["error"] = out
    return row


def edge_archs(spec, archs) -> list[str]:
    """The architectures that pin down a kernel's minimum: the newest one below it (where it must
    fail), the oldest at or above it, and the newest of all. The features a kernel needs only
    ever arrive with newer architectures, so between the oldest and the newest it builds too."""
    below = [a for a in archs if arch_cc(a) < spec.min_cc]
    above = [a for a in archs if arch_cc(a) >= spec.min_cc]
    return list(dict.fromkeys(below[-1:] + above[:1] + archs[-1:]))


def matrix(specs, archs=None, edges: bool = False) -> pd.DataFrame:
    """:func:`compile_for` every kernel for every architecture (default: those NVRTC supports),
    or with ``edges`` only for its :func:`edge_archs`; each distinct module is compiled once per
    architecture, on every core."""
    specs, archs = list(specs), list(archs or supported_archs())
    pairs = [(s, a) for s in specs for a in (edge_archs(s, archs) if edges else archs)]
    keys = dict.fromkeys((s.source, s.defines, s.options, a) for s, a in pairs)
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:  # NVRTC compiles in parallel
        list(pool.map(lambda key: _compile(*key), keys))  # each result lands in _built
    return pd.DataFrame([compile_for(s, a) for s, a in pairs])
