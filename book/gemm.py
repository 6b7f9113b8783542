"""The book's own FP32 SGEMM (chapter 9): ``book.sgemm(A, B)`` for any shape, a plan per shape.

``sgemm(A, B)`` multiplies float32 matrices of any M, N, K >= 1 -- contiguous, or rows of wider
arrays (leading dimensions) -- with chapter 8's cp.async kernel (``08_async.cu``;
``09_sgemm.cu`` adds its entries for leading dimensions and split-K, and a build that times each
block) in a plan per shape: on the suite's shapes the one a tuning run on this GPU found
fastest; on any other shape, the fastest of the cost model's best few (``ranked``), timed on the
shape's first call on this GPU and remembered (``learn``; without a GPU, the model's best). A plan is a tile configuration, a split-K count (``splits``
blocks per tile of C, each over one slice of K into a workspace, the slices added by
``09_splitk.cu``) or stream-K (the whole waves one block per tile, then as many blocks as the
GPU runs at once sharing the steps of the tiles left, their pieces added by a fix-up;
``09_sgemm.cu``), and, where N is not a multiple of 4, whether to copy B into 16-byte aligned
rows first.

    python -m book.gemm --tune      # on a GPU: check and time every plan on every suite shape,
                                     # save the fastest per shape (results/<gpu>/09_sgemm_plans.csv)
    python -m book.gemm --suite     # book.sgemm against cuBLAS on the suite (09_sgemm_suite.csv)
    python -m book.gemm --timeline  # edge tiles in place or moved back, block by block
                                     # (09_edge_timeline.csv)
    python -m book.gemm --heldout   # book.sgemm against cuBLAS on 40 seeded shapes it was never
                                     # tuned on, and the suite, with each plan's regret
                                     # (09_sgemm_heldout.csv)
    python -m book.gemm --fresh     # the same on a second seeded set of 40, drawn later
                                     # (09_sgemm_heldout_fresh.csv)
    python -m book.gemm --third     # and on a third, drawn last and looked at by no change
                                     # (09_sgemm_heldout_third.csv)
    python -m book.gemm --layouts   # NN, TN, NT, TT against cuBLAS in the same layout
                                     # (09_sgemm_layouts.csv)

Every plan is checked before it is timed (``book.harness.measure.sweep``). Below compute
capability 8.0, chapter 8's warp-tile kernel runs.
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from .harness import results
from .harness.measure import build_ahead, sweep
from .launch import streams
from .launch.runtime import BACKEND, LaunchError, build_all, load_kernel, to_host, unchecked, xp
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
    "128x256/k32": {"BK": 32, "STAGES": 3},                               # chapter 8's tuning winner
    "64x64/3s": {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "WNITER": 1, "THREADS": 128, "STAGES": 3},
    # Small shapes, where a thread's chain of FMAs (K x TM x TN of them) is the time: 4 x 4
    # outputs per thread, half of the others' 8 x 4 (chapter 9's small tiles).
    "64x32": {"BM": 64, "BN": 32, "WM": 32, "WN": 16, "TM": 4, "TN": 4, "WNITER": 1, "THREADS": 128},
    "32x32": {"BM": 32, "BN": 32, "WM": 32, "WN": 16, "TM": 4, "TN": 4, "WNITER": 1, "THREADS": 64,
              "STAGES": 3},
    "32x32/k8": {"BM": 32, "BN": 32, "BK": 8, "WM": 32, "WN": 16, "TM": 4, "TN": 4, "WNITER": 1,
                 "THREADS": 64},
}
"""The dispatcher's candidate configurations of 08_async.cu (changes to ``registry.ASYNC``)."""

STREAMK_CONFIGS = ("128x256", "128x128", "64x128/3s")
"""Configurations the tuner tries with stream-K. On an H100, with every configuration tried, one
of these three gave the fastest stream-K plan on 13 of the 14 suite shapes (at 1024^3 it was
64x64, at 83% of cuBLAS against 91% for the best plan); the other seven of the ten configurations
then cost tuning time only."""

LAYOUTS = ("nn", "tn", "nt", "tt")
"""How A and B reach ``sgemm``: 'n', rows of the matrix in memory (C-contiguous, or the rows of a
wider array); 't', its columns (the transpose of such an array, ``X.T``: F-contiguous). The
first letter is A's, the second B's, as BLAS names them."""
LAYOUT_LABELS = {"nn": "", "tn": ", A transposed", "nt": ", B transposed",
                 "tt": ", A and B transposed"}

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
OVERHEAD_FILE = "09_sgemm_overhead"
HELDOUT_FILE, LAYOUTS_FILE, MODEL_FILE = "09_sgemm_heldout", "09_sgemm_layouts", "09_sgemm_model"


@dataclass(frozen=True)
class Plan:
    """One way to compute a shape: a configuration of 08_async.cu, a split-K count or stream-K
    (``streamk``; then ``splits`` is 1), and whether to copy B into rows that start on 16-byte
    boundaries first (``pad_b``; only where B's rows do not: N or ldb not a multiple of 4). It
    launches like a registry entry, so ``sweep`` and ``check_kernels`` take it as they are."""

    config: str
    splits: int = 1
    pad_b: bool = False
    streamk: bool = False
    layout: str = "nn"
    chapter = 9

    def __post_init__(self):
        if self.streamk and self.splits != 1:
            raise ValueError(f"a plan is split-K or stream-K, not both (splits={self.splits})")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout {self.layout!r}: one of {', '.join(LAYOUTS)}")
        if self.layout != "nn" and self.config == FALLBACK:
            raise ValueError(f"{FALLBACK} reads row-major A and B only (layout 'nn')")
        if self.pad_b and self.layout[1] == "t":
            raise ValueError("a transposed B is read one float at a time: nothing to pad")

    @property
    def spec(self) -> KernelSpec:
        return _spec(self.config, self.layout)

    @property
    def id(self) -> str:
        return (f"sgemm_{self.config}_" + ("sk" if self.streamk else f"k{self.splits}")
                + ("_padb" if self.pad_b else "") + ("" if self.layout == "nn" else f"_{self.layout}"))

    @property
    def label(self) -> str:
        return (f"{self.config} tiles" + (f", split-K {self.splits}" if self.splits > 1 else "")
                + (", stream-K" if self.streamk else "") + (", B padded" if self.pad_b else "")
                + LAYOUT_LABELS[self.layout])

    @property
    def leading_dims(self) -> bool:
        """Takes arrays whose rows are padded (the registry's flag): all but the fallback."""
        return self.config != FALLBACK

    def why_not_here(self) -> str | None:
        return self.spec.why_not_here()

    def covers(self, M: int, N: int, K: int, lda: int, ldb: int, ldc: int) -> str | None:
        """Why this plan would not compute all of C = A B at this shape with rows lda, ldb, ldc
        floats apart, or None. Its grid of tiles covers any M x N and its k-tiles any K; the
        fallback reads contiguous arrays only."""
        if self.config == FALLBACK and (lda, ldb, ldc) != (K, N, N):
            return (f"reads contiguous arrays only (rows K, N, N = {K}, {N}, {N} floats apart), "
                    f"not rows {lda}, {ldb}, {ldc} floats apart")
        return _rows_why(self.layout, M, N, K, lda, ldb, ldc)

    def builds(self, align: int = 4) -> list[tuple[str, dict, tuple]]:
        """The compiles its launches on contiguous arrays need (views need the ``_ld`` entries,
        built when first launched; a padded B always does): its entries, and split-K's sum;
        ``align`` 2 or 1: the builds for operands whose rows start on 8 or 4 bytes only
        (``builds_for`` says when)."""
        if self.config == FALLBACK:
            return self.spec.builds()
        entries = (("matmul_tiles", "matmul_streamk", "streamk_fixup") if self.streamk
                   else ("matmul_splitk",) if self.splits > 1 else ("matmul_async",))
        if self.pad_b or self.layout != "nn":  # rows of other lengths than K and N: _ld entries
            entries = tuple(e if e == "streamk_fixup" else e + "_ld" for e in entries)
        align = 4 if self.pad_b else align
        return ([b for e in entries for b in _entry(self.config, e, self.layout, align).builds()]
                + ([("09_splitk.cu", {}, ())] if self.splits > 1 else []))

    def launch(self, A, B, C, M: int, N: int, K: int) -> None:
        """C = A @ B with arrays as the registry's kernels take them: (M, >= K), (K, >= N),
        (M, >= N), the rows of each array its leading dimension. A plan for transposed operands
        runs on transposed copies of A and/or B, made on the first launch with these arrays and
        kept while they are the ones passed (so that timing repeats time the kernels alone)."""
        why = self.spec.why_not_here()
        if why:
            raise LaunchError(f"{self.id} cannot run here: it {why}")
        if self.layout == "nn":
            self.run(A, B, C, M, N, K, *self.spec.row_lengths(A, B, C, M, N, K))
        else:
            _launch_in_layout(self, A, B, C, M, N, K)

    def run(self, A, B, C, M: int, N: int, K: int, lda: int, ldb: int, ldc: int,
            shares: int | None = None, alpha: float = 1.0, beta: float = 0.0) -> None:
        """Launch on arrays whose rows are lda, ldb, ldc floats apart (on the GPU they may be
        views into wider arrays; on the CPU each array's shape[1] is its leading dimension);
        A and B as their layout stores them (a transposed A: K rows of lda >= M floats).
        The caller has checked them. ``shares``: stream-K's count of blocks that share the
        tiles left after the whole waves (default: as many as the GPU runs at once).
        ``alpha``, ``beta``: C = alpha A B + beta C (C is not read where beta is 0), in the
        split-K sum, or for other plans by that sum's kernel over one slice, C = A B written
        to a scratch matrix first: M N floats written and read once more."""
        _check_covers(self, M, N, K, lda, ldb, ldc)
        if (alpha, beta) != (1.0, 0.0):
            if self.streamk or _launches(self, M, N, K, lda, ldb, ldc)[3]:  # it writes C itself
                tmp = _workspace(M * N, slot=1).reshape(M, N)
                self.run(A, B, tmp, M, N, K, lda, ldb, N, shares)
                _epilogue(tmp, C, M, N, ldc, 1, 1, alpha, beta)
                return
        if self.pad_b and (ldb % 4 or _address(B) % 16):
            B, ldb = _aligned_copy(B, K, N), 4 * ceil_div(N, 4)
        align = _row_align(self.layout, lda, ldb, A, B)
        if self.streamk:
            self._streamk(A, B, C, M, N, K, lda, ldb, ldc, shares, align)
            return
        kernel, grid, sizes, whole = _launches(self, M, N, K, lda, ldb, ldc, align)
        A, B = _arg(A), _arg(B)
        if whole:
            kernel(grid, (A, B, _arg(C), *sizes))
            return
        work = _workspace(grid[2] * M * N)
        kernel(grid, (A, B, _arg(work), *sizes))
        _epilogue(work, C, M, N, ldc, 1, grid[2], alpha, beta)

    def _streamk(self, A, B, C, M, N, K, lda, ldb, ldc, shares, align: int):
        """Stream-K: one block per tile for the whole waves, then ``shares`` blocks over equal
        shares of the steps of the tiles left; then the fix-up that adds the pieces. ``align``:
        the builds' ROW_ALIGN (``_row_align``)."""
        tile_m, tile_n = self.spec.tile
        tiles, steps = ceil_div(M, tile_m) * ceil_div(N, tile_n), ceil_div(K, _BK[self.config])
        shares = min(tiles * steps, shares or _resident_blocks(self.config, self.layout, align))
        whole = tiles // shares * shares
        contiguous = self.layout == "nn" and (lda, ldb, ldc) == (K, N, N)
        sizes = _ints(M, N, K) + (() if contiguous else _ints(lda, ldb, ldc))
        ld = "" if contiguous else "_ld"
        if whole:
            _kernel(self.config, "matmul_tiles" + ld, self.layout, align)(
                (whole,), (_arg(A), _arg(B), _arg(C), *sizes))
        if whole == tiles:
            return
        work_area = _arg(_workspace(2 * shares * tile_m * tile_n))
        _kernel(self.config, "matmul_streamk" + ld, self.layout, align)(
            (shares,), (_arg(A), _arg(B), _arg(C), work_area, *sizes, *_ints(shares)))
        parts = tile_m * tile_n // (16 * self.spec.block[0])  # FIXUP_FLOATS per part
        sizes = _ints(M, N, K, lda, ldb, ldc, shares)  # shares > 1 here: one takes every tile
        _kernel(self.config, "streamk_fixup", self.layout, align)(
            (shares - 1, parts), (work_area, _arg(C), _arg(A), _arg(B), *sizes))


@dataclass(frozen=True)
class Skinny:
    """09_skinny.cu as a plan: C with few columns (``side`` 'n': N <= pr) or few rows ('m':
    M <= pr). The layout says how the large operand lies: read along k (A as is where N is few,
    B transposed where M is few), skinny_dots; read along C's long side (A transposed where N is
    few, B as is where M is few), skinny_rows. ``splits``: blocks over K per group of rows or
    columns (their sums added by the last block of each group: no second launch). Side 'k': few
    k (K <= pr), where writing C is the cost: skinny_outer, in any layout, never split. Launches
    like a Plan."""

    side: str
    pr: int
    splits: int = 1
    layout: str = "nn"
    chapter = 9
    config = "skinny"
    streamk, pad_b = False, False
    leading_dims = False  # (it takes them; the sanitizer's padded-row pass is for the tiles)

    def __post_init__(self):
        if (self.side not in ("n", "m", "k") or self.pr not in SKINNY_PR or self.layout not in LAYOUTS
                or (self.side == "k" and self.splits != 1)):
            raise ValueError(f"no skinny plan {self}")

    @property
    def dots(self) -> bool:
        """Whether the large operand's rows run along k (skinny_dots), else along C (skinny_rows)."""
        if self.side == "k":
            return False
        return self.layout[0] == "n" if self.side == "n" else self.layout[1] == "t"

    @property
    def id(self) -> str:
        return (f"sgemm_skinny{self.side}{self.pr}_k{self.splits}"
                + ("" if self.layout == "nn" else f"_{self.layout}"))

    @property
    def label(self) -> str:
        if self.side == "k":
            return f"few k (K <= {self.pr})" + LAYOUT_LABELS[self.layout]
        few = "N" if self.side == "n" else "M"
        return (f"few columns ({few} <= {self.pr})" + (f", split-K {self.splits}" if self.splits > 1
                                                       else "") + LAYOUT_LABELS[self.layout])

    def why_not_here(self):
        return None

    def covers(self, M: int, N: int, K: int, lda: int, ldb: int, ldc: int) -> str | None:
        """Why this plan would not compute all of C at this shape, or None: it is built for at
        most ``pr`` columns of C (side 'n'), rows (side 'm') or values of k (side 'k')."""
        few, size = {"n": ("N", N), "m": ("M", M), "k": ("K", K)}[self.side]
        if size > self.pr:
            return f"computes {few} <= {self.pr} only, and {few} is {size}"
        return _rows_why(self.layout, M, N, K, lda, ldb, ldc)

    def builds(self) -> list[tuple[str, dict, tuple]]:
        return [("09_skinny.cu", {"PR": self.pr, "WARPS": SKINNY_WARPS}, ())]

    @property
    def per_block(self) -> int:
        """Rows (dots) or columns (rows) of the large operand one block of 09_skinny.cu takes."""
        if self.side == "k":  # skinny_outer: these columns of OUTER_ROWS rows
            return 128 * SKINNY_WARPS
        if not self.dots:  # skinny_rows: a block's warps split its k's
            return 128
        return SKINNY_WARPS * (4 if self.pr <= 8 else 2 if self.pr == 16 else 1)

    def launch(self, A, B, C, M: int, N: int, K: int) -> None:
        _launch_in_layout(self, A, B, C, M, N, K)

    def run(self, A, B, C, M: int, N: int, K: int, lda: int, ldb: int, ldc: int,
            shares: int | None = None, alpha: float = 1.0, beta: float = 0.0) -> None:
        """As Plan.run: A and B as the layout stores them, rows lda, ldb, ldc floats apart."""
        _check_covers(self, M, N, K, lda, ldb, ldc)
        # (k, n) of B at B[k ldb + n] as is, B[n ldb + k] transposed; (m, k) of A likewise.
        b_kn = (ldb, 1) if self.layout[1] == "n" else (1, ldb)
        a_mk = (lda, 1) if self.layout[0] == "n" else (1, lda)
        if self.side == "k":
            _skinny(self.pr, "skinny_outer")(_outer_grid(self.pr, M, N), (32 * SKINNY_WARPS,), (
                _arg(A), *_ints(*a_mk), _arg(B), *_ints(*b_kn), _arg(C),
                *_ints(ldc, M, N, K), np.float32(alpha), np.float32(beta)))
            return
        if self.side == "n":  # C (M x N, N few) = A B
            X, ldx, Y, R, P = A, lda, B, M, N
            y, z = b_kn, (ldc, 1)          # dots: Y(k, n); Z(m, n)
            if not self.dots:              # rows: C^T = B^T A^T, Y(n, k) = B(k, n); Z(n, m)
                y, z = b_kn[::-1], (1, ldc)
        else:  # C (M x N, M few)
            X, ldx, Y, R, P = B, ldb, A, N, M
            y, z = a_mk[::-1], (1, ldc)    # dots: C^T = B^T A^T, Y(k, m) = A(m, k); Z(n, m)
            if not self.dots:              # rows: Y(m, k) = A(m, k); Z(m, n)
                y, z = a_mk, (ldc, 1)
        splits = max(1, min(self.splits, ceil_div(K, 32)))
        grid = (ceil_div(R, self.per_block), splits)
        work = _workspace(splits * R * P) if splits > 1 else _workspace(1)
        # (the slices' sums: the last block of each column of the grid, counted in _tickets)
        _skinny(self.pr, "skinny_dots" if self.dots else "skinny_rows")(grid, (32 * SKINNY_WARPS,), (
            _arg(X), *_ints(ldx), _arg(Y), *_ints(*y), _arg(C), *_ints(*z, R, P, K),
            np.float32(alpha), np.float32(beta), _arg(work), _arg(_tickets(grid[0]))))


SKINNY_PR = (1, 2, 4, 8, 16, 32)
"""The column counts 09_skinny.cu is built for (a shape with P columns runs the smallest >= P)."""
SKINNY_WARPS = 8
OUTER_ROWS = 16  # rows of C per group of skinny_outer (as 09_skinny.cu defines it)
OUTER_ONE_GROUP = 8
"""Up to this PR, skinny_outer's blocks take one group of rows each (as many blocks as groups;
so do wider products, whose columns alone would fill more than half a wave of blocks):
B's few values per thread cost little to read again, and on an H100 probe (shapes outside the
held-out sets) one wave of blocks over every group took 2-10% longer at K from 2 to 8 (4096^2 x 8,
8192^2 x 2, 6000 x 700 x 5, 20000 x 3000 x 3) but 8-40% less time at K from 16 to 32
(2048 x 8192 x 16, 3000^2 x 32, 1500 x 9000 x 30, 1000 x 20000 x 24, and the second held-out
set's 2776 x 6942 x 18, the one that prompted the change)."""
SKINNY_SPLITS = (1, 2, 4, 8, 16, 32, 64)
WARP_BYTES_S = 25e9
"""Bytes per second one warp of 09_skinny.cu streams from X, for the cost model (an estimate:
where few warps run, they, not DRAM, set the pace)."""


@lru_cache(maxsize=None)
def _skinny(pr: int, name: str):
    return unchecked(load_kernel("09_skinny.cu", name, defines={"PR": pr, "WARPS": SKINNY_WARPS}))


@lru_cache(maxsize=1)
def _sms() -> int:
    """This GPU's SMs (device_report asks the driver for every attribute: 0.2 ms a call; 132
    on the CPU emulator, as the cost model assumes)."""
    from .harness.device import device_report
    return device_report().get("sms", 132)


@lru_cache(maxsize=None)
def _outer_wave(pr: int) -> int:
    """Blocks of skinny_outer (built for ``pr``) the GPU runs at once: SMs x blocks per SM (the
    driver's occupancy); on the CPU emulator 3, so that the tests' blocks take several groups."""
    if BACKEND != "gpu":
        return 3
    return _wave(_skinny(pr, "skinny_outer"), 32 * SKINNY_WARPS, 0)


def _wave(fn, threads: int, shared: int) -> int:
    """Blocks of a launch function (``threads`` a block, ``shared`` bytes of dynamic shared
    memory) that the GPU runs at once: SMs x the driver's occupancy (at least one per SM)."""
    per_sm = xp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
        getattr(fn, "kernel", fn).ptr, threads, shared)
    return _sms() * max(per_sm, 1)


def _outer_grid(pr: int, M: int, N: int, one_group: int | None = None) -> tuple[int, int]:
    """skinny_outer's grid: its columns of blocks, and along y at most a wave of blocks, each
    over every gridDim.y-th group of rows, where PR is above ``one_group`` (default
    OUTER_ONE_GROUP) and the columns fill at most half a wave; else a block a group (past 65535
    groups, blocks take more)."""
    across, groups = ceil_div(N, 128 * SKINNY_WARPS), min(ceil_div(M, OUTER_ROWS), 65535)
    wave = _outer_wave(pr) if pr > (OUTER_ONE_GROUP if one_group is None else one_group) else 0
    return across, min(groups, wave // across) if 2 * across <= wave else groups


def skinny_plans(M: int, N: int, K: int, layout: str = "nn", sms: int = 132) -> list:
    """The skinny plans that read this shape and layout: few columns of C (N <= 32) or few rows
    (M <= 32), each split count that leaves every block at least 32 values of k (in skinny_rows,
    one group of rows for each of its warps) and the GPU no more than eight blocks per SM; few k
    (K <= 32)."""
    plans = [Skinny("k", next(p for p in SKINNY_PR if p >= K), 1, layout)] if K <= SKINNY_PR[-1] else []
    for side, few, big in (("n", N, M), ("m", M, N)):
        if few > SKINNY_PR[-1]:
            continue
        pr = next(p for p in SKINNY_PR if p >= few)
        one = Skinny(side, pr, 1, layout)
        blocks = ceil_div(big, one.per_block)
        plans += [Skinny(side, pr, s, layout) for s in SKINNY_SPLITS
                  if s == 1 or (K >= 32 * s and blocks * s <= 8 * sms)]
    return plans


@dataclass(frozen=True)
class Packed:
    """A plan for transposed operands that first copies each transposed one into row-major
    order (09_transpose.cu, into a workspace kept between calls), then runs ``plan`` -- a plan
    for row-major operands (layout 'nn') -- on the copies: packing, as BLAS libraries do. A
    packed B's rows are rounded up to 4 floats, so that it is read in 16-byte pieces whatever N.
    Launches like a Plan; its id is the native plan's with ``_packed`` after it."""

    plan: object  # a Plan or Skinny for layout 'nn'
    layout: str
    chapter = 9
    leading_dims = False  # (it takes them; the sanitizer's padded-row pass is for the tiles)

    def __post_init__(self):
        if self.layout not in LAYOUTS[1:] or self.plan.layout != "nn" or self.plan.pad_b \
                or self.plan.config == FALLBACK:
            raise ValueError(f"no packed plan {self}: a plan for layout 'nn' without a padded B, "
                             f"and a transposed layout")

    config = property(lambda self: self.plan.config)
    splits = property(lambda self: self.plan.splits)
    streamk = property(lambda self: self.plan.streamk)
    pad_b = False

    @property
    def id(self) -> str:
        return dataclasses.replace(self.plan, layout=self.layout).id + "_packed"

    @property
    def label(self) -> str:
        return self.plan.label + LAYOUT_LABELS[self.layout] + ", packed"

    def why_not_here(self):
        return self.plan.why_not_here()

    def covers(self, M: int, N: int, K: int, lda: int, ldb: int, ldc: int) -> str | None:
        """Why not at this shape, or None: the native plan's reason on the packed copies."""
        return (_rows_why(self.layout, M, N, K, lda, ldb, ldc)
                or self.plan.covers(M, N, K, K, 4 * ceil_div(N, 4) if self.layout[1] == "t" else ldb, ldc))

    def builds(self) -> list[tuple[str, dict, tuple]]:
        return self.plan.builds() + [("09_transpose.cu", {}, ())]

    def launch(self, A, B, C, M: int, N: int, K: int) -> None:
        _launch_in_layout(self, A, B, C, M, N, K)

    def run(self, A, B, C, M: int, N: int, K: int, lda: int, ldb: int, ldc: int,
            shares: int | None = None, alpha: float = 1.0, beta: float = 0.0) -> None:
        """As Plan.run, A and B as the layout stores them (a transposed A: K rows of lda floats)."""
        _check_covers(self, M, N, K, lda, ldb, ldc)
        if self.layout[0] == "t":
            A, lda = _packed(A, K, M, lda, K, slot=3), K
        if self.layout[1] == "t":
            wide = 4 * ceil_div(N, 4)
            B, ldb = _packed(B, N, K, ldb, wide, slot=4), wide
        self.plan.run(A, B, C, M, N, K, lda, ldb, ldc, shares, alpha, beta)


def _rows_why(layout: str, M: int, N: int, K: int, lda: int, ldb: int, ldc: int) -> str | None:
    """Why arrays with rows lda, ldb, ldc floats apart cannot hold A, B (as ``layout`` stores
    them: a transposed A is K rows of M) and C at this shape, or None."""
    if min(M, N, K) < 1:
        return f"needs M, N, K >= 1"
    for name, ld, least in (("A", lda, K if layout[0] == "n" else M),
                            ("B", ldb, N if layout[1] == "n" else K), ("C", ldc, N)):
        if ld < least:
            return f"needs {name}'s rows at least {least} floats apart, not {ld}"
    return None


def _check_covers(plan, M: int, N: int, K: int, lda: int, ldb: int, ldc: int) -> None:
    """Raise LaunchError where ``plan`` would not compute all of C at this shape (a plan
    launched by hand outside the shapes it is built for would leave part of C unwritten)."""
    why = plan.covers(M, N, K, lda, ldb, ldc)
    if why:
        raise LaunchError(f"{plan.id} ({plan.label}) cannot compute {M} x {N} x {K}: it {why}")


def _packed(X, rows: int, cols: int, ldx: int, ldy: int, slot: int):
    """Y = X^T (cols x rows, rows ldy floats apart) in workspace ``slot``, for X rows x cols with
    rows ldx floats apart (09_transpose.cu)."""
    Y = _workspace(cols * ldy, slot).reshape(cols, ldy)
    tiles = ceil_div(rows, 32) * ceil_div(cols, 32)
    _transpose()((tiles,), (32, 8), (_arg(X), *_ints(ldx), _arg(Y), *_ints(ldy, rows, cols)))
    return Y


@lru_cache(maxsize=1)
def _transpose():
    return unchecked(load_kernel("09_transpose.cu", "transpose"))


def packed_plans(plans, layout: str) -> list:
    """Each plan of ``plans`` (for layout 'nn'; a padded B's plan without the padding, which
    packing does) packed for ``layout``, once each; none for layout 'nn'."""
    packed = []
    for p in plans:
        if layout == "nn" or p.config == FALLBACK or isinstance(p, Packed):
            continue
        q = Packed(dataclasses.replace(p, pad_b=False) if p.pad_b else p, layout)
        if q not in packed:
            packed.append(q)
    return packed


STREAMK_CPU_BLOCKS = 5
"""Stream-K's shares on the CPU emulator (it runs one block at a time): few and odd, so the
tests' small shapes still split tiles among blocks."""


@lru_cache(maxsize=None)
def _resident_blocks(config: str, layout: str = "nn", align: int = 4) -> int:
    """Stream-K blocks of a configuration that the GPU runs at once: SMs x the driver's blocks
    per SM for the stream-K entry (its loops hold more registers than matmul_async)."""
    if BACKEND != "gpu":
        return STREAMK_CPU_BLOCKS
    spec = _entry(config, "matmul_streamk", layout, align)
    return _wave(unchecked(spec.kernel()), spec.block[0], spec.shared_mem(0))


@lru_cache(maxsize=4096)
def _launches(plan: Plan, M: int, N: int, K: int, lda: int, ldb: int, ldc: int,
              align: int = 4):
    """What ``plan.run`` launches for one shape, worked out once: the kernel (``align``: its build
    for rows on 16, 8 or 4 bytes, ``_row_align``), its grid (the split-K slices along z), its
    integer arguments, and whether it writes C itself (else split-K's sum does, ``_epilogue``)."""
    if plan.config == FALLBACK:  # contiguous arrays only (sgemm copies views first)
        return _kernel(FALLBACK, ""), _spec(FALLBACK).grid(M, N), _ints(M, N, K), True
    tiles = ceil_div(K, _BK[plan.config])
    splits = ceil_div(tiles, ceil_div(tiles, min(plan.splits, tiles)))  # no empty slice
    grid = (*_spec(plan.config).grid(M, N), splits)
    nn = plan.layout == "nn"
    if splits == 1:
        contiguous = nn and (lda, ldb, ldc) == (K, N, N)
        sizes = _ints(M, N, K) + (() if contiguous else _ints(lda, ldb, ldc))
        kernel = _kernel(plan.config, "matmul_async" + ("" if contiguous else "_ld"), plan.layout,
                         align)
        return kernel, grid, sizes, True
    contiguous = nn and (lda, ldb) == (K, N)  # the slices go to a contiguous workspace
    sizes = _ints(M, N, K) + (() if contiguous else _ints(lda, ldb))
    kernel = _kernel(plan.config, "matmul_splitk" + ("" if contiguous else "_ld"), plan.layout,
                     align)
    return kernel, grid, sizes, None


def _ints(*values):
    return tuple(np.int32(v) for v in values)


def _address(x) -> int:
    return x.data.ptr if BACKEND == "gpu" else x.ctypes.data


def _floats_aligned(ld: int, address: int) -> int:
    """4, 2 or 1: whether rows ld floats apart from ``address`` all start on 16 bytes, else on 8,
    else on 4."""
    return 4 if ld % 4 == 0 and address % 16 == 0 else 2 if ld % 2 == 0 and address % 8 == 0 else 1


def _row_align(layout: str, lda: int, ldb: int, A=None, B=None) -> int:
    """The ROW_ALIGN build of 08_async.cu that a tile plan launches: 4 where the operands it reads
    in 16-byte pieces (B as is, A transposed) have rows on 16-byte boundaries; else 2 or 1, the
    build that reads such rows without checks in copies of 8 or 4 bytes. Rows lda and ldb floats
    apart, from A's and B's addresses (without them: from address 0, contiguous operands)."""
    align = _floats_aligned(ldb, 0 if B is None else _address(B)) if layout[1] == "n" else 4
    if layout[0] == "t":
        align = min(align, _floats_aligned(lda, 0 if A is None else _address(A)))
    return align


def builds_for(plans, M: int, N: int, layout: str = "nn") -> list:
    """The compiles ``plans`` need at a shape with contiguous operands in ``layout`` (rows of N
    floats for B as is, of M for A transposed: the ROW_ALIGN build they take), for
    ``runtime.build_all`` to make side by side before the first launch."""
    align = _row_align(layout, M, N)
    return [b for p in plans for b in (p.builds(align) if isinstance(p, Plan) else p.builds())]


def _arg(x):
    """The kernel argument for array x: on the GPU its device address (a view's first float),
    on the CPU the array itself (the emulator copies whole arrays)."""
    return np.uint64(x.data.ptr) if BACKEND == "gpu" else x


def _aligned_copy(B, K: int, N: int):
    """The K x N matrix B (rows of any length) copied into rows of 4 * ceil(N / 4) floats."""
    out = xp.empty((K, 4 * ceil_div(N, 4)), dtype=xp.float32)
    out[:, :N] = B[:, :N]
    return out


def _workspace(size: int, slot: int = 0):
    """A workspace of the calling stream and thread (``streams.buffer``), grown as needed and
    kept: a launch then allocates nothing, and no other stream or thread touches it. Slot 0:
    split-K's slices and stream-K's pieces; slot 1: A B before alpha and beta are applied."""
    return streams.buffer(("work", slot), size)


def _tickets(size: int):
    """Counters for 09_skinny.cu's split sums, one per column of its grid: zero, and left zero by
    every launch (the last block of a column sets its counter back). Per stream and thread."""
    return streams.buffer("tickets", size, xp.uint32, zeros=True)


def _epilogue(work, C, rows: int, cols: int, c_row: int, c_col: int, splits: int,
              alpha: float, beta: float) -> None:
    """C = alpha (the sum of the ``splits`` rows x cols slices of ``work``) + beta C, element
    (i, j) of C at C[i c_row + j c_col] (09_splitk.cu's splitk_reduce)."""
    grid = (min(ceil_div(rows * cols, 256), 4096),)
    _reducer()(grid, (256,), (_arg(work), _arg(C), *_ints(rows, cols, c_row, c_col, splits),
                              np.float32(alpha), np.float32(beta)))


@lru_cache(maxsize=None)
def _kernel(config: str, entry: str, layout: str = "nn", align: int = 4):
    """Launch function of an entry of a configuration's compiled module (09_sgemm.cu), built
    once: ``launch(grid, args)``. The entries: chapter 8's ``matmul_async``, ``matmul_splitk``
    (slices of K into a workspace in place of C), and stream-K's ``matmul_tiles`` (the whole
    waves), ``matmul_streamk`` (the shares) and ``streamk_fixup``;
    those ending in ``_ld`` take leading dimensions, the others build in lda = K and
    ldb = ldc = N, which runs faster where the matrices are contiguous. The fallback has one
    entry (``entry`` ""). On the GPU the function is CuPy's own, without the launch API's
    per-call checks (the callers have checked the arguments), so a call costs no host work beyond
    the launch itself. Called only where the device can run it."""
    spec = _entry(config, entry, layout, align)
    fn = unchecked(spec.kernel())
    shared = 0 if entry == "streamk_fixup" else spec.shared_mem(0)
    return lambda grid, args: fn(grid, spec.block, args, shared_mem=shared)


@lru_cache(maxsize=None)
def _spec(config: str, layout: str = "nn") -> KernelSpec:
    """The kernel of a configuration (09_sgemm.cu's entry with leading dimensions), for A and B
    as ``layout`` stores them (08_async.cu's TRANS_A and TRANS_B)."""
    if config == FALLBACK:
        return warptile()
    trans = {} if layout == "nn" else {"TRANS_A": int(layout[0] == "t"),
                                       "TRANS_B": int(layout[1] == "t"),
                                       "PADB": 4 if layout[1] == "t" else 0}
    spec = async_tile(**CONFIGS[config], **trans)
    return dataclasses.replace(spec, id="sgemm_" + spec.id + ("" if layout == "nn" else "_" + layout),
                               source="09_sgemm.cu", name="matmul_async_ld", leading_dims=True)


def _entry(config: str, entry: str, layout: str = "nn", align: int = 4) -> KernelSpec:
    """The kernel of one entry of a configuration. On a GPU each entry is its own build
    (-DONE_ENTRY -DENTRY_<entry>: 09_sgemm.cu compiles that kernel alone, in seconds); on the
    CPU emulator every entry comes from one build of the whole file. ``align`` 2 or 1: the build
    for operands whose rows start on 8 or 4 bytes only (08_async.cu's ROW_ALIGN). The fallback:
    its one entry."""
    spec = _spec(config, layout)
    if config == FALLBACK:
        return spec
    alone = (("ONE_ENTRY", 1), (f"ENTRY_{entry}", 1)) if BACKEND == "gpu" else ()
    return dataclasses.replace(spec, name=entry, leading_dims=entry.endswith("_ld"),
                               defines=spec.defines + alone
                               + ((("ROW_ALIGN", align),) if align != 4 else ()))


@lru_cache(maxsize=1)
def _reducer():
    return unchecked(load_kernel("09_splitk.cu", "splitk_reduce"))


FALLBACK = "warptile"
"""Below compute capability 8.0 (no cp.async): chapter 8's double-buffered warp-tile kernel."""
DEFAULT = Plan("128x256")
_BK = {name: dict(_spec(name).defines)["BK"] for name in CONFIGS}


def plan_by_id(plan_id: str) -> Plan:
    """The plan whose id is ``plan_id``: ``sgemm_<config>_k<splits>``, or ``sgemm_<config>_sk``
    for stream-K, ``_padb`` after it where B is padded, then ``_tn``, ``_nt`` or ``_tt`` for
    transposed operands (the ids in results files); ``sgemm_skinny<n|m|k><pr>_k<splits>`` for
    the skinny kernels; ``_packed`` after any of these with a transposed layout: ``Packed``."""
    if plan_id.endswith("_packed"):
        inner = plan_by_id(plan_id[:-len("_packed")])
        return Packed(dataclasses.replace(inner, layout="nn"), inner.layout)
    sk = re.fullmatch(r"sgemm_skinny([nmk])(\d+)_k(\d+)(?:_(tn|nt|tt))?", plan_id)
    if sk:
        return Skinny(sk.group(1), int(sk.group(2)), int(sk.group(3)), sk.group(4) or "nn")
    m = re.fullmatch(r"sgemm_(.+)_(?:k(\d+)|(sk))(_padb)?(?:_(tn|nt|tt))?", plan_id)
    if (not m or (m.group(1) not in CONFIGS and m.group(1) != FALLBACK)
            or (m.group(2) and int(m.group(2)) < 1)):
        raise KeyError(f"no book.sgemm plan {plan_id!r}: plan ids are sgemm_<config>_k<splits> "
                       f"or sgemm_<config>_sk with an optional _padb, the configurations "
                       f"{', '.join(CONFIGS)} and {FALLBACK}")
    return Plan(m.group(1), int(m.group(2) or 1), bool(m.group(4)), bool(m.group(3)),
                m.group(5) or "nn")


def sanitizer_plans() -> list[Plan]:
    """The plans ``python -m book.profile.sanitize`` runs: every configuration with and without
    split-K, with stream-K, B padded, and the fallback."""
    transposed = [Plan(c, s, layout=lay) for c in ("128x256", "64x64") for s in (1, 3)
                  for lay in LAYOUTS[1:]] + [Plan("128x128", streamk=True, layout="tt")]
    transposed += [Skinny(side, pr, s, lay) for side, lay in (("n", "nn"), ("n", "nt"), ("m", "nt"),
                                                               ("m", "tt"), ("m", "nn"), ("n", "tn"))
                   for pr in (1, 8, 32) for s in (1, 3)]  # (the last two: skinny_rows)
    transposed += [Skinny("k", pr, 1, lay) for pr in (4, 32) for lay in LAYOUTS]
    transposed += [Packed(p, lay) for p in (Plan("64x64", 3), Plan("128x128", streamk=True),
                                            Skinny("n", 8, 3)) for lay in LAYOUTS[1:]]
    return ([Plan(c, s) for c in CONFIGS for s in (1, 3)] + [Plan(c, streamk=True) for c in CONFIGS]
            + [Plan("64x128", 1, True)] + transposed + [Plan(FALLBACK)])


def candidates(M: int, N: int, K: int, sms: int = 132, configs=None,
               layout: str = "nn") -> list[Plan]:
    """The plans the tuner tries for one shape: every configuration (or those of ``configs``)
    without split-K, those of STREAMK_CONFIGS with stream-K, and split-K for configurations whose
    tiles of C are fewer than two waves of ``sms`` blocks; where N is not a multiple of 4, each of
    them with B copied into aligned rows as well (B as is only), for operands in ``layout``; and
    where few columns make it apply, the skinny kernel (``skinny_plans``); for transposed
    layouts, the plans for row-major operands packed as well (``Packed``).
    Below compute capability 8.0 (no cp.async): the fallback alone."""
    if DEFAULT.why_not_here():
        return [Plan(FALLBACK)]
    plans = []
    pads = (False, True) if N % 4 and layout[1] == "n" else (False,)
    for name in configs or CONFIGS:
        blocks = math.prod(_spec(name).grid(M, N))
        k_tiles = ceil_div(K, _BK[name])
        for s in SPLITS:
            if s == 1 or (blocks < 2 * sms and s <= k_tiles // 4 and s * M * N * 4 <= 2 << 30):
                plans += [Plan(name, s, pad, layout=layout) for pad in pads]
        if name in STREAMK_CONFIGS:
            plans += [Plan(name, 1, pad, streamk=True, layout=layout) for pad in pads]
    plans = skinny_plans(M, N, K, layout, sms) + plans  # (first where the model ties: launch-bound)
    if layout != "nn":
        plans += packed_plans(candidates(M, N, K, sms, configs), layout)
    return plans


_PLANS: list = [None]  # plans set in this process (use_plans), before any saved table


def use_plans(plans: pd.DataFrame | None) -> None:
    """Make ``sgemm`` dispatch with these plans (a tuning run's first table) in this process."""
    _PLANS[0] = plans
    _table.cache_clear()
    _tuned.cache_clear()
    _rates.cache_clear()
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


# -- Choosing a plan for a shape nobody tuned: a cost model ranks the candidates, the first call
# of a shape on a GPU times the best few and remembers the fastest. --------------------------

LAUNCH_S = 3e-6
"""GPU time one more kernel of a plan costs beside the main one (split-K's sum, stream-K's
fix-up, B's aligned copy): the gap between two dependent launches."""
LONE = 1.5
"""How much faster than in a full SM a block runs alone on its SM, where two or more fit."""
CHAIN_S = 1.4e-9
"""Seconds per FMA of one thread's chain where its warp has its SM's scheduler to itself (small
shapes): what a k-step of TM x TN outputs per thread costs at least (BK x TM x TN of them). From
an H100 probe: 64 x 64 tiles (8 x 4 outputs per thread) took 0.75 us per k-step of 16, 32 x 32
tiles (4 x 4) 0.4 us, on 13 x 23 x 93 -- a shape of the held-out set, so for small shapes that
set is not fully held out (chapter 9 says so)."""
STREAMK_STEP = 1.15
"""Stream-K's shares run their steps this much slower than whole tiles (chapter 9)."""
OUTER_RATE = 0.4
"""skinny_outer's FMA rate as a share of the tile kernels' best, where it is not bound by writing
C: 37-46% on an H100 probe at K from 16 to 32 (3000^2 x 32, 1500 x 9000 x 30, 1000 x 20000 x 24,
2048 x 8192 x 16; shapes outside the held-out sets). The first call times it beside the tile
plans."""


LAYOUT_SPEED = {"nn": 1.0, "tn": 0.937, "nt": 0.857, "tt": 0.905}
"""The tile kernels' speed with operands read as each layout stores them, as a share of NN's:
book.sgemm's native plans at 4096^3 on an H100 (before packing; chapter 9's layouts run)."""
PACK_SLOW = 1.25
"""09_transpose.cu's time over a copy of the same bytes at chapter 0's copy bandwidth (an
estimate; the first call times packed plans beside the others)."""


def _blocks_per_sm(config: str) -> int:
    """Blocks of ``config`` an SM holds at once, estimated without compiling it: shared memory
    (227 KiB per SM), threads (2048) and registers (65,536; about 40 + 1.25 per output a thread
    accumulates, as ptxas allocated them for chapter 8's configurations)."""
    spec = _spec(config)
    threads = spec.block[0]
    outputs = spec.tile[0] * spec.tile[1] // threads
    regs = min(255, 8 * math.ceil((40 + 1.25 * outputs) / 8))
    return max(1, min(227 * 1024 // (spec.stage_bytes + 1024), 2048 // threads,
                      65536 // (threads * regs)))


@lru_cache(maxsize=1)
def _rates() -> dict[str, float]:
    """GFLOP/s of each configuration at full load: its best whole-tile plan on the large squares
    of this GPU's tuning run (09_sgemm_candidates), else of the GPU recorded last."""
    from .harness.device import device_report, gpu_slug
    gpus = ([gpu_slug(device_report()["name"])] if BACKEND == "gpu" else []) + results.recorded_gpus()
    for gpu in gpus:
        try:
            df = results.load(CANDIDATES_FILE, gpu)
        except FileNotFoundError:
            continue
        big = df[(df.status == "ok") & (df.M >= 2048) & (df.N >= 2048) & (df.K >= 2048)]
        rates = {c: big[big.kernel == Plan(c).id].gflops.max() for c in CONFIGS}
        measured = {c: v for c, v in rates.items() if np.isfinite(v)}
        if measured:  # a configuration the run did not time: from the nearest tile it did
            return {c: v if np.isfinite(v) else _scaled_rate(c, measured) for c, v in rates.items()}
    return {c: _scaled_rate(c, {"128x256": 40000.0}) for c in CONFIGS}


def _scaled_rate(config: str, measured: dict[str, float]) -> float:
    """An estimate of ``config``'s rate at full load from a measured configuration's: the one
    whose tile's area is nearest, times the ratio of their areas to the power 1/4 (smaller tiles
    load more bytes per FMA; the exponent fits chapter 8's tiles from 64 x 64 to 128 x 256)."""
    area = lambda c: _spec(c).tile[0] * _spec(c).tile[1]
    ref = min(measured, key=lambda c: (abs(math.log(area(c) / area(config))), c))
    return measured[ref] * (area(config) / area(ref)) ** 0.25


@lru_cache(maxsize=1)
def _bandwidth() -> float:
    """Bytes per second of a device-to-device copy (chapter 0's ceiling), else 3e12."""
    try:
        c = results.load("00_ceilings").set_index("ceiling").value
        return float(c["copy_bandwidth"]) * 1e9
    except (FileNotFoundError, KeyError):
        return 3e12


def model_seconds(plan: Plan, M: int, N: int, K: int, sms: int = 132) -> float:
    """The cost model's GPU time for ``plan`` at (M, N, K): its blocks' k-steps at the rate its
    configuration reaches at full load, wave by wave on ``sms`` SMs (the busiest SM's blocks; a
    block alone on its SM a little faster), plus what the plan adds -- split-K's slices written
    and summed, stream-K's slower shared steps and fix-up, B's aligned copy, a packed operand's
    copy -- and a launch gap per extra kernel. Tile plans that read transposed operands as they
    are run at LAYOUT_SPEED of their rate."""
    if plan.config == FALLBACK:
        return 0.0
    if isinstance(plan, Packed):
        packed = (M * K if plan.layout[0] == "t" else 0) + (K * N if plan.layout[1] == "t" else 0)
        copies = plan.layout.count("t")
        return (model_seconds(plan.plan, M, N, K, sms)
                + PACK_SLOW * 8 * packed / _bandwidth() + copies * LAUNCH_S)
    floor = 4 * (M * K + K * N + M * N) / _bandwidth() + LAUNCH_S  # every plan moves its bytes
    if isinstance(plan, Skinny) and plan.side == "k":  # OUTER_RATE of the tiles' best rate
        return max(floor, 2 * M * N * K / (OUTER_RATE * max(_rates().values()) * 1e9) + LAUNCH_S)
    if isinstance(plan, Skinny):
        R, P = (M, N) if plan.side == "n" else (N, M)
        warps = ceil_div(R, plan.per_block) * SKINNY_WARPS * plan.splits
        x = 4 * (R + P) * K
        t = max(x / _bandwidth(), x / (min(warps, sms * 64) * WARP_BYTES_S)) + LAUNCH_S
        return max(floor, t + ((2 * plan.splits + 1) * 4 * R * P / _bandwidth()
                               if plan.splits > 1 else 0.0))  # (its last blocks add the slices)
    spec = _spec(plan.config)
    (bm, bn), bk = spec.tile, _BK[plan.config]
    r = _blocks_per_sm(plan.config)
    step = (2 * bm * bn * bk / (_rates()[plan.config] * LAYOUT_SPEED[plan.layout] * 1e9)
            * sms * r)  # one block-step, full GPU
    tiles, steps = ceil_div(M, bm) * ceil_div(N, bn), ceil_div(K, bk)
    bw = _bandwidth()
    extra = 4 * M * N / bw  # C, written after the k-loop (what sets the pace where K is small)
    if plan.pad_b and N % 4:
        extra += 8 * K * 4 * ceil_div(N, 4) / bw + LAUNCH_S
    if plan.streamk:
        whole = tiles // (sms * r) * (sms * r)
        t = whole // (sms * r) * steps * step  # whole waves at full load
        rest = (tiles - whole) * steps
        if rest:
            share = ceil_div(rest, sms * r)
            t += share * step * STREAMK_STEP + 2 * sms * r * bm * bn * 4 / bw + 2 * LAUNCH_S
        return max(floor, t + extra)
    s = min(plan.splits, steps)
    blocks, per_block = tiles * s, ceil_div(steps, s)
    defines = dict(spec.defines)
    chain = bk * defines["TM"] * defines["TN"] * CHAIN_S  # a k-step of one block alone
    t = per_block * max(step / r * max(ceil_div(blocks, sms), min(LONE, r)), chain)
    if s > 1:
        t += (2 * s + 1) * M * N * 4 / bw + LAUNCH_S
    return max(floor, t + extra)


def ranked(M: int, N: int, K: int, sms: int = 132, layout: str = "nn") -> list:
    """The candidate plans of a shape and layout, fastest first by :func:`model_seconds`."""
    return sorted(candidates(M, N, K, sms=sms, layout=layout),
                  key=lambda p: model_seconds(p, M, N, K, sms))


FIRST_CALL = 6
"""How many of the model's best plans the first call of a new shape times on a GPU."""
FIRST_CALL_SMALL, SMALL_S = 16, 1e-3
"""Where the model's best plan takes under SMALL_S, the first call times FIRST_CALL_SMALL: there
the model ranks less well (launch and latency, not throughput, set the time; on the H100 probe of
17 small shapes, held-out ones among them, the fastest plan was within the model's first 16 on
all but three, within its first 6 on eleven), and each timing costs microseconds."""
FIRST_STREAMK = 1
"""How many stream-K plans per configuration (the model's best of each) a first call also times,
where they are not among those: the model ranks stream-K's shares least well. On the H100's first
held-out set, at 2141 x 250 x 681, 64x128/3s with stream-K ran 19-25% faster than the plan
chosen from the model's first sixteen (a small product); the model put it 41st, behind 128x256
with stream-K (33rd), which ran slower (H100 runs after 08_async.cu's ROW_ALIGN builds: a rule
set on that set's shape, so judged on the second set)."""
FIRST_PACKED = 2
"""For transposed operands, how many of the model's best packed plans it also times (where they
are not among those)."""
_LEARNED: dict = {}


def _learned_path():
    from .harness.device import device_report, gpu_slug
    from .launch.cuda_source import cache_dir
    return cache_dir("sgemm") / f"{gpu_slug(device_report()['name'])}.csv"


def _learned() -> dict:
    """{(M, N, K, layout): plan} this GPU's first calls chose, kept on disk between sessions (the
    book's cache folder: ~/.cache/gpu-matmul-book/sgemm/<gpu>.csv, or $BOOK_CACHE_DIR)."""
    if "loaded" not in _LEARNED:
        _LEARNED["loaded"], _LEARNED["plans"] = True, {}
        path = _learned_path() if BACKEND == "gpu" else None
        if path is not None and path.exists():
            for row in pd.read_csv(path).itertuples():
                _LEARNED["plans"][(row.M, row.N, row.K, row.layout)] = plan_by_id(row.plan)
    return _LEARNED["plans"]


def learning() -> bool:
    """Whether a new shape's first call times the model's best plans (on a GPU, unless
    BOOK_SGEMM_LEARN=0)."""
    import os
    return BACKEND == "gpu" and os.environ.get("BOOK_SGEMM_LEARN", "1") != "0"


@lru_cache(maxsize=4096)
def plan_for(M: int, N: int, K: int, layout: str = "nn"):
    """The plan ``sgemm`` runs at (M, N, K) with operands in ``layout``: the tuning run's for a
    shape of its suite; else the one a first call on this GPU chose (``learn``); else the cost
    model's best."""
    if DEFAULT.why_not_here():
        return Plan(FALLBACK)
    tuned = _tuned(M, N, K, layout)
    if tuned is not None:
        return tuned
    if (M, N, K, layout) in _learned():
        return _learned()[(M, N, K, layout)]
    return ranked(M, N, K, _sms(), layout)[0]


@lru_cache(maxsize=4096)  # (a pandas lookup costs more than a launch: every call asks)
def _tuned(M: int, N: int, K: int, layout: str):
    """The tuning run's plan for this shape, in ``layout`` (None off the suite, or where that
    plan cannot read the layout)."""
    table = _table()
    if table is None or not len(table):
        return None
    row = table[(table.M == M) & (table.N == N) & (table.K == K)]
    if not len(row):
        return None
    plan = _plan(row.iloc[0])
    if layout == "nn" or plan.config == FALLBACK:
        return plan
    sms = _sms()
    ways = [p for p in (in_layout(plan, layout), *packed_plans([plan], layout)) if p is not None]
    return min(ways, key=lambda p: model_seconds(p, M, N, K, sms), default=None)


def in_layout(plan, layout: str):
    """``plan`` for operands in ``layout`` (B padded only where it is read as is); None where the
    plan cannot read that layout (a skinny plan reads its large operand along k only)."""
    if plan.config == FALLBACK or plan.layout == layout:
        return plan
    try:
        return dataclasses.replace(plan, layout=layout) if isinstance(plan, Skinny) else \
            dataclasses.replace(plan, layout=layout, pad_b=plan.pad_b and layout[1] == "n")
    except ValueError:
        return None


def first_call_plans(M: int, N: int, K: int, layout: str = "nn", sms: int = 132) -> list:
    """The plans a first call times: the model's FIRST_CALL best (FIRST_CALL_SMALL where its best
    takes under SMALL_S), its FIRST_STREAMK best stream-K plans, and for transposed operands its
    FIRST_PACKED best packed ones (those of the last two not among the first)."""
    order = ranked(M, N, K, sms, layout)
    small = model_seconds(order[0], M, N, K, sms) < SMALL_S
    plans = order[:FIRST_CALL_SMALL if small else FIRST_CALL]
    for config in STREAMK_CONFIGS:
        streamk = [p for p in order if getattr(p, "streamk", False) and p.config == config]
        plans += [p for p in streamk[:FIRST_STREAMK] if p not in plans]
    return plans + [p for p in order if isinstance(p, Packed) and p not in plans][:FIRST_PACKED]


def learn(M: int, N: int, K: int, run, layout: str = "nn"):
    """The first call of a shape on a GPU: time the model's FIRST_CALL best plans (FIRST_CALL_SMALL
    for a small shape) with
    ``run(plan)`` (the call's own operands, into scratch memory), keep the fastest for this GPU
    (in memory and on disk) and return it. Costs their compiles where they are new (seconds
    each, once per GPU: the book keeps them on disk) and a few runs of each."""
    from .harness.measure import held_event_seconds
    plans = first_call_plans(M, N, K, layout, _sms())
    build_all(builds_for(plans, M, N, layout))
    seconds = {}
    for plan in plans:
        run(plan)  # warm-up (and its first launch)
        seconds[plan] = float(np.median(held_event_seconds(lambda: run(plan), repeats=3)))
    best = min(seconds, key=seconds.get)
    _learned()[(M, N, K, layout)] = best
    plan_for.cache_clear()
    path = _learned_path()
    pd.DataFrame([{"M": M, "N": N, "K": K, "layout": layout, "plan": best.id}]).to_csv(
        path, mode="a", header=not path.exists(), index=False)
    return best


PRECISIONS = ("fp32", "tf32x3")
"""``sgemm``'s precisions: 'fp32', float32 FMAs (chapters 8 and 9); 'tf32x3', three TF32
products on Hopper's tensor cores with float32 accuracy (chapter 10; compute capability 9.0)."""


def sgemm(A, B, out=None, alpha: float = 1.0, beta: float = 0.0, precision: str = "fp32"):
    """C = alpha A @ B + beta C in float32 with the book's kernels: any M, N, K >= 1, arrays of
    this backend. Each of A, B and ``out`` may be C-contiguous, the rows of a wider array
    (``X[:, :n]`` of a C-contiguous X: adjacent floats along a row, rows a leading dimension
    apart, as in BLAS), or the transpose of either (``X.T``, F-contiguous): read as they are,
    without a copy. Writes into ``out`` (M x N) when given and returns C; ``beta`` other than 0
    needs ``out`` (where beta is 0, out is only written: NaN there does not reach C).
    ``precision='tf32x3'``: chapter 10's 3xTF32 kernel on wgmma, each row of A and column of B
    whose largest element lies outside 2^-40 .. 2^40 scaled by a power of two first (any finite
    magnitude keeps float32's accuracy), the rows and columns that hold Inf or NaN recomputed
    with FFMA (their Inf and NaN as cuBLAS SGEMM's), split-K where tiles of C are few
    (``tf32x3_splits``), A split in registers where N <= TF32X3_AREG_MAX_N, and where
    M <= TF32X3_AREG_MAX_N < N the transpose C^T = B^T A^T the same way (B split in
    registers); it reads C-contiguous copies of A and B where they are views. Safe on concurrent
    streams and threads: each (stream, thread) keeps its own scratch memory (``launch.streams``;
    ``streams.release()`` frees it), so calls in flight together never share a workspace."""
    for name, x in (("A", A), ("B", B)) + ((("out", out),) if out is not None else ()):
        if not isinstance(x, xp.ndarray) or x.ndim != 2:
            raise LaunchError(f"sgemm: {name} must be a 2-D {xp.__name__} array, got "
                              f"{type(x).__name__} with shape {getattr(x, 'shape', None)}")
        if x.dtype != xp.float32:
            raise LaunchError(f"sgemm: {name} must be float32, got {x.dtype}")
    (M, K), (K2, N) = A.shape, B.shape
    if K2 != K or 0 in (M, N, K):
        raise LaunchError(f"sgemm: A is {M} x {K} and B is {K2} x {N}; need A's columns = B's "
                          "rows and every size >= 1")
    alpha, beta = float(alpha), float(beta)
    if precision not in PRECISIONS:
        raise LaunchError(f"sgemm: precision {precision!r}: one of {', '.join(map(repr, PRECISIONS))}")
    if out is None:
        if beta != 0.0:
            raise LaunchError(f"sgemm: beta = {beta} adds beta * out to the product: pass out")
        out = xp.empty((M, N), dtype=xp.float32)
    elif out.shape != (M, N):
        raise LaunchError(f"sgemm: out has shape {out.shape}; A @ B is {M} x {N}")
    if precision == "tf32x3":
        _tf32x3(A, B, out, alpha, beta)
        return out
    (a, ta, lda), (b, tb, ldb) = _operand(A, "A"), _operand(B, "B")
    c, tc, ldc = _operand(out, "out")
    if tc:  # out stores C's columns as rows: compute C^T = B^T A^T into them
        (a, ta, lda), (b, tb, ldb), M, N = (b, not tb, ldb), (a, not ta, lda), N, M
    layout = "tn"[not ta] + "tn"[not tb]
    plan = plan_for(M, N, K, layout)
    if plan.config == FALLBACK:
        _fallback(plan, A, B, out, alpha, beta)
        return out
    if learning() and not _known(M, N, K, layout):
        scratch = _workspace(M * N, slot=2).reshape(M, N)
        plan = learn(M, N, K, lambda p: p.run(a, b, scratch, M, N, K, lda, ldb, N), layout)
    plan = in_layout(plan, layout)
    if plan is None:
        raise LaunchError(f"sgemm: the plan for {M} x {N} x {K} cannot read layout {layout!r}")
    if BACKEND == "gpu":
        plan.run(a, b, c, M, N, K, lda, ldb, ldc, alpha=alpha, beta=beta)  # views as they are
        return out
    # The emulator copies whole arrays: give it arrays whose shape[1] is the leading dimension
    # (copies where they are views), and copy C back.
    whole = _whole(c, ldc)
    plan.run(_whole(a, lda), _whole(b, ldb), whole, M, N, K, lda, ldb, ldc, alpha=alpha, beta=beta)
    if whole is not c:
        c[...] = whole[:, :c.shape[1]]
    return out


TF32X3_DEFINES = (("STAGES", 3), ("CHUNK", 2), ("SMALL_FIRST", 0), ("SCALED", 1))
"""10_wgmma.cu as ``precision='tf32x3'`` builds it: chapter 10's defines, and scaled."""


TF32X3_MAX_SPLITS, TF32X3_MIN_KTILES = 16, 8

TF32X3_AREG_MAX_N = 128
"""Up to this N, ``precision='tf32x3'`` runs chapter 10's step 5 (A split in registers, so
that pack_split's pass over a large A is saved). Measured (probe, one run each): 16384 x 128 x
4096 0.346 ms against step 3's 0.489 on an H100, 0.331 against 0.386 on an H200; 65536 x 64 x
1024 0.350 against 0.509, 0.328 against 0.393; at N = 256 the H100 preferred step 5 (0.568
against 0.604 ms) and the H200 step 3 (0.506 against 0.554). Up to this M (where N is larger)
it computes C^T = B^T A^T with step 5 (10_wgmma.cu's TRANS = 1): 128 x 16384 x 4096 took
0.375 ms against step 3's 0.499, 100 x 8192 x 8192 0.390 against 0.507, 64 x 65536 x 1024
0.383 against 0.527 (H100, interleaved, two rounds)."""


def tf32x3_splits(M: int, N: int, K: int, sms: int = 132) -> int:
    """Split-K for ``precision='tf32x3'``: where its 128 x 128 tiles of C are at most half the
    SMs (one block per SM), as many slices of K as fill them, at most TF32X3_MAX_SPLITS and at
    most one per TF32X3_MIN_KTILES k-tiles of 32. (The slice of a tile that ends last adds
    up the others' sums, in the product kernel.)"""
    tiles = ceil_div(M, 128) * ceil_div(N, 128)
    return max(1, min(sms // tiles, ceil_div(K, 32) // TF32X3_MIN_KTILES, TF32X3_MAX_SPLITS))


def _tf32x3(A, B, out, alpha: float, beta: float, defines: tuple = TF32X3_DEFINES) -> None:
    """out = alpha A B + beta out with 3xTF32 (``sgemm(precision='tf32x3')``); ``defines``:
    10_wgmma.cu's (chapter 10's parts run compares other product kernels)."""
    from .launch.wgmma import tf32x3_wgmma
    why = _tf32x3_why(os.environ.get("BOOK_ASSUME_CC"))
    if why:
        raise LaunchError(f"sgemm: precision='tf32x3' runs on Hopper's wgmma, and this device "
                          f"{why}; precision='fp32' runs on every GPU")
    (M, K), N = A.shape, B.shape[1]
    a, b = xp.ascontiguousarray(A), xp.ascontiguousarray(B)
    if defines == TF32X3_DEFINES and N > TF32X3_AREG_MAX_N >= M:  # thin M: C^T = B^T A^T, by
        a, b, M, N = b, a, N, M  # step 5 with the roles swapped (B split in registers, A packed)
        defines += (("AREG", 1), ("TRANS", 1))
    elif defines == TF32X3_DEFINES and N <= TF32X3_AREG_MAX_N:
        defines += (("AREG", 1),)  # step 5: A split in registers, B alone packed
    splits = tf32x3_splits(M, N, K, _sms())
    # (no wait for the host: Inf and NaN are found and fixed on the GPU, split-K adds in-kernel)
    _into(out, alpha, beta, lambda c: tf32x3_wgmma(a, b, c, M, N, K, defines, splits))


@lru_cache(maxsize=None)
def _tf32x3_why(assumed: str | None) -> str | None:
    """Why this device cannot run ``precision='tf32x3'``, or None; asked once for each
    BOOK_ASSUME_CC (``assumed``): the registry asks the driver (about 10 µs of a call's host
    time)."""
    from .registry import KERNELS
    return KERNELS["tf32x3_wgmma"].why_not_here()


def _known(M: int, N: int, K: int, layout: str) -> bool:
    """Whether the tuning run or an earlier first call chose the plan of this shape."""
    return (M, N, K, layout) in _learned() or _tuned(M, N, K, layout) is not None


def _fallback(plan: Plan, A, B, out, alpha: float, beta: float) -> None:
    """Below compute capability 8.0: chapter 8's warp-tile kernel on C-contiguous copies (where
    A, B or out are not C-contiguous), alpha and beta applied after it."""
    (M, K), N = A.shape, B.shape[1]
    a, b = xp.ascontiguousarray(A), xp.ascontiguousarray(B)
    _into(out, alpha, beta, lambda c: plan.run(a, b, c, M, N, K, K, N, N))


def _into(out, alpha: float, beta: float, product) -> None:
    """out = alpha A B + beta out, where ``product(c)`` writes A B into a C-contiguous c: out
    itself where it is one and alpha, beta are 1, 0; else a scratch matrix, then the sum."""
    direct = out.flags.c_contiguous and (alpha, beta) == (1.0, 0.0)
    c = out if direct else xp.empty(out.shape, dtype=xp.float32)
    product(c)
    if not direct:
        out[...] = alpha * c + beta * out if beta != 0.0 else alpha * c


def _operand(x, name: str) -> tuple:
    """(the array as it lies in memory, row-major; whether that is x's transpose; its leading
    dimension): x itself where its rows lie in memory (C-contiguous or rows of a wider array),
    x.T where its columns do. Refuses layouts the kernels cannot read, naming the strides."""
    if _row_major(x):
        return x, False, _leading_dimension(x)
    if _row_major(x.T):
        return x.T, True, _leading_dimension(x.T)
    rows, cols = x.shape
    raise LaunchError(f"sgemm: {name} has strides {x.strides} (bytes): its floats must be adjacent "
                      f"along each row, rows at least {cols} floats apart, in order (like "
                      f"X[:, :{cols}] of a C-contiguous X), or adjacent along each column, columns "
                      f"at least {rows} floats apart (like its transpose, X.T); else pass "
                      "xp.ascontiguousarray of it")


def _row_major(x) -> bool:
    rows, cols = x.shape
    step, along = x.strides
    return x.flags.c_contiguous or ((along == 4 or cols == 1) and step > 0 and step % 4 == 0
                                    and step // 4 >= cols)


def _leading_dimension(x) -> int:
    """Floats from one row of a row-major x to the next."""
    rows, cols = x.shape
    return cols if x.flags.c_contiguous or rows == 1 else x.strides[0] // 4


def _whole(x, ld: int):
    """x as an array of shape (rows, ld): itself where it is one, else a copy (padding NaN)."""
    if x.flags.c_contiguous and x.shape[1] == ld:
        return x
    whole = xp.full((x.shape[0], ld), xp.nan, dtype=xp.float32)
    whole[:, :x.shape[1]] = x
    return whole


def _launch_in_layout(plan, A, B, C, M: int, N: int, K: int) -> None:
    """``plan.launch`` for a plan of transposed operands: on A and B (C-contiguous) as its
    layout stores them (``stored_operands``)."""
    a, b = stored_operands(A, B, plan.layout)
    plan.run(a, b, C, M, N, K, a.shape[1], b.shape[1], C.shape[1])


def stored_operands(A, B, layout: str):
    """A and B (C-contiguous) as ``layout`` stores them: a transposed operand as the row-major
    array of its transpose (C-contiguous, K x M for A). The copies are kept, per stream and
    thread, for as long as the same arrays are passed (held, so that a new array is never
    mistaken for an old one)."""
    entry, key = streams.here(), (layout, id(A), id(B))
    held = entry.get("stored")
    if held is None or held[0] != key:
        held = entry["stored"] = (key, (A, B), (xp.ascontiguousarray(A.T) if layout[0] == "t" else A,
                                               xp.ascontiguousarray(B.T) if layout[1] == "t" else B))
    return held[2]


def logical_operands(A, B, layout: str):
    """A and B (C-contiguous) as a caller in ``layout`` hands them over: the transpose of the
    stored array (``X.T``, F-contiguous) where the layout says 't' -- what ``sgemm`` and
    cupy.matmul are given when layouts are timed."""
    a, b = stored_operands(A, B, layout)
    return (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)


class BookSgemm:
    """``sgemm`` as a pseudo-kernel for ``sweep``: its rows carry the id ``book_sgemm``."""

    id, label, chapter = "book_sgemm", "book.sgemm (tuned per shape)", 9

    @staticmethod
    def why_not_here():
        return None  # below compute capability 8.0 it runs the fallback plan

    @staticmethod
    def launch(A, B, C, M, N, K) -> None:
        sgemm(A, B, out=C)


QUICK_S, FINALISTS = 0.01, 3
"""The tuner's first timing of every candidate takes about QUICK_S of GPU time each (at least one
run after its check); only the FINALISTS fastest are then timed as carefully as any sweep, beside
cuBLAS. On an H100 the full timing of every candidate took 86 s over the suite."""


def tune(shapes=None, progress: bool = True, configs=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Check and time every candidate plan (of ``configs``, default all) on every shape; re-time
    the fastest few (FINALISTS) beside cuBLAS. Returns the plans (one row per shape: the fastest
    finalist) and every candidate's measurement (``timing`` 'quick' or 'final'; % of cuBLAS
    against the final cuBLAS run)."""
    shapes = shapes or (SUITE if BACKEND == "gpu" else CPU_SUITE)
    sms = _sms()
    rows, every = [], []
    for shape in shapes:
        plans = {p.id: p for p in candidates(*shape, sms=sms, configs=configs)}
        build_all(builds_for(plans.values(), shape[0], shape[1]))
        quick = sweep(list(plans.values()), [shape], baseline=False, progress=progress,
                      target_s=QUICK_S, min_repeat=1)
        ok = quick[quick.status == "ok"]
        finalists = ok.nlargest(FINALISTS, "gflops").kernel if "gflops" in ok else []
        final = sweep([plans[k] for k in finalists], [shape], progress=progress)
        cublas = final.loc[final.kernel == "cublas", "gflops"].iloc[0]
        quick = quick[~quick.kernel.isin(finalists)].assign(
            pct_of_cublas=lambda d: 100 * d.get("gflops", np.nan) / cublas, timing="quick")
        df = pd.concat([final.assign(timing="final"), quick], ignore_index=True)
        every.append(df)
        done = final[(final.status == "ok") & (final.kernel != "cublas")]
        if not len(done):
            raise RuntimeError(f"no plan passed its check at {shape}")
        best = done.loc[done.gflops.idxmax()]
        plan = plans[best.kernel]
        rows.append({"M": shape[0], "N": shape[1], "K": shape[2], "plan": plan.id,
                     "config": plan.config,
                     "splits": plan.splits, "streamk": plan.streamk, "pad_b": plan.pad_b,
                     "gflops": best.gflops,
                     "pct_of_cublas": best.pct_of_cublas, "plans_tried": len(ok),
                     "device": best.device, "date": best.date})
        if progress:
            print(f"{shape}: {plan.label}: {best.pct_of_cublas:.1f}% of cuBLAS", flush=True)
    return pd.DataFrame(rows), pd.concat(every, ignore_index=True)


def suite(shapes=None, rounds: int = 3, progress: bool = False, specs=(BookSgemm,)) -> pd.DataFrame:
    """``book.sgemm`` (or ``specs``) and cuBLAS on every shape, checked then timed, in ``rounds``
    interleaved rounds; one row per shape and kernel with the median GFLOP/s of the rounds and
    its % of cuBLAS."""
    shapes = shapes or (SUITE if BACKEND == "gpu" else CPU_SUITE)
    med = _rounds(list(specs), shapes, rounds, progress=progress)
    base = med[med.kernel == "cublas"].set_index(["M", "N", "K"]).gflops
    med["pct_of_cublas"] = 100 * med.gflops.to_numpy() / base.reindex(
        pd.MultiIndex.from_frame(med[["M", "N", "K"]])).to_numpy()
    return med


SUITE_COLUMNS = ["M", "N", "K", "kernel", "label", "gflops", "rel_error", "status", "device",
                 "date", "pct_of_cublas"]


def _rounds(specs, shapes, rounds: int, **sweep_args) -> pd.DataFrame:
    """``specs`` on every shape, checked then timed, in ``rounds`` interleaved rounds (sweep's
    arguments as given); one row per shape and kernel: the median GFLOP/s of the rounds, the
    largest error, and 'ok' only where every round's check was."""
    runs = pd.concat([sweep(specs, [shape], **sweep_args).assign(round=r)
                      for r in range(rounds) for shape in shapes])
    return runs.groupby(["M", "N", "K", "kernel"], sort=False).agg(
        label=("label", "first"), gflops=("gflops", "median"), rel_error=("rel_error", "max"),
        status=("status", lambda s: "ok" if (s == "ok").all() else s[s != "ok"].iloc[0]),
        device=("device", "first"), date=("date", "first")).reset_index()


HELDOUT_SEED, HELDOUT_COUNT = 20261125, 40
"""The held-out shapes' seed and count: drawn once, never used to tune or to choose a rule."""
FRESH_SEED = 20261126
"""A second held-out set (``--fresh``), drawn after the first had been used to set two choices
for small products (CHAIN_S, FIRST_CALL_SMALL): nothing may be tuned or chosen on it. Its
results: 09_sgemm_heldout_fresh.csv and 09_sgemm_model_fresh.csv."""
THIRD_SEED = 20261127
"""A third held-out set (``--third``), drawn after shapes of the first two had prompted changes
(08_async.cu's ROW_ALIGN builds, the stream-K rule of the first call, skinny_outer's one wave of
blocks): no change was made or judged on it before its first recorded run. Its results:
09_sgemm_heldout_third.csv and 09_sgemm_model_third.csv."""


def heldout_shapes(count: int = HELDOUT_COUNT, seed: int = HELDOUT_SEED, top: int = 16384,
                   max_bytes: int = 6 << 30, low: int = 1) -> list[tuple[int, int, int]]:
    """Shapes no plan was tuned on: M, N and K each log-uniform from ``low`` to ``top`` (seeded),
    drawn again where A, B and C with their float64 copies would take more than ``max_bytes``."""
    rng, shapes = np.random.default_rng(seed), []
    while len(shapes) < count:
        M, N, K = (int(round(2 ** x)) for x in rng.uniform(math.log2(low), math.log2(top), 3))
        if 12 * (M * K + K * N + M * N) <= max_bytes:
            shapes.append((M, N, K))
    return shapes


REGRET_S, QUICK_REPEATS = 0.03, 20
"""The regret's timing, as the tuner's: every candidate is checked and timed first for about
QUICK_S of GPU time in at most QUICK_REPEATS runs; then the FINALISTS fastest and the chosen plan
are timed again for about REGRET_S each (after a new check). On the H100, timing every candidate
for REGRET_S took most of a held-out run of 40 shapes (about 340 s, some 110 candidates a shape)."""


def heldout(shapes=None, rounds: int = 3, progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``book.sgemm`` beside cuBLAS on the held-out shapes and the suite (``suite``: checked, then
    ``rounds`` interleaved rounds, medians), each book.sgemm row with the plan it chose (``plan``)
    and, off the suite, its regret: that plan's time over the fastest candidate's, every candidate
    of the shape checked and timed once, then the fastest and the chosen plan timed again
    (``REGRET_S``; ``regret_pct``, ``best_plan``), and the seconds of its first call in this
    process (``first_call_s``: where this GPU has not met the shape before, the choice of its
    plan). ``set`` says held-out or suite. Also returns every candidate's measured time beside
    the cost model's (``model_us``, ``measured_us``: the first timing, the same for every
    candidate; ``final_us``: the second, of the finalists; ``chosen`` marks the plan book.sgemm
    runs), one row per shape and plan."""
    if shapes is None:
        shapes = (heldout_shapes() + SUITE if BACKEND == "gpu"
                  else heldout_shapes(4, top=96) + CPU_SUITE[:2])
    sms = _sms()
    build_all([b for M, N, K in shapes  # every candidate's build, side by side (on many cores)
               for b in builds_for(candidates(M, N, K, sms=sms), M, N)])
    first = {shape: _first_call_seconds(*shape) for shape in shapes}
    med = suite(shapes, rounds, progress)
    extra, model = {}, []
    suite_shapes = set(SUITE) | set(CPU_SUITE)
    for shape in shapes:
        chosen = plan_for(*shape)
        if shape in suite_shapes:  # its plan is the tuning run's best (09_sgemm_candidates)
            extra[shape] = {"plan": chosen.id, "regret_pct": np.nan, "best_plan": ""}
            continue
        plans = {p.id: p for p in candidates(*shape, sms=sms)} | {chosen.id: chosen}
        ok, best = _regret_times(plans, chosen, shape)
        model += [{"M": shape[0], "N": shape[1], "K": shape[2], "plan": pid,
                   "model_us": 1e6 * model_seconds(plans[pid], *shape, sms),
                   "measured_us": 1e3 * ms, "final_us": 1e3 * best.get(pid, np.nan),
                   "chosen": pid == chosen.id} for pid, ms in ok.items()]
        regret = 100 * (best.get(chosen.id, np.nan) / best.min() - 1) if len(best) else np.nan
        extra[shape] = {"plan": chosen.id, "regret_pct": regret,
                        "best_plan": best.idxmin() if len(best) else "--"}
        if progress:
            print(f"{shape}: {chosen.label}, regret {regret:.1f}%", flush=True)
    book = med.kernel == BookSgemm.id
    med["first_call_s"] = [first[s] if b else np.nan for s, b in
                           zip(zip(med.M, med.N, med.K), book)]
    for col in ("plan", "regret_pct", "best_plan"):
        med[col] = [extra[(m, n, k)][col] if b else (np.nan if col == "regret_pct" else "")
                    for m, n, k, b in zip(med.M, med.N, med.K, book)]
    med["set"] = ["suite" if s in suite_shapes else "held-out" for s in zip(med.M, med.N, med.K)]
    seconds = 2e-9 * med.M * med.N * med.K / med.gflops
    med["pct_of_copy"] = 100 * 4 * (med.M * med.K + med.K * med.N + med.M * med.N) / seconds / _bandwidth()
    return med, pd.DataFrame(model)


def _regret_times(plans: dict, chosen, shape) -> tuple[pd.Series, pd.Series]:
    """Milliseconds of every candidate that passed its check (``plans`` by id), from a first
    timing of each (QUICK_S, QUICK_REPEATS); and of the finalists, the FINALISTS fastest and
    ``chosen``, timed again (REGRET_S) after a new check (one that fails it is left out of both)."""
    quick = sweep(list(plans.values()), [shape], baseline=False, target_s=QUICK_S, min_repeat=1,
                  max_repeat=QUICK_REPEATS)
    ok = quick[quick.status == "ok"].set_index("kernel").time_ms
    finalists = list(dict.fromkeys([*ok.nsmallest(FINALISTS).index]
                                   + ([chosen.id] if chosen.id in ok.index else [])))
    if not finalists:
        return ok, ok
    final = sweep([plans[k] for k in finalists], [shape], baseline=False, target_s=REGRET_S,
                  min_repeat=1).set_index("kernel")
    again = final.time_ms[final.status == "ok"] if "time_ms" in final else pd.Series(dtype=float)
    return ok.drop([k for k in finalists if k not in again.index]), again


def _first_call_seconds(M: int, N: int, K: int) -> float:
    """Host seconds of book.sgemm's first call at (M, N, K) in this process, to the end of its
    GPU work: on a shape off the suite, the cost model and the timing of its best few plans
    (compiles included where the book's cache lacks them)."""
    import time

    from .harness.check import device_inputs
    from .launch.runtime import synchronize
    A, B = device_inputs(M, N, K, seed=1)
    synchronize()
    t0 = time.perf_counter()
    sgemm(A, B)
    synchronize()
    return time.perf_counter() - t0


def geomean_pct(pct) -> float:
    """The geometric mean of percentages (of cuBLAS, say), as a percentage."""
    return 100 * float(np.exp(np.log(np.asarray(pct, dtype=float) / 100).mean()))


def heldout_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per set (held-out, suite) and kind of shape (min(M, N) < 64: skinny): how many shapes,
    the geometric mean and the minimum of book.sgemm's % of cuBLAS, how many meet the goal's
    floor (90% of cuBLAS; a skinny shape also by moving its bytes at 80% of the copy
    bandwidth), the median regret. The first row: every shape of the set."""
    b = df[(df.kernel == BookSgemm.id) & (df.status == "ok")].copy()
    skinny = np.minimum(b.M, b.N) < 64
    b["shapes"] = np.where(skinny, "skinny (min(M, N) < 64)", "min(M, N) >= 64")
    b["floor"] = (b.pct_of_cublas >= 90) | (skinny & (b.get("pct_of_copy", 0) >= 80))
    everything = b.assign(shapes="all")
    return pd.concat([everything, b]).groupby(["set", "shapes"]).agg(
        count=("pct_of_cublas", "size"),
        geomean=("pct_of_cublas", geomean_pct),
        lowest=("pct_of_cublas", "min"), floor=("floor", "sum"),
        median_regret=("regret_pct", "median")).rename(
        columns={"geomean": "geometric mean (% of cuBLAS)", "lowest": "lowest (% of cuBLAS)",
                 "floor": "at or above the floor", "median_regret": "median regret (%)",
                 "count": "shapes"})


def layouts_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per layout: book.sgemm's GFLOP/s at 4096^3 as a share of NN's, and the geometric mean of
    its % of cuBLAS in the same layout over the other shapes (the goal: >= 95% and NN within 5%)."""
    b = df[df.library == "book.sgemm"]
    big = b[(b.M == 4096) & (b.N == 4096) & (b.K == 4096)].set_index("layout").gflops
    rest = b[~((b.M == 4096) & (b.N == 4096) & (b.K == 4096))]
    out = pd.DataFrame({
        "GFLOP/s at 4096^3": big,
        "% of NN at 4096^3": 100 * big / big.get("nn", np.nan),
        "% of cuBLAS, same layout, 4096^3": b[(b.M == 4096) & (b.K == 4096)].set_index("layout").pct_of_cublas,
        f"geometric mean, the {rest[['M', 'N', 'K']].drop_duplicates().shape[0]} other shapes "
        "(% of cuBLAS, same layout)":
            rest.groupby("layout").pct_of_cublas.apply(geomean_pct)})
    out.index = out.index.str.upper()
    return out


@dataclass(frozen=True)
class InLayout:
    """``sgemm`` (or cuBLAS through cupy.matmul, ``library``) handed A and B in ``layout`` --
    transposed views of copies made once per pair of inputs -- as a pseudo-kernel for sweep."""

    layout: str
    library: bool = False
    chapter = 9

    @property
    def id(self) -> str:
        return f"{'cublas' if self.library else BookSgemm.id}_{self.layout}"

    @property
    def label(self) -> str:
        return f"{'cuBLAS' if self.library else 'book.sgemm'}, {self.layout.upper()}"

    def why_not_here(self):
        return None

    def launch(self, A, B, C, M, N, K) -> None:
        a, b = logical_operands(A, B, self.layout)
        if self.library:
            xp.matmul(a, b, out=C)
        else:
            sgemm(a, b, out=C)


def layouts(shapes=None, rounds: int = 3) -> pd.DataFrame:
    """book.sgemm and cuBLAS in each layout (NN, TN, NT, TT) on ``shapes`` (default 4096^3 and
    the first ten held-out shapes), checked, then timed in ``rounds`` interleaved rounds; the
    median GFLOP/s, % of cuBLAS in the same layout, and book.sgemm's plan."""
    if shapes is None:
        shapes = ([(4096, 4096, 4096)] + heldout_shapes()[:10] if BACKEND == "gpu"
                  else [(33, 17, 65), (64, 40, 24)])
    specs = [InLayout(lay, lib) for lay in LAYOUTS for lib in (False, True)]
    med = _rounds(specs, shapes, rounds, baseline=False)
    med["layout"] = med.kernel.str[-2:]
    med["library"] = np.where(med.kernel.str.startswith("cublas"), "cuBLAS", "book.sgemm")
    lib = med[med.library == "cuBLAS"].set_index(["M", "N", "K", "layout"]).gflops
    med["pct_of_cublas"] = 100 * med.gflops.to_numpy() / lib.reindex(
        pd.MultiIndex.from_frame(med[["M", "N", "K", "layout"]])).to_numpy()
    med["plan"] = [plan_for(m, n, k, lay).id if lib_ == "book.sgemm" else ""
                   for m, n, k, lay, lib_ in zip(med.M, med.N, med.K, med.layout, med.library)]
    return med


OVERHEAD_SHAPES = [(1000, 1000, 1000), (1024, 1024, 1024), (2048, 2048, 2048)]


def call_overhead(shapes=OVERHEAD_SHAPES, repeats: int = 200) -> pd.DataFrame:
    """On a GPU: what one call costs, per shape, for cuBLAS (CuPy's matmul), ``sgemm`` and the
    same plan launched directly (``Plan.run``): the GPU time between the events around the call
    (host work before the launch included: the GPU idles meanwhile), the host time of the call,
    and GFLOP/s, each checked first; two interleaved rounds, medians."""
    from cupyx.profiler import benchmark

    from .harness.check import device_inputs
    from .harness.device import device_report
    from .harness.measure import TOLERANCE, relative_error_xp
    rows = []
    for M, N, K in shapes:
        A, B = device_inputs(M, N, K, seed=0)
        ref = A.astype(xp.float64) @ B.astype(xp.float64)
        C = xp.empty((M, N), dtype=xp.float32)
        plan = plan_for(M, N, K)
        calls = {"cuBLAS": lambda: xp.matmul(A, B, out=C),
                 "book.sgemm": lambda: sgemm(A, B, out=C),
                 f"Plan.run ({plan.label})": lambda: plan.run(A, B, C, M, N, K, K, N, N)}
        for _ in range(2):
            for name, call in calls.items():
                C.fill(xp.nan)
                call()
                err = relative_error_xp(C, ref)
                ok = err < TOLERANCE
                r = benchmark(call, n_repeat=repeats, n_warmup=10) if ok else None
                rows.append({"M": M, "N": N, "K": K, "call": name, "rel_error": err,
                             "status": "ok" if ok else "FAILED check",
                             "gpu_us": 1e6 * np.median(r.gpu_times[0]) if ok else np.nan,
                             "host_us": 1e6 * np.median(r.cpu_times) if ok else np.nan})
    df = pd.DataFrame(rows).groupby(["M", "N", "K", "call"], sort=False).agg(
        gpu_us=("gpu_us", "median"), host_us=("host_us", "median"),
        rel_error=("rel_error", "max"), status=("status", "first")).reset_index()
    df["gflops"] = 2e-3 * df.M * df.N * df.K / df.gpu_us
    return df.assign(device=device_report()["name"], date=pd.Timestamp.today().date().isoformat())


TIMELINE_FILE = "09_edge_timeline"


def block_times(config: str, n: int, move_edges: bool = True, repeats: int = 3) -> pd.DataFrame:
    """One launch of ``config`` at n x n x n, block by block (09_sgemm.cu's matmul_async_timed):
    each block's tile (bx, by), whether it is an edge tile (the last row or column of tiles, the
    ones that stick out where n is not a multiple of the tile), its start and end in microseconds
    from the first start, and its SM. ``move_edges=False``: the build whose edge tiles stay put
    and check every copy. The last of ``repeats`` launches is kept (the others warm up)."""
    from .harness.check import device_inputs
    spec = _timed_spec(config, move_edges)
    kernel, (gx, gy) = unchecked(spec.kernel()), spec.grid(n, n)
    A, B = device_inputs(n, n, n, seed=0)
    C, T = xp.empty((n, n), dtype=xp.float32), xp.zeros(3 * gx * gy, dtype=xp.uint64)
    for _ in range(repeats):
        kernel((gx, gy), spec.block, (_arg(A), _arg(B), _arg(C), *_ints(n, n, n), _arg(T)),
               shared_mem=spec.shared_mem(0))
    t = (T.get() if BACKEND == "gpu" else T).reshape(-1, 3).astype(np.int64)
    by, bx = np.divmod(np.arange(gx * gy), gx)
    return pd.DataFrame({"bx": bx, "by": by, "edge": (bx == gx - 1) | (by == gy - 1),
                         "start_us": (t[:, 0] - t[:, 0].min()) / 1e3,
                         "end_us": (t[:, 1] - t[:, 0].min()) / 1e3, "sm": t[:, 2]})


def _timed_spec(config: str, move_edges: bool) -> KernelSpec:
    """09_sgemm.cu's matmul_async_timed for a configuration, edge tiles moved back or not."""
    spec = _entry(config, "matmul_async_timed")
    return dataclasses.replace(spec, leading_dims=False,
                               defines=spec.defines + (("MOVE_EDGES", int(move_edges)),))


def edge_timeline(sizes=(1000, 1024), config: str = "64x128") -> pd.DataFrame | None:
    """Per size and build (edge tiles in place, or moved back): the kernel's span and the median
    time of an inner and of an edge block, from ``block_times``; None, with a line that says
    why, where this GPU cannot run ``config``."""
    from .harness.device import device_report
    why = _spec(config).why_not_here()
    if why:
        print(f"No timeline here: {config} {why}.")
        return None
    build_ahead([_timed_spec(config, move) for move in (False, True)])
    rows = []
    for n in sizes:
        for move in (False, True):
            df = block_times(config, n, move)
            took = df.end_us - df.start_us
            rows.append({"n": n, "config": config,
                         "edge tiles": "moved back" if move else "in place", "blocks": len(df),
                         "kernel_us": df.end_us.max(),
                         "inner_block_us": took[~df.edge].median(),
                         "edge_block_us": took[df.edge].median()})
    return pd.DataFrame(rows).assign(device=device_report()["name"],
                                     date=pd.Timestamp.today().date().isoformat())


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
    """Per shape, from a tuning run: chapter 8's tile alone, the best plan of one block per tile
    of C, the best split-K plan, the best stream-K plan, and the best plan, each as % of the
    cuBLAS run timed beside them (NaN where the tuner tried none of a kind)."""
    ok = candidates_df[(candidates_df.status == "ok") & (candidates_df.kernel != "cublas")].copy()
    ok["kind"] = np.select([ok.kernel.str.contains(r"_sk(?:_padb)?$"),
                            ok.kernel.str.contains(r"_k1(?:_padb)?$")],
                           ["stream-K", "tile"], "split-K")
    rows = []
    for (M, N, K), g in ok.groupby(["M", "N", "K"], sort=False):
        fixed = g[g.kernel == DEFAULT.id].pct_of_cublas
        best = {kind: g[g.kind == kind].pct_of_cublas.max()
                for kind in ("tile", "split-K", "stream-K")}
        rows.append({"M": M, "N": N, "K": K,
                     "chapter 8's tile (%)": fixed.iloc[0] if len(fixed) else float("nan"),
                     "best tile (%)": best["tile"], "best split-K (%)": best["split-K"],
                     "best stream-K (%)": best["stream-K"],
                     "best plan (%)": g.pct_of_cublas.max(),
                     "best plan": g.loc[g.pct_of_cublas.idxmax(), "label"]})
    return pd.DataFrame(rows).set_index(["M", "N", "K"])


def summary(suite_df: pd.DataFrame) -> dict:
    """The goal's figures for one GPU's suite: geometric mean and minimum % of cuBLAS, and the
    two squares the goal names."""
    b = suite_df[(suite_df.kernel == BookSgemm.id) & (suite_df.status == "ok")]
    pct = b.set_index(["M", "N", "K"]).pct_of_cublas
    return {"shapes": len(b), "geomean (%)": geomean_pct(pct),
            "min (%)": float(pct.min()), "at 4096^3 (%)": float(pct.get((4096, 4096, 4096), np.nan)),
            "at 8192^3 (%)": float(pct.get((8192, 8192, 8192), np.nan))}


def shape_label(M: int, N: int, K: int) -> str:
    """How tables and figures name a shape of the suite: ``M x N x K``."""
    return f"{M} x {N} x {K}"


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
        index=pd.Index([shape_label(*shape) for shape in book.index], name="M x N x K"))


def _plan_label(plans: pd.DataFrame, shape) -> str:
    row = plans[(plans.M == shape[0]) & (plans.N == shape[1]) & (plans.K == shape[2])]
    return _plan(row.iloc[0]).label if len(row) else "--"


def _plan(row) -> Plan:
    """The plan of one row of a plans table (tables saved before ``pad_b`` or ``streamk``
    existed lack them; those saved since the skinny kernel name the plan by id)."""
    if isinstance(row.get("plan"), str):
        return plan_by_id(row["plan"])
    return Plan(row.config, int(row.splits), bool(row.get("pad_b", False)),
                bool(row.get("streamk", False)))


def recorded_suites(live: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """Every GPU's recorded suite by device name, with ``live`` (this run) in place of its own."""
    out = results.load_every(SUITE_FILE)
    if live is not None and BACKEND == "gpu":
        out[live.device.iloc[0]] = live
    return dict(sorted(out.items()))


def suite_plot(suites: dict[str, pd.DataFrame]):
    """% of cuBLAS per suite shape, one marker per GPU, on an axis zoomed to the band the
    results fall in (a bar from 0 would hide the few percent the goal is about); the goal's 100%
    and 90% as lines, each GPU's value in a column to the right of the axes."""
    import matplotlib.pyplot as plt

    from .harness.plots import FAMILIES, STYLE, check_readable, legend_below, value_column
    from .harness.results import short_name
    color = FAMILIES[9][1]
    with plt.rc_context(STYLE):
        first = next(iter(suites.values()), None)
        shapes = [] if first is None else list(dict.fromkeys(zip(*(
            first[first.kernel == BookSgemm.id][c] for c in ("M", "N", "K")))))
        fig, ax = plt.subplots(figsize=(STYLE["figure.figsize"][0], 0.36 * len(shapes) + 2.2))
        h = 0.36 / max(len(suites) - 1, 1)
        values = []
        for i, (device, df) in enumerate(suites.items()):
            b = df[df.kernel == BookSgemm.id].set_index(["M", "N", "K"]).pct_of_cublas
            v = np.array([b.get(shape, np.nan) for shape in shapes], dtype=float)
            values.append(v)
            y = np.arange(len(shapes)) + (i - (len(suites) - 1) / 2) * h
            ax.plot(v, y, ls="none", marker=("o", "s", "D", "^")[i % 4], ms=6, color=color,
                    alpha=1.0 - 0.35 * i, mfc=color if i == 0 else "none", label=device)
            finite = np.isfinite(v)
            value_column(ax, y[finite], [f"{value:.0f}" for value in v[finite]], short_name(device),
                         offset=6 + 30 * i, color="0.2" if i == 0 else "0.45")
        for x, ls, what in ((100, "-", "cuBLAS (100%)"), (90, ":", "the goal's floor (90%)")):
            ax.axvline(x, color="k", lw=1, ls=ls, label=what, zorder=1)
        every = np.concatenate(values) if values else np.array([90.0, 100.0])
        every = every[np.isfinite(every)]
        lo, hi = min(85.0, every.min() - 3), max(115.0, every.max() + 3)
        ax.set_xlim(5 * np.floor(lo / 5), 5 * np.ceil(hi / 5))
        ax.set_yticks(np.arange(len(shapes)), [shape_label(*shape) for shape in shapes], fontsize=8.5)
        ax.set_ylim(len(shapes) - 0.5, -0.5)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("book.sgemm, % of the cuBLAS SGEMM timed beside it\n(median of interleaved rounds)")
        ax.set_title("The book's SGEMM against cuBLAS on the suite\n(goal: 100% geometric mean, "
                     "none below 90%)", fontsize=10)
        fig.tight_layout()
        legend_below(fig, ax, ncol=2)
        plt.close(fig)
    return check_readable(fig)


def recorded_heldout(which: str = "") -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """Every GPU's recorded run of a held-out set (``which``: "" the first, ``--heldout``;
    "fresh" the second, ``--fresh``; "third" the third, ``--third``) by device name: (shapes,
    candidates)."""
    tail = "_" + which if which else ""
    shapes, model = results.load_every(HELDOUT_FILE + tail), results.load_every(MODEL_FILE + tail)
    return {d: (shapes[d], model[d]) for d in shapes if d in model}


def heldout_figures(runs: dict, tail: str) -> dict:
    """The figures chapter 9 writes of a held-out set, per GPU of ``runs``
    (``recorded_heldout``), named <gpu>_<tail>_<figure> for its glue: per kind of shape (all,
    big: min(M, N) >= 64, thin) the geometric mean, lowest, count at the floor and count; the
    median regret, the slowest shape, the model's report and the first calls' seconds."""
    figures = {}
    for device, (df, model) in runs.items():
        key = results.gpu_slug(device).replace("-", "_") + tail
        s = heldout_summary(df).loc["held-out"]
        for row, name in (("all", "all"), ("min(M, N) >= 64", "big"), ("skinny (min(M, N) < 64)", "thin")):
            figures[f"{key}_{name}"] = s.loc[row, "geometric mean (% of cuBLAS)"]
            figures[f"{key}_{name}_low"] = s.loc[row, "lowest (% of cuBLAS)"]
            figures[f"{key}_{name}_floor"] = int(s.loc[row, "at or above the floor"])
            figures[f"{key}_{name}_n"] = int(s.loc[row, "shapes"])
        figures[f"{key}_regret"] = s.loc["all", "median regret (%)"]
        ours = df[(df.kernel == BookSgemm.id) & (df.set == "held-out")]
        worst = ours.loc[ours.pct_of_cublas.idxmin()]
        figures[f"{key}_worst"] = f"{worst.M} × {worst.N} × {worst.K}"
        report = model_report(model)
        figures[f"{key}_model_first"] = report["fastest was the model's first (%)"]
        figures[f"{key}_model_six"] = report[f"fastest in the model's first {FIRST_CALL} (%)"]
        figures[f"{key}_model_timed"] = report["fastest among those a first call times (%)"]
        figures[f"{key}_model_rho"] = report["rank correlation (median)"]
        figures[f"{key}_first_median"] = ours.first_call_s.median()
        figures[f"{key}_first_max"] = ours.first_call_s.max()
    return figures


def model_report(model: pd.DataFrame) -> dict:
    """How the cost model ranked one GPU's held-out candidates against their measured times:
    the median rank correlation per shape, the shapes whose fastest plan was the model's first,
    or among its FIRST_CALL first, or among the plans a first call times (``first_call_plans``),
    and the median measured / model time."""
    m = model.copy()
    key = ["M", "N", "K"]
    m["by_model"], m["by_clock"] = (m.groupby(key)[c].rank(method="first")
                                    for c in ("model_us", "measured_us"))
    rho = m.groupby(key)[["by_model", "by_clock"]].apply(lambda g: g.by_model.corr(g.by_clock))
    small = m.groupby(key).model_us.transform("min") < 1e6 * SMALL_S
    m["first_call"] = np.where(small, FIRST_CALL_SMALL, FIRST_CALL)
    config = m.plan.str.extract(r"^sgemm_(.+)_sk(?:_|$)", expand=False)
    sk = config.notna()
    rank = m[sk].assign(config=config[sk]).groupby(key + ["config"]).model_us.rank(method="first")
    m["timed"] = ((m.by_model <= m.first_call)
                  | (rank <= FIRST_STREAMK).reindex(m.index, fill_value=False))
    best = m[m.by_clock == 1]
    return {"shapes": int(m.groupby(key).ngroups),
            "rank correlation (median)": float(rho.median()),
            "fastest was the model's first (%)": 100 * float((best.by_model == 1).mean()),
            f"fastest in the model's first {FIRST_CALL} (%)": 100 * float((best.by_model <= FIRST_CALL).mean()),
            "fastest among those a first call times (%)": 100 * float(best.timed.mean()),
            "measured / model time (median)": float((m.measured_us / m.model_us).median())}


def layouts_table(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """``layouts_summary`` of every GPU's recorded layout run, one block of rows per GPU."""
    return pd.concat({d: layouts_summary(df) for d, df in runs.items()}, names=["GPU", "layout"])


def heldout_table(runs: dict) -> pd.DataFrame:
    """``heldout_summary`` of every GPU's recorded held-out run, one block of rows per GPU."""
    return pd.concat({d: heldout_summary(df) for d, (df, _) in runs.items()}, names=["GPU"])


def heldout_plot(runs: dict):
    """Top: book.sgemm's % of cuBLAS on every held-out shape against its FLOPs, per GPU (skinny
    shapes, min(M, N) < 64, hollow), on a log axis zoomed to the band the results fall in;
    cuBLAS and the goal's floor as lines. Bottom: the cost model's time against the measured
    time of every candidate of every held-out shape on the first GPU, the plan book.sgemm ran
    ringed."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullLocator

    from .harness.plots import FAMILIES, LABEL_GREY, STYLE, check_readable, direct_labels
    from .harness.results import short_name
    color = FAMILIES[9][1]
    with plt.rc_context(STYLE):
        fig, (ax, bx) = plt.subplots(2, 1, figsize=(STYLE["figure.figsize"][0], 9.4))
        shown = []
        for i, (device, (df, _)) in enumerate(runs.items()):
            b = df[(df.kernel == BookSgemm.id) & (df.set == "held-out")]
            shown.append(b.pct_of_cublas)
            flops = 2.0 * b.M * b.N * b.K
            skinny = np.minimum(b.M, b.N) < 64
            marker = ("o", "s")[i % 2]
            name = short_name(device)
            ax.scatter(flops[~skinny], b.pct_of_cublas[~skinny], marker=marker, color=color,
                       alpha=1.0 - 0.4 * i, label=f"{name}, min(M, N) >= 64", zorder=3)
            ax.scatter(flops[skinny], b.pct_of_cublas[skinny], marker=marker, facecolors="none",
                       edgecolors=color, alpha=1.0 - 0.4 * i, label=f"{name}, skinny", zorder=3)
        for y, ls in ((100, "-"), (90, ":")):
            ax.axhline(y, color="k", lw=1, ls=ls, zorder=1)
        ax.set_xscale("log"), ax.set_yscale("log")
        pct = pd.concat(shown) if shown else pd.Series([90.0, 100.0])
        lo, hi = min(85.0, pct.min() / 1.06), max(115.0, pct.max() * 1.06)
        ax.set_ylim(lo, hi)
        ticks = [t for t in (50, 60, 70, 80, 90, 100, 115, 150, 200, 300, 400, 600, 800)
                 if lo <= t <= hi]
        ax.yaxis.set_major_locator(FixedLocator(ticks))
        ax.yaxis.set_major_formatter(plt.FixedFormatter([str(t) for t in ticks]))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("the shape's floating-point operations, 2 M N K")
        ax.set_ylabel("book.sgemm, % of cuBLAS\n(median of 3 rounds)")
        ax.set_title("Held-out shapes", fontsize=10)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8.5)
        device, (_, model) = next(iter(runs.items()))
        bx.scatter(model.model_us, model.measured_us, s=8, color="#7f7f7f", alpha=0.5,
                   label="a candidate plan")
        kept = model[model.chosen]
        bx.scatter(kept.model_us, kept.measured_us, s=40, facecolors="none", edgecolors=color,
                   label="the plan book.sgemm ran")
        lo, hi = 0.8 * min(model.model_us.min(), model.measured_us.min()), 1.2 * max(
            model.model_us.max(), model.measured_us.max())
        bx.plot([lo, hi], [lo, hi], color="k", lw=1, label="measured = model")
        bx.set_xscale("log"), bx.set_yscale("log")
        bx.set_xlabel("the cost model's time (µs)")
        bx.set_ylabel("measured time (µs)")
        bx.set_title(f"Model against clock, {device}", fontsize=10)
        bx.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8.5)
        fig.tight_layout()
        direct_labels(ax, [(100, "cuBLAS\n(100%)", LABEL_GREY), (90, "the goal's\nfloor (90%)",
                                                                   LABEL_GREY)])
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


def main(argv: list[str]) -> int:
    pd.set_option("display.width", 200)
    if "--tune" in argv:
        plans, every = tune()
        results.keep(every, CANDIDATES_FILE)
        print(results.keep(plans, PLANS_FILE).to_string())
        use_plans(plans)
    if "--suite" in argv or "--tune" in argv:
        print(results.keep(suite(), SUITE_FILE).to_string())
    if "--heldout" in argv:
        df, model = heldout(progress=True)
        results.keep(model, MODEL_FILE)
        print(results.keep(df, HELDOUT_FILE).to_string())
        if "--suite" not in argv and "--tune" not in argv:  # the suite's rows are its figures
            results.keep(df[df.set == "suite"][SUITE_COLUMNS].reset_index(drop=True), SUITE_FILE)
        print(heldout_summary(df).round(1).to_string())
    for flag, seed in (("--fresh", FRESH_SEED), ("--third", THIRD_SEED)):  # without the suite
        if flag in argv:
            df, model = heldout(heldout_shapes(seed=seed), progress=True)
            results.keep(model, MODEL_FILE + "_" + flag[2:])
            print(results.keep(df, HELDOUT_FILE + "_" + flag[2:]).to_string())
            print(heldout_summary(df).round(1).to_string())
    if "--layouts" in argv:
        df = results.keep(layouts(), LAYOUTS_FILE)
        print(df.drop(columns=["label", "device", "date"]).to_string())
        print(layouts_summary(df).round(1).to_string())
    if "--timeline" in argv:
        print(results.keep(edge_timeline(), TIMELINE_FILE).round(1).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
