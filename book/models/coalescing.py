"""Counting the 32-byte sectors a warp's global-memory access touches (chapter 3).

The memory system serves a warp's load or store instruction (a *request*) in 32-byte *sectors*:
one per distinct aligned 32-byte piece of memory the active threads address. 32 threads reading
32 consecutive floats touch 4 sectors; 32 threads reading one float each from 32 different rows
touch 32. :func:`sectors` counts that for any addresses; :func:`naive_traffic` applies it to every
warp of a naive-kernel launch, the model that chapter 3 sets beside Nsight Compute's counters.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

SECTOR_BYTES = 32
WARP = 32
FLOAT = 4


def sectors(addresses, active=None) -> np.ndarray:
    """Distinct 32-byte sectors per warp instruction.

    ``addresses``: byte addresses, shape (..., 32), one row per warp instruction (lane order);
    ``active``: same shape, False for threads that do not take part. Returns an int array of
    shape (...); 0 where no thread is active (the instruction is not issued).
    """
    s = np.asarray(addresses, dtype=np.int64) // SECTOR_BYTES
    if active is not None:
        s = np.where(active, s, -1)
    s = np.sort(s, axis=-1)
    distinct = 1 + (np.diff(s, axis=-1) != 0).sum(axis=-1)
    return distinct - (s[..., 0] < 0)


def thread_coordinates(spec, M: int, N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, col, active) of C for every thread of a naive-kernel launch, shape (warps, 32).

    Threads are numbered within a block as CUDA does (x fastest, then y) and cut into warps of
    32; the last warp of a block is padded with inactive lanes when the block is not a multiple.
    """
    if spec.source not in ("02_naive.cu", "03_coalescing.cu"):
        raise ValueError(f"{spec.id}: the sector model covers the one-output-per-thread kernels "
                         "of chapters 2 and 3 (02_naive.cu, 03_coalescing.cu)")
    bx, by = spec.block
    gx, gy = spec.grid(M, N)
    per_block = bx * by
    lanes = -(-per_block // WARP) * WARP
    tid = np.arange(lanes)
    tx, ty, real = tid % bx, tid // bx, tid < per_block
    bidx = np.arange(gx)[:, None, None]
    bidy = np.arange(gy)[None, :, None]
    if spec.mapping == "tile":
        row, col = bidy * by + ty, bidx * bx + tx
    elif spec.mapping == "tile_xrows":
        row, col = bidx * bx + tx, bidy * by + ty
    elif spec.mapping == "flat":
        idx = bidx * per_block + tid + 0 * bidy
        row, col = idx // N, idx % N
    else:
        raise ValueError(f"{spec.id}: mapping {spec.mapping!r} is not modelled")
    row, col = np.broadcast_arrays(row, col)
    active = real & (row < M) & (col < N)
    shape = (-1, WARP)
    return row.reshape(shape), col.reshape(shape), active.reshape(shape)


def naive_traffic(spec, M: int, N: int, K: int) -> dict:
    """Requests and sectors of every global load and store of one naive-kernel launch.

    Thread (row, col) loads A[row * K + k] and B[k * N + col] for k = 0 ... K-1 and stores
    C[row * N + col]; all three arrays start 32-byte aligned. Exact for every k: adding 8 to k
    moves every address by a whole number of sectors, so the count repeats with period 8. Where
    K (for A) or N (for B) is a multiple of 8, every k < 8 gives the count of k = 0 too (the
    k-th float of a row then lies in the row's first sector), so it is counted once.
    """
    row, col, active = thread_coordinates(spec, M, N)
    live = active.any(axis=1)
    row, col, active = row[live], col[live], active[live]
    out = {"kernel": spec.id, "M": M, "N": N, "K": K, "warps": len(row)}
    steps = range(min(8, K))
    count_a = lambda r: int(sectors(FLOAT * (row * K + r), active).sum())  # noqa: E731
    count_b = lambda r: int(sectors(FLOAT * (r * N + col), active).sum())  # noqa: E731
    a = [count_a(r) for r in steps] if K % 8 else [count_a(0)] * len(steps)
    b = [count_b(r) for r in steps] if N % 8 else [count_b(0)] * len(steps)
    times = [len(range(r, K, 8)) for r in steps]
    load_a = sum(t * x for t, x in zip(times, a))
    load_b = sum(t * x for t, x in zip(times, b))
    out["load_requests"] = 2 * K * len(row)
    out["load_sectors_A"] = load_a
    out["load_sectors_B"] = load_b
    out["load_sectors"] = load_a + load_b
    out["store_requests"] = len(row)
    out["store_sectors"] = int(sectors(FLOAT * (row * N + col), active).sum())
    return out


def traffic_table(specs, sizes) -> pd.DataFrame:
    """:func:`naive_traffic` for every spec at every (M, N, K), with sectors per request."""
    df = pd.DataFrame([naive_traffic(s, *size) for size in sizes for s in specs])
    df["load_sectors_per_request"] = df.load_sectors / df.load_requests
    df["store_sectors_per_request"] = df.store_sectors / df.store_requests
    return df


def one_step(spec, M: int, N: int, K: int) -> pd.DataFrame:
    """Sectors of warp 0's loads at k = 0 and its store: the per-step picture of source 003."""
    row, col, active = (x[:1] for x in thread_coordinates(spec, M, N))
    return pd.DataFrame({
        "A (load)": sectors(FLOAT * (row * K), active), "B (load)": sectors(FLOAT * col, active),
        "C (store)": sectors(FLOAT * (row * N + col), active)}, index=[spec.label])


def requested_bytes(M: int, N: int, K: int) -> int:
    """Bytes the threads of a one-output-per-thread kernel ask for: 2K loads + 1 store each."""
    return FLOAT * M * N * (2 * K + 1)


def with_bandwidth(df: pd.DataFrame) -> pd.DataFrame:
    """Add 'gbps': the bytes a one-output-per-thread kernel's threads request, per second."""
    df = df.copy()
    df["gbps"] = [requested_bytes(m, n, k) / (t * 1e6) if t == t else float("nan")
                  for m, n, k, t in zip(df.M, df.N, df.K, df.get("time_ms", df.M * float("nan")))]
    return df


COUNTED = ["load_requests", "load_sectors", "store_requests", "store_sectors"]


def beside_counters(model: pd.DataFrame, counters: pd.DataFrame | None) -> pd.DataFrame:
    """The model's requests and sectors, launch by launch, with what Nsight Compute counted for
    the same launch: "same" when it agrees on all four counts, else the counts it differs in.
    One index level per launch (kernel, shape), so the table fits a page."""
    keys = ["kernel", "M", "N", "K"]
    table = model.set_index(keys)[COUNTED]
    out = table.rename(columns=lambda c: c.replace("_", " "))
    out.index = pd.MultiIndex.from_arrays(
        [table.index.get_level_values("kernel"),
         [f"{m} x {n} x {k}" for _, m, n, k in table.index]], names=["kernel", "M x N x K"])
    if counters is None:
        return out
    measured = counters.set_index(keys)[COUNTED].reindex(table.index)
    differs = (table != measured).to_numpy()
    out["ncu"] = ["same" if not row.any() else
                  "; ".join(f"{c.replace('_', ' ')} {measured.iloc[i][c]:,.0f}"
                            for c, d in zip(COUNTED, row) if d)
                  for i, row in enumerate(differs)]
    out["ncu agrees"] = ~differs.any(axis=1)
    return out


def summary_at(df: pd.DataFrame, model: pd.DataFrame) -> pd.DataFrame:
    """GFLOP/s, share of cuBLAS and bandwidth at the largest size, with the model's sectors per
    request; 'L1 sector GB/s' scales the requested bandwidth by sector bytes / requested bytes."""
    top = df[(df.M == df.M.max()) & (df.status == "ok")].set_index("kernel")
    m = model.set_index("kernel")
    ratio = SECTOR_BYTES * (m.load_sectors + m.store_sectors) / (
        FLOAT * WARP * (m.load_requests + m.store_requests))
    out = top[["label", "gflops", "pct_of_cublas", "gbps"]].copy()
    out["sectors / load request (model)"] = m.load_sectors_per_request
    out["L1 sector GB/s"] = out.gbps * ratio
    return out.round(2)
