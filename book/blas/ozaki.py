"""Chapter 12's call: C = A B in float32 from INT8 products, the Ozaki scheme II
(``12_ozaki.cu``; the same steps in NumPy: ``book.models.ozaki``).

    C = sgemm(A, B, precision="ozaki")   # or ozaki_sgemm(A, B, n) with n moduli

Its four passes: the largest magnitude of A's rows and B's columns (which fixes each one's
power of two; and which hold Inf or NaN), the int8 residues of the scaled integers (``n`` of
each), the ``n`` INT8 products kept modulo their moduli (on wgmma, ``12_ozaki_wgmma.cu``, on
compute capability 9.0; else mma.sync in tiles of 128 x 128), and the reconstruction; K below
2^17. A call seen before replays its launches (``_ozaki``), as one CUDA graph.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..launch import replay
from ..launch.direct import unchecked
from ..launch.runtime import BACKEND, LaunchError, load_kernel, xp
from ..launch.streams import buffer
from ..registry import cc_text, ceil_div, device_cc
from .kernels import _sms
from .operands import _into

MODULI = (256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193)
"""Pairwise coprime moduli of at most 256, the largest first (256 = 2^8; 255 = 3 5 17;
253 = 11 23; 247 = 13 19; 217 = 7 31; the others prime): n moduli give P, their product, of
about 8n bits. Symmetric residues of each fit an int8 (256's in -128 .. 127). The kernels hold
the same list (``ozaki.cuh``'s ``modulus``)."""

GUARD_ROW = 2.0 ** -27
"""The accuracy guard's test of a row (``book.models.ozaki.guard``): its error bounds' sum of
squares above (K GUARD_ROW)^2 times its values' is a row whose sums cancelled."""

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


MOST_MODULI = 10
"""The most moduli ``ozaki_sgemm`` takes: ten give the integers their 30 bits (int32) at every K up
to MAX_K, so more would buy nothing; and up to ten, every product of the reconstruction is exact
in float64 (the kernel fuses them into FMAs and still gives the model's bits)."""

OZAKI_MODULI = 9
"""``precision='ozaki'``'s moduli, at every K up to MAX_K. Seven are enough for the normwise error
where a row's elements share a scale (chapter 10's families, results/<gpu>/12_families.csv), eight
where they span many binades (``tf32_lab.SPREAD_FAMILY``): the integers keep p bits of a row's
largest element, fewer of its small ones. The ninth gives the accuracy guard (``guard``) four bits
of room: with eight (p = 24 or 25 at K of 2048 to 8192), its test of each element passed normal
inputs by less than a bit and flagged 0.4-0.8% of their elements (the model, 192 x 192, K = 2048
and 8192), Student's t with 5 degrees of freedom 86-100%; with nine, none of either."""


def moduli_for(K: int) -> int:
    """The number of moduli ``precision='ozaki'`` uses at this K (``OZAKI_MODULI``; K as
    ``ozaki_sgemm`` takes it)."""
    if not 0 <= K <= MAX_K:
        raise LaunchError(f"K = {K}: at most {MAX_K} (int32 sums of int8 products)")
    return OZAKI_MODULI


SOURCE, WGMMA_SOURCE = "12_ozaki.cu", "12_ozaki_wgmma.cu"
MIN_CC = (8, 0)
WGMMA_STAGES = 4


def _kernel(name: str, guard: bool = False):
    """12_ozaki.cu's kernel ``name`` as the library launches it (``direct.unchecked``: its
    arguments are checked by the call), looked up once for each device; ``guard``: its build with
    the accuracy guard (GUARD)."""
    return _launch(name, _device(), guard)


@lru_cache(maxsize=None)
def _launch(name: str, device: int, guard: bool = False):
    return unchecked(load_kernel(SOURCE, name, defines={"GUARD": 1} if guard else None))


def _allowing(k, name: str, smem: int):
    """Kernel ``k`` (its function ``name``) allowed ``smem`` bytes of dynamic shared memory beside
    its static ones."""
    need = k.module.static_shared(name) + smem
    if need > k.max_dynamic_shared_size_bytes:
        k.max_dynamic_shared_size_bytes = need
    return k


def _wgmma_kernel(name: str, smem: int):
    """12_ozaki_wgmma.cu's kernel ``name`` (sm_90a; one build for both), allowed ``smem`` bytes of
    dynamic shared memory beside its static ones."""
    return _allowing(load_kernel(WGMMA_SOURCE, name, defines={"STAGES": WGMMA_STAGES},
                                 options=("-arch=sm_90a",)), name, smem)


def _wgmma_products():
    """12_ozaki_wgmma.cu's product kernel (as ``_kernel``) and its dynamic shared memory."""
    return _wgmma_products_on(_device())


@lru_cache(maxsize=None)
def _wgmma_products_on(device: int):
    smem = WGMMA_STAGES * 3 * 128 * 128 + 8 * 16 * 264 + 1024  # (stages, the store's rows)
    return unchecked(_wgmma_kernel("ozaki_products_wgmma", smem)), smem


def _wgmma_peak() -> tuple:
    """12_ozaki_wgmma.cu's int8_peak: (kernel, dynamic shared memory, blocks, MACs a block an
    iteration)."""
    smem = 3 * 128 * 128 + 1024
    return _wgmma_kernel("int8_peak", smem), smem, _sms(), 2 * 4 * 64 * 256 * 32


def _mma_peak() -> tuple:
    """12_ozaki.cu's int8_mma_peak: (kernel, blocks, MACs a block an iteration)."""
    return _kernel("int8_mma_peak"), 4 * _sms(), 8 * 8 * 16 * 8 * 32


def products_kernel(kind: str = "auto") -> str:
    """Which INT8 product kernel runs: 'wgmma' (12_ozaki_wgmma.cu) on compute capability 9.0,
    else 'tiled' (12_ozaki.cu's ozaki_products_tiled: mma.sync in tiles of 128 x 128 from shared
    memory, 4.2-6.4x 'mma''s speed on an H200: results/<gpu>/12_loop.csv);
    ``kind`` other than 'auto' asks for one, or for 'mma' (ozaki_products: a warp per 16 x 8 tile
    of C, its fragments straight from global memory; the first version, kept to compare)."""
    if kind == "auto":
        return "wgmma" if device_cc() == (9, 0) else "tiled"
    if kind not in ("wgmma", "mma", "tiled"):
        raise LaunchError(f"ozaki_sgemm: products={kind!r}: 'auto', 'wgmma', 'mma' or 'tiled'")
    return kind


TILED_SMEM = 3 * 32768
"""ozaki_products_tiled's dynamic shared memory: TILED_STAGES (3) stages of A's and B's records."""


@lru_cache(maxsize=None)
def _tiled_products_on(device: int, guard: bool):
    name = "ozaki_products_tiled"
    return unchecked(_allowing(load_kernel(SOURCE, name, defines={"GUARD": 1} if guard else None),
                               name, TILED_SMEM))


def _device() -> int:
    return xp.cuda.runtime.getDevice() if BACKEND == "gpu" else 0


@lru_cache(maxsize=None)
def _on_device(n: int, device: int) -> tuple:
    """The moduli (int32) and the reconstruction's table (float64: w_hi, w_lo, P_hi, P_lo, 1/P)
    for ``n`` moduli, copied to ``device`` once."""
    c = constants(n)
    return (xp.asarray(np.array(c.moduli, np.int32)),
            xp.asarray(np.concatenate([c.w_hi, c.w_lo, [c.p_hi, c.p_lo, c.inv_p]])))


def _strided(X) -> tuple:
    """(a C-contiguous array to pass, X's row step, X's column step in it), in elements: X
    itself, or X.T where X is F-contiguous (a transpose: nothing copied), else a C-contiguous
    copy."""
    if X.flags.c_contiguous:
        return X, X.shape[1], 1
    if X.flags.f_contiguous:
        return X.T, 1, X.shape[0]
    return xp.ascontiguousarray(X), X.shape[1], 1


def ozaki_sgemm(A, B, n: int | None = None, out=None, products: str = "auto", guard: bool = True):
    """C = A B with ``n`` moduli (default ``moduli_for(K)``; see the module). A and B: float32,
    C- or F-contiguous (others are copied), on the backend's arrays (CuPy on a GPU, NumPy on the
    emulator); ``out``: a C-contiguous M x N float32 array to write, else a new one. Rows of A
    and columns of B that hold Inf or NaN give the elements of C cuBLAS SGEMM gives (float32
    FMAs). ``products``: the INT8 product kernel (``products_kernel``). ``guard``: the accuracy
    guard (``book.models.ozaki.guard``): the elements it flags as float32 FMA chains; without it
    (``guard=False``, chapter 12's "before"), an entry far below its row's largest may lose all its
    bits. Raises for K of 2^17 or more."""
    passes, C = ozaki_passes(A, B, n, out, products, guard=guard)
    for _, run in passes:
        run()
    return C


def ozaki_passes(A, B, n: int | None = None, out=None, products: str = "auto",
                 strided: tuple | None = None, guard: bool = True) -> tuple:
    """``ozaki_sgemm``'s work as its passes, each a function that launches it (again, where
    called again: chapter 12 times them one by one), in order: ([(name, run), ...], C). Its
    scratch memory is this stream's and thread's (``streams.buffer``), kept for the next call;
    ``strided``: ``(_strided(A), _strided(B))`` where the caller has them (a recording)."""
    M, K = A.shape
    K2, N = B.shape
    if device_cc() < MIN_CC:
        raise LaunchError(f"ozaki_sgemm: the INT8 products run on mma.sync with s8 operands (compute "
                          f"capability {cc_text(MIN_CC)}), and this device counts as "
                          f"{cc_text(device_cc())}")
    if K != K2:
        raise LaunchError(f"ozaki_sgemm: A is {M} x {K} but B is {K2} x {N}")
    if K > MAX_K:
        raise LaunchError(f"ozaki_sgemm: K = {K} (A's columns, B's rows): at most {MAX_K}, where "
                          f"the int32 sums of int8 products cannot overflow; precision='fp32' "
                          "takes any K")
    for name, X in (("A", A), ("B", B)):
        if X.dtype != np.float32:
            raise LaunchError(f"ozaki_sgemm: {name} must be float32, got {X.dtype}")
    C = xp.empty((M, N), np.float32) if out is None else out
    if M == 0 or N == 0:
        return [], C
    n = n or moduli_for(K)
    if not 1 <= n <= MOST_MODULI:
        raise LaunchError(f"ozaki_sgemm: {n} moduli: from 1 to {MOST_MODULI} (with {MOST_MODULI} the "
                          f"integers already keep 30 bits at every K; more buy nothing)")
    p = bits(n, K)
    (a, ar, ac), (b, br, bc) = strided or (_strided(A), _strided(B))
    moduli, table = _on_device(n, _device())
    replay.note_buffer(moduli)  # (kept for the process: a recording may use them)
    replay.note_buffer(table)
    kind = products_kernel(products)
    wgmma = kind == "wgmma"
    # residues in records of 128 rows x 128 k's (ozaki.cuh); B's rows to 256 (a wgmma block's N)
    Kp, Mp, Np = 128 * ceil_div(K, 128), 128 * ceil_div(M, 128), 256 * ceil_div(N, 256)
    # the largest magnitude of A's rows, then B's columns; then the flags of rows of A and
    # columns of B with Inf or NaN, and whether any
    # (then, for the guard, its count of rows to take another way and their list: ozaki_rows)
    top, bad, listed = _tops(M, N)
    g = int(guard)  # (the guard: one more slice each, the levels of |A| and |B| and their product)
    RA, RB = buffer("ozaki_ra", (n + g) * Mp * Kp, np.int8), buffer("ozaki_rb", (n + g) * Np * Kp, np.int8)
    R = buffer("ozaki_r", (n + 2 * g) * M * N, np.uint8)  # (the guard's: its levels, its flags)
    # (the guard's: sum |A'| by row, |B'| by column; then, as float64, 3 sums per row of C)
    sums = buffer("ozaki_sums", M + N + 3 * M, np.uint64)
    stats = sums[M + N:].view(np.float64)
    i32, i64 = np.int32, np.int64
    # A's rows: element (i, k) at a[i ar + k ac]; B's columns as rows: (j, k) at b[k br + j bc]
    rows = ((a, M, ar, ac, 0, Mp, RA), (b, N, bc, br, M, Np, RB))

    def zero(x, s=None):  # (each pass zeroes what it adds to: it may run again alone)
        _kernel("ozaki_zero")((ceil_div(max(x.size, 0 if s is None else s.size), 256),), (256,),
                              (x, i32(x.size), sums if s is None else s, i32(0 if s is None else s.size)))

    def magnitudes():
        zero(top[:2 * (M + N) + 1])
        for X, r, xr, xc, first, _, _ in rows:
            grid = ((ceil_div(r, 8), ceil_div(K, 1024)) if xc == 1
                    else (ceil_div(r, 256), ceil_div(K, 64)))
            _kernel("ozaki_magnitudes")(grid, (256,), (
                X, i32(r), i32(K), i64(xr), i64(xc), top, bad, i32(first), i32(M + N)))

    def residues():
        if guard:
            zero(listed[:1], sums[:M + N])
        for X, r, xr, xc, first, pad, RX in rows:
            _kernel("ozaki_residues", guard)((Kp // 128, pad // 32), (32, 8), (
                X, i32(r), i32(K), i64(xr), i64(xc), top, i32(first), i32(p), i32(n),
                RX, i32(Kp), i64(pad * Kp), sums))

    def int8_products():
        args = (RA, RB, R, i32(M), i32(N), i32(Kp), i64(Mp * Kp), i64(Np * Kp), i64(M * N), moduli)
        if wgmma:
            kernel, smem = _wgmma_products()
            blocks = min((n + g) * (Mp // 128) * (Np // 256), _sms())
            kernel((blocks,), (384,), args + (i32(n + g), i32(n)), shared_mem=smem)
        elif kind == "tiled":
            _tiled_products_on(_device(), guard)((Np // 128, Mp // 128, n + g), (256,),
                                                 args + (i32(n),), shared_mem=TILED_SMEM)
        else:
            _kernel("ozaki_products", guard)((Np // 16, Mp // 32, n + g), (128,), args + (i32(n),))

    def reconstruct():
        if guard:
            zero(listed[:1], sums[M + N:])
        _kernel("ozaki_reconstruct", guard)((M, ceil_div(N, 512)), (128,), (
            R, i32(M), i32(N), i64(M * N), i32(n), table, top, i32(p), C, i32(N), bad, a,
            i64(ar), i64(ac), b, i64(br), i64(bc), i32(K), sums, stats))
        if guard:  # (the rows to take another way, listed; then their elements, in tiles)
            _kernel("ozaki_rows", True)((ceil_div(M, 256),), (256,), (
                stats, np.float64((K * GUARD_ROW) ** 2), bad, i32(M), listed))
            _kernel("ozaki_fallback", True)((ceil_div(M, 64), ceil_div(N, 64)), (16, 16), (
                a, i64(ar), i64(ac), b, i64(br), i64(bc), C, i32(N), i32(M), i32(N), i32(K),
                R[(n + 1) * M * N:], listed, bad))

    return [("magnitudes", magnitudes), ("residues", residues), ("products", int8_products),
            ("reconstruct", reconstruct)], C


def _tops(M: int, N: int) -> tuple:
    """This stream's and thread's buffer of the largest magnitudes of A's rows and B's columns,
    and its views: the flags of rows and columns with Inf or NaN (and whether any), then the
    guard's count of rows to take another way and their list (``ozaki_rows``)."""
    top = buffer("ozaki_top", 2 * (M + N) + 2 + M, np.int32)
    return top, top[M + N:2 * (M + N) + 1], top[2 * (M + N) + 1:]


def guard_count(M: int, N: int) -> int:
    """How many rows of C the accuracy guard took another way in this stream's and thread's last
    call at M x N (``ozaki_rows``'s count; a wait for the GPU)."""
    return int(_tops(M, N)[2][0])


def _ozaki(A, B, out, alpha: float, beta: float, key=None):
    """out = alpha A B + beta out by ``ozaki_sgemm`` (``sgemm(precision='ozaki')``). With a
    call's ``key`` (``call._key``), where alpha, beta are 1, 0, out is C-contiguous and A and B
    are C- or F-contiguous, the launches are recorded: returns the replay of the next calls with
    that key (``again(A, B, out, stream)``), else None."""
    if device_cc() < MIN_CC:
        raise LaunchError(f"sgemm: precision='ozaki' runs on INT8 mma.sync (compute capability "
                          f"{cc_text(MIN_CC)}), and this device counts as {cc_text(device_cc())}; "
                          "precision='fp32' runs on every GPU")
    flips = tuple(not X.flags.c_contiguous for X in (A, B))
    if (key is None or (alpha, beta) != (1.0, 0.0) or not out.flags.c_contiguous
            or not all(X.flags.c_contiguous or X.flags.f_contiguous for X in (A, B))):
        _into(out, alpha, beta, lambda c: ozaki_sgemm(A, B, out=c))
        return None
    strided = (_strided(A), _strided(B))
    with replay.recording(strided[0][0], strided[1][0], out) as rec:
        passes, _ = ozaki_passes(A, B, out=out, strided=strided)
        for _, run in passes:
            run()
    run = rec.replay()
    if run is None:
        return None
    if BACKEND == "gpu":
        def again(A, B, out, stream: int) -> None:
            run((A.data.ptr, B.data.ptr, out.data.ptr), stream)
    else:
        def again(A, B, out, stream: int) -> None:
            run(tuple(X.T if t else X for X, t in zip((A, B), flips)) + (out,), stream)
    return again
