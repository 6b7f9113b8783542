"""A small autotuning sweep over 08_async.cu's tile parameters (chapter 8).

Every configuration is checked before it is timed, like every kernel of the book (``sweep``);
one that fails its check is reported and never timed. The winner is the configuration with the
highest GFLOP/s at the largest size, per GPU: it is read from that GPU's results file, never
hard-coded.
"""
from __future__ import annotations

import pandas as pd

from .measure import sweep
from .registry import async_tile

SPACE = [
    {},                                                          # the registered configuration
    {"SERP": 0},                                                 # FFMAs in plain row order
    {"STAGES": 3}, {"STAGES": 5},
    {"BK": 8, "STAGES": 6}, {"BK": 32, "STAGES": 3},
    {"BM": 256, "BN": 128, "WM": 64, "WN": 64},                  # 256 x 128, like cuBLAS's tile
    {"BN": 128, "WN": 32, "WNITER": 2, "STAGES": 2, "SERP": 0},  # 128 x 128, 8 x 8 per thread
    {"BN": 128, "WN": 32, "WNITER": 2, "STAGES": 3, "SERP": 0, "MINB": 2},
    {"BN": 128, "WN": 32, "WNITER": 2, "BK": 32, "STAGES": 2, "SERP": 0, "MINB": 2},
    {"BN": 128, "THREADS": 128, "BK": 32, "STAGES": 2, "SERP": 0},  # 128 x 128, 4 warps
]
"""Changes to 08_async.cu's registered defines (ASYNC), one configuration each."""


def tune(sizes, space=SPACE, progress: bool = False) -> pd.DataFrame:
    """Check and time every configuration at every size; the defines are columns."""
    specs = [async_tile(**change) for change in space]
    df = sweep(specs, sizes, progress=progress)
    defines = pd.DataFrame([{**dict(s.defines), "kernel": s.id} for s in specs])
    return df.merge(defines, on="kernel", how="left")


def winner(df: pd.DataFrame) -> pd.Series:
    """The fastest checked configuration at the largest size."""
    ok = df[(df.status == "ok") & (df.kernel != "cublas")]
    top = ok[ok.M == ok.M.max()]
    return top.loc[top.gflops.idxmax()]
