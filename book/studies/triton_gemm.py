"""Chapter 11's Triton GEMM: what a reader writes instead of CUDA C. One kernel for both
precisions -- ``tl.dot`` with ``input_precision="ieee"`` (float32 FMAs) or ``"tf32x3"`` (three
TF32 products on the tensor cores, float32's accuracy) -- over tiles of C taken in groups of
GROUP rows of tiles (so that the tiles running at once share columns of B in L2), autotuned over
CONFIGS on each new (M, N, K). Imported only where Triton is installed (``alternatives``).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_warps=w, num_stages=s)
           for bm, bn, bk, w, s in [(128, 128, 32, 8, 3), (128, 256, 32, 8, 3), (256, 128, 32, 8, 3),
                                    (64, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 64, 32, 4, 4)]]
"""The autotuner's choices: the tile shapes of Triton's own matmul tutorial and chapter 8's
tuning space, each with as many warps and pipeline stages as fit."""


@triton.autotune(configs=CONFIGS, key=["M", "N", "K", "PRECISION"])
@triton.jit
def matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, PRECISION: tl.constexpr,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    first = pid // (GROUP * tiles_n) * GROUP          # this group's first row of tiles
    rows = min(tiles_m - first, GROUP)
    tm, tn = first + pid % rows, pid % (GROUP * tiles_n) // rows
    m, n, k = tm * BM + tl.arange(0, BM), tn * BN + tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        x = tl.load(a + m[:, None] * sam + (k0 + k)[None, :] * sak,
                    mask=(m[:, None] < M) & (k0 + k[None, :] < K), other=0.0)
        y = tl.load(b + (k0 + k)[:, None] * sbk + n[None, :] * sbn,
                    mask=(k0 + k[:, None] < K) & (n[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc, input_precision=PRECISION)
    tl.store(c + m[:, None] * scm + n[None, :] * scn, acc,
             mask=(m[:, None] < M) & (n[None, :] < N))


def triton_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, precision: str = "ieee") -> None:
    """C = A @ B (float32 tensors on the GPU) with :func:`matmul` in ``precision``."""
    (M, K), N = A.shape, B.shape[1]
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
    matmul[grid](A, B, C, M, N, K, *A.stride(), *B.stride(), *C.stride(), PRECISION=precision)
