"""Shared-memory banks: a model of conflicts, its picture, and a stride microbenchmark (chapter 5).

Shared memory is 32 banks, each 4 bytes wide: 32-bit word w sits in bank w % 32. A warp's 32-bit
access is served in as many passes (*wavefronts*) as the largest number of distinct words any one
bank must deliver; threads reading the same word share one delivery (broadcast). The conflict
degree is that number; Nsight Compute counts the passes beyond the first as bank conflicts.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..harness.plots import STYLE, check_readable

BANKS = 32
WARP = 32


def degree(words, active=None) -> np.ndarray:
    """Wavefronts of each 32-bit warp access: ``words`` has shape (..., 32), lane order."""
    words = np.asarray(words, dtype=np.int64)
    active = np.ones(words.shape, bool) if active is None else np.asarray(active)
    out = np.zeros(words.shape[:-1], dtype=np.int64)
    for idx in np.ndindex(*words.shape[:-1]):
        w = np.unique(words[idx][active[idx]])
        out[idx] = np.bincount(w % BANKS, minlength=BANKS).max() if len(w) else 0
    return out


def predicted_stride_degree(stride: int) -> int:
    """Lane i reading word i * stride: gcd(stride, 32) lanes share each bank used."""
    return math.gcd(stride, BANKS)


def tile_lanes(tile: int, warp: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(tx, ty) of the 32 lanes of warp ``warp`` in a (tile, tile) block."""
    tid = warp * WARP + np.arange(WARP)
    return tid % tile, tid // tile


def tile_patterns(tile: int = 32, k: int = 0) -> dict[str, np.ndarray]:
    """Word addresses of warp 0's accesses to the tiles of chapters 4 and 5 (at inner step k)."""
    tx, ty = tile_lanes(tile)
    return {
        "As[ty][k]: read A tile (row per thread row)": ty * tile + k,
        "Bs[k][tx]: read B tile (consecutive words)": k * tile + tx,
        "As[ty][tx]: store, normal": ty * tile + tx,
        "AsT[tx][ty]: store transposed (source 001)": tx * tile + ty,
        "Bs[tx][k]: read transposed (source 000)": tx * tile + k,
        f"AsT[tx][ty] in [{tile}][{tile}+1]: store transposed, padded": tx * (tile + 1) + ty,
    }


def pattern_table(tile: int = 32) -> pd.DataFrame:
    """Distinct words, banks used and conflict degree of each access of :func:`tile_patterns`."""
    rows = []
    for name, words in tile_patterns(tile).items():
        rows.append({"access": name, "distinct words": len(np.unique(words)),
                     "banks used": len(np.unique(words % BANKS)),
                     "wavefronts (conflict degree)": int(degree(words))})
    return pd.DataFrame(rows).set_index("access")


def bank_picture(tile: int = 32):
    """One strip per access: the bank each of the warp's 32 lanes hits, coloured by bank."""
    patterns = tile_patterns(tile)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(patterns), 1, figsize=(STYLE["figure.figsize"][0],
                                                            0.95 * len(patterns) + 0.7))
        for ax, (name, words) in zip(axes, patterns.items()):
            banks = words % BANKS
            if len(set(words.tolist())) == 1:  # one word for every lane: a broadcast, no conflict
                ax.imshow(np.zeros((1, WARP)), cmap="Greys", vmin=0, vmax=1, aspect="auto")
                ax.axhspan(-0.5, 0.5, fill=False, hatch="//", ec="0.55", lw=0)
                ax.text(WARP / 2 - 0.5, 0, f"one word (bank {banks[0]}) for all 32 lanes: a broadcast",
                        ha="center", va="center", fontsize=9,
                        bbox=dict(fc="white", ec="none", pad=1.5))
                what = "1 access (broadcast)"
            else:
                ax.imshow(banks[None, :], cmap="hsv", vmin=0, vmax=BANKS, aspect="auto", alpha=0.6)
                for lane, bank in enumerate(banks):
                    ax.text(lane, 0, str(bank), ha="center", va="center", fontsize=8)
                what = f"{int(degree(words))}-way"
            ax.set_yticks([])
            ax.set_xticks(range(0, WARP, 4))
            ax.tick_params(axis="x", labelsize=8)
            ax.grid(False)
            ax.set_title(f"{name} -- {what}", fontsize=9, loc="left")
        axes[-1].set_xlabel(f"lane of warp 0 (block {tile}x{tile}); number in cell = bank")
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


def stride_sweep(strides=range(1, 34), iters: int | None = None) -> pd.DataFrame:
    """Time :file:`05_bank_conflicts.cu`'s ``smem_stride`` for each stride, beside the model.

    On a GPU: a grid of 8 blocks of 1024 threads per SM (two resident at a time), CUDA-event medians; ``cycles`` is time x the
    device's clock rate / warp accesses per SM (approximate: the clock may boost). On the CPU
    emulator it runs a tiny launch and the times mean nothing.
    """
    import numpy as _np

    from ..harness.measure import time_launch
    from ..launch.runtime import BACKEND, load_kernel, xp
    kernel = load_kernel("05_bank_conflicts.cu", "smem_stride")
    if BACKEND == "gpu":
        import cupy
        dev = cupy.cuda.Device()
        sms, clock_hz = dev.attributes["MultiProcessorCount"], dev.attributes["ClockRate"] * 1e3
        blocks, threads, iters = 8 * sms, 1024, iters or 4096
    else:
        sms, clock_hz, blocks, threads, iters = 1, float("nan"), 2, 64, iters or 32
    out = xp.zeros(blocks, dtype=xp.float32)
    rows = []
    for s in strides:
        args = (out, _np.int32(s), _np.int32(iters))
        t = time_launch(lambda: kernel((blocks,), (threads,), args), target_s=0.05)
        per_sm = blocks * threads // WARP * iters / sms
        rows.append({"stride": s, "time_ms": t["time_ms"],
                     "cycles_per_warp_access": t["time_ms"] * 1e-3 * clock_hz / per_sm,
                     "predicted_degree": predicted_stride_degree(s),
                     "model_degree": int(degree(((np.arange(WARP) * s) % 1056)))})
    from datetime import date

    from ..harness.device import device_report
    df = pd.DataFrame(rows)
    df["relative_time"] = df.time_ms / df.time_ms.iloc[0]
    return df.assign(device=device_report()["name"], date=date.today().isoformat())


def store_words(spec, tx, ty) -> list[np.ndarray]:
    """Words of the block's two tile stores (A, B) for lanes (tx, ty), by kernel function."""
    t = spec.tile[0]
    pad = dict(spec.defines).get("PAD", 0)
    if spec.name in ("matmul_tiled", "matmul_tiled_src001", "matmul_tiled_divisible"):
        return [ty * t + tx, ty * t + tx]
    if spec.name == "matmul_tiled_tstore":
        return [tx * (t + pad) + ty, ty * t + tx]
    if spec.name in ("matmul_tiled_src000", "matmul_tiled_src001_tstore"):
        return [tx * t + ty, tx * t + ty]
    raise ValueError(f"{spec.id}: no shared-store model for {spec.name}")


def store_wavefronts(spec) -> float:
    """Predicted wavefronts per shared store instruction, averaged over the block's warps and its
    two stores (A tile, B tile); 1.0 means no conflicts."""
    t = spec.tile[0]
    degrees = []
    for warp in range(t * t // WARP):
        tx, ty = tile_lanes(t, warp)
        degrees += [int(degree(w)) for w in store_words(spec, tx, ty)]
    return float(np.mean(degrees))


def beside_counters(specs, counters: pd.DataFrame | None) -> pd.DataFrame:
    """Model's wavefronts per store beside ncu's, and ncu's per load, for each kernel."""
    table = pd.DataFrame({"model: wavefronts / shared store": {s.id: store_wavefronts(s) for s in specs}})
    if counters is not None:
        c = counters.set_index("kernel")
        table["ncu: wavefronts / shared store"] = c.shared_store_wavefronts / c.shared_store_instructions
        table["ncu: wavefronts / shared load"] = c.shared_load_wavefronts / c.shared_load_instructions
        table["ncu: shared load instructions"] = c.shared_load_instructions
        table["ncu: load conflicts / load wavefronts (%)"] = (
            100 * c.shared_load_bank_conflicts / c.shared_load_wavefronts)
        table["ncu: store bank conflicts"] = c.shared_store_bank_conflicts
        table["ncu: load bank conflicts"] = c.shared_load_bank_conflicts
    return table.round(2)


def stride_plot(df: pd.DataFrame):
    """Measured cycles per warp access against stride, with the predicted conflict degree."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        ax.plot(df.stride, df.cycles_per_warp_access, marker="o", label="measured (smem_stride)")
        ax.plot(df.stride, df.predicted_degree, ls="none", marker="_", ms=14, color="k",
                label="predicted: gcd(stride, 32) passes")
        ax.set_yscale("log", base=2)
        ax.set_xticks(range(0, 34, 4))
        ax.set_xlabel("stride s (words): lane i reads word i * s")
        ax.set_ylabel("cycles per warp-wide shared load, per SM")
        ax.set_title(f"Shared-memory bank conflicts against stride\n{df.attrs.get('source', '')}",
                     fontsize=10)
        ax.legend(loc="upper left")
        plt.close(fig)
    return check_readable(fig)
