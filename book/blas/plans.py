"""A plan per shape: ``Plan`` (a tile configuration of 08_async.cu, a split-K count -- ``splits``
blocks per tile of C, each over one slice of K into a workspace, the slices added by
``09_splitk.cu`` -- or stream-K -- the whole waves one block per tile, then as many blocks as the
GPU runs at once sharing the steps of the tiles left, their pieces added by a fix-up -- and,
where N is not a multiple of 4, whether to copy B into 16-byte aligned rows first), ``Skinny``
(``09_skinny.cu`` for few rows, columns or k) and ``Packed`` (transposed operands copied into
row-major order first), each for operands in a layout NN, TN, NT or TT. A plan launches like a
registry entry (``launch``, ``builds``, ``covers``, ``why_not_here``), so the harness's sweeps and
checks take it as it is. Also the candidates a tuning run or a first call chooses among
(``candidates``), plan ids as results files name them (``plan_by_id``) and the plans
``python -m book.profile.sanitize`` runs.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..launch.runtime import LaunchError
from ..registry import KernelSpec, ceil_div
from .kernels import (_BK, CONFIGS, FALLBACK, SKINNY_PR, SKINNY_SPLITS, SKINNY_WARPS, _address,
                      _aligned_copy, _entry, _epilogue, _ints, _kernel, _outer_grid, _packed,
                      _resident_blocks, _row_align, _skinny, _spec, _tickets, _workspace)
from .operands import _launch_in_layout


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

    def builds(self, align: int = 4, contiguous: bool = True) -> list[tuple[str, dict, tuple]]:
        """The compiles its launches need: its entries, and split-K's sum; ``contiguous``: on
        arrays whose rows are K and N floats long (else, and for a padded B or transposed
        operands, the ``_ld`` entries); ``align`` 2 or 1: the builds for operands whose rows
        start on 8 or 4 bytes only (``builds_for`` says when)."""
        if self.config == FALLBACK:
            return self.spec.builds()
        entries = (("matmul_tiles", "matmul_streamk", "streamk_fixup") if self.streamk
                   else ("matmul_splitk",) if self.splits > 1 else ("matmul_async",))
        if self.pad_b or self.layout != "nn" or not contiguous:  # rows of other lengths: _ld
            entries = tuple(e if e == "streamk_fixup" else e + "_ld" for e in entries)
        align = 4 if self.pad_b and self.layout[0] == "n" else align  # (B padded: aligned)
        return ([b for e in entries for b in _entry(self.config, e, self.layout, align).builds()]
                + ([("09_splitk.cu", {}, ())] if self.splits > 1 else [])
                + ([("09_transpose.cu", {}, ())] if self.pad_b else []))

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
            B, ldb = _aligned_copy(B, K, N, ldb), 4 * ceil_div(N, 4)
        align = _row_align(self.layout, lda, ldb, A, B)
        if self.streamk:
            self._streamk(A, B, C, M, N, K, lda, ldb, ldc, shares, align)
            return
        kernel, grid, sizes, whole = _launches(self, M, N, K, lda, ldb, ldc, align)
        if whole:
            kernel(grid, (A, B, C, *sizes))
            return
        ldw = 4 * ceil_div(N, 4)  # the slices' rows: whole 16-byte pieces (09_sgemm.cu)
        work = _workspace(grid[2] * M * ldw)
        kernel(grid, (A, B, work, *sizes))
        _epilogue(work, C, M, N, ldc, 1, grid[2], alpha, beta, ldw)

    def _streamk(self, A, B, C, M, N, K, lda, ldb, ldc, shares, align: int):
        """Stream-K: one block per tile for the whole waves, then ``shares`` blocks over equal
        shares of the steps of the tiles left; then the fix-up that adds the pieces. ``align``:
        the builds' ROW_ALIGN (``_row_align``)."""
        tile_m, tile_n = self.spec.tile
        tiles, steps = ceil_div(M, tile_m) * ceil_div(N, tile_n), ceil_div(K, _BK[self.config])
        contiguous = self.layout == "nn" and (lda, ldb, ldc) == (K, N, N)
        sizes = _ints(M, N, K) + (() if contiguous else _ints(lda, ldb, ldc))
        ld = "" if contiguous else "_ld"
        shares = min(tiles * steps, shares or _resident_blocks(self.config, self.layout, align, ld))
        whole = tiles // shares * shares
        if whole:
            _kernel(self.config, "matmul_tiles" + ld, self.layout, align)(
                (whole,), (A, B, C, *sizes))
        if whole == tiles:
            return
        work_area = _workspace(2 * shares * tile_m * tile_n)
        _kernel(self.config, "matmul_streamk" + ld, self.layout, align)(
            (shares,), (A, B, C, work_area, *sizes, *_ints(shares)))
        parts = tile_m * tile_n // (16 * self.spec.block[0])  # FIXUP_FLOATS per part
        sizes = _ints(M, N, K, lda, ldb, ldc, shares)  # shares > 1 here: one takes every tile
        _kernel(self.config, "streamk_fixup", self.layout, align)(
            (shares - 1, parts), (work_area, C, A, B, *sizes))


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
                A, *_ints(*a_mk), B, *_ints(*b_kn), C,
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
            X, *_ints(ldx), Y, *_ints(*y), C, *_ints(*z, R, P, K),
            np.float32(alpha), np.float32(beta), work, _tickets(grid[0])))


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


def builds_for(plans, M: int, N: int, layout: str = "nn", K: int | None = None,
               lda: int | None = None, ldb: int | None = None, A=None, B=None) -> list:
    """The compiles ``plans`` need at a shape with operands in ``layout`` whose rows are ``lda``
    and ``ldb`` floats apart (default: contiguous; a transposed A's rows are M long), for
    ``runtime.build_all`` to make side by side before the first launch: the ROW_ALIGN build each
    takes (from the addresses of ``A`` and ``B`` where given: a view may start off 16 bytes), its
    ``_ld`` entries where rows are not K and N long (a packed B's rows are N rounded up to 4
    floats; a padded B's, too)."""
    lda = lda or (M if layout[0] == "t" else K)
    ldb = ldb or (K if layout[1] == "t" else N)
    align = _row_align(layout, lda or 4, ldb, A, B)
    padded = _row_align(layout, lda or 4, 4 * ceil_div(N, 4), A)  # (B copied into aligned rows)
    found = []
    for p in plans:
        if isinstance(p, Packed):
            la = K if layout[0] == "t" else lda  # (the transposed operands' packed copies)
            lb = 4 * ceil_div(N, 4) if layout[1] == "t" else ldb
            kept_b = B if layout[1] == "n" else None  # (a B read as it is: its own address)
            inner = (p.plan.builds(_row_align("nn", la or 4, lb, None, kept_b), (la, lb) == (K, N))
                     if isinstance(p.plan, Plan) else p.plan.builds())
            found += inner + [("09_transpose.cu", {}, ())]
        elif isinstance(p, Plan):
            found += p.builds(padded if p.pad_b else align, layout == "nn" and (lda, ldb) == (K, N))
        else:
            found += p.builds()
    return [b for i, b in enumerate(found) if b not in found[:i]]


DEFAULT = Plan("128x256")


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
