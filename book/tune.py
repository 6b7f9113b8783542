"""A small autotuning sweep over 08_warptile.cu's tile parameters (chapter 8).

Every configuration is checked before it is timed, like every kernel of the book (``sweep``);
one that fails its check is reported and never timed. The winner is the configuration with the
highest GFLOP/s at the largest size, per GPU: it is read from that GPU's results file, never
hard-coded.
"""
from __future__ import annotations

import pandas as pd

from .measure import sweep
from .registry import warptile

SPACE = [
    {},                                                             # the default: 8 x 8 per thread
    {"DB": 0},
    {"MINB": 2},
    {"PAD": 0},
    {"BK": 8},
    {"WM": 32, "WN": 64},
    {"BM": 64, "BN": 128, "WM": 32, "WN": 32, "THREADS": 256, "WNITER": 1},
    {"BM": 128, "BN": 64, "WM": 32, "WN": 32, "THREADS": 256, "WNITER": 1},
    {"BN": 256, "WM": 64, "WN": 64, "WNITER": 4, "THREADS": 256, "BK": 8},   # 8 x 16 per thread
    {"WM": 64, "WN": 64, "WNITER": 4, "THREADS": 128},               # 8 x 16 per thread, 4 warps
    {"BM": 256, "BN": 128, "WM": 64, "WN": 64, "WNITER": 4, "THREADS": 256, "BK": 8},
]
"""Changes to WARPTILE's defines, one configuration each."""


def tune(sizes, space=SPACE, progress: bool = False) -> pd.DataFrame:
    """Check and time every configuration at every size; the defines are columns."""
    specs = [warptile(**change) for change in space]
    df = sweep(specs, sizes, progress=progress)
    defines = pd.DataFrame([{**dict(s.defines), "kernel": s.id} for s in specs])
    return df.merge(defines, on="kernel", how="left")


def winner(df: pd.DataFrame) -> pd.Series:
    """The fastest checked configuration at the largest size."""
    ok = df[(df.status == "ok") & (df.kernel != "cublas")]
    top = ok[ok.M == ok.M.max()]
    return top.loc[top.gflops.idxmax()]
