"""Global-memory traffic per FMA: naive, row-of-A and tiled kernels (chapter 4).

The model counts the bytes each kernel's threads request from global memory, and the 32-byte
sectors those requests touch in L1 (the same thing here, except for the naive kernel, where a
warp's 32 threads share one float of A). Nsight Compute measures the L1 sector bytes, what L1
then reads from L2, and what L2 reads from DRAM; :func:`per_fma` divides them by the FMAs.
"""
from __future__ import annotations

import pandas as pd

from .coalescing import FLOAT, SECTOR_BYTES, naive_traffic
from ..registry import ceil_div


def global_traffic(spec, M: int, N: int, K: int) -> dict:
    """Bytes requested and L1 sector bytes of one launch, per FMA (loads only)."""
    fmas = M * N * K
    if spec.source in ("02_naive.cu", "03_coalescing.cu"):
        t = naive_traffic(spec, M, N, K)
        requested, sectors = 2 * FLOAT * fmas, t["load_sectors"] * SECTOR_BYTES
    elif spec.mapping == "row":          # A once per row, B once per FMA, both coalesced
        requested = sectors = FLOAT * (M * K + fmas)
    elif spec.mapping == "tile":         # each block loads TILE-wide tiles of A and B
        rows, cols = spec.tile
        requested = FLOAT * (M * K * ceil_div(N, cols) + K * N * ceil_div(M, rows))
        sectors = requested if K % 8 == 0 and N % 8 == 0 else None
    else:
        raise ValueError(f"{spec.id}: no traffic model for mapping {spec.mapping!r}")
    return {"kernel": spec.id, "label": spec.label, "M": M, "N": N, "K": K,
            "requested_bytes_per_fma": requested / fmas,
            "l1_sector_bytes_per_fma": None if sectors is None else sectors / fmas}


def traffic_per_fma(specs, M: int, N: int, K: int) -> pd.DataFrame:
    return pd.DataFrame([global_traffic(s, M, N, K) for s in specs]).set_index("kernel")


def per_fma(counters: pd.DataFrame) -> pd.DataFrame:
    """Nsight Compute's byte counters (book.ncu.MEMORY_BYTES) divided by M * N * K."""
    fmas = counters.M * counters.N * counters.K
    return pd.DataFrame({
        "kernel": counters.kernel,
        "ncu L1 sector bytes / FMA": counters.l1_load_bytes / fmas,
        "ncu L2 -> L1 bytes / FMA": counters.l2_read_sectors * SECTOR_BYTES / fmas,
        "ncu DRAM -> L2 bytes / FMA": counters.dram_read_bytes / fmas,
    }).set_index("kernel")
