"""Chapter 10: tensor cores at full FP32 accuracy -- TF32 rounding and the 3xTF32 split in
NumPy (:func:`tf32`, :func:`split_product`), cuBLAS TF32 as a pseudo-kernel, and the chapter's
measurements (:func:`measure`, :func:`error_vs_k`), and ``precision='tf32x3'``'s records
(magnitudes, suite, held-out set, parts). The wgmma kernel's launches live in
``book.launch.wgmma``."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from .harness.plots import FAMILIES, STYLE, check_readable
from .harness.check import random_inputs
from .launch.runtime import BACKEND, cupy, load_kernel, to_device, to_host, xp
from .launch.wgmma import OPTIONS
from .registry import KERNELS, TF32_TOLERANCE, chapter_kernels, device_cc, usable


def tf32_bits(x) -> np.ndarray:
    """cvt.rna.tf32.f32 as the PTX ISA defines it, in NumPy: float32 rounded to 10 mantissa bits,
    to nearest with ties away from zero, the 13 low bits zero (Inf and NaN kept); as uint32."""
    u = np.asarray(x, np.float32).view(np.uint32)
    special = (u & 0x7F800000) == 0x7F800000
    rounded = ((u.astype(np.uint64) + 0x1000) & 0xFFFFE000).astype(np.uint32)
    nan = np.where(u & 0x007FFFFF, np.uint32(0x7FFFFFFF), u)
    return np.where(special, nan, rounded)


def tf32(x) -> np.ndarray:
    """x rounded to TF32 (:func:`tf32_bits`), as float32 values."""
    return tf32_bits(x).view(np.float32)


def tf32_examples(x) -> "pd.DataFrame":
    """Chapter 10's table: each float32 value beside its TF32 rounding, the relative change and
    the 13 low mantissa bits TF32 drops, every value printed exactly as float32 holds it."""
    import pandas as pd
    x = np.asarray(x, dtype=np.float32)
    t = tf32(x)
    return pd.DataFrame({"x (float32)": [f"{v:.9g}" for v in x],
                         "tf32(x)": [f"{v:.9g}" for v in t],
                         "relative change": [f"{abs(float(a) - float(b)) / abs(float(a)):.2g}"
                                             for a, b in zip(x, t)],
                         "low 13 bits of x (dropped)": x.view(np.uint32) & 0x1FFF})


def split_layout(x: float) -> dict:
    """One float32 ``x`` split as chapter 10's kernels split it: big = tf32(x), small =
    tf32(x - big), and what is left; each part's significant bits, counted from x's leading bit
    (bit 0), and its size relative to x."""
    x32 = np.float32(x)
    big = np.float32(tf32(x32))
    small = np.float32(tf32(np.float32(x32 - big)))
    rest = float(x32) - float(big) - float(small)
    lead = int(np.floor(np.log2(abs(float(x32)))))

    def bits(v):
        """Positions (from x's leading bit) of the 1s of v's significand (up to 24 of them)."""
        if v == 0:
            return []
        e = int(np.floor(np.log2(abs(v))))
        m = int(round(abs(v) / 2.0 ** (e - 23)))  # 24-bit integer significand
        return [lead - e + i for i in range(24) if m >> (23 - i) & 1]
    return {"x": float(x32), "big": float(big), "small": float(small), "rest": rest,
            "bits": {"big": bits(float(big)), "small": bits(float(small)), "x": bits(float(x32))},
            "relative": {"big": abs(float(big) / x32), "small": abs(float(small) / x32),
                         "rest": abs(rest / float(x32))}}


def split_picture(a: float = np.pi, b: float = 1 / 3):
    """Chapter 10's picture, two panels: the bits of a float32 split into its TF32 big part (11 significant bits) and
    small part (the next 11), with the 2 bits neither holds; then the four products of a b's
    parts by size, on a log scale against float32's rounding unit: 3xTF32 keeps three and drops
    small x small, about 2^-22 of the product."""
    la, lb = split_layout(a), split_layout(b)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 1, figsize=(STYLE["figure.figsize"][0], 5.6),
                                 gridspec_kw={"height_ratios": [1.3, 2]})
        ax = axes[0]
        ax.set_title(f"a = {la['x']:.9g} as float32: 24 significant bits, split into two TF32 "
                     f"numbers", fontsize=9)
        rows = [("float32 a", la["bits"]["x"], "0.4"), ("big = tf32(a)", la["bits"]["big"], "#08519c"),
                ("small = tf32(a - big)", la["bits"]["small"], "#6baed6")]
        low = min(la["bits"]["small"], default=11)  # small's leading bit: its 11 bits from there
        for r, (name, ones, color) in enumerate(rows):
            span = range(0, 11) if r == 1 else range(low, low + 11) if r == 2 else range(24)
            for i in range(24):
                inside = i in span and (r != 2 or ones)
                ax.add_patch(Rectangle((i + 0.05, r + 0.1), 0.9, 0.8, fill=inside, fc=color,
                                       alpha=0.85 if inside else 1.0, ec="0.8", lw=0.5))
                if i in ones:
                    ax.text(i + 0.5, r + 0.5, "1", ha="center", va="center", fontsize=8,
                            color="w" if inside else "k")
            ax.text(-0.3, r + 0.5, name, ha="right", va="center", fontsize=8.5)
        ax.axvline(11, color="k", lw=1, ls="--")
        ax.axvline(low + 11, color="firebrick", lw=1, ls="--")
        ax.text(low + 11.1, 3.35, "past small's 11 bits:\nin neither part", fontsize=8,
                color="firebrick")
        ax.set_xlim(-0.2, 24)
        ax.set_ylim(3.9, 0)
        ax.axis("off")
        ax = axes[1]
        terms = {"big x big": la["relative"]["big"] * lb["relative"]["big"],
                 "small x big": la["relative"]["small"] * lb["relative"]["big"],
                 "big x small": la["relative"]["big"] * lb["relative"]["small"],
                 "small x small (dropped)": la["relative"]["small"] * lb["relative"]["small"]}
        names = list(terms)
        sizes = [np.log2(v) if v else -30 for v in terms.values()]
        ax.barh(range(len(names)), [v + 30 for v in sizes], left=-30,
                color=["#08519c", "#6baed6", "#6baed6", "firebrick"])
        for y, v in enumerate(sizes):
            ax.text(v + 0.3, y, f"$2^{{{round(v, 1) or 0.0:.1f}}}$", va="center", fontsize=8.5)
        ax.axvline(-24, color="k", lw=1, ls="--")
        ax.text(-24.3, -0.6, "float32 rounding\nunit, $2^{-24}$", ha="right", fontsize=8)
        ax.set_yticks(range(len(names)), names, fontsize=9)
        ax.set_ylim(len(names) - 0.5, -1.0)
        ax.set_xlim(-30, 3)
        ax.set_xlabel("size of the term relative to a b (log2; longer is larger)")
        ax.set_title(f"The four products of a b's parts (b = {lb['x']:.9g}):\n3xTF32 computes "
                     f"three on the tensor cores", fontsize=9)
        ax.grid(axis="y", visible=False)
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


def split_product(a: np.ndarray, b: np.ndarray, terms: int = 3) -> np.ndarray:
    """The product the tensor cores would give with exact sums, in float64: a and b split into
    big = tf32(x) and small = tf32(x - big); terms = 1 keeps big big (plain TF32), 3 adds
    small big + big small (3xTF32), 4 adds small small too. Isolates the split's error from the
    accumulation's."""
    parts = []
    for x in (a, b):
        big = tf32(x)
        parts.append((big.astype(np.float64), tf32(x - big).astype(np.float64)))
    (a1, a2), (b1, b2) = parts
    out = a1 @ b1
    if terms >= 3:
        out += a2 @ b1 + a1 @ b2
    if terms >= 4:
        out += a2 @ b2
    return out


def fragment_lanes() -> dict:
    """Which lane of the warp holds each element of A (16 x 8), B (8 x 8) and C (16 x 8) in
    mma.m16n8k8 with TF32 inputs (the PTX ISA's layout, as tensor.cuh states it)."""
    import pandas as pd
    A, B, C = np.zeros((16, 8), int), np.zeros((8, 8), int), np.zeros((16, 8), int)
    for lane in range(32):
        g, t = divmod(lane, 4)
        A[g, t] = A[g + 8, t] = A[g, t + 4] = A[g + 8, t + 4] = lane
        B[t, g] = B[t + 4, g] = lane
        C[g, 2 * t] = C[g, 2 * t + 1] = C[g + 8, 2 * t] = C[g + 8, 2 * t + 1] = lane
    return {name: pd.DataFrame(m).rename_axis(index="row", columns="column")
            for name, m in (("A", A), ("B", B), ("C", C))}


def fragment_picture(lane: int = 0):
    """Chapter 10's picture of :func:`fragment_lanes`: A, B and C of one mma.m16n8k8, each
    element numbered and coloured by the lane that holds it (a colour per quad g = lane / 4), the
    elements of ``lane`` outlined."""
    lanes = fragment_lanes()
    cmap = plt.get_cmap("tab10")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(STYLE["figure.figsize"][0], 4.4),
                                 gridspec_kw={"width_ratios": [8, 8, 8]})
        for ax, name, title in zip(axes, "ABC", ("A: 16 x 8 (row-major)", "B: 8 x 8 (column-major)",
                                                 "C and D: 16 x 8")):
            m = lanes[name].to_numpy()
            rows, cols = m.shape
            for (r, c), who in np.ndenumerate(m):
                ax.add_patch(Rectangle((c, r), 1, 1, fc=cmap(who // 4 % 10), alpha=0.45,
                                       ec="k" if who == lane else "white",
                                       lw=1.6 if who == lane else 0.5, zorder=2 if who == lane else 1))
                ax.text(c + 0.5, r + 0.5, str(who), ha="center", va="center", fontsize=8)
            ax.set_xlim(0, cols)
            ax.set_ylim(16, 0)  # one scale for all: B's 8 rows at the top
            ax.set_aspect("equal")
            ax.xaxis.tick_top()
            for side in ax.spines.values():
                side.set_visible(False)
            ax.set_xticks(np.arange(cols) + 0.5, [str(c) for c in range(cols)], fontsize=8)
            ax.set_yticks(np.arange(rows) + 0.5, [str(r) for r in range(rows)], fontsize=8)
            ax.tick_params(length=0)
            ax.grid(False)
            ax.set_title(title, fontsize=9)
        fig.suptitle(f"The lane of the warp that holds each element\n(colour: its quad g = lane / 4; "
                     f"outlined: lane {lane})", fontsize=9.5)
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


def swizzle_offset(row: int, k: int) -> int:
    """wgmma.cuh's ``tf32_swizzle``: the float offset of (row, k) in a K-major tile of 32 floats
    (128 bytes) per row, in the 128-byte swizzle -- 16-byte piece k / 4 of row r stored at piece
    (k / 4) ^ (r % 8)."""
    return row * 32 + ((k // 4) ^ (row % 8)) * 4 + k % 4


def swizzle_layout(rows: int = 8) -> dict:
    """Where each 16-byte piece of the first ``rows`` rows lands, plain (piece j at slot j) and
    swizzled; and the 4-byte banks that one k-step's read (the pieces of k = 0 ... 3 of every
    row, as the tensor core takes them) touches in each."""
    plain = np.array([[j for j in range(8)] for _ in range(rows)])
    swizzled = np.array([[swizzle_offset(r, 4 * j) % 32 // 4 for j in range(8)] for r in range(rows)])
    banks = {name: {(r * 32 + 4 * int(np.flatnonzero(m[r] == 0)[0]) + i) % 32
                    for r in range(rows) for i in range(4)} if name == "plain"
             else {swizzle_offset(r, i) % 32 for r in range(rows) for i in range(4)}
             for name, m in (("plain", plain), ("swizzled", swizzled))}
    return {"plain": plain, "swizzled": swizzled, "banks": banks}


def swizzle_picture(rows: int = 8):
    """Chapter 10's picture of the 128-byte swizzle: 8 rows of a wgmma operand tile, 128 bytes
    each in 8 slots of 16 bytes (4 banks); the number in a slot is the piece of k it holds
    (piece j: k = 4j ... 4j + 3). Plain, the pieces of one k-step are one column of slots, all
    in the same 4 banks; swizzled, they fall in 8 different slots and cover all 32 banks."""
    lay = swizzle_layout(rows)
    cmap = plt.get_cmap("tab10")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(STYLE["figure.figsize"][0], 3.6))
        for ax, name in zip(axes, ("plain", "swizzled")):
            m = lay[name]
            for (r, slot), _ in np.ndenumerate(m):
                piece = int(np.flatnonzero(m[r] == slot)[0])  # the piece stored at this slot
                ax.add_patch(Rectangle((slot, r), 1, 1, fc=cmap(piece), alpha=0.9 if piece == 0 else 0.25,
                                       ec="white", lw=1))
                ax.text(slot + 0.5, r + 0.5, str(piece), ha="center", va="center", fontsize=8,
                        color="w" if piece == 0 else "k")
            ax.set_xlim(0, 8)
            ax.set_ylim(rows, 0)
            ax.set_aspect("equal")
            ax.set_xticks(np.arange(8) + 0.5, [str(4 * s) for s in range(8)], fontsize=8)
            ax.set_yticks(np.arange(rows) + 0.5, [str(r) for r in range(rows)], fontsize=8)
            ax.set_xlabel("first bank of the 16-byte slot\n(it spans 4)", fontsize=8.5)
            ax.set_ylabel("row of the tile", fontsize=8.5)
            ax.grid(False)
            what = "row-major, no swizzle" if name == "plain" else "128-byte swizzle:\nslot = piece ^ (row % 8)"
            ax.set_title(f"{what}\npiece 0 of {rows} rows (dark) in {len(lay['banks'][name])} of 32 banks",
                         fontsize=9)
        fig.suptitle("Where each 16-byte piece j of a row (k = 4j ... 4j + 3) is stored", fontsize=9.5)
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


def peaks(iters: int | None = None) -> "pd.DataFrame":
    """The TF32 ceiling of each tensor-core instruction this GPU runs, in TFLOP/s: mma.sync
    (10_tf32.cu's mma_peak) and, on Hopper, wgmma (10_wgmma.cu's wgmma_peak), each on operands
    that never leave the SM; and what 3xTF32 could reach at best on each (a third of it)."""
    import pandas as pd

    from .harness.device import device_report
    from .harness.measure import time_launch
    gpu = BACKEND == "gpu"
    sms = device_report()["sms"] if gpu else 2
    iters = iters or (2048 if gpu else 2)
    out = xp.zeros(sms * 4 * 256, dtype=xp.float32)
    rows = []
    kinds = []
    if device_cc() >= (8, 0):
        kinds.append(("mma.sync m16n8k8", "10_tf32.cu", "mma_peak", (), sms * 4, 0,
                      16 * 8 * 8 * 16 * 8))  # per block: 8 warps x 16 chains of 16x8x8 per iteration
    if device_cc() == (9, 0):
        kinds.append(("wgmma m64n128k8", "10_wgmma.cu", "wgmma_peak", OPTIONS, sms, 2 * 65536 + 1024,
                      2 * 12 * 64 * 128 * 8))  # per block: 2 warpgroups x 12 wgmmas per iteration
    for name, source, entry, options, blocks, smem, macs in kinds:
        kernel = load_kernel(source, entry, options=options)
        if smem > kernel.max_dynamic_shared_size_bytes:
            kernel.max_dynamic_shared_size_bytes = smem
        t = time_launch(lambda: kernel(blocks, 256, (out, np.int32(iters)), shared_mem=smem))
        tflops = 2.0 * macs * iters * blocks / (t["time_ms"] * 1e9)
        rows.append({"instruction": name, "tflops": tflops, "tf32x3_ceiling_tflops": tflops / 3})
    df = pd.DataFrame(rows, columns=["instruction", "tflops", "tf32x3_ceiling_tflops"])
    df["device"] = device_report()["name"]
    df["date"] = pd.Timestamp.today().date().isoformat()
    return df


DEFAULT_MATH, TF32_MATH = 0, 3  # cublasMath_t: CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH


class CublasTF32:
    """cuBLAS with TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH) as a pseudo-kernel for
    :func:`book.harness.measure.sweep`: the speed TF32 can reach, at TF32's accuracy."""

    id, label, chapter, tolerance = "cublas_tf32", "cuBLAS TF32 (tensor cores)", 0, TF32_TOLERANCE

    @staticmethod
    def why_not_here() -> str | None:
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


def measure(sizes, rounds: int = 3) -> "pd.DataFrame":
    """Chapter 10's kernels and cuBLAS TF32, checked then timed beside cuBLAS SGEMM at each n
    (M = N = K) in ``rounds`` rounds (every kernel in turn in each): the median GFLOP/s, the
    largest error, 'ok' only if every round passed its check, and GFLOP/s and % of SGEMM's."""
    import pandas as pd

    from .harness.measure import sweep
    import contextlib
    import io
    specs = usable(chapter_kernels(10) + [CublasTF32()], quiet=True)
    runs = []
    for r in range(rounds):  # a failed check is printed once, in the first round
        with contextlib.redirect_stdout(io.StringIO()) if r else contextlib.nullcontext():
            runs.append(sweep(specs, sizes, seed=0).assign(round=r))
    runs = pd.concat(runs)
    ok = runs.status == "ok"
    df = runs.groupby(["M", "N", "K", "kernel"], sort=False).agg(
        label=("label", "first"), chapter=("chapter", "first"), gflops=("gflops", "median"),
        rel_error=("rel_error", "max"), device=("device", "first"), date=("date", "first")).reset_index()
    status = runs.assign(ok=ok).groupby(["M", "N", "K", "kernel"], sort=False).apply(
        lambda g: "ok" if g.ok.all() else g.status[~g.ok].iloc[0], include_groups=False)
    df["status"] = status.to_numpy()
    df.loc[df.status != "ok", "gflops"] = float("nan")  # a failed check is never timed
    base = df[df.kernel == "cublas"].set_index(["M", "N", "K"]).gflops
    df["pct_of_cublas"] = 100 * df.gflops / base.reindex(
        pd.MultiIndex.from_frame(df[["M", "N", "K"]])).to_numpy()
    return df


def size_table(df: "pd.DataFrame") -> "pd.DataFrame":
    """:func:`measure`'s rows as one row per kernel: % of cuBLAS SGEMM at each n, the largest
    error at the largest n, and the check ('ok', or the sizes where it failed), for
    :func:`~book.harness.tables.readable`."""
    import pandas as pd
    big = df.M.max()
    pct = df.pivot_table(index="kernel", columns="M", values="pct_of_cublas", sort=False, dropna=False)
    pct.columns = [f"% of SGEMM, n = {n}" for n in pct.columns]
    at = df[df.M == big].set_index("kernel")
    failed = df[df.status != "ok"].groupby("kernel", sort=False).M.agg(
        lambda m: "FAILED at n = " + ", ".join(str(v) for v in sorted(m)))
    table = pct.assign(**{f"error, n = {big}": at.rel_error.reindex(pct.index),
                          "check": failed.reindex(pct.index).fillna("ok")})
    labels = dict(zip(df.kernel, df.label))
    return table.set_axis([labels[k] for k in table.index]).rename_axis("kernel")


def error_vs_k(Ks, n: int, kinds=("positive", "mixed")):
    """Chapter 7's error-against-K measurement (``book.models.accuracy.error_vs_k``: n x n x K,
    fresh inputs per K, the floor of float32 and cuBLAS SGEMM included) for chapter 7's plain and
    Kahan loops, cuBLAS TF32 and chapter 10's kernels."""
    from .models.accuracy import error_vs_k as measure_errors
    specs = [KERNELS["naive16"], KERNELS["kahan_naive16"], CublasTF32()] + chapter_kernels(10)
    return measure_errors([s for s in specs if not s.why_not_here()], Ks, n, n, kinds=kinds,
                          fmad=(True,))


MAGNITUDES_FILE, TF32X3_SUITE_FILE, PARTS_FILE = "10_magnitudes", "10_tf32x3_suite", "10_tf32x3_parts"
MAGNITUDES_CMD, SUITE_CMD, PARTS_CMD = ("python -m book.tensor_cores --magnitudes",
                                        "python -m book.tensor_cores --suite",
                                        "python -m book.tensor_cores --parts")
"""The commands that record them, on a GPU with wgmma."""
HELDOUT_FILE, HELDOUT_CMD = "10_tf32x3_heldout", "python -m book.tensor_cores --heldout"
HELDOUT_SEED, HELDOUT_COUNT, HELDOUT_LOW = 20261128, 24, 128
"""precision='tf32x3' on shapes it was never tuned or judged on: 24 drawn as chapter 9's
held-out sets are (``gemm.heldout_shapes``), M, N and K each log-uniform from 128 (not 1: below
that a tensor core's tile is mostly padding) to 16384, from a seed of their own, fixed before
their first run."""
MAGNITUDE_FAMILIES = {
    "A and B x s": (1e-18, 1e-12, 1e-6, 1.0, 1e6, 1e12, 1e18),
    "A x s, B / s": (1e-30, 1e-20, 1e-10, 1e10, 1e20, 1e30),
    "rows of A, columns of B x 2^-60..2^60": (1.0,),
}
"""Chapter 10's input families: uniform [-1, 1) scaled as named, s the magnitude (C stays
inside float32's range in every one); the last scales each row of A and column of B by its own
power of two."""


def magnitude_inputs(family: str, s: float, M: int, N: int, K: int, seed: int = 0):
    """Host A and B of one family of :data:`MAGNITUDE_FAMILIES` at magnitude ``s``."""
    a, b = random_inputs(M, N, K, seed=seed)
    if family == "A and B x s":
        return (a * np.float32(s)).astype(np.float32), (b * np.float32(s)).astype(np.float32)
    if family == "A x s, B / s":
        return (a * np.float32(s)).astype(np.float32), (b / np.float32(s)).astype(np.float32)
    rng = np.random.default_rng(seed + 1)
    return ((a * np.exp2(rng.integers(-60, 61, (M, 1)))).astype(np.float32),
            (b * np.exp2(rng.integers(-60, 61, (1, N)))).astype(np.float32))


def magnitudes(M: int = 2048, N: int = 2048, K: int = 4096) -> "pd.DataFrame":
    """The relative error (against float64) of book.sgemm(precision='tf32x3'), chapter 10's
    3xTF32 kernel without the scaling, FFMA book.sgemm and cuBLAS SGEMM (``cublas``) on every
    family and magnitude of :data:`MAGNITUDE_FAMILIES`, one row each."""
    import pandas as pd

    from . import gemm
    from .harness.check import relative_error, run_matmul
    from .registry import KERNELS
    runs = {"tf32x3": lambda a, b: gemm.sgemm(a, b, precision="tf32x3"),
            "tf32x3_unscaled": lambda a, b: to_device(run_matmul(KERNELS["tf32x3_wgmma"], to_host(a), to_host(b))),
            gemm.BookSgemm.id: lambda a, b: gemm.sgemm(a, b),
            "cublas": lambda a, b: xp.matmul(a, b)}
    rows = []
    for family, scales in MAGNITUDE_FAMILIES.items():
        for s in scales:
            a, b = magnitude_inputs(family, s, M, N, K)
            ref = a.astype(np.float64) @ b.astype(np.float64)
            A, B = to_device(a), to_device(b)
            for kernel, run in runs.items():
                rows.append({"family": family, "scale": s, "M": M, "N": N, "K": K,
                             "kernel": kernel, "rel_error": relative_error(to_host(run(A, B)), ref)})
    return pd.DataFrame(rows)


class Tf32x3Sgemm:
    """``book.sgemm(precision='tf32x3')`` as a pseudo-kernel for ``sweep``."""

    id, label, chapter = "tf32x3_sgemm", "book.sgemm, precision='tf32x3'", 10

    @staticmethod
    def why_not_here():
        return KERNELS["tf32x3_wgmma"].why_not_here()

    @staticmethod
    def launch(A, B, C, M, N, K) -> None:
        from .gemm import sgemm
        sgemm(A, B, out=C, precision="tf32x3")


def tf32x3_suite(shapes=None, rounds: int = 3) -> "pd.DataFrame":
    """book.sgemm in 'tf32x3' and 'fp32' beside cuBLAS SGEMM on chapter 9's suite, checked then
    timed in ``rounds`` interleaved rounds (medians; % of cuBLAS SGEMM)."""
    from . import gemm
    shapes = shapes or (gemm.SUITE if BACKEND == "gpu" else gemm.CPU_SUITE[:2])
    return gemm.suite(shapes, rounds, specs=(Tf32x3Sgemm, gemm.BookSgemm))


def tf32x3_heldout(rounds: int = 3) -> "pd.DataFrame":
    """:func:`tf32x3_suite` on the held-out shapes (:data:`HELDOUT_SEED`; on the CPU emulator,
    two small shapes of the same kinds instead)."""
    from . import gemm
    shapes = gemm.heldout_shapes(HELDOUT_COUNT, HELDOUT_SEED, low=HELDOUT_LOW)
    if BACKEND != "gpu":  # (the emulator: two small shapes of the same kinds)
        shapes = [(133, 149, 37), (29, 161, 70)]
    return tf32x3_suite(shapes, rounds)


def heldout_summary(runs: dict) -> "pd.DataFrame":
    """:func:`tf32x3_heldout` of every GPU recorded, a row each (named by the word after
    "NVIDIA"): 'tf32x3' as a multiple of cuBLAS SGEMM -- geometric mean, lowest, highest --, how
    many shapes reach SGEMM's speed, and the geometric mean over the shapes with M, N and K all
    at least 1024 (where tensor cores can pay)."""
    import pandas as pd

    from .gemm import geomean_pct
    rows = {}
    for d, df in runs.items():
        x = df[df.kernel == Tf32x3Sgemm.id]
        big = x[(x.M >= 1024) & (x.N >= 1024) & (x.K >= 1024)]
        rows[d.replace("NVIDIA ", "").split()[0]] = {
            "shapes": len(x), "geometric mean (x SGEMM)": geomean_pct(x.pct_of_cublas) / 100,
            "lowest": x.pct_of_cublas.min() / 100, "highest": x.pct_of_cublas.max() / 100,
            "at or above SGEMM": int((x.pct_of_cublas >= 100).sum()),
            "M, N, K ≥ 1024": len(big),
            "their geometric mean": geomean_pct(big.pct_of_cublas) / 100 if len(big) else float("nan"),
            "checks": "ok" if (df.status == "ok").all() else "FAILED"}
    table = pd.DataFrame(rows).T.infer_objects()
    return table.round({c: 2 for c in ("geometric mean (x SGEMM)", "lowest", "highest",
                                        "their geometric mean")})


PARTS_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (1024, 1024, 16384),
                (1024, 1024, 1024)]
PRODUCTS = {"": (), "_producer": (("PRODUCER", 1), ("PINGPONG", 0)),
            "_pingpong": (("PRODUCER", 1), ("PINGPONG", 1)),
            "_areg": (("AREG", 1),)}
"""The product kernels :func:`tf32x3_parts` compares, by suffix: step 3's
(matmul_tf32x3_wgmma); step 4's matmul_tf32x3_ws with a producer warpgroup, without and with
two partial sums taking turns; step 5's matmul_tf32x3_areg, A split in registers (10_wgmma.cu)
-- as defines added to ``gemm.TF32X3_DEFINES``."""


def _packed_case(M: int, N: int, K: int):
    """The inputs the parts and power runs time, on a Hopper GPU: A (M x K) and B (K x N)
    uniform in [-1, 1) from seed 0, their float64 product, and ``sgemm(precision='tf32x3')``'s
    launches on them as functions -- ``pack`` and ``rescale`` (each timed alone), and
    ``product(out, defines)``, the product kernel alone (step 5's where ``defines`` has AREG = 1)
    on records and flags packed once here, with the split-K of ``book.sgemm``."""
    from . import gemm
    from .harness.device import device_report
    from .launch import wgmma as W
    rng = cupy.random.default_rng(0)
    A = rng.uniform(-1, 1, (M, K), dtype=cupy.float32)
    B = rng.uniform(-1, 1, (K, N), dtype=cupy.float32)
    ref = A.astype(cupy.float64) @ B.astype(cupy.float64)
    base, splits = gemm.TF32X3_DEFINES, gemm.tf32x3_splits(M, N, K, device_report().get("sms", 132))
    ea, eb, bad = W.flags(M, N)
    a_rec, b_rec = W.records(M, K), W.records(N, K)
    W.pack(A, B, a_rec, b_rec, M, N, K, base, ea, eb, bad)

    def product(out, defines=base):  # (step 5 reads A itself, and the same records of B)
        a = A if dict(defines).get("AREG") else a_rec
        W.product(a, b_rec, out, M, N, K, defines, splits, ea, eb, A, B, bad)

    launches = {"pack": lambda: W.pack(A, B, a_rec, b_rec, M, N, K, base, ea, eb, bad),
                "rescale": lambda: W.rescale(A, B, a_rec, b_rec, M, N, K, base, ea, eb),
                "product": product}
    return A, B, ref, splits, launches


def tf32x3_parts(shapes=None, rounds: int = 3) -> "pd.DataFrame":
    """``sgemm(precision='tf32x3')`` taken apart, on a Hopper GPU: per shape, each launch timed
    alone -- ``pack`` (the split, gathering each row's and column's magnitude), ``rescale``
    (the check for rows and columns to scale: none here), ``product`` (each of
    :data:`PRODUCTS`) -- beside the whole call with each product kernel, cuBLAS SGEMM and cuBLAS
    TF32, interleaved in ``rounds`` rounds (median ms). Every product is checked first: bit for
    bit the same as chapter 10's (``same_bits``), and each whole call against float64
    (``rel_error``). ``x_sgemm``: cuBLAS SGEMM's time over the row's; ``tf32_tflops``: the TF32
    rate of a product kernel (three products a multiply-add) or of cuBLAS TF32; ``host_us``:
    the host's time for one call (``sgemm(precision='tf32x3')``, on the ``sgemm_tf32x3`` row,
    and cuBLAS SGEMM's), the GPU idle before it (cupyx's benchmark, median of 50)."""
    import pandas as pd
    from cupyx.profiler import benchmark

    from . import gemm
    from .harness.measure import relative_error_xp, time_launch
    if KERNELS["tf32x3_wgmma"].why_not_here():
        raise RuntimeError("tf32x3_parts: " + KERNELS["tf32x3_wgmma"].why_not_here())
    rows = []
    for M, N, K in shapes or PARTS_SHAPES:
        A, B, ref, splits, launches = _packed_case(M, N, K)
        C = cupy.full((M, N), cupy.nan, dtype=cupy.float32)
        work = cupy.empty((M, N), dtype=cupy.float32)
        base = gemm.TF32X3_DEFINES

        def product(defines):
            return lambda: launches["product"](work, defines)

        def whole(defines):  # book.sgemm(precision='tf32x3')'s call, with this product kernel
            return lambda: gemm._tf32x3(A, B, C, 1.0, 0.0, defines)

        calls = {"pack": launches["pack"], "rescale": launches["rescale"],
                 **{"product" + v: product(base + d) for v, d in PRODUCTS.items()},
                 **{"sgemm_tf32x3" + v: whole(base + d) for v, d in PRODUCTS.items()},
                 "cublas": lambda: cupy.matmul(A, B, out=C),
                 "cublas_tf32": lambda: CublasTF32.launch(A, B, C, M, N, K)}
        outs = {}
        for v in PRODUCTS:
            work.fill(cupy.nan)
            calls["product" + v]()
            outs[v] = work.copy()
        same = {v: bool(cupy.array_equal(outs[""], o, equal_nan=True)) for v, o in outs.items()}
        errors = {}
        for name in [n for n in calls if n.startswith("sgemm")] + ["cublas", "cublas_tf32"]:
            C.fill(cupy.nan)
            calls[name]()
            errors[name] = relative_error_xp(C, ref)
        times = {name: [] for name in calls}
        for _ in range(rounds):
            for name, fn in calls.items():
                times[name].append(time_launch(fn, target_s=0.3)["time_ms"])
        med = {name: float(np.median(t)) for name, t in times.items()}
        host = {name: 1e6 * float(np.median(benchmark(fn, n_repeat=50, n_warmup=5).cpu_times))
                for name, fn in (("sgemm_tf32x3", lambda: gemm.sgemm(A, B, out=C, precision="tf32x3")),
                                 ("cublas", calls["cublas"]))}
        flops = 2.0 * M * N * K
        for name, ms in med.items():
            rows.append({"M": M, "N": N, "K": K, "splits": splits, "part": name, "ms": ms,
                         "x_sgemm": med["cublas"] / ms if name.startswith(("sgemm", "cublas")) else np.nan,
                         "tf32_tflops": (3 if name.startswith("product") else 1) * flops / ms / 1e9
                         if name.startswith("product") or name == "cublas_tf32" else np.nan,
                         "same_bits": same.get(name.removeprefix("product").removeprefix("sgemm_tf32x3"), np.nan)
                         if name.startswith(("product", "sgemm")) else np.nan,
                         "rel_error": errors.get(name, np.nan), "host_us": host.get(name, np.nan)})
        del A, B, ref, C, work, launches, calls
        cupy.get_default_memory_pool().free_all_blocks()
    return pd.DataFrame(rows)


POWER_FILE, POWER_CMD = "10_tf32x3_power", "python -m book.tensor_cores --power"
POWER_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]


def tf32x3_power(shapes=None, rounds: int = 2, seconds: float = 3.0) -> "pd.DataFrame":
    """The clock each GEMM runs at, on a Hopper GPU: per shape, cuBLAS SGEMM, cuBLAS TF32,
    step 3's product alone (on records packed once) and the whole ``sgemm(precision='tf32x3')``
    call, each called in a loop for ``seconds`` while nvidia-smi samples the SM clock, the
    board's power and why the clock is below its maximum (``harness.device.clocks_while``),
    interleaved in ``rounds`` rounds. Every one is checked first against float64
    (``rel_error``). ``ms``: the loop's mean time of one call; ``max_mhz``: the GPU's maximum
    SM clock."""
    import pandas as pd

    from . import gemm
    from .harness.device import clocks_while, device_report
    from .harness.measure import relative_error_xp
    if KERNELS["tf32x3_wgmma"].why_not_here():
        raise RuntimeError("tf32x3_power: " + KERNELS["tf32x3_wgmma"].why_not_here())
    rows, top = [], device_report().get("max_sm_clock_mhz", float("nan"))
    for M, N, K in shapes or POWER_SHAPES:
        A, B, ref, _, launches = _packed_case(M, N, K)
        C = cupy.full((M, N), cupy.nan, dtype=cupy.float32)
        calls = {"cublas": lambda: cupy.matmul(A, B, out=C),
                 "cublas_tf32": lambda: CublasTF32.launch(A, B, C, M, N, K),
                 "product": lambda: launches["product"](C),
                 "sgemm_tf32x3": lambda: gemm._tf32x3(A, B, C, 1.0, 0.0, gemm.TF32X3_DEFINES)}
        errors = {}
        for name, fn in calls.items():
            C.fill(cupy.nan)
            fn()
            errors[name] = relative_error_xp(C, ref)
        for r in range(rounds):
            for name, fn in calls.items():
                rows.append({"M": M, "N": N, "K": K, "kernel": name, "round": r,
                             **clocks_while(fn, seconds), "max_mhz": top, "rel_error": errors[name]})
        del A, B, ref, C, launches, calls
        cupy.get_default_memory_pool().free_all_blocks()
    return pd.DataFrame(rows)


def power_table(runs: dict) -> "pd.DataFrame":
    """:func:`tf32x3_power` of every GPU recorded, one row per GPU (short name), shape and
    kernel, medians over its rounds: ms a call (the mean over each loop), the multiple of cuBLAS
    SGEMM's speed over the loop and over its first 50 ms (for the product alone too, as if it
    were the whole GEMM), the SM clock (MHz),
    the board's power (W) and every reason nvidia-smi gave, in any
    sample, for a clock below the maximum (the power limit is in the files: 700 W on both GPUs
    recorded)."""
    import pandas as pd
    names = {"cublas": "cuBLAS SGEMM", "cublas_tf32": "cuBLAS TF32",
             "product": "3xTF32 product alone", "sgemm_tf32x3": "3xTF32 call"}
    rows = []
    for d, df in runs.items():
        for (M, N, K), g in df.groupby(["M", "N", "K"], sort=False):
            med = g.groupby("kernel", sort=False)[["ms", "ms_first", "sm_mhz", "power_w"]].median()
            why = g.groupby("kernel", sort=False).limited_by.agg(lambda s: "+".join(sorted(set(
                w for v in s for w in v.split("+") if w != "none"))) or "none")
            for k, m in med.iterrows():
                rows.append({"GPU": d.replace("NVIDIA ", "").split()[0],
                             "shape": f"{M}³" if M == N == K else f"{M}\u00a0×\u00a0{N}\u00a0×\u00a0{K}",
                             "kernel": names.get(k, k), "ms, loop": m.ms,
                             "x SGEMM, loop": med.ms["cublas"] / m.ms,
                             "x SGEMM, first 50 ms": med.ms_first["cublas"] / m.ms_first,
                             "SM clock (MHz)": m.sm_mhz, "power (W)": m.power_w,
                             "reasons": why[k]})  # (the limit: 700 W here)
    table = pd.DataFrame(rows).set_index(["GPU", "shape", "kernel"]).round(
        {"ms, loop": 3, "x SGEMM, loop": 2, "x SGEMM, first 50 ms": 2})
    whole = ["SM clock (MHz)", "power (W)"]  # (every sample has them)
    table[whole] = table[whole].round().astype(int)
    return table


def power_summary(runs: dict, suite: dict | None = None) -> dict:
    """:func:`power_table` for the text, as ranges over the GPUs and shapes recorded
    (``_min``, ``_max``): the SM clock of cuBLAS SGEMM, the 3xTF32 product, cuBLAS TF32 and the
    3xTF32 call (``power_<sgemm|product|tf32|call>_mhz``), as % of the maximum (``_pct``) and
    the board's power (``_w``); the GPUs' maximum clock (``power_max_mhz``); in the loop, the
    call's and the product's multiple of SGEMM (``power_call_x``, ``power_product_x``), the
    bound of three cuBLAS TF32 GEMMs (``power_bound_x``), and each GPU's range of the product's
    clock as words (``power_product_mhz_<gpu>``, e.g. ``_h100``); how much faster the call
    would have to be to reach 2.5 times SGEMM (``power_faster_pct``). With ``suite``
    (:func:`tf32x3_suite` runs of the same GPUs): the suite's multiple at the same shapes
    (``power_suite_x``) and at 16384^3 (``power_suite_x_16384``), where one call lasts about
    80 ms."""
    import pandas as pd
    t = power_table(runs).reset_index()
    top = {d.replace("NVIDIA ", "").split()[0]: df.max_mhz.max() for d, df in runs.items()}
    t["% of max clock"] = 100 * t["SM clock (MHz)"] / t.GPU.map(top)
    out = {}
    calls = t[t.kernel == "3xTF32 call"]
    out["power_call_x_min"], out["power_call_x_max"] = calls["x SGEMM, loop"].min(), calls["x SGEMM, loop"].max()
    out["power_faster_pct_min"], out["power_faster_pct_max"] = (100 * (2.5 / x - 1) for x in (
        out["power_call_x_max"], out["power_call_x_min"]))  # how much faster 2.5x SGEMM asks
    alone = t[t.kernel == "3xTF32 product alone"]
    out["power_product_x_min"], out["power_product_x_max"] = alone["x SGEMM, loop"].min(), alone["x SGEMM, loop"].max()
    for name, at in (("call", calls), ("product", alone)):  # over the loop's first 50 ms
        first = at["x SGEMM, first 50 ms"]
        out[f"power_{name}_x_first_min"], out[f"power_{name}_x_first_max"] = first.min(), first.max()
    for gpu, g in alone.groupby("GPU"):  # the product's clock on each GPU, as the text's words
        lo, hi = g["SM clock (MHz)"].min(), g["SM clock (MHz)"].max()
        out[f"power_product_mhz_{gpu.lower()}"] = f"{lo}" if lo == hi else f"{lo} to {hi}"
    bound = [g.set_index("kernel")["x SGEMM, loop"]["cuBLAS TF32"] / 3  # (three of its GEMMs)
             for _, g in t.groupby(["GPU", "shape"])]
    out["power_bound_x_min"], out["power_bound_x_max"] = min(bound), max(bound)
    if suite:
        shapes = {(int(s.rstrip("³")),) * 3 for s in t["shape"] if s.endswith("³")}
        at = pd.concat(df.assign(x=df.pct_of_cublas / 100)[df.kernel == Tf32x3Sgemm.id]
                       for df in suite.values())
        loop = at[[(m, n, k) in shapes for m, n, k in zip(at.M, at.N, at.K)]].x
        big = at[(at.M == 16384) & (at.N == 16384) & (at.K == 16384)].x
        out["power_suite_x_min"], out["power_suite_x_max"] = loop.min(), loop.max()
        out["power_suite_x_16384_min"], out["power_suite_x_16384_max"] = big.min(), big.max()
    for k, name in (("cuBLAS SGEMM", "sgemm"), ("3xTF32 product alone", "product"), ("cuBLAS TF32", "tf32"),
                    ("3xTF32 call", "call")):
        at = t[t.kernel == k]
        for col, short in (("SM clock (MHz)", "mhz"), ("% of max clock", "pct"), ("power (W)", "w")):
            out[f"power_{name}_{short}_min"], out[f"power_{name}_{short}_max"] = at[col].min(), at[col].max()
    out["power_max_mhz"] = float(max(top.values()))
    return out


def parts_table(runs: dict) -> "pd.DataFrame":
    """:func:`tf32x3_parts` of every GPU recorded, one row per GPU (short name) and shape: the ms
    of each launch (scaling: ``rescale``, or in runs before it the whole scaling pass
    ``exponents``; split: ``pack``; the product) and of the whole call;
    the call and the bound that cuBLAS's own TF32 GEMM sets -- three of its GEMMs (the three
    products) with no split at all -- as multiples of cuBLAS SGEMM's speed; the product kernel's
    rate as % of cuBLAS TF32's; step 4's product kernel, without and with ping-pong, and step
    5's, as % of the time of step 3's (above 100: slower); and the call with step 5's kernel."""
    import pandas as pd
    rows = []
    for d, df in runs.items():
        for (M, N, K), g in df.groupby(["M", "N", "K"], sort=False):
            ms = g.set_index("part").ms
            shape = f"{M}³" if M == N == K else "\u00a0×\u00a0".join(map(str, (M, N, K)))  # (no wrap)
            rows.append({"GPU": d.replace("NVIDIA ", "").split()[0], "shape": shape,
                         "scaling": ms["rescale"] if "rescale" in ms else ms["exponents"],
                         "split": ms["pack"], "product": ms["product"],
                         "call": ms["sgemm_tf32x3"], "call, x SGEMM": ms["cublas"] / ms["sgemm_tf32x3"],
                         "bound, x SGEMM": ms["cublas"] / (3 * ms["cublas_tf32"]),
                         "product, % of cuBLAS TF32": 100 * 3 * ms["cublas_tf32"] / ms["product"],
                         "step 4, % of product": 100 * ms["product_producer"] / ms["product"],
                         "ping-pong, % of product": 100 * ms["product_pingpong"] / ms["product"],
                         "step 5, % of product": 100 * ms.get("product_areg", np.nan) / ms["product"],
                         "call with step 5, x SGEMM": ms["cublas"] / ms.get("sgemm_tf32x3_areg", np.nan)})
    return pd.DataFrame(rows).set_index(["GPU", "shape"])


def parts_summary(runs: dict) -> dict:
    """:func:`parts_table` for the text, as ranges over the GPUs recorded (``_min``, ``_max``):
    at n = 4096 and 8192 (n^3), the call's and the bound's multiple of SGEMM
    (``parts_call_x_<n>``, ``parts_bound_x_<n>``), the product's % of cuBLAS TF32's rate
    (``parts_product_pct_<n>``, and as the text's words without ``_min`` or ``_max``) and the
    share of the call spent outside the product (``parts_outside_pct_<n>``, and as the text's
    words, ``parts_outside_<n>``); over every
    shape, step 4's and step 5's kernels' time as % of the product's (``parts_producer``,
    ``parts_pingpong``, ``parts_areg``)."""
    t = parts_table(runs).reset_index()
    t["outside"] = 100 * (1 - t["product"] / t["call"])  # (split-K's sum and the fix included)
    out = {}
    for n in (4096, 8192):
        at = t[t["shape"] == f"{n}³"]
        for col, name in (("call, x SGEMM", "call_x"), ("bound, x SGEMM", "bound_x"),
                          ("product, % of cuBLAS TF32", "product_pct"), ("outside", "outside_pct")):
            out[f"parts_{name}_{n}_min"], out[f"parts_{name}_{n}_max"] = at[col].min(), at[col].max()
        for col, name in (("outside", "outside"), ("product, % of cuBLAS TF32", "product_pct")):
            lo, hi = (f"{v:.0f}" for v in (at[col].min(), at[col].max()))
            out[f"parts_{name}_{n}"] = lo if lo == hi else f"{lo} to {hi}"  # ("8", not "8 to 8")
    for col, name in (("step 4, % of product", "producer"), ("ping-pong, % of product", "pingpong"),
                      ("step 5, % of product", "areg")):
        out[f"parts_{name}_min"], out[f"parts_{name}_max"] = t[col].min(), t[col].max()
    return out


MAGNITUDE_STYLES = {"tf32x3": ("3xTF32, scaled", FAMILIES[10][1], "-", "o"),
                    "tf32x3_unscaled": ("3xTF32, unscaled", FAMILIES[10][1], ":", "s"),
                    "book_sgemm": ("FFMA book.sgemm", FAMILIES[9][1], "-", "^"),
                    "cublas": ("cuBLAS SGEMM", "#000000", "--", "x")}
""":func:`magnitudes`' kernels: (label, colour, line style, marker) for its figure."""


def magnitude_table(runs: dict) -> "pd.DataFrame":
    """:func:`magnitudes` of every GPU recorded: one row per GPU (by its short name, H100),
    family and magnitude, one column per kernel (relative error against float64; 3xTF32 scaled
    as book.sgemm runs it, and unscaled)."""
    import pandas as pd
    names = {"tf32x3": "3xTF32", "tf32x3_unscaled": "3xTF32 unscaled", "book_sgemm": "FFMA",
             "cublas": "cuBLAS"}
    table = pd.concat({d.replace("NVIDIA ", "").split()[0]: df.pivot_table(
        index=["family", "scale"], columns="kernel", values="rel_error", sort=False)[list(names)]
        for d, df in runs.items()}, names=["GPU"])
    return table.rename(columns=names).rename(index=lambda s: f"{s:.0e}", level="scale")


def magnitude_plot(df: "pd.DataFrame"):
    """One GPU's :func:`magnitudes`: relative error against the inputs' magnitude s, for the two
    scaled families (one panel each, one above the other), one line per kernel."""
    from .harness.plots import legend_below
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 1, figsize=(STYLE["figure.figsize"][0], 6.6))
        for ax, family in zip(axes, list(MAGNITUDE_FAMILIES)[:2]):
            part = df[df.family == family]
            for kernel, (label, color, ls, marker) in MAGNITUDE_STYLES.items():
                k = part[part.kernel == kernel]
                ax.plot(k.scale, k.rel_error, ls=ls, marker=marker, color=color, label=label)
            ax.set_xscale("log"), ax.set_yscale("log")
            ax.set_xlabel(f"s ({family})")
            ax.set_ylabel("relative error\nagainst float64")
            ax.set_title(family, fontsize=10)
        fig.suptitle(f"{df.M.iloc[0]} x {df.N.iloc[0]} x {df.K.iloc[0]}, {df.device.iloc[0]}", fontsize=10)
        fig.tight_layout()
        legend_below(fig, axes[0], ncol=2)
        plt.close(fig)
    return check_readable(fig)


def tf32x3_suite_table(runs: dict) -> "pd.DataFrame":
    """:func:`tf32x3_suite` of every GPU recorded: per shape, book.sgemm's 'tf32x3' and 'fp32'
    as % of cuBLAS SGEMM, one pair of columns per GPU; the check's result ('ok' where all were)."""
    import pandas as pd
    cols = {}
    for d, df in runs.items():
        p = df.pivot_table(index=["M", "N", "K"], columns="kernel", values="pct_of_cublas", sort=False)
        cols[(d, "tf32x3 (% of SGEMM)")] = p["tf32x3_sgemm"]
        cols[(d, "fp32 (% of SGEMM)")] = p["book_sgemm"]
        cols[(d, "checks")] = df.groupby(["M", "N", "K"], sort=False).status.agg(
            lambda s: "ok" if (s == "ok").all() else "FAILED")
    return pd.DataFrame(cols)


def magnitude_summary(runs: dict) -> dict:
    """:func:`magnitudes` of every GPU recorded, for the text: the smallest and largest error
    of each kernel over all families, magnitudes and GPUs (``mag_<kernel>_min`` / ``_max``)."""
    import pandas as pd
    err = pd.concat(runs.values()).groupby("kernel").rel_error.agg(["min", "max"])
    return {f"mag_{k}_{m}": float(err.loc[k, m]) for k in err.index for m in ("min", "max")}


TF32X3_GOALS = {"4096³": (lambda s: (s.M == 4096) & (s.N == 4096) & (s.K == 4096), 2.5),
                "8192³": (lambda s: (s.M == 8192) & (s.N == 8192) & (s.K == 8192), 2.5),
                "M, N ≥ 2048 and K ≥ 1024, lowest": (
                    lambda s: (s.M >= 2048) & (s.N >= 2048) & (s.K >= 1024), 2.0),
                "1024³": (lambda s: (s.M == 1024) & (s.N == 1024) & (s.K == 1024), 1.5),
                "1024 × 1024 × 16384": (lambda s: (s.M == 1024) & (s.N == 1024) & (s.K == 16384), 1.5)}
"""Issue 27's speed goals for ``precision='tf32x3'`` on chapter 9's suite: (which shapes, the
least multiple of cuBLAS SGEMM's GFLOP/s each must reach)."""


def tf32x3_goal_table(runs: dict) -> "pd.DataFrame":
    """:func:`tf32x3_suite` of every GPU recorded against :data:`TF32X3_GOALS`: per goal and GPU
    the multiple of cuBLAS SGEMM reached (the lowest over the goal's shapes), the goal, and the
    geometric mean over the whole suite."""
    import pandas as pd

    from .gemm import geomean_pct
    rows = {}
    for d, df in runs.items():
        x = df[df.kernel == Tf32x3Sgemm.id].assign(x=lambda t: t.pct_of_cublas / 100)
        col = {name: x[pick(x)].x.min() for name, (pick, _) in TF32X3_GOALS.items()}
        col["whole suite, geometric mean"] = geomean_pct(x.pct_of_cublas) / 100
        rows[d] = col
    table = pd.DataFrame(rows).map(lambda x: f"{x:.2f}")  # 2.00, not 2
    table.insert(0, "goal (x SGEMM)", [f"{g:.1f}" for _, g in TF32X3_GOALS.values()] + ["--"])
    return table


def main(argv: list[str]) -> int:
    import pandas as pd

    from .harness import results
    pd.set_option("display.width", 200)
    if "--magnitudes" in argv:
        print(results.keep(magnitudes(), MAGNITUDES_FILE).to_string())
    if "--suite" in argv:
        print(results.keep(tf32x3_suite(), TF32X3_SUITE_FILE).round(1).to_string())
    if "--heldout" in argv:
        print(results.keep(tf32x3_heldout(), HELDOUT_FILE).round(1).to_string())
    if "--power" in argv:
        print(results.keep(tf32x3_power(), POWER_FILE).to_string(float_format=lambda v: f"{v:.4g}"))
    if "--parts" in argv:
        print(results.keep(tf32x3_parts(), PARTS_FILE).to_string(float_format=lambda v: f"{v:.4g}"))
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
