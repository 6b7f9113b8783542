"""Inputs an SGEMM must survive, and its promise per element (issue: precision='ozaki' a user can
trust).

An SGEMM promises, for each element, |C - AB| <= c K u (|A||B|); a normwise error can hide an
element (or a row) that lost everything. :func:`errors` measures a result three ways against
float64: ``componentwise`` (max over elements of |C - R| / (|A||B|)), ``worst_row`` (max over rows
of ||C_i - R_i|| / ||R_i||) and ``normwise`` (||C - R|| / ||R||), and whether Inf and NaN fall
where cuBLAS SGEMM (or, on the emulator, float32 FMAs in order) puts them. :data:`CLASSES` are
the inputs: entries spread over many binades in each row, a huge entry whose partner is zero, exact
cancellation, entries near overflow and subnormal ones, beside plain uniform ones.

    python -m book.studies.adversarial      # on a GPU host: every class, every precision
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..launch.runtime import BACKEND, to_device, to_host, xp


def _uniform(M, N, K, rng):
    return (rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32))


def spread(e: int):
    """Each element scaled by its own 2^k, k uniform in -e .. e."""
    def make(M, N, K, rng):
        a, b = _uniform(M, N, K, rng)
        return (np.ldexp(a, rng.integers(-e, e + 1, a.shape)).astype(np.float32),
                np.ldexp(b, rng.integers(-e, e + 1, b.shape)).astype(np.float32))
    return make


def huge_zero_partner(value: float):
    """Column 0 of A is ``value``, row 0 of B is zero: a huge entry that adds nothing."""
    def make(M, N, K, rng):
        a, b = _uniform(M, N, K, rng)
        a[:, 0], b[0, :] = value, 0.0
        return a, b
    return make


def cancellation(M, N, K, rng):
    """Columns 0 and 1 of A are +2^30 and -2^30, rows 0 and 1 of B are 1: they cancel exactly."""
    a, b = _uniform(M, N, K, rng)
    a[:, 0], a[:, 1], b[0, :], b[1, :] = 2.0 ** 30, -2.0 ** 30, 1.0, 1.0
    return a, b


def cancellation_apart(M, N, K, rng):
    """:func:`cancellation` with the -2^30 column last: an SGEMM's FMAs in order of k meet the
    other entries between the two, as 3xTF32's tensor cores meet them in each group of k."""
    a, b = cancellation(M, N, K, rng)
    a[:, [1, K - 1]], b[[1, K - 1]] = a[:, [K - 1, 1]], b[[K - 1, 1]]
    return a, b


def near_overflow(M, N, K, rng):
    """One entry of 3e38 in A and one in B (products overflow where they meet)."""
    a, b = _uniform(M, N, K, rng)
    a[M // 2, K // 3], b[K // 3, N // 2] = 3e38, 3e38
    return a, b


def subnormal(M, N, K, rng):
    """Every entry near 2^-140: subnormal floats, of few bits each."""
    a, b = _uniform(M, N, K, rng)
    return (a * np.float32(2.0 ** -70)).astype(np.float32), (b * np.float32(2.0 ** -70)).astype(np.float32)


def heavy_tails(M, N, K, rng):
    """Student's t with 3 degrees of freedom: most entries near 1, a few of 10-100 in every row
    (as weights and activations often are), so that a row's typical entries sit binades below its
    largest."""
    return (rng.standard_t(3, (M, K)).astype(np.float32), rng.standard_t(3, (K, N)).astype(np.float32))


def lognormal(M, N, K, rng):
    """|x| lognormal with sigma 2 (a spread of many binades, smoothly), random signs."""
    def make(shape):
        return (rng.lognormal(0.0, 2.0, shape) * rng.choice([-1.0, 1.0], shape)).astype(np.float32)
    return make((M, K)), make((K, N))


CLASSES = {"uniform": _uniform, "heavy tails (t, 3)": heavy_tails, "lognormal": lognormal, "spread 24": spread(24), "spread 32": spread(32),
           "spread 48": spread(48), "huge 2^40, zero partner": huge_zero_partner(2.0 ** 40),
           "1e6 feature, zero partner": huge_zero_partner(1e6), "cancellation": cancellation,
           "cancellation, pair apart": cancellation_apart,
           "near overflow": near_overflow, "subnormal": subnormal}
"""Each class as ``make(M, N, K, rng) -> (A, B)`` in float32 (unseen variants: other seeds, shapes
and scales)."""


def errors(C, A, B, reference_specials=None) -> dict:
    """C's errors against float64 (host arrays): componentwise, worst row, normwise (each over
    the finite elements of the exact product), and whether C's Inf and NaN are where
    ``reference_specials`` (another result) has them."""
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    with np.errstate(all="ignore"):
        R = a64 @ b64
        bound = np.abs(a64) @ np.abs(b64)
        C = C.astype(np.float64)
        finite = np.isfinite(R) & (np.abs(R) <= np.finfo(np.float32).max)
        diff = np.where(finite, np.abs(C - R), 0.0)
        comp = np.where(bound > 0, diff / np.where(bound > 0, bound, 1), np.where(diff > 0, np.inf, 0))
        rows = np.sqrt((diff ** 2).sum(1)) / np.maximum(np.sqrt((np.where(finite, R, 0) ** 2).sum(1)), 1e-300)
        norm = np.sqrt((diff ** 2).sum()) / max(np.sqrt((np.where(finite, R, 0) ** 2).sum()), 1e-300)
    out = {"componentwise": float(comp.max()), "worst_row": float(rows.max()), "normwise": float(norm)}
    if reference_specials is not None:
        same = (np.array_equal(np.isnan(C), np.isnan(reference_specials))
                and np.array_equal(np.isinf(C) * np.sign(C), np.isinf(reference_specials) * np.sign(reference_specials)))
        out["specials_as_sgemm"] = bool(same)
    return out


def _sgemm_reference(A, B):
    """cuBLAS SGEMM on a GPU; float32 FMAs in order of k on the emulator's host."""
    if BACKEND == "gpu":
        return to_host(xp.matmul(to_device(A), to_device(B)))
    C = np.zeros((A.shape[0], B.shape[1]), np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # (Inf and NaN as a GPU's FMAs give them)
        for k in range(A.shape[1]):
            C = (C + np.outer(A[:, k], B[k, :]).astype(np.float32)).astype(np.float32)
    return C


UNGUARDED = "ozaki, unguarded"
"""The pseudo-precision of ``ozaki_sgemm(guard=False)``: the row scaling alone, before the
accuracy guard (chapter 12's "before")."""


def _call(precision: str, A, B):
    from ..blas import sgemm
    from ..blas.ozaki import ozaki_sgemm
    return ozaki_sgemm(A, B, guard=False) if precision == UNGUARDED else sgemm(A, B, precision=precision)


def measure(shape=(1024, 1024, 2048), precisions=(UNGUARDED, "ozaki", "tf32x3", "fp32"), classes=None,
            seed=0) -> pd.DataFrame:
    """One row per (class, precision): book.sgemm's errors (:func:`errors`) beside the SGEMM
    reference's on the same inputs (``sgemm_*`` columns) and their ratios."""
    M, N, K = shape
    rows = []
    for name, make in (classes or CLASSES).items():
        A, B = make(M, N, K, np.random.default_rng(seed))
        ref = _sgemm_reference(A, B)
        base = errors(ref, A, B)
        for precision in precisions:
            C = to_host(_call(precision, to_device(A), to_device(B)))
            got = errors(C, A, B, ref)
            rows.append({"class": name, "precision": precision, "M": M, "N": N, "K": K, **got,
                         **{f"sgemm_{k}": v for k, v in base.items()},
                         "x_componentwise": got["componentwise"] / max(base["componentwise"], 1e-300),
                         "x_worst_row": got["worst_row"] / max(base["worst_row"], 1e-300)})
    return pd.DataFrame(rows)


ADVERSARIAL_FILE = "12_adversarial"
SHAPE_GPU, SHAPE_CPU = (1024, 1024, 2048), (40, 32, 96)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """``measure``'s rows as chapter 12 shows them: a row per class, SGEMM's componentwise error,
    and the scaling alone's and precision='ozaki''s (with its guard) as multiples of SGEMM's,
    componentwise and in the worst row; then 3xTF32's componentwise, where it was measured."""
    def x(precision, col):
        return df[df.precision == precision].set_index("class")[col]
    table = pd.DataFrame({
        "SGEMM's error, componentwise": x("ozaki", "sgemm_componentwise"),
        "scaling alone, x SGEMM": x(UNGUARDED, "x_componentwise"),
        "scaling alone, worst row x SGEMM": x(UNGUARDED, "x_worst_row"),
        "with the guard, x SGEMM": x("ozaki", "x_componentwise"),
        "with the guard, worst row x SGEMM": x("ozaki", "x_worst_row")})
    if (df.precision == "tf32x3").any():
        table["3xTF32, x SGEMM"] = x("tf32x3", "x_componentwise")
    return table


def with_tf32x3(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` where it holds 3xTF32's rows, else the first GPU's record that does (chapter 12
    names the device its numbers come from)."""
    if (df.precision == "tf32x3").any():
        return df
    from ..harness import results
    return next(r for r in results.load_every(ADVERSARIAL_FILE).values()
                if (r.precision == "tf32x3").any())


def of_bound(df: pd.DataFrame, precision: str) -> float:
    """The largest componentwise error of ``precision`` over the classes whose elements stay
    normal (all but the subnormal one), as a share of an SGEMM's bound K u."""
    rows = df[(df.precision == precision) & (df["class"] != "subnormal")]
    return float((rows.componentwise / (rows.K * 2.0 ** -24)).max())


def formatted(table: pd.DataFrame) -> pd.DataFrame:
    """``summary``'s table as the chapter prints it: each multiple of SGEMM's error to three
    significant digits (1.59e+06, 0.0796), SGEMM's own error to two."""
    return pd.DataFrame({c: [f"{v:.2g}" if c.startswith("SGEMM") else f"{v:.3g}" for v in table[c]]
                         for c in table.columns}, index=table.index)


def plot_kept_bits(ns=(9, 8), K: int = 2048):
    """What the row scaling keeps of an entry 2^-d times its row's largest: p - d of its bits, at
    most float32's 24, none from d = p on (it rounds to 0), for the p of each number of moduli in
    ``ns`` at this K; an SGEMM keeps all 24 of every entry."""
    import matplotlib.pyplot as plt

    from ..blas.ozaki import bits
    from ..harness.plots import STYLE, check_readable
    d = np.arange(0, 49)
    p = bits(ns[0], K)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.8, 3.1))
        ax.plot(d, np.full(d.shape, 24), color="0.4", lw=2, label="an SGEMM: every entry whole")
        for n, color in zip(ns, ("C0", "C1", "C2")):
            ax.plot(d, np.clip(bits(n, K) - d, 0, 24), color=color, lw=2,
                    label=f"row scaling, p = {bits(n, K)} ({n} moduli at K = {K})")
        ax.axvspan(p, 48, color="C3", alpha=0.08)
        ax.text(p + 1, 8, "rounds to 0:\nits bits are lost", color="C3", fontsize=11, va="center")
        ax.set_xlabel("how far below its row's largest entry (binades, d)")
        ax.set_ylabel("bits of the entry kept")
        ax.set_xlim(0, 48)
        ax.set_ylim(0, 36)
        ax.legend(loc="upper right")
        plt.close(fig)
    return check_readable(fig)


if __name__ == "__main__":
    pd.set_option("display.width", 250)
    for shape in ((1024, 1024, 2048), (256, 256, 4096)):
        print(measure(shape).drop(columns=["M", "N", "K"]).to_string(index=False,
                                                                    float_format=lambda v: f"{v:.2e}"))
