"""How A, B and out reach book.sgemm and its plans: each a row-major array, the rows of a wider
one (a leading dimension) or the transpose of either (``_operand``); C-contiguous copies where
the CPU emulator needs whole arrays (``_whole``); out = alpha A B + beta out through a scratch
matrix where the product cannot be written into out as it is (``_into``); and, for a plan
launched by hand on transposed operands, the copies it reads (``stored_operands``,
``logical_operands``).
"""
from __future__ import annotations

from ..launch import streams
from ..launch.runtime import LaunchError, xp


def _into(out, alpha: float, beta: float, product) -> None:
    """out = alpha A B + beta out, where ``product(c)`` writes A B into a C-contiguous c: out
    itself where it is one and alpha, beta are 1, 0; else a scratch matrix, then the sum."""
    direct = out.flags.c_contiguous and (alpha, beta) == (1.0, 0.0)
    c = out if direct else xp.empty(out.shape, dtype=xp.float32)
    product(c)
    if not direct:
        out[...] = alpha * c + beta * out if beta != 0.0 else alpha * c


def _operand(x, name: str) -> tuple:
    """(the array as it lies in memory, row-major; whether that is x's transpose; its leading
    dimension): x itself where its rows lie in memory (C-contiguous or rows of a wider array),
    x.T where its columns do. Refuses layouts the kernels cannot read, naming the strides."""
    if _row_major(x):
        return x, False, _leading_dimension(x)
    if _row_major(x.T):
        return x.T, True, _leading_dimension(x.T)
    rows, cols = x.shape
    raise LaunchError(f"sgemm: {name} has strides {x.strides} (bytes): its floats must be adjacent "
                      f"along each row, rows at least {cols} floats apart, in order (like "
                      f"X[:, :{cols}] of a C-contiguous X), or adjacent along each column, columns "
                      f"at least {rows} floats apart (like its transpose, X.T); else pass "
                      "xp.ascontiguousarray of it")


def _row_major(x) -> bool:
    rows, cols = x.shape
    step, along = x.strides
    return x.flags.c_contiguous or ((along == 4 or cols == 1) and step > 0 and step % 4 == 0
                                    and step // 4 >= cols)


def _leading_dimension(x) -> int:
    """Floats from one row of a row-major x to the next."""
    rows, cols = x.shape
    return cols if x.flags.c_contiguous or rows == 1 else x.strides[0] // 4


def _whole(x, ld: int):
    """x as an array of shape (rows, ld): itself where it is one, else a copy (padding NaN)."""
    if x.flags.c_contiguous and x.shape[1] == ld:
        return x
    whole = xp.full((x.shape[0], ld), xp.nan, dtype=xp.float32)
    whole[:, :x.shape[1]] = x
    return whole


def _launch_in_layout(plan, A, B, C, M: int, N: int, K: int) -> None:
    """``plan.launch`` for a plan of transposed operands: on A and B (C-contiguous) as its
    layout stores them (``stored_operands``)."""
    a, b = stored_operands(A, B, plan.layout)
    plan.run(a, b, C, M, N, K, a.shape[1], b.shape[1], C.shape[1])


def stored_operands(A, B, layout: str):
    """A and B (C-contiguous) as ``layout`` stores them: a transposed operand as the row-major
    array of its transpose (C-contiguous, K x M for A). The copies are kept, per stream and
    thread, for as long as the same arrays are passed (held, so that a new array is never
    mistaken for an old one)."""
    entry, key = streams.here(), (layout, id(A), id(B))
    held = entry.get("stored")
    if held is None or held[0] != key:
        held = entry["stored"] = (key, (A, B), (xp.ascontiguousarray(A.T) if layout[0] == "t" else A,
                                               xp.ascontiguousarray(B.T) if layout[1] == "t" else B))
    return held[2]


def logical_operands(A, B, layout: str):
    """A and B (C-contiguous) as a caller in ``layout`` hands them over: the transpose of the
    stored array (``X.T``, F-contiguous) where the layout says 't' -- what ``sgemm`` and
    cupy.matmul are given when layouts are timed."""
    a, b = stored_operands(A, B, layout)
    return (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)
