"""Pitched rows (chapter 7): where rows start, and what aligning them changes.

Source 004 allocates its matrices with ``cudaMallocPitch``, which rounds every row up to a pitch
the driver chooses, so that each row starts on an aligned address. CuPy has no wrapper for it;
the book allocates a (rows, ld) array itself, with ld rounded up to a multiple of the device's
``texturePitchAlignment`` (the alignment the device requires of pitched 2D memory), and asks the
driver (``cuMemAllocPitch``, which ``cudaMallocPitch`` calls) which pitch it would have chosen.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pandas as pd

from .coalescing import sectors
from ..harness.measure import padded_length
from ..harness.progress import bar
from ..launch.runtime import BACKEND, cupy

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
    texture = texture_pitch_alignment()
    out = {"ld = n (unpadded)": 1, f"ld to {texture} B (texturePitchAlignment)": texture // 4}
    driver = driver_alignment()
    if driver:
        out[f"ld to {driver} B (cuMemAllocPitch)"] = driver // 4
    return out


def pitch_sweep(specs, sizes, aligns: dict[str, int], repeats: int = 3,
                target_s: float = 0.015, max_repeat: int = 30) -> pd.DataFrame:
    """Check then time every kernel at every size in every layout, ``repeats`` times.

    The layouts are interleaved (for each n and repeat, every layout once, in an order rotated
    per repeat) and every repeat uses fresh allocations, so that clock ramps, drift and where an
    allocation happens to land in memory fall on all layouts alike instead of on whichever came
    first. One row per (repeat, layout, kernel, n), with 'layout' and 'repeat' columns. Each
    point is the median of up to ``max_repeat`` runs (about ``target_s`` of GPU time): the
    spread that matters here is the one between repeats, which the chapter shows. A progress
    bar counts the sweeps where bars show (``harness.progress``).
    """
    from ..harness.measure import sweep
    names = list(aligns)
    runs = [(n, r, name) for n in sizes for r in range(repeats)
            for name in names[r % len(names):] + names[:r % len(names)]]
    frames = []
    for n, r, name in bar(runs, desc="pitch", unit="sweep"):
        d = sweep(specs, [n], baseline=False, ld_align=aligns[name], seed=r,
                  target_s=target_s, max_repeat=max_repeat)
        frames.append(d.assign(layout=name, repeat=r))
    return pd.concat(frames, ignore_index=True)


def pitch_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per (kernel, n, layout): median GFLOP/s over the repeats and their spread (max - min) / median."""
    g = df[df.status == "ok"].groupby(["kernel", "M", "layout"], sort=False).gflops
    return pd.DataFrame({"gflops": g.median(),
                         "spread": (g.max() - g.min()) / g.median()}).reset_index()


def pitch_speedup(df: pd.DataFrame) -> pd.DataFrame:
    """Median GFLOP/s per (kernel, n) and layout, each padded layout over the unpadded one, and
    the largest spread between repeats of any layout at that (kernel, n)."""
    summary = pitch_summary(df)
    table = summary.pivot_table(index=["kernel", "M"], columns="layout", values="gflops", sort=False)
    base = [c for c in table.columns if c.startswith("ld = n")][0]
    for col in [c for c in table.columns if c != base]:
        table[f"x ({col.split(' (')[1].rstrip(')')})"] = table[col] / table[base]
    table["largest spread"] = summary.groupby(["kernel", "M"], sort=False).spread.max()
    return table


def pitch_plot(df: pd.DataFrame, *, title: str):
    """Each padded layout's median GFLOP/s over the unpadded layout's at the same n (the factor
    the text discusses), with the range over the repeats as error bars and the unpadded
    layout's own spread as a grey band around 1: one panel per kernel."""
    import matplotlib.pyplot as plt

    from ..harness.plots import STYLE, check_readable, legend_below
    ok = df[df.status == "ok"]
    kernels = list(dict.fromkeys(ok.kernel))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(kernels), 1, figsize=(STYLE["figure.figsize"][0], 3.6 * len(kernels)), squeeze=False)
        for ax, kernel in zip(axes[:, 0], kernels):
            d = ok[ok.kernel == kernel]
            layouts = list(dict.fromkeys(d.layout))
            base = next(x for x in layouts if x.startswith("ld = n"))
            b = d[d.layout == base].groupby("M").gflops
            ref = b.median()
            ax.fill_between(ref.index, b.min() / ref, b.max() / ref, color="0.85", step="mid",
                            label=f"{base}: its repeats' range")
            ax.axhline(1.0, color="0.4", lw=1)
            for i, layout in enumerate(x for x in layouts if x != base):
                q = d[d.layout == layout].groupby("M").gflops
                med, lo, hi = (v / ref.reindex(v.index) for v in (q.median(), q.min(), q.max()))
                ax.errorbar(med.index + (i - 0.5) * 0.6, med, yerr=[med - lo, hi - med], capsize=2,
                            marker="s^"[i % 2], color=f"C{i + 1}", label=layout)
            for n in range(-(-int(d.M.min()) // 32) * 32, int(d.M.max()) + 1, 32):
                ax.axvline(n, color="0.8", lw=0.8, zorder=0)
            ax.set_title(d.label.iloc[0].split(", ld")[0], fontsize=10)
            ax.set_xlabel("n = M = N = K (grey: multiples of 32)")
            ax.set_ylabel("GFLOP/s over the\nunpadded layout's")
        fig.suptitle(f"{title}\n{df.attrs.get('source', '')}", fontsize=10)
        fig.tight_layout()
        legend_below(fig, axes[0, 0], ncol=2, fontsize=9)
        plt.close(fig)
    return check_readable(fig)


def sectors_per_request(n: int, ld: int, width: int) -> float:
    """Chapter 3's sector model for an n x n matrix whose rows are ``ld`` floats apart.

    A warp reads ``width`` consecutive floats from each of 32 // ``width`` consecutive rows
    (width 32: the row kernel's loads of B; width 16: the tiled 16 x 16 kernel's loads of A and
    B), for every row and column start. Returns the mean 32-byte sectors per issued request,
    with the matrix starting on a 256-byte boundary (as CuPy's allocations do).
    """
    lanes = np.arange(32)
    r = np.arange(0, n, 32 // width)[:, None, None] + lanes // width
    c = np.arange(0, n, width)[None, :, None] + lanes % width
    count = sectors(4 * (r * ld + c), (r < n) & (c < n))
    return float(count[count > 0].mean())


def sector_table(sizes, aligns: dict[str, int]) -> pd.DataFrame:
    """Modelled sectors per request, per n and layout, for both kernels' global loads."""
    rows = []
    for n in sizes:
        for name, align in aligns.items():
            ld = padded_length(n, align)
            rows.append({"n": n, "layout": name, "ld": ld,
                         "row kernel, B (32 floats)": sectors_per_request(n, ld, 32),
                         "tiled 16, A and B (2 x 16 floats)": sectors_per_request(n, ld, 16)})
    return pd.DataFrame(rows).set_index(["n", "layout"]).round(3)
