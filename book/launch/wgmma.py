"""Chapter 10, step 3: 10_wgmma.cu's launches -- ``pack_split`` (A and B split into big and
small TF32 parts, in the swizzled tiles wgmma reads), ``rescale`` where SCALED = 1, then
``matmul_tf32x3_wgmma`` (or step 4's or 5's product) -- with a workspace kept between calls
of the same size on the same stream and thread (``streams``). The registry's ``tf32x3_wgmma``
launches through :func:`tf32x3_wgmma`. Each launch checks that the records, flags and grid it is
given cover the whole shape (a LaunchError names what they cover).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import streams
from .direct import bind_launch, unchecked_after
from .runtime import LaunchError, load_kernel, xp

SOURCE, OPTIONS = "10_wgmma.cu", ("-arch=sm_90a",)
TILE, K_TILE, RECORD_FLOATS = 128, 32, 2 * 128 * 32
GROUP_M = 8
"""The blocks run in groups of 8 tile rows, so that those running at once share tiles of A and B
in L2. Measured on an H100 (CHUNK = 2): the product took 9.82 ms at 8192^3 against 10.37 in
plain row order, 1.141 ms at 4096^3 against 1.178."""

DEFINES = (("STAGES", 3), ("CHUNK", 2), ("SMALL_FIRST", 0))
"""10_wgmma.cu's registered defines: 3 stages of 64 KiB; 2 k-tiles summed in the tensor core
per float32 add, each k-step's three wgmmas in turn."""

def _ceil(n: int, d: int) -> int:
    return -(-n // d)


def records_size(rows: int, K: int) -> int:
    """Floats of pack_split's records of a rows x K operand."""
    return _ceil(rows, TILE) * _ceil(K, K_TILE) * RECORD_FLOATS


def records(rows: int, K: int):
    """An empty workspace for pack_split's records of a rows x K operand."""
    return xp.empty(records_size(rows, K), dtype=xp.float32)


@lru_cache(maxsize=None)
def _kernels(defines: tuple = DEFINES):
    """(pack_split, rescale, the product kernel, its dynamic shared memory, its threads per
    block), loaded once, as launch functions without per-call checks (the callers here build
    their arguments; :func:`tf32x3_wgmma` checks its operands): the launches of a call must
    follow each other closely, or the GPU waits between them. With SCALED = 1 in ``defines``
    pack_split gathers each row's and column's magnitude, rescale scales those outside the
    safe range and the product scales back; with PRODUCER = 1 the product is matmul_tf32x3_ws
    (a producer warpgroup: 384 threads), with AREG = 1 matmul_tf32x3_areg (A split in
    registers: pack_split packs B alone), else matmul_tf32x3_wgmma (10_wgmma.cu)."""
    d = dict(defines)
    if d.get("AREG") and d.get("PRODUCER"):
        raise LaunchError("10_wgmma.cu: AREG = 1 (step 5) and PRODUCER = 1 (step 4) are two "
                          "product kernels; choose one")
    packing = {k: 1 for k in ("SCALED", "AREG", "TRANS") if d.get(k)}
    pack_split = load_kernel(SOURCE, "pack_split", options=OPTIONS, defines=packing)
    rescale = load_kernel(SOURCE, "rescale", options=OPTIONS, defines=packing)
    name, threads = ("matmul_tf32x3_ws", 384) if d.get("PRODUCER") else \
        ("matmul_tf32x3_areg", 256) if d.get("AREG") else ("matmul_tf32x3_wgmma", 256)
    main = load_kernel(SOURCE, name, defines=d, options=OPTIONS)
    smem = d["STAGES"] * ((RECORD_FLOATS + 128 * 36) * 4 if d.get("AREG") else 65536) + 1024
    # (AREG: a stage holds B's record and A's 128 x 32 tile, rows 36 floats apart)
    need = main.module.static_shared(name) + smem
    if need > main.max_dynamic_shared_size_bytes:
        main.max_dynamic_shared_size_bytes = need
    # (each may start while the launch before it ends -- for the split, the last call's product
    # in a loop of calls: each waits for it in the kernel, before reading what it wrote)
    return unchecked_after(pack_split), unchecked_after(rescale), unchecked_after(main), smem, threads


@lru_cache(maxsize=4)
def _zeros(n: int):
    """n int zeros, a stand-in: 1 for the magnitudes and flags where the build does not scale
    (never read); M + N + 1 for the flags of a product launched without pack's (nothing is
    recomputed). Shared by every stream: made and finished once, then only read."""
    zeros = xp.zeros(n, dtype=xp.int32)
    if hasattr(xp, "cuda"):
        xp.cuda.get_current_stream().synchronize()
    return zeros


def flags(M: int, N: int):
    """(ea, eb, bad), zeroed in one launch, for :func:`pack` to fill where SCALED = 1: the
    magnitude of each row of A and column of B (10_wgmma.cu: the exponent field of its
    largest finite element, plus one; 0 for a zero row), and 1 for each row
    of A (bad[:M]) and column of B (bad[M:M + N]) that holds Inf or NaN, bad[M + N] = 1 if any
    does."""
    return _flag_views(xp.zeros(_flag_ints(M, N), dtype=xp.int32), M, N)


def _flag_ints(M: int, N: int) -> int:
    """The ints of one set of flags: ea (M), eb (N) and bad (M + N + 1)."""
    return 2 * (M + N) + 1


def _flag_views(f, M: int, N: int):
    """(ea, eb, bad): the three parts of one array of _flag_ints(M, N) ints."""
    return f[:M], f[M:M + N], f[M + N:]


def pack(A, B, a_records, b_records, M: int, N: int, K: int, defines: tuple = DEFINES,
         ea=None, eb=None, bad=None) -> None:
    """Split A and B into their records (from :func:`records`), in one launch, gathering the
    magnitudes and flags into ``ea``, ``eb`` and ``bad`` (from :func:`flags`, zeros) where
    ``defines`` has SCALED = 1. With AREG = 1, B alone is packed (``a_records`` is not written:
    the product splits A itself)."""
    _check_room(M, N, K, defines, a_records, b_records, ea, eb, bad)
    kernel, grid, rest = _pack_launch(a_records, b_records, M, N, K, defines, ea, eb, bad)
    kernel(grid, (256, 1), (A, B) + rest)


def _check_room(M: int, N: int, K: int, defines: tuple, a_records, b_records, ea=None, eb=None,
                bad=None, step: str = "pack_split") -> None:
    """Raise LaunchError where the records or flags a launch is given are too small for the
    whole M x N x K, as the launches see it (where TRANS, M and N are C^T's): records of a
    smaller shape would be read or written past their end, or part of C left unwritten. A's
    records for M rows (where AREG, the product reads A itself: M K floats), B's for N columns,
    the flags for M rows and N columns."""
    areg = bool(dict(defines).get("AREG"))
    need = [("B's records", b_records, records_size(N, K))]
    if not areg or step == "product":
        need.append(("A's records" if not areg else "A", a_records,
                     records_size(M, K) if not areg else M * K))
    need += [(name, x, size) for name, x, size in (("ea", ea, M), ("eb", eb, N), ("bad", bad, M + N + 1))
             if x is not None]
    for name, x, size in need:
        if x.size < size:
            raise LaunchError(f"10_wgmma.cu {step} at {M} x {N} x {K}: {name} holds {x.size} "
                              f"elements, which covers a smaller shape; it needs {size}")


def _pack_launch(a_records, b_records, M: int, N: int, K: int, defines: tuple, ea, eb, bad):
    """pack_split's kernel, grid and arguments after A and B."""
    ea, eb, bad = (_zeros(1) if x is None else x for x in (ea, eb, bad))
    return (_kernels(tuple(defines))[0], (_ceil(K, K_TILE), _ceil(max(M, N), TILE), 2),
            (a_records, b_records, *map(np.int32, (M, N, K)), ea, eb, bad))


RESCALE_SLICES = 16
"""rescale's blocks per panel: each takes every 16th k-tile of its panel, where it needs it."""


def rescale(A, B, a_records, b_records, M: int, N: int, K: int, defines: tuple, ea, eb,
            next_flags=None) -> None:
    """After :func:`pack` where SCALED = 1: each panel of 128 rows of A (columns of B) that
    holds a row (column) outside the safe range, packed again, scaled (10_wgmma.cu's rescale);
    for the others the blocks read the magnitudes and return. ``next_flags`` (int32), where
    given, is zeroed in the same launch: the next call's flags."""
    _check_room(M, N, K, defines, a_records, b_records, ea, eb, step="rescale")
    kernel, grid, rest = _rescale_launch(a_records, b_records, M, N, K, defines, ea, eb, next_flags)
    kernel(grid, (256, 1), (A, B) + rest)


def _rescale_launch(a_records, b_records, M: int, N: int, K: int, defines: tuple, ea, eb,
                    next_flags):
    """rescale's kernel, grid and arguments after A and B."""
    nxt = _zeros(1) if next_flags is None else next_flags
    return (_kernels(tuple(defines))[1],
            (_ceil(M, TILE) + _ceil(N, TILE), min(_ceil(K, K_TILE), RESCALE_SLICES)),
            (a_records, b_records, *map(np.int32, (M, N, K)), ea, eb, nxt,
             np.int32(0 if next_flags is None else nxt.size)))


def tf32x3_wgmma(A, B, C, M: int, N: int, K: int, defines: tuple = DEFINES, splits: int = 1):
    """C = A B with 3xTF32 on wgmma (A: M x K, B: K x N, C: M x N, contiguous float32);
    ``defines`` of 10_wgmma.cu as (name, value) pairs. With SCALED = 1, rows of A and columns
    of B outside the safe range are scaled by powers of two first, and C's elements in rows
    and columns with Inf or NaN are recomputed with float32 FMAs, as cuBLAS SGEMM has them.
    ``splits`` > 1: split-K, the slice of K of a tile that ends last adding up the others'.
    With TRANS = 1 the launches compute C^T = B^T A^T: A is K x M, B is N x K, C is N x M (pass
    B, A and C of the product wanted, and M, N swapped)."""
    trans = bool(dict(defines).get("TRANS"))
    for name, x, shape in (("A", A, (K, M) if trans else (M, K)), ("B", B, (N, K) if trans else (K, N)),
                           ("C", C, (N, M) if trans else (M, N))):
        if tuple(x.shape) != shape or x.dtype != np.float32:
            raise LaunchError(f"tf32x3_wgmma: {name} is {x.dtype} {tuple(x.shape)}; it must be "
                              f"float32 {shape}")
    tf32x3_checked(A, B, C, M, N, K, defines, splits)


def tf32x3_checked(A, B, C, M: int, N: int, K: int, defines: tuple = DEFINES, splits: int = 1):
    """:func:`tf32x3_wgmma` on arrays the caller has checked (``book.sgemm``'s repeated calls)."""
    work = workspace(M, N, K, bool(dict(defines).get("AREG")))
    a_records, b_records, calls, two, turn = work
    if (defines, splits, turn) not in calls:  # (built once: a call's host time is its launches')
        calls[defines, splits, turn] = _call_launches(A, B, C, a_records, b_records, two, turn,
                                                      M, N, K, defines, splits)
    try:
        calls[defines, splits, turn](A, B, C)
    except BaseException:
        streams.here().pop("tf32x3", None)  # (a set of flags left unzeroed is never used again)
        raise
    if dict(defines).get("SCALED"):
        work[4] = 1 - turn


def workspace(M: int, N: int, K: int, areg: bool) -> list:
    """The calling stream's and thread's 3xTF32 workspace for this shape (``streams.here``):
    [A's records (None where AREG), B's records, the bound launches of its calls, two sets of
    flags, the set the next call gathers into]. One shape at a time per stream
    and thread (8192^3 needs 1 GiB): a new shape drops the last one's, whose memory goes back
    to this stream's pool, after the launches already issued on it."""
    entry, key = streams.here(), (M, N, K, areg)
    work = entry.get("tf32x3")
    if work is None or work[0] != key:
        work = entry["tf32x3"] = (key, [None if areg else records(M, K), records(N, K), {},
                                        xp.zeros((2, _flag_ints(M, N)), dtype=xp.int32), 0])
    return work[1]


def _call_launches(A, B, C, a_records, b_records, two, turn: int, M: int, N: int, K: int,
                   defines: tuple, splits: int):
    """The launches of a :func:`tf32x3_wgmma` call on this workspace -- pack's, rescale's
    (where the build scales), the product's -- each bound to its arguments once
    (direct.bind_launch), as one function of the operands A, B and C, which alone change from
    call to call. With SCALED = 1 the call gathers into flags set ``turn`` (ea, eb, bad) and
    its rescale zeroes the other, which the last call's product has read and the next call
    fills."""
    scaled, areg = bool(dict(defines).get("SCALED")), bool(dict(defines).get("AREG"))
    ea, eb, bad = _flag_views(two[turn], M, N) if scaled else (None, None, None)
    packed_a = b_records if areg else a_records  # (AREG: no records of A are written)
    kernel, grid, rest = _pack_launch(packed_a, b_records, M, N, K, defines, ea, eb, bad)
    pack_ = bind_launch(kernel, grid, (256, 1), (A, B) + rest)
    rescale_ = None
    if scaled:
        kernel, grid, rest = _rescale_launch(packed_a, b_records, M, N, K, defines, ea, eb,
                                             two[1 - turn])
        rescale_ = bind_launch(kernel, grid, (256, 1), (A, B) + rest)
    kernel, grid, threads, smem, mid, end = _product_launch(M, N, K, defines, splits, ea, eb, bad)
    product_ = bind_launch(kernel, grid, (threads, 1),
                           (A if areg else a_records, b_records, C) + mid + (A, B) + end, smem)
    at_a = 3 + len(mid)  # (the product's A and B, after its records, C and mid)

    def launches(A, B, C) -> None:
        pack_({0: A, 1: B})
        if rescale_:
            rescale_({0: A, 1: B})
        product_({0: A, 2: C, at_a: A, at_a + 1: B} if areg else {2: C, at_a: A, at_a + 1: B})
    return launches


def _split_state(tiles: int, splits: int):
    """The product's room, the calling stream's and thread's own (``streams.buffer``): (partials,
    split-K's 64 KiB for each slice of each tile; counts, one per tile, zeros that every
    product launch leaves zero), kept for the next call (grown where too small)."""
    need = tiles * splits * TILE * TILE if splits > 1 else 1
    return (streams.buffer("tf32x3_partials", need),
            streams.buffer("tf32x3_counts", tiles, xp.int32, zeros=True))


def product(a_records, b_records, C, M: int, N: int, K: int, defines: tuple = DEFINES,
            splits: int = 1, ea=None, eb=None, A=None, B=None, bad=None) -> None:
    """The product launch alone: C (M x N) from pack's records (with AREG = 1, ``a_records``
    is A itself), with the kernel ``defines`` name (matmul_tf32x3_wgmma, or matmul_tf32x3_ws
    where PRODUCER = 1, matmul_tf32x3_areg where AREG = 1), ``splits`` slices of K (the last
    to end adds up the others'); ``ea``, ``eb``: the magnitudes that set the records' scales,
    where SCALED = 1; ``bad``: the flags of rows and columns with Inf or NaN, whose elements
    of C are recomputed from ``A`` and ``B`` (both needed where ``bad`` is given). Where
    SCALED = 1 the launch only reads ``ea``, ``eb`` and ``bad``."""
    if bad is not None and (A is None or B is None):
        raise LaunchError("tf32x3 product: bad flags need A and B, to recompute their elements")
    if dict(defines).get("SCALED") and (ea is None or eb is None):
        raise LaunchError("tf32x3 product: SCALED = 1 needs pack's magnitudes ea and eb (flags), "
                          "which set the scales the store undoes")
    _check_room(M, N, K, defines, a_records, b_records, ea, eb, bad, step="product")
    if C.size < M * N:
        raise LaunchError(f"10_wgmma.cu product at {M} x {N} x {K}: C holds {C.size} floats, "
                          f"fewer than M N = {M * N}")
    kernel, grid, threads, smem, mid, end = _product_launch(M, N, K, defines, splits, ea, eb, bad)
    kernel(grid, (threads, 1), (a_records, b_records, C) + mid
           + (a_records if A is None else A, b_records if B is None else B) + end,
           shared_mem=smem)


def _product_launch(M: int, N: int, K: int, defines: tuple, splits: int, ea, eb, bad):
    """The product's kernel, grid, threads, shared memory, and its arguments between C and A,
    and after B."""
    kernel, smem, threads = _kernels(tuple(defines))[2:]
    grid = (_ceil(N, TILE), _ceil(M, TILE), splits)
    none = _zeros(1)
    return (kernel, grid, threads, smem,
            (*map(np.int32, (M, N, K, GROUP_M)), none if ea is None else ea, none if eb is None else eb),
            (_zeros(M + N + 1) if bad is None else bad, *_split_state(grid[0] * grid[1], splits)))
