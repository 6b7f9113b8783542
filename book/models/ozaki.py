"""Chapter 12's model: float32 matrix products from INT8 products, the Ozaki scheme II (Ozaki,
Uchino and Imamura, 2025), in NumPy -- the reference the kernels of ``12_ozaki.cu`` are checked
against bit for bit.

The idea, for C = A B with A (M x K) and B (K x N) in float32:

1. **Scale to integers.** Each row i of A is multiplied by a power of two, 2^sa[i], so that its
   largest magnitude lies just below 2^p, and rounded to integers: A'[i, k] = rint(A[i, k]
   2^sa[i]); each column j of B likewise, by 2^sb[j]. A float32 holds 24 bits, so with p >= 24
   the largest entries of a row are exact, and an entry 2^d times smaller keeps 24 - d + (p - 24)
   bits.
2. **Residues.** For pairwise coprime moduli m_1 .. m_n of at most 256, the residues of A' and
   B' modulo each, taken in the symmetric range (-m/2, m/2], fit in an int8.
3. **Exact INT8 products.** For each modulus, the product of the residues, R_l = (A' mod m_l)
   (B' mod m_l), accumulated in int32, is exact (|r| <= 128: K 128^2 < 2^31 for K < 2^17); so
   R_l = A' B' (mod m_l).
4. **Reconstruction.** By the Chinese remainder theorem, the residues of C' = A' B' modulo every
   m_l fix C' modulo P = m_1 ... m_n; p is chosen so that |C'| <= K 2^(2p) < P / 2, so C' is the
   representative of that class in (-P/2, P/2): C' = sum_l r_l w_l - q P with w_l = (P / m_l)
   ((P / m_l)^-1 mod m_l) and q the nearest integer to sum_l r_l w_l / P. In float64, with each
   w_l and P split into a high part, a multiple of 2^t so that the products and sums of the high
   parts are exact, and a small low part.
5. **Unscale.** C[i, j] = C'[i, j] 2^-(sa[i] + sb[j]), rounded once to float32.

So the only errors are the rounding of small entries of a row or column in step 1 and the last
rounding in step 5; the int8 products are exact. More moduli: more bits p, and each product
costs one more INT8 GEMM.
"""
from __future__ import annotations

import numpy as np

from ..blas.ozaki import (GUARD_ROW, MAX_K, MODULI, OZAKI_MODULI, Constants, bits,  # noqa: F401
                          constants)  # (the model's too)


def shifts(X: np.ndarray, p: int, axis: int) -> np.ndarray:
    """The power of two for each row (axis 1) or column (axis 0) of X: p minus the exponent of
    its largest finite magnitude (frexp: |x| = f 2^e, 0.5 <= f < 1), so that |x 2^s| < 2^p; 0
    for an all-zero row."""
    amax = np.where(np.isfinite(X), np.abs(X), 0).max(axis=axis).astype(np.float32)
    _, e = np.frexp(amax)
    return np.where(amax > 0, p - e, 0).astype(np.int32)


def scaled(X: np.ndarray, s: np.ndarray, axis: int) -> np.ndarray:
    """rint(X 2^s), s per row (axis 1) or column (axis 0), computed in float32 (exact: a power
    of two) and rounded to the nearest integer, ties to even, as int64."""
    s = s[:, None] if axis == 1 else s[None, :]
    X = np.where(np.isfinite(X), X, 0).astype(np.float32)  # (Inf and NaN: 0; see ffma below)
    return np.rint(np.ldexp(X, s)).astype(np.int64)


def residues(X: np.ndarray, m: int) -> np.ndarray:
    """X mod m in the symmetric range: -(m // 2) .. (m - 1) // 2 (for 256: -128 .. 127)."""
    r = np.mod(X, m)
    return np.where(r > (m - 1) // 2, r - m, r).astype(np.int8)


def reconstruct(r: np.ndarray, n: int) -> np.ndarray:
    """C' (float64) from its residues r[l] in 0 .. m_l - 1 (shape n x M x N), as the kernel
    computes it: the high parts summed exactly, the low parts after, l = 0 .. n - 1 in order."""
    c = constants(n)
    s_hi = np.zeros(r.shape[1:])
    s_lo = np.zeros(r.shape[1:])
    for l in range(n):
        x = r[l].astype(np.float64)
        s_hi = s_hi + x * c.w_hi[l]
        s_lo = s_lo + x * c.w_lo[l]
    q = np.rint((s_hi + s_lo) * c.inv_p)
    return ((s_hi - q * c.p_hi) + (s_lo - q * c.p_lo))


def ffma(A: np.ndarray, B: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Elements (rows[e], cols[e]) of A B as a float32 FMA chain, k = 0 .. K - 1 in order (each
    step a * b + sum exact in float64, then rounded: for the Inf and NaN these elements are,
    what fmaf gives)."""
    s = np.zeros(len(rows), np.float32)
    with np.errstate(invalid="ignore", over="ignore"):  # (Inf - Inf, 0 Inf: NaN, as on a GPU)
        for k in range(A.shape[1]):
            s = (A[rows, k].astype(np.float64) * B[k, cols] + s).astype(np.float32)
    return s


def ozaki(A: np.ndarray, B: np.ndarray, n: int = OZAKI_MODULI, integers: bool = False):
    """C = A B (float32) by the Ozaki scheme II with the first ``n`` moduli, step by step as
    ``12_ozaki.cu`` computes it; the elements in a row of A or a column of B that holds Inf or
    NaN as a float32 FMA chain (``ffma``), as cuBLAS SGEMM gives them. ``integers``: return
    (C, C') with C' the reconstructed integers (float64), for :func:`guard`."""
    A, B = np.asarray(A, np.float32), np.asarray(B, np.float32)
    K = A.shape[1]
    if K > MAX_K:
        raise ValueError(f"K = {K}: at most {MAX_K} (int32 sums of int8 products)")
    p = bits(n, K)
    sa, sb = shifts(A, p, axis=1), shifts(B, p, axis=0)
    Ai, Bi = scaled(A, sa, axis=1), scaled(B, sb, axis=0)
    # (each product in float64: sums of int8 products below 2^53 are exact there, and fast)
    r = np.stack([np.mod((residues(Ai, m).astype(np.float64) @ residues(Bi, m).astype(np.float64))
                         .astype(np.int64), m) for m in constants(n).moduli])
    Cp = reconstruct(r, n)
    C = np.ldexp(Cp, -(sa[:, None] + sb[None, :])).astype(np.float32)
    bad = ~np.isfinite(A).all(axis=1)[:, None] | ~np.isfinite(B).all(axis=0)[None, :]
    if bad.any():
        rows, cols = np.nonzero(bad)
        C[rows, cols] = ffma(A, B, rows, cols)
    return (C, Cp) if integers else C


GUARD_LEVELS = 127
"""The guard's magnitudes: |x| as a whole number 0 .. 127 of its row's (column's) power of two,
rounded down (an int8, for one more INT8 product)."""
def level_code(s: np.ndarray) -> np.ndarray:
    """A sum s >= 0 of int32 as a byte that decodes to a lower bound (``level_value``): 0 for 0,
    else 1 + 8 e + m, e = floor(log2 s), m its next three bits (at most 248)."""
    s = np.asarray(s, np.int64)
    e = np.frexp(s.astype(np.float64))[1].astype(np.int64) - 1  # (exact: s < 2^31)
    m = np.where(e >= 3, s >> np.maximum(e - 3, 0), s << np.maximum(3 - e, 0)) & 7
    return np.where(s > 0, 1 + 8 * e + m, 0).astype(np.uint8)


def level_value(code: np.ndarray) -> np.ndarray:
    """The lower bound a ``level_code`` byte stands for: (8 + m) 2^(e - 3), 0 for 0."""
    c = np.asarray(code, np.int64) - 1
    return np.where(c >= 0, np.ldexp(8.0 + c % 8, (c // 8 - 3).astype(np.int64)), 0.0)


def levels(X: np.ndarray, axis: int) -> np.ndarray:
    """|X| as whole numbers 0 .. GUARD_LEVELS of its rows' (axis 1) or columns' (axis 0) power of
    two 2^e (the largest finite magnitude below 2^e), rounded down: floor(127 |x| 2^-e), exact in
    float64."""
    fx = np.where(np.isfinite(X), np.abs(X), 0).astype(np.float64)
    e = np.frexp(fx.max(axis=axis))[1]
    e = e[:, None] if axis == 1 else e[None, :]
    return np.floor(GUARD_LEVELS * np.ldexp(fx, -e)).astype(np.int64)


def inexact(X: np.ndarray, s: np.ndarray, axis: int) -> np.ndarray:
    """1.0 for each row (axis 1) or column (axis 0) of X that some entry's rounding to an integer
    moved (X 2^s not an integer), else 0.0: a row of zeros, of a one-hot, of small integers moves
    nothing, and its share of the guard's bound is 0."""
    s = s[:, None] if axis == 1 else s[None, :]
    X = np.where(np.isfinite(X), X, 0).astype(np.float32)
    x = np.ldexp(X, s)
    return (x != np.rint(x)).any(axis=axis).astype(np.float64)


def guard(A: np.ndarray, B: np.ndarray, Cp: np.ndarray, p: int) -> np.ndarray:
    """The elements (a boolean M x N mask) for which the row scaling may not keep an SGEMM's
    accuracy, decided from the inputs and the integer product C' (``reconstruct``'s, in units of
    2^-(sa[i] + sb[j])): the design of the kernels' guard (``12_ozaki.cu`` built with GUARD). For
    element (i, j), in those units:

    * a bound on the scaling's error: each entry of row i of A moved by at most half a unit when
      rounded, so |A[i, k]| <= (|A'[i, k]| + 1/2) 2^-sa[i], and B likewise; summing,
      |C - AB| <= E = (SA[i] + SB[j] + K) / 2, SA[i] = sum_k |A'[i, k]|, SB[j] = sum_k |B'[k, j]|
      (exact integers, summed where the residues are made), each term only where a rounding
      moved something (``inexact``: a row of A none of whose entries moved adds no SB[j] / 2);
    * a lower bound on (|A| |B|)[i, j], the scale of an SGEMM's promise: the product of
      ``levels`` of A and B (one more INT8 product, exact in int32), kept as a ``level_code``
      byte, so L = level_value 2^(2p) / 127^2 (2^(p - sa) is the row's power of two).

    Flagged: E 127^2 > sqrt(K) 2^-27 level_value 2^(2p) (an eighth of an SGEMM's typical error
    sqrt(K) u, not its worst K u: on the H200 a quarter left spread rows at 2.1x cuBLAS's error),
    or a row's largest magnitude times a column's sum of magnitudes from 2^126 (float32's partial
    sums may overflow); every element of a row whose bounds E exceed K GUARD_ROW times its values
    C' in the sum of squares over the row (in float64 units: 2^-(sa + sb) each; the row's sum
    cancelled: per row, not per element, as an element near 0 by chance is not a cancelled row);
    and every element of a row or column with Inf or NaN (whose elements the sums leave out)."""
    K = A.shape[1]
    sa, sb = shifts(A, p, axis=1), shifts(B, p, axis=0)
    SA = np.abs(scaled(A, sa, axis=1)).sum(1).astype(np.float64)
    SB = np.abs(scaled(B, sb, axis=0)).sum(0).astype(np.float64)
    ia, ib = inexact(A, sa, axis=1), inexact(B, sb, axis=0)
    E = (SA[:, None] * ib[None, :] + SB[None, :] * ia[:, None] + K * (ia[:, None] * ib[None, :])) * 0.5
    code = level_code(levels(A, 1) @ levels(B, 0))
    limit = np.sqrt(float(K)) * np.ldexp(1.0, 2 * p - 27) * level_value(code)
    top = np.where(np.isfinite(A), np.abs(A), 0).max(1).astype(np.float64)
    with np.errstate(over="ignore"):
        over = ~(top[:, None] * np.ldexp(SB[None, :] + K * 0.5, -sb[None, :]) < 2.0 ** 126)
    bad = ~np.isfinite(A).all(axis=1)[:, None] | ~np.isfinite(B).all(axis=0)[None, :]
    unit = np.ldexp(1.0, -(sa[:, None] + sb[None, :]))
    e2 = np.where(bad, 0.0, (E * unit) ** 2).sum(1)
    c2 = np.where(bad, 0.0, (Cp * unit) ** 2).sum(1)
    cancelled = e2 > (K * GUARD_ROW) ** 2 * c2
    return (E * GUARD_LEVELS ** 2 > limit) | over | cancelled[:, None] | bad


GUARD_CHUNK = 16
"""The guard's FMA chains run over chunks of this many k's, their sums added in float64: an error
of about 16 u, below cuBLAS's split sums' (a whole chain's K u, and chunks of 64 added in
float32, reached 2x cuBLAS's on the H200)."""


def ffma_chunked(A: np.ndarray, B: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Elements (rows[e], cols[e]) of A B as float32 FMA chains over GUARD_CHUNK k's each, the
    chunks' sums added in order in float64, rounded once (the guard's fallback, as the kernel
    computes it)."""
    total = np.zeros(len(rows), np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        for c in range(0, A.shape[1], GUARD_CHUNK):
            s = np.zeros(len(rows), np.float32)
            for k in range(c, min(c + GUARD_CHUNK, A.shape[1])):
                s = (A[rows, k].astype(np.float64) * B[k, cols] + s).astype(np.float32)
            total = total + s.astype(np.float64)
    return total.astype(np.float32)


def guarded(A: np.ndarray, B: np.ndarray, n: int = OZAKI_MODULI) -> tuple[np.ndarray, np.ndarray]:
    """:func:`ozaki` with the elements :func:`guard` flags taken as float32 FMA chains
    (``ffma_chunked``, SGEMM's own arithmetic; rows and columns with Inf or NaN as ``ozaki``
    gives them): (C, the mask)."""
    A, B = np.asarray(A, np.float32), np.asarray(B, np.float32)
    C, Cp = ozaki(A, B, n, integers=True)
    mask = guard(A, B, Cp, bits(n, A.shape[1]))
    bad = ~np.isfinite(A).all(axis=1)[:, None] | ~np.isfinite(B).all(axis=0)[None, :]
    rows, cols = np.nonzero(mask & ~bad)
    if len(rows):
        C[rows, cols] = ffma_chunked(A, B, rows, cols)
    return C, mask


def walkthrough(a: np.ndarray, b: np.ndarray, n: int = 3):
    """One element of C = a . b (a row of A, a column of B) by the scheme with ``n`` moduli, every
    intermediate shown: (a table, a row per step and a column per k, with each product's sum in
    the last column; and {name: value} of the result: the integer C' the CRT gives, the exact
    integer product, and C beside the float64 value)."""
    import pandas as pd
    a, b = np.asarray(a, np.float32)[None, :], np.asarray(b, np.float32)[:, None]
    K, p = a.shape[1], bits(n, a.shape[1])
    sa, sb = shifts(a, p, axis=1), shifts(b, p, axis=0)
    ai, bi = scaled(a, sa, axis=1)[0], scaled(b, sb, axis=0)[:, 0]
    cols = [f"k = {k}" for k in range(K)] + ["sum (mod m)"]
    rows = {"a (float32)": list(a[0]) + [""], "b (float32)": list(b[:, 0]) + [""],
            f"a' = a 2^{int(sa[0])}, rounded": list(ai) + [""],
            f"b' = b 2^{int(sb[0])}, rounded": list(bi) + [""]}
    r = []
    for m in constants(n).moduli:
        ra, rb = residues(ai, m).astype(np.int64), residues(bi, m).astype(np.int64)
        r.append(int(np.mod(ra @ rb, m)))
        rows[f"a' mod {m}"] = list(ra) + [""]
        rows[f"b' mod {m}"] = list(rb) + [""]
        rows[f"a' b' mod {m}"] = list(np.mod(ra * rb, m)) + [r[-1]]
    text = {name: [f"{x:g}" if isinstance(x, (float, np.floating)) else str(x) for x in row]
            for name, row in rows.items()}
    table = pd.DataFrame.from_dict(text, orient="index", columns=cols)
    cp = reconstruct(np.array(r, np.int64).reshape(n, 1, 1), n)[0, 0]
    c = np.float32(np.ldexp(cp, -int(sa[0] + sb[0])))
    return table, {"p": p, "P": constants(n).product, "r": ", ".join(map(str, r)),
                   "crt": int(cp), "exact": int(ai @ bi),
                   "c": float(c), "c64": float(a[0].astype(np.float64) @ b[:, 0])}


def flow(n: int = 7, K: int = 4096):
    """The scheme's steps as a picture, top to bottom, with this n and K's own numbers: the bits
    p of the integers, the moduli, the size of their product P."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    from ..harness.plots import STYLE, check_readable
    c, p = constants(n), bits(n, K)
    moduli = ", ".join(map(str, c.moduli))
    steps = [("A (M x K) and B (K x N), float32", "rows of A, columns of B: any magnitudes"),
             ("scale and round: integers of p = %d bits" % p,
              "row i of A times $2^{sa_i}$, column j of B times $2^{sb_j}$ (powers of two: exact),\n"
              "its largest entry just below $2^{%d}$; then rounded to the nearest integer" % p),
             ("residues modulo %d coprime moduli: int8" % n,
              "m = %s\nin -m/2 .. m/2: each fits an int8" % moduli),
             ("%d INT8 products on the tensor cores" % n,
              "exact in int32 ($|r| \\leq 128$, $K \\cdot 128^2 < 2^{31}$): C' mod m, for each m"),
             ("Chinese remainder theorem, in float64",
              "C' from its %d residues: exact, as $|C'| \\leq K \\cdot 2^{%d} < P/2$,\n"
              "$P = m_1 \\cdots m_{%d} \\approx 2^{%.1f}$" % (n, 2 * p, n, np.log2(float(c.product)))),
             ("unscale", "$C = C' \\cdot 2^{-(sa_i + sb_j)}$, rounded once to float32")]
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(6.8, 6.4))
        ax = fig.add_axes((0.01, 0.01, 0.98, 0.98))
        ax.set_xlim(0, 1)
        ax.set_ylim(len(steps), 0)
        ax.axis("off")
        for i, (title, text) in enumerate(steps):
            ax.add_patch(FancyBboxPatch((0.02, i + 0.08), 0.96, 0.72, boxstyle="round,pad=0.01",
                                        fc="#deebf7" if i in (2, 3) else "0.96", ec="0.3", lw=1))
            ax.text(0.05, i + 0.26, title, fontsize=12, weight="bold", va="center")
            ax.text(0.05, i + 0.56, text, fontsize=11, va="center", linespacing=1.2)
            if i:
                ax.add_patch(FancyArrowPatch((0.5, i - 0.2), (0.5, i + 0.08), arrowstyle="-|>",
                                             mutation_scale=14, color="0.3"))
        plt.close(fig)
    return check_readable(fig)
