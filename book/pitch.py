"""Pitched rows (chapter 7): where rows start, and what aligning them changes.

Source 004 allocates its matrices with ``cudaMallocPitch``, which rounds every row up to a pitch
the driver chooses, so that each row starts on an aligned address. CuPy has no wrapper for it;
the book allocates a (rows, ld) array itself, with ld rounded up to a multiple of the device's
``texturePitchAlignment`` (the alignment the device requires of pitched 2D memory), and asks the
driver (``cuMemAllocPitch``, which ``cudaMallocPitch`` calls) which pitch it would have chosen.
"""
from __future__ import annotations

import ctypes

import pandas as pd

from .measure import padded_length
from .runtime import BACKEND, cupy

CPU_ALIGNMENT = 128
"""Bytes used for the texture pitch alignment without a GPU: one 128-byte cache line."""


def texture_pitch_alignment() -> int:
    """Bytes: the device's ``cudaDevAttrTexturePitchAlignment`` (CPU_ALIGNMENT without a GPU)."""
    if BACKEND != "gpu":
        return CPU_ALIGNMENT
    runtime = cupy.cuda.runtime
    return runtime.deviceGetAttribute(runtime.cudaDevAttrTexturePitchAlignment,
                                      cupy.cuda.Device().id)


def driver_pitch(width_bytes: int, rows: int, element_bytes: int = 4) -> int | None:
    """Bytes: the pitch ``cuMemAllocPitch`` chooses for ``rows`` rows of ``width_bytes`` (the
    allocation is freed at once); None without a GPU or if the driver refuses."""
    if BACKEND != "gpu":
        return None
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    cupy.zeros(1)  # makes sure the primary context is current on this thread
    ptr, pitch = ctypes.c_uint64(), ctypes.c_size_t()
    rc = lib.cuMemAllocPitch_v2(ctypes.byref(ptr), ctypes.byref(pitch), ctypes.c_size_t(width_bytes),
                                ctypes.c_size_t(rows), ctypes.c_uint(element_bytes))
    if rc != 0:
        return None
    lib.cuMemFree_v2(ptr)
    return pitch.value


def pitch_table(sizes) -> pd.DataFrame:
    """Per n: the row in bytes, the pitch rounded to texturePitchAlignment, the driver's pitch."""
    align = texture_pitch_alignment()
    rows = []
    for n in sizes:
        rows.append({"n": n, "row_bytes": 4 * n,
                     "pitch_texture_alignment": padded_length(4 * n, align),
                     "pitch_cuMemAllocPitch": driver_pitch(4 * n, n),
                     "row_starts_on_128B": (4 * n) % 128 == 0})
    return pd.DataFrame(rows).set_index("n")


def driver_alignment() -> int | None:
    """Bytes: the granularity of the driver's pitches (the pitch it gives a 4-byte row)."""
    return driver_pitch(4, 2)


def layouts() -> dict[str, int]:
    """Leading-dimension alignments to compare, in floats: none, the device's texture pitch
    alignment, and the driver's pitch granularity (where a GPU answers)."""
    out = {"ld = n (unpadded)": 1,
           f"ld to {texture_pitch_alignment()} B (texturePitchAlignment)": texture_pitch_alignment() // 4}
    driver = driver_alignment()
    if driver:
        out[f"ld to {driver} B (cuMemAllocPitch)"] = driver // 4
    return out


def pitch_frame(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Sweeps of the same kernels, one per layout, in one frame with a 'layout' column; the
    label names kernel and layout, so each pair is one line on a plot."""
    frames = [d.assign(layout=name, label=d.label + ", " + name) for name, d in runs.items()]
    return pd.concat(frames, ignore_index=True)


def pitch_speedup(df: pd.DataFrame) -> pd.DataFrame:
    """GFLOP/s per (kernel, n) and layout, and each layout's speed over the unpadded one."""
    table = df[df.status == "ok"].pivot_table(index=["kernel", "M"], columns="layout",
                                              values="gflops", sort=False)
    base = [c for c in table.columns if c.startswith("ld = n")][0]
    for col in [c for c in table.columns if c != base]:
        table[f"x ({col.split(' (')[1].rstrip(')')})"] = table[col] / table[base]
    return table
