"""The one registry of the book's matmul kernels: id, label, source, launch geometry.

Plots, tables, tests and the summary all read :data:`KERNELS`, so a kernel added here appears
everywhere at once. Defined in chapter 2 (naive kernels); each later chapter adds its own.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .runtime import Kernel, load_kernel


def ceil_div(n: int, d: int) -> int:
    return -(-n // d)


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
    grid_1d: bool = False       # one flat grid over the M*N elements of C
    notes: str = field(default="", compare=False)

    def kernel(self) -> Kernel:
        return load_kernel(self.source, self.name, defines=dict(self.defines))

    def grid(self, M: int, N: int) -> tuple[int, int]:
        if self.grid_1d:
            return (ceil_div(M * N, self.block[0] * self.block[1]), 1)
        return (ceil_div(N, self.tile[1]), ceil_div(M, self.tile[0]))

    def launch(self, A, B, C, M: int, N: int, K: int) -> None:
        self.kernel()(self.grid(M, N), self.block, (A, B, C, np.int32(M), np.int32(N), np.int32(K)))


def _naive(b: int) -> KernelSpec:
    return KernelSpec(f"naive{b}", f"naive {b}x{b}", 2, "02_naive.cu", "matmul_naive", (b, b), (b, b))


def _tiled(t: int) -> KernelSpec:
    return KernelSpec(f"tiled{t}", f"tiled TILE={t}", 4, "04_tiled.cu", "matmul_tiled", (t, t), (t, t),
                      defines=(("TILE", t),))


KERNELS: dict[str, KernelSpec] = {spec.id: spec for spec in [
    _naive(8), _naive(16), _naive(32),
    KernelSpec("naive1d", "naive, 1D grid (256)", 2, "02_naive.cu", "matmul_naive_1d", (256, 1),
               (1, 1), grid_1d=True),
    _tiled(8), _tiled(16), _tiled(32),
]}
"""Every matmul kernel of the book, by id, in chapter order."""
