"""The book's own FP32 SGEMM (chapter 9): ``book.sgemm(A, B)`` for any shape, a plan per shape.

``sgemm(A, B)`` multiplies float32 matrices of any M, N, K >= 1 with chapter 8's cp.async kernel
(``08_async.cu``) in the configuration and split-K count that a tuning run on this GPU found
fastest for the nearest shape of the suite. Split-K launches ``splits`` blocks per tile of C,
each over one slice of K into a workspace, and adds the slices with ``09_splitk.cu``.

    python -m book.gemm --tune      # on a GPU: check and time every plan on every suite shape,
                                     # save the fastest per shape (results/<gpu>/09_sgemm_plans.csv)
    python -m book.gemm --suite     # book.sgemm against cuBLAS on the suite (09_sgemm_suite.csv)

Every plan is checked before it is timed (``book.harness.measure.sweep``); where no tuned table
exists for this GPU (or on the CPU emulator) a default plan is used and the function says so once.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from .harness import results
from .harness.measure import sweep
from .launch.runtime import BACKEND, LaunchError, load_kernel, xp
from .registry import KernelSpec, async_tile, ceil_div, warptile

CONFIGS = {
    "128x256": {},                                                        # chapter 8's step 4
    "128x128": {"BN": 128, "WN": 32, "WNITER": 2, "STAGES": 3, "SERP": 0, "MINB": 2},
    "128x128/4w": {"BN": 128, "THREADS": 128, "BK": 32, "STAGES": 2, "SERP": 0},
    "64x128": {"BM": 64, "BN": 128, "WM": 32, "WN": 64, "WNITER": 2, "THREADS": 128},
    "64x64": {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "WNITER": 1, "THREADS": 128},
    "256x128": {"BM": 256, "BN": 128, "WM": 64, "WN": 64},                # cuBLAS's tile shape
    "128x256/3s": {"STAGES": 3},
    "128x64": {"BN": 64, "WN": 32, "WNITER": 2, "THREADS": 128},
    "64x128/3s": {"BM": 64, "BN": 128, "WM": 32, "WN": 64, "WNITER": 2, "THREADS": 128,
                  "STAGES": 3},
}
"""The dispatcher's candidate configurations of 08_async.cu (changes to ``registry.ASYNC``)."""

SPLITS = (1, 2, 3, 4, 6, 8, 12, 16)
"""Split-K counts the tuner tries where a shape has too few tiles of C to fill the GPU."""

SUITE = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
         (16384, 16384, 16384), (1000, 1000, 1000), (4097, 4097, 4097), (3000, 5000, 2000),
         (16384, 16384, 256), (8192, 8192, 512), (1024, 1024, 16384), (512, 512, 65536),
         (16384, 128, 4096), (128, 16384, 4096)]
"""The shape suite (M, N, K): square 1024 ... 16384, sizes off multiples of 32, small K
(K <= min(M, N) / 8), large K (K >= 8 max(M, N)), tall-skinny and short-wide."""

CPU_SUITE = [(64, 64, 64), (33, 17, 65), (16, 16, 600), (96, 40, 8), (130, 70, 33)]
"""Small shapes of the same kinds for the CPU emulator (timings there mean nothing)."""

PLANS_FILE, SUITE_FILE, CANDIDATES_FILE = "09_sgemm_plans", "09_sgemm_suite", "09_sgemm_candidates"


@dataclass(frozen=True)
class Plan:
    """One way to compute a shape: a configuration of 08_async.cu and a split-K count. It
    launches like a registry entry, so ``sweep`` and ``check_kernels`` take it as they are."""

    config: str
    splits: int = 1
    chapter = 9

    @property
    def spec(self) -> KernelSpec:
        return _spec(self.config, self.splits > 1)

    @property
    def id(self) -> str:
        return f"sgemm_{self.config}_k{self.splits}"

    @property
    def label(self) -> str:
        return f"{self.config} tiles" + (f", split-K {self.splits}" if self.splits > 1 else "")

    def why_not_here(self) -> str | None:
        return self.spec.why_not_here()

    def launch(self, A, B, C, M: int, N: int, K: int) -> None:
        spec = self.spec
        why = spec.why_not_here()
        if why:
            raise LaunchError(f"{self.id} cannot run here: it {why}")
        kernel = _kernel(self.config, self.splits > 1)
        spec.row_lengths(A, B, C, M, N, K)  # shapes checked with the launch API's errors
        tiles = ceil_div(K, dict(spec.defines)["BK"])
        splits = 1 if self.config == FALLBACK else ceil_div(tiles, ceil_div(tiles, min(self.splits, tiles)))
        gx, gy = spec.grid(M, N)
        sizes = (np.int32(M), np.int32(N), np.int32(K))
        if splits == 1:
            kernel((gx, gy, 1), spec.block, (A, B, C, *sizes), shared_mem=spec.stage_bytes)
            return
        work = xp.empty((splits, M, N), dtype=xp.float32)
        kernel((gx, gy, splits), spec.block, (A, B, work, *sizes), shared_mem=spec.stage_bytes)
        _reducer()((min(ceil_div(M * N, 256), 4096),), (256,),
                   (work, C, np.int32(M), np.int32(N), np.int32(splits)))


@lru_cache(maxsize=None)
def _kernel(config: str, split: bool = False):
    """The compiled kernel of a configuration, built once: a launch then costs no host work
    beyond the launch itself. Called only where the device can run the configuration."""
    return _spec(config, split).kernel()


@lru_cache(maxsize=None)
def _spec(config: str, split: bool = False) -> KernelSpec:
    """The kernel of a configuration; ``split``: compiled with SPLITK = 1 (blockIdx.z takes a
    slice of K), which costs the one-slice launch a few percent, so only split plans use it."""
    if config == FALLBACK:
        return warptile()
    return async_tile(**CONFIGS[config], **({"SPLITK": 1} if split else {}))


@lru_cache(maxsize=1)
def _reducer():
    return load_kernel("09_splitk.cu", "splitk_reduce")


DEFAULT = Plan("128x256")
FALLBACK = "warptile"
"""Below compute capability 8.0 (no cp.async): chapter 8's double-buffered warp-tile kernel."""


def candidates(M: int, N: int, K: int, sms: int = 132) -> list[Plan]:
    """The plans the tuner tries for one shape: every configuration without split-K, and split-K
    for configurations whose tiles of C are fewer than two waves of ``sms`` blocks."""
    plans = []
    for name in CONFIGS:
        spec = _spec(name)
        blocks = math.prod(spec.grid(M, N))
        k_tiles = ceil_div(K, dict(spec.defines)["BK"])
        for s in SPLITS:
            if s == 1 or (blocks < 2 * sms and s <= k_tiles // 4 and s * M * N * 4 <= 2 << 30):
                plans.append(Plan(name, s))
    return plans


_PLANS: list = [None]  # plans set in this process (use_plans), before any saved table


def use_plans(plans: pd.DataFrame | None) -> None:
    """Make ``sgemm`` dispatch with these plans (a tuning run's first table) in this process."""
    _PLANS[0] = plans
    _table.cache_clear()
    plan_for.cache_clear()


@lru_cache(maxsize=1)
def _table() -> pd.DataFrame | None:
    """The plans in use: set by ``use_plans``, else this GPU's saved tuning run (None on the CPU
    or where none was saved for this GPU)."""
    if _PLANS[0] is not None:
        return _PLANS[0]
    if BACKEND != "gpu":
        return None
    from .harness.device import device_report, gpu_slug
    try:
        return results.load(PLANS_FILE, gpu_slug(device_report()["name"]))
    except FileNotFoundError:
        return None


@lru_cache(maxsize=4096)
def plan_for(M: int, N: int, K: int) -> Plan:
    """The tuned plan of the suite shape nearest to (M, N, K) in log scale, else the default."""
    if DEFAULT.why_not_here():
        return Plan(FALLBACK)
    table = _table()
    if table is None or not len(table):
        return DEFAULT
    dist = sum((np.log2(table[c].to_numpy(float)) - math.log2(v)) ** 2
               for c, v in (("M", M), ("N", N), ("K", K)))
    row = table.iloc[int(np.argmin(dist))]
    return Plan(row.config, int(row.splits))


def sgemm(A, B, out=None):
    """C = A @ B in float32 with the book's kernels: any M, N, K >= 1, C-contiguous arrays of
    this backend. Writes into ``out`` (M x N) when given and returns C."""
    for name, x in (("A", A), ("B", B)) + ((("out", out),) if out is not None else ()):
        if not isinstance(x, xp.ndarray) or x.ndim != 2:
            raise LaunchError(f"sgemm: {name} must be a 2-D {xp.__name__} array, got "
                              f"{type(x).__name__} with shape {getattr(x, 'shape', None)}")
        if x.dtype != xp.float32:
            raise LaunchError(f"sgemm: {name} must be float32, got {x.dtype}")
        if not x.flags.c_contiguous:
            raise LaunchError(f"sgemm: {name} must be C-contiguous (use xp.ascontiguousarray)")
    (M, K), (K2, N) = A.shape, B.shape
    if K2 != K or 0 in (M, N, K):
        raise LaunchError(f"sgemm: A is {M} x {K} and B is {K2} x {N}; need A's columns = B's "
                          "rows and every size >= 1")
    if out is None:
        out = xp.empty((M, N), dtype=xp.float32)
    plan_for(M, N, K).launch(A, B, out, M, N, K)
    return out


class BookSgemm:
    """``sgemm`` as a pseudo-kernel for ``sweep``: its rows carry the id ``book_sgemm``."""

    id, label, chapter = "book_sgemm", "book.sgemm (tuned per shape)", 9

    @staticmethod
    def why_not_here():
        return None  # below compute capability 8.0 it runs the fallback plan

    @staticmethod
    def launch(A, B, C, M, N, K) -> None:
        sgemm(A, B, out=C)


def tune(shapes=None, progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Check and time every candidate plan on every shape (cuBLAS beside it). Returns the plans
    (one row per shape: the fastest checked plan) and every candidate's measurement."""
    from .harness.device import device_report
    shapes = shapes or (SUITE if BACKEND == "gpu" else CPU_SUITE)
    sms = device_report().get("sms", 132)
    rows, every = [], []
    for shape in shapes:
        plans = {p.id: p for p in candidates(*shape, sms=sms)}
        df = sweep(list(plans.values()), [shape], progress=progress)
        every.append(df)
        ok = df[(df.status == "ok") & (df.kernel != "cublas")]
        best = ok.loc[ok.gflops.idxmax()]
        plan = plans[best.kernel]
        rows.append({"M": shape[0], "N": shape[1], "K": shape[2], "config": plan.config,
                     "splits": plan.splits, "gflops": best.gflops,
                     "pct_of_cublas": best.pct_of_cublas, "plans_tried": len(ok),
                     "device": best.device, "date": best.date})
        if progress:
            print(f"{shape}: {plan.label}: {best.pct_of_cublas:.1f}% of cuBLAS", flush=True)
    return pd.DataFrame(rows), pd.concat(every, ignore_index=True)


def suite(shapes=None, rounds: int = 3, progress: bool = False) -> pd.DataFrame:
    """``book.sgemm`` and cuBLAS on every shape, checked then timed, in ``rounds`` interleaved
    rounds; one row per shape and kernel with the median GFLOP/s of the rounds."""
    shapes = shapes or (SUITE if BACKEND == "gpu" else CPU_SUITE)
    runs = pd.concat([sweep([BookSgemm], [shape], progress=progress).assign(round=r)
                      for r in range(rounds) for shape in shapes])
    keys = ["M", "N", "K", "kernel"]
    med = runs.groupby(keys, sort=False).agg(
        label=("label", "first"), gflops=("gflops", "median"), rel_error=("rel_error", "max"),
        status=("status", lambda s: "ok" if (s == "ok").all() else s[s != "ok"].iloc[0]),
        device=("device", "first"), date=("date", "first")).reset_index()
    base = med[med.kernel == "cublas"].set_index(["M", "N", "K"]).gflops
    med["pct_of_cublas"] = 100 * med.gflops.to_numpy() / base.reindex(
        pd.MultiIndex.from_frame(med[["M", "N", "K"]])).to_numpy()
    return med


def waves(shapes, config: str = "128x256", sms: int = 132) -> pd.DataFrame:
    """Why one tile size cannot fit every shape: the blocks a configuration launches per shape,
    the waves they make on ``sms`` SMs (one block per SM at a time, as chapter 8's kernels run),
    and how full the last wave is."""
    spec = _spec(config)
    rows = []
    for M, N, K in shapes:
        blocks = math.prod(spec.grid(M, N))
        full, rest = divmod(blocks, sms)
        rows.append({"M": M, "N": N, "K": K, "blocks": blocks, "waves": blocks / sms,
                     "last wave full (%)": 100 * (rest or sms) / sms,
                     "k steps per block": ceil_div(K, dict(spec.defines)["BK"])})
    return pd.DataFrame(rows).set_index(["M", "N", "K"])


def what_helped(candidates_df: pd.DataFrame) -> pd.DataFrame:
    """Per shape, from a tuning run: chapter 8's tile alone, the best tile without split-K, and
    the best plan, each as % of the cuBLAS run timed beside them."""
    ok = candidates_df[(candidates_df.status == "ok") & (candidates_df.kernel != "cublas")].copy()
    ok["splits"] = ok.kernel.str.rsplit("_k", n=1).str[1].astype(int)
    rows = []
    for (M, N, K), g in ok.groupby(["M", "N", "K"], sort=False):
        fixed = g[g.kernel == DEFAULT.id].pct_of_cublas
        rows.append({"M": M, "N": N, "K": K,
                     "chapter 8's tile (%)": fixed.iloc[0] if len(fixed) else float("nan"),
                     "best tile (%)": g[g.splits == 1].pct_of_cublas.max(),
                     "best plan (%)": g.pct_of_cublas.max(),
                     "best plan": g.loc[g.pct_of_cublas.idxmax(), "label"]})
    return pd.DataFrame(rows).set_index(["M", "N", "K"])


def summary(suite_df: pd.DataFrame) -> dict:
    """The goal's figures for one GPU's suite: geometric mean and minimum % of cuBLAS, and the
    two squares the goal names."""
    b = suite_df[(suite_df.kernel == BookSgemm.id) & (suite_df.status == "ok")]
    pct = b.set_index(["M", "N", "K"]).pct_of_cublas
    return {"shapes": len(b), "geomean (%)": 100 * float(np.exp(np.log(pct / 100).mean())),
            "min (%)": float(pct.min()), "at 4096^3 (%)": float(pct.get((4096, 4096, 4096), np.nan)),
            "at 8192^3 (%)": float(pct.get((8192, 8192, 8192), np.nan))}


def suite_table(suite_df: pd.DataFrame, plans: pd.DataFrame) -> pd.DataFrame:
    """One GPU's suite, one row per shape: the plan ``book.sgemm`` ran (from that GPU's
    ``plans``), its GFLOP/s and cuBLAS's, and the ratio (medians of the interleaved rounds)."""
    book = suite_df[suite_df.kernel == BookSgemm.id].set_index(["M", "N", "K"])
    cublas = suite_df[suite_df.kernel == "cublas"].set_index(["M", "N", "K"]).gflops
    return pd.DataFrame({
        "plan": [_plan_label(plans, shape) for shape in book.index],
        "book.sgemm GFLOP/s": book.gflops.to_numpy(),
        "cuBLAS GFLOP/s": cublas.reindex(book.index).to_numpy(),
        "% of cuBLAS": book.pct_of_cublas.to_numpy()},
        index=pd.Index([f"{m} x {n} x {k}" for m, n, k in book.index], name="M x N x K"))


def _plan_label(plans: pd.DataFrame, shape) -> str:
    row = plans[(plans.M == shape[0]) & (plans.N == shape[1]) & (plans.K == shape[2])]
    return Plan(row.config.iloc[0], int(row.splits.iloc[0])).label if len(row) else "--"


def recorded_suites(live: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """Every GPU's recorded suite by device name, with ``live`` (this run) in place of its own."""
    out = results.load_every(SUITE_FILE)
    if live is not None and BACKEND == "gpu":
        out[live.device.iloc[0]] = live
    return dict(sorted(out.items()))


def suite_plot(suites: dict[str, pd.DataFrame]):
    """% of cuBLAS per suite shape, one bar per GPU; the goal's 100% and 90% as lines."""
    import matplotlib.pyplot as plt

    from .harness.plots import FAMILIES, STYLE
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.5, 6.5))
        h = 0.8 / max(len(suites), 1)
        for i, (device, df) in enumerate(suites.items()):
            b = df[df.kernel == BookSgemm.id]
            labels = [f"{m} x {n} x {k}" for m, n, k in zip(b.M, b.N, b.K)]
            y = np.arange(len(b)) + i * h
            ax.barh(y, b.pct_of_cublas, height=h, color=FAMILIES[9][1], alpha=1.0 - 0.45 * i,
                    hatch=("", "///")[i % 2], label=device)
            for yy, v in zip(y, b.pct_of_cublas):
                ax.annotate(f"{v:.0f}", (v, yy), xytext=(2, 0), textcoords="offset points",
                            va="center", fontsize=7.5)
        ax.set_yticks(np.arange(len(b)) + h * (len(suites) - 1) / 2, labels, fontsize=8.5)
        ax.set_ylim(len(b) - 0.1, -0.3)
        for x, ls in ((100, "-"), (90, ":")):
            ax.axvline(x, color="k", lw=1, ls=ls)
        ax.set_xlabel("book.sgemm, % of the cuBLAS SGEMM timed beside it (median of interleaved rounds)")
        ax.set_title("The book's SGEMM against cuBLAS on the suite (goal: 100% geometric mean, "
                     "none below 90%)", fontsize=10)
        ax.set_xlim(0, 135)
        ax.legend(loc="upper right", fontsize=8.5)
        ax.grid(axis="y", visible=False)
        plt.close(fig)
    return fig


def main(argv: list[str]) -> int:
    pd.set_option("display.width", 200)
    if "--tune" in argv:
        plans, every = tune()
        results.keep(every, CANDIDATES_FILE)
        print(results.keep(plans, PLANS_FILE).to_string())
        use_plans(plans)
    if "--suite" in argv or "--tune" in argv:
        print(results.keep(suite(), SUITE_FILE).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
