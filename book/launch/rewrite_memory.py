"""The emulator's rewrites for global memory: casts to pointers of aligned types checked for
alignment (``include/cuda_emu/memory.h``)."""
from __future__ import annotations

import re

_VECTOR_CAST = re.compile(
    r"\breinterpret_cast\s*<\s*((?:(?:const|volatile)\s+)*(float[24]|int[24]|double2)"
    r"(?:\s+(?:const|volatile))*\s*\*)\s*>\s*\(")
"""``reinterpret_cast<float4*>(`` and the like: a cast to a pointer to a vector type."""


def rewrite(text: str) -> str:
    """``text`` with its casts to vector pointers checked; the line count is kept."""
    return _VECTOR_CAST.sub(r'::cuda_emu::vector_cast<\1>("\2", __LINE__, ', text)
