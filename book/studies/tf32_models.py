"""Chapter 10's models in NumPy, and its pictures of them: TF32 rounding as the PTX ISA defines
it (:func:`tf32`), the 3xTF32 split and its products with exact sums (:func:`split_product`),
which lane holds each element of an mma.m16n8k8 fragment, and wgmma.cuh's 128-byte swizzle.
The tests check each against the GPU's own (tests/test_tensor_cores.py).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from ..harness.plots import STYLE, check_readable


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
