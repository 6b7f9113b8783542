"""The source articles' published figures, kept beside our measurements (../shared/sources)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

DATA = Path(__file__).resolve().parent / "data"


def source003_naive() -> pd.DataFrame:
    """Source 003's GFLOP/s of the naive kernel: rows n, columns block size ('8x8', ...)."""
    return pd.read_csv(DATA / "source003_naive.csv", comment="#", index_col="n")


def beside_source003(df: pd.DataFrame) -> pd.DataFrame:
    """Our GFLOP/s of naive8/16/32 next to source 003's, by n (M = N = K)."""
    ours = (df[df.kernel.isin(["naive8", "naive16", "naive32"]) & (df.status == "ok")]
            .assign(block=lambda d: d.kernel.str.removeprefix("naive").map(lambda b: f"{b}x{b}"))
            .pivot_table(index="M", columns="block", values="gflops"))
    ours = ours.reindex(columns=[c for c in source003_naive().columns if c in ours.columns])
    src = source003_naive()
    table = pd.concat({"source 003 (published)": src, "ours (measured)": ours}, axis=1)
    table.index.name = "n"
    return table.round(1)
