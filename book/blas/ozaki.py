"""Chapter 12's call: C = A B in float32 from INT8 products, the Ozaki scheme II
(``12_ozaki.cu``; the same steps in NumPy: ``book.models.ozaki``).

    C = ozaki_sgemm(A, B, n=8)    # A (M x K), B (K x N) float32, C-contiguous; n moduli

Its four passes, each a launch: the shifts of A's rows and B's columns, the int8 residues of the
scaled integers (``n`` of each), the ``n`` INT8 products kept modulo their moduli, and the
reconstruction. This first version reads contiguous float32 arrays with finite values only and
K below 2^17; it is not yet a precision of ``book.sgemm``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..launch.runtime import LaunchError, load_kernel, xp
from ..registry import ceil_div

MODULI = (256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193)
"""Pairwise coprime moduli of at most 256, the largest first (256 = 2^8; 255 = 3 5 17;
253 = 11 23; 247 = 13 19; 217 = 7 31; the others prime): n moduli give P, their product, of
about 8n bits. Symmetric residues of each fit an int8 (256's in -128 .. 127)."""

MAX_K = (1 << 31) // (128 * 128) - 1
"""The longest K whose int32 sums of int8 products cannot overflow: K 128^2 < 2^31."""


@dataclass(frozen=True)
class Constants:
    """What the reconstruction needs for ``n`` moduli (float64, as the kernels take them):
    the moduli, w_l split into ``w_hi`` (multiples of 2^t) and ``w_lo``, P split into ``p_hi`` and
    ``p_lo``, and 1 / P."""

    moduli: tuple
    w_hi: np.ndarray
    w_lo: np.ndarray
    p_hi: float
    p_lo: float
    inv_p: float

    @property
    def product(self) -> int:
        return math.prod(self.moduli)


def _split(x: int, t: int) -> tuple[float, float]:
    """x = hi + lo, hi the multiple of 2^t nearest x (exact in float64 where x / 2^t < 2^53),
    lo = x - hi rounded to float64."""
    hi = ((x + (1 << (t - 1))) >> t) << t
    return float(hi), float(x - hi)


@lru_cache(maxsize=None)
def constants(n: int) -> Constants:
    """The CRT constants for the first ``n`` of :data:`MODULI`. t is chosen so that every sum of
    products r_l w_hi_l (0 <= r_l < m_l <= 256) and q P_hi is a multiple of 2^t below 2^(t + 53):
    exact in float64."""
    if not 1 <= n <= len(MODULI):
        raise ValueError(f"{n} moduli: from 1 to {len(MODULI)}")
    moduli = MODULI[:n]
    P = math.prod(moduli)
    bound = n * 256 * P  # |sum r_l w_l| and |q P| stay below this
    t = max(1, bound.bit_length() - 52)
    w = [(P // m) * pow(P // m, -1, m) for m in moduli]
    parts = [_split(x, t) for x in w]
    p_hi, p_lo = _split(P, t)
    return Constants(moduli, np.array([h for h, _ in parts]), np.array([lo for _, lo in parts]),
                     p_hi, p_lo, 1.0 / P)


def bits(n: int, K: int) -> int:
    """p: the bits of the scaled integers for ``n`` moduli and a sum over ``K``: the largest p
    with K 2^(2p) <= (P - 1) / 2, so that |C'| < P / 2."""
    half = (constants(n).product - 1) // 2
    p = (half // max(K, 1)).bit_length() - 1
    p //= 2
    if p < 1:
        raise ValueError(f"{n} moduli are too few for K = {K}")
    return min(p, 30)  # (int32 integers)


SOURCE = "12_ozaki.cu"


def _kernel(name: str):
    return load_kernel(SOURCE, name)


def _grid(total: int, threads: int = 256) -> tuple[int]:
    return (max(1, min(ceil_div(total, threads), 8192)),)


def ozaki_sgemm(A, B, n: int = 8, out=None):
    """C = A B with ``n`` moduli (see the module). A and B: float32, C-contiguous, on the
    backend's arrays (CuPy on a GPU, NumPy on the emulator); ``out``: an M x N float32 array
    to write, else a new one. Raises on non-finite inputs and K of 2^17 or more."""
    M, K = A.shape
    K2, N = B.shape
    if K != K2:
        raise LaunchError(f"ozaki_sgemm: A is {M} x {K} but B is {K2} x {N}")
    if K > MAX_K:
        raise LaunchError(f"ozaki_sgemm: K = {K}: at most {MAX_K} (int32 sums of int8 products)")
    for name, X in (("A", A), ("B", B)):
        if X.dtype != np.float32 or not X.flags.c_contiguous:
            raise LaunchError(f"ozaki_sgemm: {name} must be C-contiguous float32")
        if not bool(xp.isfinite(X).all()):
            raise LaunchError(f"ozaki_sgemm: {name} holds Inf or NaN (not handled yet)")
    C = xp.empty((M, N), np.float32) if out is None else out
    if M == 0 or N == 0:
        return C
    p, c = bits(n, K), constants(n)
    moduli = xp.asarray(np.array(c.moduli, np.int32))
    table = xp.asarray(np.concatenate([c.w_hi, c.w_lo, [c.p_hi, c.p_lo, c.inv_p]]))
    Kp, Mp, Np = 32 * ceil_div(max(K, 1), 32), 32 * ceil_div(M, 32), 16 * ceil_div(N, 16)
    sa, sb = xp.empty(M, np.int32), xp.empty(N, np.int32)
    # A's rows: element (i, k) at A[i K + k]; B's columns as rows: element (j, k) at B[k N + j]
    shifts, residues = _kernel("ozaki_shifts"), _kernel("ozaki_residues")
    i32, i64 = np.int32, np.int64
    shifts((ceil_div(M, 8),), (256,), (A, i32(M), i32(K), i64(K), i64(1), i32(p), sa))
    shifts((ceil_div(N, 8),), (256,), (B, i32(N), i32(K), i64(1), i64(N), i32(p), sb))
    RA = xp.empty(n * Mp * Kp, np.int8)
    RB = xp.empty(n * Np * Kp, np.int8)
    residues(_grid(Mp * Kp), (256,), (A, i32(M), i32(K), i64(K), i64(1), sa, i32(n), moduli, RA,
                                       i32(Mp), i32(Kp), i64(Mp * Kp)))
    residues(_grid(Np * Kp), (256,), (B, i32(N), i32(K), i64(1), i64(N), sb, i32(n), moduli, RB,
                                       i32(Np), i32(Kp), i64(Np * Kp)))
    R = xp.empty(n * M * N, np.uint8)
    _kernel("ozaki_products")((Np // 16, Mp // 32, n), (128,), (
        RA, RB, R, i32(M), i32(N), i32(Kp), i64(Mp * Kp), i64(Np * Kp), i64(M * N), moduli))
    _kernel("ozaki_reconstruct")(_grid(M * N), (256,), (R, i32(M), i32(N), i64(M * N), i32(n),
                                                         table, sa, sb, C, i32(N)))
    return C
