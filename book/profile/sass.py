"""Reading the machine code (SASS) the GPU runs (chapter 8).

:func:`disassemble` compiles one registered kernel with ``nvcc -cubin`` for this GPU's
architecture, with the same defines as the book's NVRTC build, and returns ``cuobjdump -sass``'s
listing. :func:`opcode_counts` counts the instructions of a listing by opcode (``LDS.128`` and
``LDS`` apart, since the width is the point). These are static counts: each instruction of the
listing once, however often it runs; the FFMA share of what actually runs comes from ncu.
:func:`opcodes` is what a notebook calls: measured on a GPU host with the CUDA toolkit (and saved
with the chapter's results), else the counts recorded on a GPU.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pandas as pd

from ..launch import cuda_source
from ..launch.runtime import BACKEND

WATCH = ["FFMA", "LDS.128", "LDS", "STS.128", "STS", "LDG.E.128", "LDG.E", "LDGSTS.E",
         "LDGSTS.E.BYPASS.128", "STG.E.128", "STG.E", "BAR.SYNC.DEFER_BLOCKING", "LDL", "STL"]
"""The opcodes chapter 8 reads: FMAs, shared and global loads and stores by width, barriers, and
local memory (LDL and STL of any width: spills). A load's ``.CONSTANT`` suffix (the read-only
cache hint that ``const __restrict__`` allows) is dropped, so ``LDG.E.128`` counts both."""

_LINE = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")


def _tool(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/local/cuda/bin/{name}",)
                                       if os.path.exists(p)), None)


def disassemble(spec) -> str:
    """cuobjdump -sass of ``spec``'s kernel, built by nvcc for this GPU (needs a GPU and nvcc)."""
    import cupy
    nvcc, cuobjdump = _tool("nvcc"), _tool("cuobjdump")
    if BACKEND != "gpu" or not nvcc or not cuobjdump:
        raise RuntimeError("disassembling needs a GPU, nvcc and cuobjdump")
    arch = "sm_" + cupy.cuda.Device().compute_capability
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        source = cuda_source.resolve(spec.source)
        defines = [f"-D{k}={v}" for k, v in spec.defines]
        subprocess.run([nvcc, "-cubin", f"-arch={arch}", f"-I{source.parent}", *defines, "-o",
                        str(cubin), str(source)], check=True, capture_output=True, text=True)
        out = subprocess.run([cuobjdump, "-sass", "-fun", spec.name, str(cubin)], check=True,
                             capture_output=True, text=True)
    return out.stdout


def opcode_counts(listing: str) -> Counter:
    """Instructions of a SASS listing by opcode (predicates dropped, width suffixes kept)."""
    return Counter(m.group(1).removesuffix(".CONSTANT") for line in listing.splitlines()
                   if (m := _LINE.match(line)))


def measure(specs) -> pd.DataFrame:
    """One row per kernel: the WATCH opcodes' static counts and the listing's total."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:  # one nvcc per kernel, at once
        listings = list(pool.map(disassemble, specs))
    rows = []
    for spec, listing in zip(specs, listings):
        counts = opcode_counts(listing)
        row = {op: counts.get(op, 0) for op in WATCH}
        for local in ("LDL", "STL"):
            row[local] = sum(c for op, c in counts.items() if op.split(".")[0] == local)
        rows.append({"kernel": spec.id, "instructions": sum(counts.values()), **row})
    return pd.DataFrame(rows)


def opcodes(specs, name: str) -> pd.DataFrame | None:
    """Static opcode counts of these kernels: measured now (GPU host with nvcc; saved as results
    ``name``), else recorded on a GPU, else None. Prints where they come from."""
    from ..harness import results
    if BACKEND == "gpu" and _tool("nvcc") and _tool("cuobjdump"):
        df = results.keep(measure(specs), name)
        print(f"SASS read now, built for {df.device.iloc[0]}.")
        return df
    return results.recorded_or_none(name, "No GPU toolkit here: SASS counts {source}.",
                                    "No GPU toolkit here and no recorded SASS counts.")
