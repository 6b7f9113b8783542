"""Exact rounding for the built-ins' tests (tests/test_builtins.py, tests/test_builtins_16bit.py): an
exact value rounded to a float type in each of CUDA's four modes, and to an integer."""
import math
from fractions import Fraction

import numpy as np

MODES = ["rn", "rz", "rd", "ru"]


def as_int64(v: int) -> int:
    """An integer of up to 64 bits, signed or unsigned, as the int64 with its bits."""
    return int(np.array(v % (1 << 64), np.uint64).view(np.int64))


def round_to(q: Fraction, mode: str, dtype) -> float:
    """The exact value q rounded to dtype: to nearest even (rn), toward zero, down or up."""
    largest = float(np.finfo(dtype).max)
    if abs(q) > largest:  # Inf, or the largest value, by the direction (rn: from the midpoint)
        half_ulp = Fraction(largest - float(np.nextafter(dtype(largest), dtype(0)))) / 2
        beyond = {"rn": abs(q) >= Fraction(largest) + half_ulp, "rz": False,
                  "rd": q < 0, "ru": q > 0}[mode]
        return math.copysign(math.inf if beyond else largest, 1 if q > 0 else -1)
    c = dtype(float(q))  # within an ulp: step to the neighbours down <= q <= up
    while Fraction(float(c)) > q:
        c = np.nextafter(c, dtype(-np.inf))
    while np.isfinite(above := np.nextafter(c, dtype(np.inf))) and Fraction(float(above)) <= q:
        c = above
    down, up = c, (c if Fraction(float(c)) == q else np.nextafter(c, dtype(np.inf)))
    if mode == "rd" or (mode == "rz" and q > 0):
        return float(down)
    if mode == "ru" or (mode == "rz" and q < 0):
        return float(up)
    below, above = q - Fraction(float(down)), Fraction(float(up)) - q
    even = int(np.array(down).view(f"u{np.dtype(dtype).itemsize}")) % 2 == 0
    return float(down if below < above or (below == above and even) else up)


def to_integer(v: float, mode: str, bits: int, signed: bool, nan_pattern: bool) -> int:
    if math.isnan(v):
        return -(1 << (bits - 1)) if nan_pattern and signed else (1 << (bits - 1)) if nan_pattern else 0
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if math.isinf(v):
        return hi if v > 0 else lo
    q = Fraction(v)
    r = {"rn": round(q), "rz": math.trunc(q), "rd": math.floor(q), "ru": math.ceil(q)}[mode]
    return min(max(r, lo), hi)
