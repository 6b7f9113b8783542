"""The device report shown at the top of every chapter and stored with every result (chapter 0)."""
from __future__ import annotations

import os
import platform
import re
import subprocess
from functools import lru_cache

from ..launch.runtime import BACKEND, cupy

# FP32 lanes per SM by compute capability (CUDA C Programming Guide, "Arithmetic Instructions").
_FP32_LANES = {"7.0": 64, "7.5": 64, "8.0": 64, "8.6": 128, "8.7": 128, "8.9": 128, "9.0": 128,
               "10.0": 128, "12.0": 128}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@lru_cache(maxsize=None)
def _smi_clocks() -> dict[str, str]:
    """nvidia-smi's maximum SM and memory clocks (MHz) of GPU 0, in one call; {} without it."""
    fields = ("clocks.max.sm", "clocks.max.mem")
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}",
                              "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    values = [v.strip() for v in out.stdout.strip().split(",")]
    return dict(zip(fields, values)) if out.returncode == 0 and len(values) == 2 else {}


def _smi(field: str) -> str | None:
    return _smi_clocks().get(field) or None


def _version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


@lru_cache(maxsize=None)
def device_report() -> dict:
    """Name, compute capability, SMs, clocks, memory, driver/runtime and CuPy versions."""
    report = {"backend": BACKEND, "host_cpu": cpu_model(), "cpu_cores": os.cpu_count()}
    if BACKEND == "cpu":
        report["name"] = "CPU emulator (no GPU)"
        return report
    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    attrs = dev.attributes
    cc = f"{dev.compute_capability[:-1]}.{dev.compute_capability[-1]}"
    clock = attrs.get("ClockRate")  # kHz; absent from some CUDA 13 builds: ask nvidia-smi
    sm_mhz = clock / 1000 if clock else float(_smi("clocks.max.sm") or "nan")
    mem_clock = attrs.get("MemoryClockRate")
    report.update({
        "name": props["name"].decode(),
        "compute_capability": cc,
        "sms": attrs["MultiProcessorCount"],
        "max_sm_clock_mhz": sm_mhz,
        "max_mem_clock_mhz": mem_clock / 1000 if mem_clock else float(_smi("clocks.max.mem") or "nan"),
        "memory_gib": round(cupy.cuda.runtime.memGetInfo()[1] / 2**30, 1),
        "l2_mib": round(attrs["L2CacheSize"] / 2**20, 1),
        "shared_per_sm_kib": attrs["MaxSharedMemoryPerMultiprocessor"] // 1024,
        "registers_per_sm": attrs["MaxRegistersPerMultiprocessor"],
        "driver": _version(cupy.cuda.runtime.driverGetVersion()),
        "cuda_runtime": _version(cupy.cuda.runtime.runtimeGetVersion()),
        "cupy": cupy.__version__,
    })
    lanes = _FP32_LANES.get(cc)
    if lanes:  # the datasheet's FP32 peak: every lane one FMA (2 FLOPs) per cycle at max clock
        report["fp32_peak_gflops_spec"] = round(report["sms"] * lanes * 2 * sm_mhz / 1000, 0)
    return report


def gpu_slug(name: str | None = None) -> str:
    """'NVIDIA H200' -> 'nvidia-h200': the results folder of a GPU."""
    return re.sub(r"[^a-z0-9]+", "-", (name or device_report()["name"]).lower()).strip("-")


CLOCK_REASONS = {0x1: "idle", 0x2: "application clocks", 0x4: "power cap",
                 0x8: "hardware slowdown", 0x10: "sync boost", 0x20: "thermal (software)",
                 0x40: "thermal (hardware)", 0x80: "power brake", 0x100: "display clock"}
"""nvidia-smi's bits in ``clocks_event_reasons.active``: why the SM clock is below its maximum
(NVML's clocks event reasons)."""


def clock_reasons(bits: int) -> str:
    """The words for a mask of :data:`CLOCK_REASONS` ('none' for 0), joined by '+'."""
    words = [w for b, w in CLOCK_REASONS.items() if bits & b]
    unknown = bits & ~sum(CLOCK_REASONS)
    return "+".join(words + ([hex(unknown)] if unknown else [])) or "none"


def clocks_while(fn, seconds: float = 3.0, every_ms: int = 50, first_ms: float = 50.0) -> dict:
    """``fn`` (GPU work, asynchronous) called in a loop for about ``seconds`` while nvidia-smi
    samples GPU 0 every ``every_ms`` ms. Returns fn's mean time on the GPU over the loop
    (``ms``) and over its first ``first_ms`` ms (``ms_first``, at least one call: what a short
    timing sees), from an event after each call, and, over the last
    two thirds of the samples (the first third is the GPU warming up to the load), the median
    SM clock (``sm_mhz``), board power (``power_w``) and temperature (``temp_c``), the board's
    power limit (``power_limit_w``) and every reason nvidia-smi gave for a clock below its
    maximum (``limited_by``, :func:`clock_reasons` of the samples' masks OR-ed)."""
    import time

    import numpy as np
    fields = "clocks.sm,power.draw,temperature.gpu,power.limit,clocks_event_reasons.active"
    fn()
    cupy.cuda.Device().synchronize()
    smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits",
                            "-i", "0", "-lms", str(every_ms)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    start, marks, t0 = cupy.cuda.Event(), [], time.perf_counter()
    start.record()
    while time.perf_counter() - t0 < seconds:
        for _ in range(4):
            fn()
            marks.append(cupy.cuda.Event())
            marks[-1].record()
        marks[-1].synchronize()
    ends = np.array([cupy.cuda.get_elapsed_time(start, e) for e in marks])  # ms after the start
    first = max(1, int((ends <= first_ms).sum()))  # the calls done in the first first_ms
    smi.terminate()
    out, err = smi.communicate(timeout=30)
    rows = [[v.strip() for v in line.split(",")] for line in out.strip().splitlines()]
    rows = [r for r in rows if len(r) == 5][len(rows) // 3:]
    if not rows:
        raise RuntimeError(f"clocks_while: nvidia-smi gave no samples ({err.strip()[:200]})")
    med = lambda i: float(np.median([float(r[i]) for r in rows]))  # noqa: E731
    mask = 0
    for r in rows:
        mask |= int(r[4], 16)
    return {"ms": ends[-1] / len(ends), "ms_first": ends[first - 1] / first,
            "sm_mhz": med(0), "power_w": med(1), "temp_c": med(2),
            "power_limit_w": med(3), "limited_by": clock_reasons(mask & ~0x1),
            "samples": len(rows)}
