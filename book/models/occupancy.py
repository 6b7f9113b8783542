"""Registers, spills and theoretical occupancy of a launch (chapter 6).

Occupancy is the fraction of an SM's warp slots that a kernel's blocks can fill at once. It is
the smallest of four limits: threads per SM, blocks per SM, registers and shared memory (per
block, plus 1 KiB the system reserves per block). Registers are allocated per warp in units of
256, from four register files of a quarter of the SM's registers each (one per SM sub-partition;
a warp lives in one), so the register limit is 4 x (registers per SM / 4 // registers per warp)
warps, in whole blocks. On a GPU the
limits come from the device and the result is checked against the driver's own
``cuOccupancyMaxActiveBlocksPerMultiprocessor``; on the CPU backend the registers come from
ptxas (through NVRTC, for sm_90) and the limits are an H100's/H200's.
"""
from __future__ import annotations

import pandas as pd

from ..launch.runtime import BACKEND, cupy

SM90 = {"threads_per_sm": 2048, "blocks_per_sm": 32, "registers_per_sm": 65536,
        "shared_per_sm": 228 * 1024, "reserved_shared_per_block": 1024}
REGISTER_UNIT = 256   # registers are allocated per warp in units of 256
SUBPARTITIONS = 4     # an SM's register file is split among its four sub-partitions
SHARED_UNIT = 128     # shared memory is allocated per block in units of 128 bytes
WARP = 32


def sm_limits() -> dict[str, int]:
    if BACKEND != "gpu":
        return dict(SM90)
    a = cupy.cuda.Device().attributes
    return {"threads_per_sm": a["MaxThreadsPerMultiProcessor"],
            "blocks_per_sm": a.get("MaxBlocksPerMultiprocessor", 32),
            "registers_per_sm": a["MaxRegistersPerMultiprocessor"],
            "shared_per_sm": a["MaxSharedMemoryPerMultiprocessor"],
            "reserved_shared_per_block": a.get("ReservedSharedMemoryPerBlock", 1024)}


def _round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def occupancy(threads: int, registers: int, shared_bytes: int, limits: dict | None = None) -> dict:
    """Blocks per SM under each limit, the binding one, and the warp occupancy that follows."""
    lim = limits or sm_limits()
    warps = -(-threads // WARP)
    per_warp_regs = _round_up(registers * WARP, REGISTER_UNIT)
    warps_by_regs = SUBPARTITIONS * (lim["registers_per_sm"] // SUBPARTITIONS // per_warp_regs)
    per_block_smem = _round_up(shared_bytes, SHARED_UNIT) + lim["reserved_shared_per_block"]
    by = {"threads": lim["threads_per_sm"] // (warps * WARP),
          "blocks": lim["blocks_per_sm"],
          "registers": warps_by_regs // warps if per_warp_regs else lim["blocks_per_sm"],
          "shared memory": lim["shared_per_sm"] // per_block_smem}
    blocks = min(by.values())
    limiter = ", ".join(k for k, v in by.items() if v == blocks)
    return {"blocks_per_sm": blocks, "limited_by": limiter,
            "occupancy": blocks * warps * WARP / lim["threads_per_sm"]}


def _driver_blocks(kernel, threads: int, dynamic_shared: int) -> int:
    """The driver's answer: cuOccupancyMaxActiveBlocksPerMultiprocessor for this kernel."""
    raw = kernel.module.function(kernel.name)       # a cupy RawKernel
    function = getattr(raw, "kernel", raw)          # its cupy.cuda.function.Function
    return cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(function.ptr, threads,
                                                                      dynamic_shared)


def report(specs, K: int = 4096) -> pd.DataFrame:
    """Registers, spills, shared memory and occupancy of each kernel, one row each."""
    from concurrent.futures import ThreadPoolExecutor

    from ..harness.measure import build_ahead
    from ..launch.runtime import nvrtc_attributes
    if BACKEND == "gpu":
        build_ahead(specs)
        kernels = [spec.kernel() for spec in specs]
        attributes = lambda k: k.attributes  # noqa: E731
    else:  # (NVRTC's report alone: the emulator's builds are not needed for it)
        kernels = specs
        attributes = lambda s: nvrtc_attributes(s.source, s.name, dict(s.defines), s.options)  # noqa: E731
    with ThreadPoolExecutor() as pool:  # each report is an NVRTC compile of its own: side by side
        reports = list(pool.map(attributes, kernels))
    rows = []
    for spec, kernel, attrs in zip(specs, kernels, reports):
        threads = spec.block[0] * spec.block[1]
        shared = attrs["shared_size_bytes"] + spec.shared_mem(K)
        row = {"kernel": spec.id, "threads": threads, "registers": attrs["num_regs"],
               "spill_stores": attrs.get("spill_stores"), "local_bytes": attrs["local_size_bytes"],
               "shared_bytes": shared, **occupancy(threads, attrs["num_regs"], shared)}
        if BACKEND == "gpu":
            row["driver_blocks_per_sm"] = _driver_blocks(kernel, threads, spec.shared_mem(K))
        rows.append(row)
    return pd.DataFrame(rows).set_index("kernel")
