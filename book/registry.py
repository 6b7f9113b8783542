"""The one registry of the book's matmul kernels: id, label, source, launch geometry.

Plots, tables, tests and the summary all read :data:`KERNELS`, so a kernel added here appears
everywhere at once. Defined in chapter 2 (naive kernels); each later chapter adds its own.
Kernels that reproduce a source article's mistake carry a ``bug`` text: the tests expect them to
fail the check where the bug bites, and they are never timed there.

Each entry states the compute capability its source needs (``min_cc``, 7.0 unless a feature it
uses is newer, with that feature named in ``needs``) and, through ``stage_bytes``, the shared
memory it asks for. :func:`usable` keeps the kernels this GPU can run and prints one line naming
the others and why; ``BOOK_ASSUME_CC=7.5`` makes the book treat the device as compute
capability 7.5 at most, to preview on a new GPU what an older one (a T4) skips.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .harness.check import TOLERANCE
from .launch.cuda_source import KernelSourceError, resolve
from .launch.runtime import BACKEND, CPU_ARCH, Kernel, LaunchError, cupy, device_limits, load_kernel
from .launch.wgmma import tf32x3_wgmma

MAPPINGS = ("tile", "tile_xrows", "tile_floor", "flat", "row")
"""How a kernel's grid covers C:

* ``tile``: block (x, y) computes a tile of C; grid x runs along the columns (N), y along rows.
* ``tile_xrows``: the same with the grid's x along the rows (M) and y along the columns.
* ``tile_floor``: like ``tile`` but with the block counts rounded down, as sources 002 and 003
  launch their kernels (sizes assumed to be multiples of the tile).
* ``flat``: one 1D grid over the M * N elements of C.
* ``row``: one block per row of C.
"""


def ceil_div(n: int, d: int) -> int:
    return -(-n // d)


def cc_text(cc: tuple[int, int]) -> str:
    return f"{cc[0]}.{cc[1]}"


def device_cc() -> tuple[int, int]:
    """The compute capability kernels are chosen for: the GPU's (the CPU emulator stands for an
    sm_90 GPU), lowered to ``BOOK_ASSUME_CC`` where that is set (e.g. ``7.5``)."""
    if BACKEND == "gpu":
        digits = cupy.cuda.Device().compute_capability
        cc = (int(digits[:-1]), int(digits[-1]))
    else:
        cc = (int(CPU_ARCH[3:-1]), int(CPU_ARCH[-1]))
    assumed = os.environ.get("BOOK_ASSUME_CC", "").strip()
    if assumed:
        try:
            major, minor = (int(x) for x in assumed.split("."))
        except ValueError:
            raise ValueError(f"BOOK_ASSUME_CC={assumed!r}: write a compute capability such as 7.5") from None
        cc = min(cc, (major, minor))
    return cc


@dataclass(frozen=True)
class KernelSpec:
    """How to build and launch one matmul kernel, C (M x N) = A (M x K) @ B (K x N)."""

    id: str                     # short unique name, used in results files
    label: str                  # legend text
    chapter: int
    source: str                 # file in book/kernels/
    name: str                   # extern "C" __global__ function
    block: tuple[int, int]      # threads per block (x, y)
    tile: tuple[int, int]       # (rows, cols) of C computed by one block
    defines: tuple[tuple[str, int], ...] = ()
    mapping: str = "tile"       # one of MAPPINGS
    shared_row_of_a: bool = False  # dynamic shared memory: K floats (one row of A)
    leading_dims: bool = False  # takes lda, ldb, ldc after M, N, K (rows may be padded)
    options: tuple[str, ...] = ()  # NVRTC options, e.g. ("--fmad=false",)
    stage_bytes: int = 0        # dynamic shared memory of every launch (chapter 8's cp.async stages)
    min_cc: tuple[int, int] = (7, 0)  # the compute capability the source needs
    needs: str = ""             # the feature that sets min_cc above 7.0, e.g. "cp.async"
    bug: str = field(default="", compare=False)  # a source's mistake this kernel reproduces
    tolerance: float = TOLERANCE  # largest relative error it may have;
                                  # TF32_TOLERANCE for plain TF32 (inputs keep 10 mantissa bits)

    def __post_init__(self):
        if self.mapping not in MAPPINGS:
            raise ValueError(f"{self.id}: mapping {self.mapping!r} is not one of {MAPPINGS}")

    def why_not_here(self) -> str | None:
        """Why this device cannot run the kernel (compute capability, shared memory), or None."""
        cc = device_cc()
        if cc < self.min_cc:
            return (f"needs compute capability {cc_text(self.min_cc)} ({self.needs}); "
                    f"this device counts as {cc_text(cc)}")
        top = device_limits()["shared_per_block_optin"]
        if self.stage_bytes > top:
            return (f"needs {self.stage_bytes // 1024} KiB of shared memory per block; this "
                    f"device allows {top // 1024} KiB")
        return None

    def builds(self) -> list[tuple[str, dict, tuple]]:
        """The compiles a launch needs, as ``(source, defines, options)`` (``build_all``)."""
        return [(self.source, dict(self.defines), self.options)]

    def kernel(self) -> Kernel:
        why = self.why_not_here()
        if why:
            raise LaunchError(f"{self.id} cannot run here: it {why}")
        kernel = load_kernel(self.source, self.name, defines=dict(self.defines), options=self.options)
        if self.stage_bytes:  # static + dynamic over 48 KiB: opt in
            need = kernel.module.static_shared(self.name) + self.stage_bytes
            if need > kernel.module.limits["shared_per_block_optin"]:  # the emulator's first
                need = kernel.module.static_shared(self.name, exact=True) + self.stage_bytes
            if need > kernel.max_dynamic_shared_size_bytes:
                kernel.max_dynamic_shared_size_bytes = need
        return kernel

    def grid(self, M: int, N: int) -> tuple[int, int]:
        rows, cols = self.tile
        if self.mapping == "flat":
            return (ceil_div(M * N, self.block[0] * self.block[1]), 1)
        if self.mapping == "row":
            return (M, 1)
        if self.mapping == "tile_xrows":
            return (ceil_div(M, rows), ceil_div(N, cols))
        if self.mapping == "tile_floor":
            if M < rows or N < cols:
                raise LaunchError(f"{self.id}: rounds the grid down, so M = {M} and N = {N} must "
                                  f"be at least the tile ({rows} x {cols})")
            return (N // cols, M // rows)
        return (ceil_div(N, cols), ceil_div(M, rows))

    def shared_mem(self, K: int) -> int:
        """Bytes of dynamic shared memory for one launch: ``stage_bytes``, or, for a kernel that
        keeps a row of A in shared memory, K floats rounded up to 16 bytes.

        The compiler reads the row in 16-byte vectors (LDS.128), and the last vector of a row
        whose length is not a multiple of 4 floats reaches past it; compute-sanitizer's memcheck
        reports that read as out of bounds unless the allocation covers it.
        """
        return 16 * ceil_div(K, 4) if self.shared_row_of_a else self.stage_bytes

    def row_lengths(self, A, B, C, M: int, N: int, K: int) -> tuple[int, int, int]:
        """(lda, ldb, ldc): the row lengths of the arrays, checked against M, N, K.

        A kernel without ``leading_dims`` needs A, B, C of exactly (M, K), (K, N), (M, N); one
        with it takes arrays whose rows are padded: (M, lda >= K), (K, ldb >= N), (M, ldc >= N).
        """
        lds = []
        for name, array, rows, cols in (("A", A, M, K), ("B", B, K, N), ("C", C, M, N)):
            shape = tuple(getattr(array, "shape", ()))
            ok = len(shape) == 2 and shape[0] == rows and (
                shape[1] >= cols if self.leading_dims else shape[1] == cols)
            if not ok:
                want = f"({rows}, >= {cols})" if self.leading_dims else f"({rows}, {cols})"
                raise LaunchError(f"{self.id}: {name} has shape {shape}; for M={M}, N={N}, K={K} "
                                  f"it must be {want}")
            lds.append(shape[1])
        return tuple(lds)

    def launch(self, A, B, C, M: int, N: int, K: int) -> None:
        lds = self.row_lengths(A, B, C, M, N, K)
        args = (A, B, C, np.int32(M), np.int32(N), np.int32(K))
        if self.leading_dims:
            args += tuple(np.int32(ld) for ld in lds)
        self.kernel()(self.grid(M, N), self.block, args, shared_mem=self.shared_mem(K))


def _naive(b: int) -> KernelSpec:
    return KernelSpec(f"naive{b}", f"naive {b}x{b}", 2, "02_naive.cu", "matmul_naive", (b, b), (b, b))


def _xrows(b: int) -> KernelSpec:
    return KernelSpec(f"xrows{b}", f"naive {b}x{b}, threadIdx.x along rows", 3, "03_coalescing.cu",
                      "matmul_naive_xrows", (b, b), (b, b), mapping="tile_xrows")


def _tiled(t: int, source: str = "04_tiled.cu", name: str = "matmul_tiled", id: str = "tiled",
           label: str = "tiled TILE={t}", chapter: int = 4, **kw) -> KernelSpec:
    defines = (("TILE", t),) + kw.pop("defines", ())
    return KernelSpec(f"{id}{t}", label.format(t=t), chapter, source, name, (t, t), (t, t),
                      defines=defines, **kw)


REGTILE_CONFIGS = [(64, 64, 8, 4, 4), (64, 64, 8, 8, 8), (128, 128, 8, 8, 8), (128, 64, 8, 8, 4),
                   (128, 128, 16, 8, 8)]
"""(BM, BN, BK, TM, TN) of the 2D register-tiled kernels of chapter 6."""


def _regtile(bm: int, bn: int, bk: int, tm: int, tn: int) -> KernelSpec:
    return KernelSpec(f"reg{bm}x{bn}x{bk}_{tm}x{tn}", f"2D register tile {bm}x{bn}x{bk}, {tm}x{tn} per thread",
                      6, "06_regtile.cu", "matmul_regtile", ((bm // tm) * (bn // tn), 1), (bm, bn),
                      defines=(("BM", bm), ("BN", bn), ("BK", bk), ("TM", tm), ("TN", tn)))


def vec4(bm=128, bn=128, bk=8, tm=8, tn=8, pad=0) -> KernelSpec:
    """Chapter 8, step 1: 06_regtile's 2D register tile with float4 loads (08_vectorized.cu)."""
    return KernelSpec(f"vec4_{bm}x{bn}x{bk}_{tm}x{tn}_pad{pad}",
                      f"float4 loads, A transposed{', padded' if pad else ''} ({bm}x{bn}x{bk}, {tm}x{tn})",
                      8, "08_vectorized.cu", "matmul_vec4", ((bm // tm) * (bn // tn), 1), (bm, bn),
                      defines=(("BM", bm), ("BN", bn), ("BK", bk), ("TM", tm), ("TN", tn), ("PAD", pad)))


WARPTILE = {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 32, "WNITER": 2, "TM": 8, "TN": 4,
            "THREADS": 256, "PAD": 4, "DB": 1, "MINB": 1}
"""The defines of 08_warptile.cu's default configuration (chapter 8)."""


def warptile(**changes) -> KernelSpec:
    """Chapter 8, steps 2 and 3: 08_warptile.cu with WARPTILE's defines, some changed."""
    d = {**WARPTILE, **changes}
    name = "{BM}x{BN}x{BK}_w{WM}x{WN}_n{WNITER}_{TM}x{TN}_t{THREADS}_pad{PAD}_m{MINB}".format(**d)
    label = (f"warp tiles{', double-buffered' if d['DB'] else ''} ({d['BM']}x{d['BN']}x{d['BK']}, "
             f"warp {d['WM']}x{d['WN']})")
    return KernelSpec(f"warp{'_db' if d['DB'] else ''}_{name}", label, 8, "08_warptile.cu",
                      "matmul_warptile", (d["THREADS"], 1), (d["BM"], d["BN"]),
                      defines=tuple(d.items()))


ASYNC = {**{k: v for k, v in WARPTILE.items() if k != "DB"},
         "BN": 256, "WN": 64, "WNITER": 4, "BK": 16, "STAGES": 4, "SERP": 1}
"""The defines of 08_async.cu's registered configuration: 128 x 256 block tiles, 8 x 16 outputs
per thread, four stages of 16 k each, FFMAs in serpentine order (chapter 8)."""


def async_tile(**changes) -> KernelSpec:
    """Chapter 8, step 4: 08_async.cu with ASYNC's defines, some changed."""
    d = {**ASYNC, **changes}
    name = "{BM}x{BN}x{BK}_w{WM}x{WN}_n{WNITER}_{TM}x{TN}_t{THREADS}_s{STAGES}_pad{PAD}_m{MINB}".format(**d)
    name += "_serp" if d["SERP"] else ""
    label = (f"cp.async, {d['STAGES']} stages{', serpentine' if d['SERP'] else ''} "
             f"({d['BM']}x{d['BN']}x{d['BK']}, warp {d['WM']}x{d['WN']}{', no pad' if not d['PAD'] else ''})")
    return KernelSpec(f"async_{name}", label, 8, "08_async.cu", "matmul_async", (d["THREADS"], 1),
                      (d["BM"], d["BN"]), defines=tuple(d.items()),
                      stage_bytes=d["STAGES"] * d["BK"] * (d["BM"] + d["PAD"] + d["BN"] + d.get("PADB", 0)) * 4,
                      min_cc=(8, 0), needs="cp.async")


TF32_TOLERANCE = 2e-3
"""Plain TF32 rounds each input to 10 mantissa bits (relative error up to 2^-11 each): its
products carry errors near 2^-11, and the relative error of C measures about 2.6e-4. One product of two rounded inputs can be
off by 2 x 2^-11 (9.8e-4): the tolerance is twice that."""


def _tf32(split: int, tiled: bool) -> KernelSpec:
    """Chapter 10, steps 1 and 2: 10_tf32.cu, plain TF32 (split 1) or 3xTF32 (split 3)."""
    kind = "tf32x3" if split == 3 else "tf32"
    name, block, tile = (("matmul_tf32_tiled", (256, 1), (128, 128)) if tiled
                         else ("matmul_tf32", (128, 1), (32, 16)))
    label = (f"{'3xTF32' if split == 3 else 'TF32'} mma.sync, "
             f"{'128x128 shared-memory tiles' if tiled else 'one warp per 16x8'}")
    return KernelSpec(f"{kind}_{'tiled' if tiled else 'naive'}", label, 10, "10_tf32.cu", name,
                      block, tile, defines=(("SPLIT", split), ("FADD", 0)), min_cc=(8, 0),
                      needs="TF32 mma.sync", tolerance=TF32_TOLERANCE if split == 1 else TOLERANCE)


@dataclass(frozen=True)
class TwoLaunchSpec(KernelSpec):
    """Chapter 10, step 3: 3xTF32 on wgmma, launched as book.launch.wgmma.tf32x3_wgmma does
    (a pass that splits A and B, then the product). It needs a Hopper GPU (compute capability
    9.0 exactly: wgmma is compiled for sm_90a, which no other GPU runs)."""

    def why_not_here(self) -> str | None:
        cc = device_cc()
        if cc != self.min_cc:
            return (f"needs compute capability {cc_text(self.min_cc)} exactly ({self.needs}); "
                    f"this device counts as {cc_text(cc)}")
        return super().why_not_here()

    def builds(self) -> list[tuple[str, dict, tuple]]:
        return [(self.source, {}, self.options), *super().builds()]  # pack_split, the product

    def launch(self, A, B, C, M: int, N: int, K: int) -> None:
        self.row_lengths(A, B, C, M, N, K)
        why = self.why_not_here()
        if why:
            raise LaunchError(f"{self.id} cannot run here: it {why}")
        tf32x3_wgmma(A, B, C, M, N, K, self.defines)


def _wgmma(stages: int = 3, chunk: int = 2, small_first: int = 0) -> KernelSpec:
    return TwoLaunchSpec("tf32x3_wgmma", "3xTF32 wgmma, 128x128, bulk copies", 10, "10_wgmma.cu",
                         "matmul_tf32x3_wgmma", (256, 1), (128, 128),
                         defines=(("STAGES", stages), ("CHUNK", chunk), ("SMALL_FIRST", small_first)),
                         options=("-arch=sm_90a",), stage_bytes=stages * 65536 + 1024,
                         min_cc=(9, 0), needs="wgmma, sm_90a")


KERNELS: dict[str, KernelSpec] = {spec.id: spec for spec in [
    _naive(8), _naive(16), _naive(32),
    KernelSpec("naive1d", "naive, 1D grid (256)", 2, "02_naive.cu", "matmul_naive_1d", (256, 1),
               (1, 1), mapping="flat"),
    _xrows(16), _xrows(32),
    _tiled(8), _tiled(16), _tiled(32),
    KernelSpec("rowA", "one row of A in shared memory (256)", 4, "04_row_shared.cu",
               "matmul_row_shared", (256, 1), (1, 0), mapping="row", shared_row_of_a=True),  # all N columns
    _tiled(16, "04_tiled_bugs.cu", "matmul_tiled_src000", "src000_",
           "source 000 tiled {t}x{t} (C stored in the loop, tiles transposed)"),
    _tiled(16, "04_tiled_bugs.cu", "matmul_tiled_src001", "src001_",
           "source 001 tiled {t}x{t} (loops gridDim.x times)",
           bug="loops over gridDim.x (the tiles along N): wrong when K needs more tiles than N"),
    _tiled(16, "04_tiled_bugs.cu", "matmul_tiled_divisible", "divisible",
           "tiled {t}x{t}, sizes assumed multiples of {t} (sources 002, 003)", mapping="tile_floor",
           bug="no bounds: leaves out the last rows, columns and K terms unless TILE divides M, N, K"),
    _tiled(16, "05_bank_conflicts.cu", "matmul_tiled_tstore", "tstore", "tiled {t}, A tile stored transposed",
           chapter=5, defines=(("PAD", 0),)),
    _tiled(32, "05_bank_conflicts.cu", "matmul_tiled_tstore", "tstore", "tiled {t}, A tile stored transposed",
           chapter=5, defines=(("PAD", 0),)),
    _tiled(16, "05_bank_conflicts.cu", "matmul_tiled_tstore", "tstore_pad", "tiled {t}, transposed, padded [{t}][{t}+1]",
           chapter=5, defines=(("PAD", 1),)),
    _tiled(32, "05_bank_conflicts.cu", "matmul_tiled_tstore", "tstore_pad", "tiled {t}, transposed, padded [{t}][{t}+1]",
           chapter=5, defines=(("PAD", 1),)),
    _tiled(16, "05_bank_conflicts.cu", "matmul_tiled_src001_tstore", "src001_tstore",
           "source 001's bank-conflict kernel {t}x{t}", chapter=5,
           bug="swaps the load indices with the store indices: loads diagonal elements only"),
    *[KernelSpec(f"coarse{o}", f"tiled 32, {o} output{'s' * (o > 1)} per thread", 6, "06_coarsen.cu",
                 "matmul_coarse", (32, 32 // o), (32, 32), defines=(("TILE", 32), ("OUT", o)))
      for o in (1, 2, 4, 8, 16, 32)],
    *[_regtile(*cfg) for cfg in REGTILE_CONFIGS],
    KernelSpec("kahan_naive16", "naive 16x16, Kahan summation", 7, "07_kahan.cu",
               "matmul_naive_kahan", (16, 16), (16, 16)),
    _tiled(16, "07_kahan.cu", "matmul_tiled_kahan", "kahan_tiled", "tiled {t}, Kahan summation",
           chapter=7),
    KernelSpec("rowA_ld", "one row of A in shared memory (256), leading dimensions", 7,
               "07_pitched.cu", "matmul_row_shared_ld", (256, 1), (1, 0), mapping="row",
               shared_row_of_a=True, leading_dims=True),
    _tiled(16, "07_pitched.cu", "matmul_tiled_ld", "tiled_ld", "tiled {t}, leading dimensions",
           chapter=7, leading_dims=True),
    vec4(), vec4(pad=4), warptile(DB=0), warptile(), async_tile(PAD=0), async_tile(),
    _tf32(1, False), _tf32(3, False), _tf32(1, True), _tf32(3, True), _wgmma(),
]}
"""Every matmul kernel of the book, by id, in chapter order."""
LABELS = {**{k: s.label for k, s in KERNELS.items()}, "cublas": "cuBLAS SGEMM"}
"""Each kernel's label by id, for tables that a reader reads (``readable(df, labels=LABELS)``)."""


def usable(specs, quiet: bool = False) -> list:
    """The kernels of ``specs`` this device can run, in order; prints one line naming the ones it
    skips and why (unless ``quiet``). Entries that are not KernelSpecs (cuBLAS) are kept."""
    keep, skipped = [], {}
    for spec in specs:
        why = spec.why_not_here() if isinstance(spec, KernelSpec) else None
        if why:
            skipped.setdefault(why, []).append(spec.id)
        else:
            keep.append(spec)
    if skipped and not quiet:
        from .harness.device import device_report
        parts = "; ".join(f"{', '.join(ids)} ({why})" for why, ids in skipped.items())
        print(f"Skipped on {device_report()['name']}: {parts}.")
    return keep


TUNING_SPACE = [
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
"""Chapter 8's tuning space: changes to 08_async.cu's registered defines (ASYNC), one
configuration each (``book.tune`` checks and times them)."""


def variant(spec: KernelSpec, **changes) -> KernelSpec:
    """``spec`` with some of its defines changed (a chapter's "try it"); the launch geometry
    follows them as the kernel's registered builder sets it. Unknown defines are refused."""
    d = dict(spec.defines)
    unknown = sorted(set(changes) - set(d))
    if unknown:
        raise KeyError(f"{spec.id} has no define {', '.join(unknown)}; its defines are "
                       f"{', '.join(d) or 'none'}")
    d.update(changes)
    if spec.source == "06_regtile.cu":
        return _regtile(d["BM"], d["BN"], d["BK"], d["TM"], d["TN"])
    if spec.source == "08_vectorized.cu":
        return vec4(d["BM"], d["BN"], d["BK"], d["TM"], d["TN"], d["PAD"])
    if spec.source == "08_warptile.cu":
        return warptile(**d)
    if spec.source == "08_async.cu":
        return async_tile(**d)
    block, tile = spec.block, spec.tile
    if "TILE" in d and spec.mapping.startswith("tile"):
        block = tile = (d["TILE"], d["TILE"])
        if "OUT" in d:  # 06_coarsen.cu: TILE x TILE / OUT threads
            block = (d["TILE"], d["TILE"] // d["OUT"])
    text = ", ".join(f"{k}={v}" for k, v in changes.items())
    return replace(spec, id=f"{spec.id}[{text}]", label=f"{spec.label} [{text}]",
                   defines=tuple(d.items()), block=block, tile=tile)


def _occurrences(text: str, old: str) -> list[int]:
    found, at = [], text.find(old)
    while at >= 0:
        found.append(at)
        at = text.find(old, at + 1)
    return found


def edited(spec: KernelSpec, old: str, new: str) -> KernelSpec:
    """``spec`` with the first ``old`` text of code (not of a ``//`` comment) in its kernel
    function -- else the first in its file, as in a helper it calls -- replaced by ``new`` -- a chapter's "try it": change one line, then check the result. The
    edited source is written to a temporary file; ``book/kernels/`` is not touched."""
    path = resolve(spec.source)
    text = path.read_text()
    code = [i for i in _occurrences(text, old)
            if "//" not in text[text.rfind("\n", 0, i) + 1:i]]  # not inside a // comment
    start = text.find(f" {spec.name}(")
    at = next((i for i in code if start >= 0 and i > start), code[0] if code else -1)
    if at < 0:
        raise KernelSourceError(f"{path.name}: {old!r} is not in it; copy the text exactly as "
                                f"show_source({spec.source!r}) prints it")
    text = text[:at] + new + text[at + len(old):]
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    out = Path(tempfile.gettempdir()) / "book-try" / f"{path.stem}-{digest}{path.suffix}"
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists():
        out.write_text(text)
    return replace(spec, id=f"{spec.id}[edited]", label=f"{spec.label} [edited]", source=str(out))


def chapter_kernels(chapter: int, *, with_bugs: bool = False) -> list[KernelSpec]:
    """The kernels a chapter adds, in registry order (without the buggy ones unless asked)."""
    return [s for s in KERNELS.values() if s.chapter == chapter and (with_bugs or not s.bug)]


def correct_kernels() -> list[KernelSpec]:
    """Every kernel that does not reproduce a source's bug: these must pass every check."""
    return [s for s in KERNELS.values() if not s.bug]


def find_kernel(kernel_id: str) -> KernelSpec:
    """A registered kernel, or one of chapter 8's tuning configurations, by id."""
    if kernel_id in KERNELS:
        return KERNELS[kernel_id]
    for change in TUNING_SPACE:
        spec = async_tile(**change)
        if spec.id == kernel_id:
            return spec
    raise KeyError(f"no kernel {kernel_id!r} in the registry or chapter 8's tuning space")
