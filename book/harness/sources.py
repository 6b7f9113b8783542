"""The source articles' published figures, kept beside our measurements (../shared/sources)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .tables import significant

DATA = Path(__file__).resolve().parents[1] / "data"


def source003(table: str = "naive") -> pd.DataFrame:
    """Source 003's GFLOP/s table ('naive' or 'tiled'): rows n, columns block size ('8x8', ...)."""
    return pd.read_csv(DATA / f"source003_{table}.csv", comment="#", index_col="n")


def source003_naive() -> pd.DataFrame:
    """Source 003's GFLOP/s of the naive kernel (chapter 2)."""
    return source003("naive")


def beside_source003(df: pd.DataFrame, table: str = "naive") -> pd.DataFrame:
    """Our GFLOP/s of naive8/16/32 (or tiled8/16/32) next to source 003's, by n (M = N = K)."""
    ids = [f"{table}{b}" for b in (8, 16, 32)]
    ours = (df[df.kernel.isin(ids) & (df.status == "ok")]
            .assign(block=lambda d: d.kernel.str.removeprefix(table).map(lambda b: f"{b}x{b}"))
            .pivot_table(index="M", columns="block", values="gflops"))
    src = source003(table)
    ours = ours.reindex(columns=[c for c in src.columns if c in ours.columns])
    both = pd.concat({"source 003 (published)": src, "ours (measured)": ours}, axis=1)
    both.index.name = "n"
    return both.map(significant)
