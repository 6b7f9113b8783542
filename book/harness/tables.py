"""Tables a person reads: numbers rounded for a reader, units in the headers, labels for ids.

:func:`readable` is the one helper every chapter's results table goes through. Known columns get
a header with their unit and a rounding (GFLOP/s and GB/s as integers, percentages to one
decimal, errors to two significant digits); any other float column keeps three significant
digits, in one format for the whole column (:func:`column_format`). Rows indexed by kernel id are relabelled with the kernel's label (from a ``label``
column, or ``labels=book.registry.LABELS``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = {
    "label": "kernel",
    "status": "check",
    "gflops": "GFLOP/s",
    "pct_of_cublas": "% of cuBLAS",
    "pct_of_peak": "% of FMA peak",
    "gbps": "GB/s",
    "rel_error": "relative error",
    "max_rel_error": "largest element error",
    "time_ms": "time (ms)",
    "ms": "time (ms)",
    "time_s": "time (s)",
    "gpu_us": "GPU time / call (µs)",
    "host_us": "host time / call (µs)",
    "fp32_fma_peak": "FP32 FMA peak (GFLOP/s)",
    "copy_bandwidth": "copy bandwidth (GB/s)",
    "cublas_sgemm": "cuBLAS SGEMM (GFLOP/s)",
    "requested_bytes_per_fma": "bytes requested / FMA (model)",
    "l1_sector_bytes_per_fma": "L1 sector bytes / FMA (model)",
    "ai_dram": "FLOP / DRAM byte",
    "ai_l2": "FLOP / L2 byte",
    "pct_of_roof": "% of the roofline",
    "blocks_per_sm": "blocks / SM",
    "limited_by": "limited by",
    "sm_mhz": "SM clock (MHz)",
    "power_w": "power (W)",
    "x_cublas": "x cuBLAS SGEMM",
    "spill_stores": "spill stores",
    "shared_bytes": "shared bytes / block",
    "row_bytes": "row (bytes)",
    "pitch_texture_alignment": "pitch, texturePitchAlignment (bytes)",
    "pitch_cuMemAllocPitch": "pitch, cuMemAllocPitch (bytes)",
    "row_starts_on_128B": "rows start on 128 B",
    "per_lds": "conflicts / LDS",
    "per_sts": "conflicts / STS",
    "per_cp_async": "conflicts / cp.async",
    "dram_read_bytes": "DRAM read (bytes)",
    "dram_write_bytes": "DRAM written (bytes)",
    "l2_read_sectors": "L2 sectors read (32 B)",
    "load_sectors": "load sectors",
    "store_sectors": "store sectors",
    "kernel_us": "kernel (µs)",
    "inner_block_us": "inner block (µs)",
    "edge_block_us": "edge block (µs)",
    "tflops": "TFLOP/s",
    "tf32x3_ceiling_tflops": "3xTF32 ceiling (TFLOP/s)",
    "cycles_per_warp_access": "cycles per warp-wide load",
    "predicted_degree": "predicted conflict degree",
    "relative_time": "time relative to stride 1",
    "regret_pct": "regret (%)",
}
"""Raw column name -> header with its unit."""


def _kind(header: str) -> str:
    h = header.lower()
    if "error" in h:
        return "error"
    if "gflop/s" in h or "gb/s" in h:
        return "integer"
    if "%" in h:
        return "percent"
    return "float"


def significant(x, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits; from 100 up, the whole number with thousands
    separators (never 6.49e+04)."""
    if x is None or pd.isna(x) or not np.isfinite(x):
        return "--"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.{digits}g}"


def _format(column: pd.Series, kind: str, digits: int = 3) -> pd.Series:
    """One number format for the whole column, so that its values line up and compare."""
    if not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return column.astype(object).where(column.notna(), "--")
    if kind == "integer":
        return _each(column, "{:,.0f}")
    if kind == "percent":
        return _each(column, "{:.1f}")
    if kind == "error":
        return _each(column, "{:.1e}")
    if pd.api.types.is_integer_dtype(column):
        return _each(column, "{:,}")
    return _each(column, column_format(column, digits))


def column_format(column: pd.Series, digits: int = 3) -> str:
    """The one format of a float column: whole numbers with thousands separators where every
    value is one or is 100 or more; else fixed decimals, as many as give its smallest nonzero
    value ``digits`` significant digits (at most 4), where that value is at least 0.001; else
    (smaller values: errors, rates of rare events) scientific notation with ``digits``
    significant digits."""
    values = np.abs(column[pd.notna(column)].to_numpy(dtype=float))
    values = values[np.isfinite(values)]
    nonzero = values[values > 0]
    if not len(nonzero) or (values == np.round(values)).all() or nonzero.min() >= 100:
        return "{:,.0f}"
    low = nonzero.min()
    if low >= 1e-3:
        decimals = int(min(4, max(0, digits - 1 - np.floor(np.log10(low)))))
        return "{:,.%df}" % decimals
    return "{:.%de}" % (digits - 1)


def _each(column: pd.Series, fmt: str) -> pd.Series:
    return column.map(lambda x: fmt.format(x) if pd.notna(x) and np.isfinite(x) else "--")


def readable(df: pd.DataFrame, columns: list[str] | None = None,
             labels: dict[str, str] | None = None, digits: int = 3) -> pd.DataFrame:
    """``df`` (or its ``columns``) for a reader: headers with units, rounded values (other floats
    to ``digits`` significant digits), "--" where a value is missing (never NaN or <NA>), and
    kernel labels instead of ids where the index (or its level named kernel) holds ids (from
    ``df``'s ``label`` column, or from ``labels``: id -> label). cuBLAS's own row has no "% of
    cuBLAS": the column divides by a cuBLAS figure, and cuBLAS is not a share of itself."""
    out = df[columns].copy() if columns else df.copy()
    if df.index.name == "kernel" and "pct_of_cublas" in out.columns and "cublas" in out.index:
        out["pct_of_cublas"] = out["pct_of_cublas"].astype(float)
        out.loc["cublas", "pct_of_cublas"] = np.nan  # (not a share of itself: shown as --)
    if df.index.nlevels == 1 and (df.index.name == "kernel" or labels):
        if "label" in df.columns and df.index.name == "kernel":
            labels = dict(zip(df.index, df["label"]))
            out = out.drop(columns="label", errors="ignore")
        if labels:
            out.index = [labels.get(k, k) for k in out.index]
            out.index.name = "kernel"
    elif "kernel" in df.index.names and labels:  # a kernel level among others
        out = out.rename(index=labels, level="kernel")
    if isinstance(out.columns, pd.MultiIndex):  # ("model", "sectors") -> "model: sectors"
        out.columns = [": ".join(str(COLUMNS.get(p, p)) for p in parts if str(p))
                       for parts in out.columns]
    out = out.rename(columns=COLUMNS).rename_axis(columns=None)
    named = (isinstance(out.index, pd.RangeIndex) and len(out.columns) > 1
             and not pd.api.types.is_numeric_dtype(out.iloc[:, 0]))
    for name in out.columns:
        out[name] = _format(out[name], _kind(str(name)), digits)
    if named:  # (a 0, 1, 2 ... index means nothing to a reader: the first column of names is it)
        out = out.set_index(out.columns[0])
    if out.index.nlevels == 1 and out.index.name:  # one header row: the index's name at its left
        out = out.rename_axis(index=None, columns=out.index.name)
    return out
