"""The kernels book.sgemm's plans launch, as builds and launch functions: chapter 8's cp.async
kernel (``08_async.cu``) in each configuration of CONFIGS, one build per entry of
``09_sgemm.cu`` (leading dimensions, split-K's slices, stream-K's whole waves, shares and fix-up,
a build that times each block), per layout (08_async.cu's TRANS_A and TRANS_B) and per alignment
of the rows it reads (ROW_ALIGN); ``09_skinny.cu`` for few rows, columns or k; ``09_transpose.cu``
(packing) and ``09_splitk.cu`` (split-K's sum); below compute capability 8.0, chapter 8's
warp-tile kernel (FALLBACK). Also the workspaces they write (per stream and thread,
``book.launch.streams``) and how many blocks of a kernel the GPU runs at once.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np

from ..launch import streams
from ..launch.direct import unchecked
from ..launch.runtime import BACKEND, load_kernel, xp
from ..registry import KernelSpec, async_tile, ceil_div, warptile


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


@lru_cache(maxsize=None)
def _skinny(pr: int, name: str):
    return unchecked(load_kernel("09_skinny.cu", name, defines={"PR": pr, "WARPS": SKINNY_WARPS}))


@lru_cache(maxsize=1)
def _sms() -> int:
    """This GPU's SMs (device_report asks the driver for every attribute: 0.2 ms a call; 132
    on the CPU emulator, as the cost model assumes)."""
    from ..harness.device import device_report
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


def _packed(X, rows: int, cols: int, ldx: int, ldy: int, slot: int):
    """Y = X^T (cols x rows, rows ldy floats apart) in workspace ``slot``, for X rows x cols with
    rows ldx floats apart (09_transpose.cu)."""
    Y = _workspace(cols * ldy, slot).reshape(cols, ldy)
    tiles = ceil_div(rows, 32) * ceil_div(cols, 32)
    _transpose()((tiles,), (32, 8), (X, *_ints(ldx), Y, *_ints(ldy, rows, cols)))
    return Y


@lru_cache(maxsize=1)
def _transpose():
    return unchecked(load_kernel("09_transpose.cu", "transpose"))


STREAMK_CPU_BLOCKS = 5
"""Stream-K's shares on the CPU emulator (it runs one block at a time): few and odd, so the
tests' small shapes still split tiles among blocks."""


@lru_cache(maxsize=None)
def _resident_blocks(config: str, layout: str = "nn", align: int = 4, ld: str = "") -> int:
    """Stream-K blocks of a configuration that the GPU runs at once: SMs x the driver's blocks
    per SM for the stream-K entry (its loops hold more registers than matmul_async)."""
    if BACKEND != "gpu":
        return STREAMK_CPU_BLOCKS
    spec = _entry(config, "matmul_streamk" + ld, layout, align)  # (the entry the plan runs)
    return _wave(unchecked(spec.kernel()), spec.block[0], spec.shared_mem(0))


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


def _aligned_copy(B, K: int, N: int, ldb: int):
    """The K x N matrix B (rows ldb floats apart, starting anywhere) copied into rows of
    4 * ceil(N / 4) floats, zeros past N, in workspace slot 5 (09_transpose.cu's pad_rows)."""
    ldy = 4 * ceil_div(N, 4)
    Y = _workspace(K * ldy, slot=5).reshape(K, ldy)
    _pad_rows()((ceil_div(K * ldy // 4, 256),), (256,), (B, *_ints(ldb), Y, *_ints(ldy, K, N)))
    return Y


@lru_cache(maxsize=1)
def _pad_rows():
    return unchecked(load_kernel("09_transpose.cu", "pad_rows"))


def _workspace(size: int, slot: int = 0):
    """A workspace of the calling stream and thread (``streams.buffer``), grown as needed and
    kept: a launch then allocates nothing, and no other stream or thread touches it. Slot 0:
    split-K's slices and stream-K's pieces; slot 1: A B before alpha and beta are applied;
    2: a first call's timing runs; 3 and 4: packed A and B; 5: a padded B; 6: precision='auto''s
    timing runs."""
    return streams.buffer(("work", slot), size)


def _tickets(size: int):
    """Counters for 09_skinny.cu's split sums, one per column of its grid: zero, and left zero by
    every launch (the last block of a column sets its counter back). Per stream and thread."""
    return streams.buffer("tickets", size, xp.uint32, zeros=True)


def _epilogue(work, C, rows: int, cols: int, c_row: int, c_col: int, splits: int,
              alpha: float, beta: float, w_row: int | None = None) -> None:
    """C = alpha (the sum of the ``splits`` rows x cols slices of ``work``, rows ``w_row``
    floats apart, default ``cols``) + beta C, element (i, j) of C at C[i c_row + j c_col]
    (09_splitk.cu's splitk_reduce)."""
    grid = (min(ceil_div(rows * cols, 256), 4096),)
    _reducer()(grid, (256,), (work, C, *_ints(rows, cols, w_row or cols, c_row, c_col, splits),
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


_BK = {name: dict(_spec(name).defines)["BK"] for name in CONFIGS}
