"""Chapter 10: tensor cores at full FP32 accuracy.

:func:`tf32x3_wgmma` runs 10_wgmma.cu's two launches -- ``pack_split`` over A and over B (split
into big and small TF32 parts, in the swizzled tiles wgmma reads), then
``matmul_tf32x3_wgmma`` -- with a workspace kept between calls of the same size.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .launch.runtime import BACKEND, LaunchError, cupy, load_kernel, xp

SOURCE, OPTIONS = "10_wgmma.cu", ("-arch=sm_90a",)
DEFAULT_MATH, TF32_MATH = 0, 3  # cublasMath_t: CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH
TILE, K_TILE, RECORD_FLOATS = 128, 32, 2 * 128 * 32
GROUP_TILES = 2048
"""With more tiles of C than this, the blocks run in groups of 8 tile rows (L2 reuse). Measured
on an H100: at 8192^3 (4096 tiles) grouping took the product from 11.3 to 9.7 ms; at 4096^3
(1024 tiles) it cost 5% (1.15 -> 1.21 ms)."""

_workspace: dict = {}


def _ceil(n: int, d: int) -> int:
    return -(-n // d)


def records(rows: int, K: int):
    """An empty workspace for pack_split's records of a rows x K operand."""
    return xp.empty(_ceil(rows, TILE) * _ceil(K, K_TILE) * RECORD_FLOATS, dtype=xp.float32)


@lru_cache(maxsize=None)
def _kernels(stages: int):
    """(pack_split, matmul_tf32x3_wgmma, its dynamic shared memory), loaded once: the launches
    of a call must follow each other closely, or the GPU waits between them."""
    pack_split = load_kernel(SOURCE, "pack_split", options=OPTIONS)
    main = load_kernel(SOURCE, "matmul_tf32x3_wgmma", defines={"STAGES": stages}, options=OPTIONS)
    smem = stages * 65536 + 1024
    need = main.module.static_shared("matmul_tf32x3_wgmma") + smem
    if need > main.max_dynamic_shared_size_bytes:
        main.max_dynamic_shared_size_bytes = need
    return pack_split, main, smem


def pack(A, B, a_records, b_records, M: int, N: int, K: int) -> None:
    """Split A and B into their records (from :func:`records`), in one launch."""
    _kernels(3)[0]((_ceil(K, K_TILE), _ceil(max(M, N), TILE), 2), (256, 1),
                   (A, B, a_records, b_records, *map(np.int32, (M, N, K))))


def tf32x3_wgmma(A, B, C, M: int, N: int, K: int, stages: int = 3) -> None:
    """C = A B with 3xTF32 on wgmma (A: M x K, B: K x N, C: M x N, contiguous float32)."""
    for name, x, shape in (("A", A, (M, K)), ("B", B, (K, N)), ("C", C, (M, N))):
        if tuple(x.shape) != shape or x.dtype != np.float32:
            raise LaunchError(f"tf32x3_wgmma: {name} is {x.dtype} {tuple(x.shape)}; it must be "
                              f"float32 {shape}")
    key = (M, N, K)
    if key not in _workspace:
        _workspace.clear()  # one size at a time: 8192^3 needs 1 GiB
        _workspace[key] = (records(M, K), records(N, K))
    a_records, b_records = _workspace[key]
    pack(A, B, a_records, b_records, M, N, K)
    kernel, smem = _kernels(stages)[1:]
    grid = (_ceil(N, TILE), _ceil(M, TILE))
    group_m = 8 if grid[0] * grid[1] > GROUP_TILES else 0
    kernel(grid, (256, 1), (a_records, b_records, C, *map(np.int32, (M, N, K, group_m))),
           shared_mem=smem)


class CublasTF32:
    """cuBLAS with TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH) as a pseudo-kernel for
    :func:`book.harness.measure.sweep`: the speed TF32 can reach, at TF32's accuracy."""

    id, label, chapter = "cublas_tf32", "cuBLAS TF32 (tensor cores)", 0

    @property
    def tolerance(self) -> float:
        from .registry import TF32_TOLERANCE
        return TF32_TOLERANCE

    @staticmethod
    def why_not_here() -> str | None:
        from .registry import device_cc
        if BACKEND != "gpu":
            return "needs cuBLAS on a GPU"
        return None if device_cc() >= (8, 0) else "needs compute capability 8.0 (TF32)"

    @staticmethod
    def launch(A, B, C, M, N, K) -> None:
        cublas = cupy.cuda.cublas
        handle = cupy.cuda.device.get_cublas_handle()
        cublas.setMathMode(handle, TF32_MATH)
        try:
            xp.matmul(A, B, out=C)
        finally:
            cublas.setMathMode(handle, DEFAULT_MATH)
