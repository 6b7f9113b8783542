"""The device's ceilings, measured once per GPU and drawn on every performance plot (chapter 0).

* FP32 FMA peak: ``00_fma_peak.cu``, independent FMA chains in registers;
* device-to-device copy bandwidth: a large cudaMemcpy, counting bytes read plus bytes written;
* cuBLAS SGEMM at n = 4096 (``cupy.matmul`` on float32; CuPy uses TF32 only when the environment
  sets CUPY_TF32=1, which :func:`measure` refuses), checked against float64 like every kernel.
"""
from __future__ import annotations

import os
from datetime import date

import numpy as np
import pandas as pd

from .check import device_inputs
from .measure import sweep, time_launch
from ..launch.runtime import BACKEND, cupy, load_kernel, to_host, xp
from . import results
from .device import device_report, gpu_slug

CHAPTER = "00_ceilings"
CHAINS = 8  # independent FMA chains per thread in 00_fma_peak.cu


def fma_peak(blocks_per_sm: int = 32, threads: int = 256, iters: int = 16384) -> dict:
    """GFLOP/s of the FMA-chain kernel, after checking its output against the fixed point."""
    kernel = load_kernel("00_fma_peak.cu", "fma_peak", defines={"CHAINS": CHAINS})
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"] if BACKEND == "gpu" else 1
    if BACKEND != "gpu":  # the emulator: a token launch that still exercises the check
        blocks_per_sm, threads, iters = 2, 64, 64
    blocks = sms * blocks_per_sm
    out = xp.full(blocks * threads, xp.nan, dtype=xp.float32)
    b, c = np.float32(0.5), np.float32(1.0)  # fixed point c / (1 - b) = 2
    args = (out, np.int32(iters), b, c)
    kernel(blocks, threads, args)
    worst = float(np.abs(to_host(out) - 2.0).max())
    if not worst < 1e-3:
        raise AssertionError(f"fma_peak check failed: max |x - 2| = {worst}")
    timing = time_launch(lambda: kernel(blocks, threads, args))
    flops = 2.0 * CHAINS * iters * blocks * threads
    return {"ceiling": "fp32_fma_peak", "value": flops / (timing["time_ms"] * 1e6), "unit": "GFLOP/s"}


def copy_bandwidth(nbytes: int = 2**30) -> dict:
    """GB/s of a device-to-device copy of ``nbytes``, counting bytes read plus bytes written."""
    if BACKEND != "gpu":
        nbytes = 2**20
    src = device_inputs(nbytes // 4, 1, 1)[0].ravel()  # made on the device: no 1 GiB host copy
    dst = xp.empty_like(src)
    if BACKEND == "gpu":
        copy = lambda: dst.data.copy_from_device_async(src.data, nbytes)  # noqa: E731
    else:
        copy = lambda: np.copyto(dst, src)  # noqa: E731
    timing = time_launch(copy)
    if not bool((dst == src).all()):
        raise AssertionError("copy check failed")
    return {"ceiling": "copy_bandwidth", "value": 2 * nbytes / (timing["time_ms"] * 1e6), "unit": "GB/s"}


def cublas(n: int = 4096) -> dict:
    df = sweep([], [n if BACKEND == "gpu" else 128])
    row = df.iloc[0]
    if row.status != "ok":
        raise AssertionError(f"cuBLAS check failed: {row.to_dict()}")
    return {"ceiling": "cublas_sgemm", "value": row.gflops, "unit": "GFLOP/s", "n": int(row.M),
            "rel_error": row.rel_error}


def measure() -> pd.DataFrame:
    """Measure the three ceilings on this device; saved as results on a GPU."""
    if os.environ.get("CUPY_TF32") == "1":
        raise RuntimeError("CUPY_TF32=1 lets cuBLAS use TF32; unset it to measure FP32 SGEMM")
    rows = [fma_peak(), copy_bandwidth(), cublas()]
    df = pd.DataFrame(rows).assign(device=device_report()["name"], date=date.today().isoformat())
    return df


def load(gpu: str | None = None) -> dict[str, float]:
    """The ceilings of the GPU whose results the plots show, or of results folder ``gpu``:
    {name: value}."""
    if gpu is not None:
        df = results.load(CHAPTER, gpu)
        return dict(zip(df.ceiling, df.value))
    try:
        df = results.load(CHAPTER, gpu_slug() if BACKEND == "gpu" else None)
    except FileNotFoundError:
        if BACKEND != "gpu":
            raise
        df = results.live_or_recorded(measure(), CHAPTER)
    return dict(zip(df.ceiling, df.value))


def recorded() -> pd.DataFrame:
    """The ceilings recorded for every GPU under results/ (one row each; chapter 0 compares them)."""
    rows = {name: dict(zip(df.ceiling, df.value)) for name, df in results.load_every(CHAPTER).items()}
    return pd.DataFrame(rows).T.rename_axis("GPU").sort_index()


def roofline(ceil: pd.DataFrame, n: int = 4096):
    """Chapter 0's picture of the three ceilings: GFLOP/s against arithmetic intensity (FLOPs per
    byte of DRAM traffic), log-log. The copy bandwidth is the slope a kernel rides while memory
    limits it, the FMA peak the flat roof; cuBLAS SGEMM at n sits under the roof at the
    intensity of reading A and B and writing C once (n / 6 FLOP/byte), and the naive kernel's
    worst case, every operand from DRAM (2 FLOPs per 8 bytes), shows where chapter 2 starts."""
    import matplotlib.pyplot as plt
    from .plots import STYLE, check_readable
    v = dict(zip(ceil.ceiling, ceil.value))
    peak, bw, sgemm = v["fp32_fma_peak"], v["copy_bandwidth"], v["cublas_sgemm"]
    ridge = peak / bw
    x = np.logspace(-2, 4, 200)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        ax.loglog(x, np.minimum(peak, bw * x), color="k", lw=1.6)
        ax.annotate(f"copy bandwidth:\n{bw:,.0f} GB/s", (0.05, bw * 0.05), xytext=(0.012, 1.5e3),
                    fontsize=9, arrowprops={"arrowstyle": "->", "color": "0.3"})
        ax.annotate(f"FP32 FMA peak: {peak:,.0f} GFLOP/s", (ridge * 1.3, peak), xytext=(0, 6),
                    textcoords="offset points", fontsize=9)
        ax.axvline(ridge, color="0.6", lw=0.8, ls=":")
        ax.annotate(f"ridge: {ridge:.0f} FLOP/byte", (ridge, 2), xytext=(4, 0),
                    textcoords="offset points", fontsize=8.5, color="0.35")
        ax.plot([n / 6], [sgemm], "o", color="#000000", ms=7)
        ax.annotate(f"cuBLAS SGEMM, n = {n}:\n{sgemm:,.0f} GFLOP/s", (n / 6, sgemm),
                    xytext=(40, 1.5e3), fontsize=9, arrowprops={"arrowstyle": "->", "color": "0.3"})
        ax.plot([0.25], [bw * 0.25], "s", color="#1f77b4", ms=6)
        ax.annotate("every operand from DRAM:\n2 FLOPs per 8 bytes", (0.25, bw * 0.25),
                    xytext=(0.4, 30), fontsize=8.5, color="#1f77b4",
                    arrowprops={"arrowstyle": "->", "color": "#1f77b4"})
        ax.set_xlim(1e-2, 1e4)
        ax.set_ylim(1, peak * 3)
        ax.set_xlabel("arithmetic intensity (FLOPs per byte of DRAM traffic)")
        ax.set_ylabel("GFLOP/s")
        ax.set_title(f"The ceilings of the {ceil.attrs.get('device', {}).get('name', 'GPU')} as a roofline",
                     fontsize=10)
        plt.close(fig)
    return check_readable(fig)
