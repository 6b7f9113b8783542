"""``sgemm(..., precision='tf32x3')``: chapter 10's 3xTF32 kernel (``10_wgmma.cu``, launched by
``book.launch.wgmma``) with float32's accuracy at any magnitude -- the build it runs
(``TF32X3_DEFINES``), its split-K (``tf32x3_splits``), step 5 (an operand split in registers)
where N, or M, is at most TF32X3_AREG_MAX_N, and the check that this device has wgmma.
"""
from __future__ import annotations

import os
from functools import lru_cache

from ..launch.runtime import LaunchError, xp
from ..registry import ceil_div
from .kernels import _sms
from .operands import _into


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
    from ..launch.wgmma import tf32x3_wgmma
    why = _tf32x3_why(os.environ.get("BOOK_ASSUME_CC"))
    if why:
        raise LaunchError(f"sgemm: precision='tf32x3' runs on Hopper's wgmma, and this device "
                          f"{why}; precision='fp32' runs on every GPU")
    (M, K), N = A.shape, B.shape[1]
    a, b = xp.ascontiguousarray(A), xp.ascontiguousarray(B)
    swap, defines, splits = _tf32x3_plan(M, N, K, defines)
    if swap:
        a, b, M, N = b, a, N, M
    # (no wait for the host: Inf and NaN are found and fixed on the GPU, split-K adds in-kernel)
    _into(out, alpha, beta, lambda c: tf32x3_wgmma(a, b, c, M, N, K, defines, splits))


def _tf32x3_plan(M: int, N: int, K: int, defines: tuple) -> tuple:
    """(whether to compute C^T = B^T A^T, the build's defines, split-K) at this shape."""
    swap = False
    if defines == TF32X3_DEFINES and N > TF32X3_AREG_MAX_N >= M:  # thin M: C^T = B^T A^T, by
        swap, M, N = True, N, M  # step 5 with the roles swapped (B split in registers, A packed)
        defines += (("AREG", 1), ("TRANS", 1))
    elif defines == TF32X3_DEFINES and N <= TF32X3_AREG_MAX_N:
        defines += (("AREG", 1),)  # step 5: A split in registers, B alone packed
    return swap, defines, tf32x3_splits(M, N, K, _sms())


def _tf32x3_replay(A, B, out, alpha: float, beta: float):
    """The call's launches as a function ``run(A, B, out, stream)`` for later calls with the same
    shapes, strides and scalars (``book.sgemm``'s repeated calls): A or B a view (``X.T``, rows
    of a wider array) copied C-contiguous first, as the call did; None where the call goes
    through a scratch C (out a view, alpha and beta other than 1 and 0)."""
    from ..launch.wgmma import tf32x3_checked
    if not (out.flags.c_contiguous and (alpha, beta) == (1.0, 0.0)):
        return None
    (M, K), N = A.shape, B.shape[1]
    swap, defines, splits = _tf32x3_plan(M, N, K, TF32X3_DEFINES)
    m, n = (N, M) if swap else (M, N)
    copy_a, copy_b = not A.flags.c_contiguous, not B.flags.c_contiguous

    def run(A, B, out, stream) -> None:
        a = xp.ascontiguousarray(A) if copy_a else A
        b = xp.ascontiguousarray(B) if copy_b else B
        tf32x3_checked(*((b, a) if swap else (a, b)), out, m, n, K, defines, splits)
    return run


@lru_cache(maxsize=None)
def _tf32x3_why(assumed: str | None) -> str | None:
    """Why this device cannot run ``precision='tf32x3'``, or None; asked once for each
    BOOK_ASSUME_CC (``assumed``): the registry asks the driver (about 10 µs of a call's host
    time)."""
    from ..registry import KERNELS
    return KERNELS["tf32x3_wgmma"].why_not_here()
