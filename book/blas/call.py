"""``sgemm(A, B, out=None, alpha=1, beta=0, precision='fp32')``, the call (``book.sgemm``): it
checks its arguments, finds how each array lies in memory (``operands``), takes the plan of the
shape and layout (``choice.plan_for``; a first call on a GPU times the model's best few,
``choice.learn``) and runs it on the arrays as they are; ``precision='tf32x3'`` goes to
``tf32x3``.
"""
from __future__ import annotations

from math import copysign
from os import environ as _environ
from threading import get_ident

from ..launch import replay
from ..launch.runtime import BACKEND, LaunchError, xp
from . import auto
from .arrays import as_backend, returned, stream_of
from .choice import _known, learning, plan_for, settle
from .kernels import FALLBACK, _workspace
from .operands import _into, _operand, _whole
from .plans import Plan, in_layout
from .ozaki import _ozaki, guard_count
from .tf32x3 import _tf32x3, _tf32x3_replay


PRECISIONS = ("fp32", "tf32x3", "ozaki", "auto")
"""``sgemm``'s precisions: 'fp32', float32 FMAs (chapters 8 and 9); 'tf32x3', three TF32
products on Hopper's tensor cores with float32 accuracy (chapter 10; compute capability 9.0);
'ozaki', exact INT8 products of residues, the Ozaki scheme II (chapter 12; compute capability
8.0; wgmma on 9.0); 'auto', whichever of the three is fastest at the shape on this GPU (each
keeps float32's accuracy: ``auto``)."""


def sgemm(A, B, out=None, alpha: float = 1.0, beta: float = 0.0, precision: str = "fp32"):
    """C = alpha A @ B + beta C in float32 with the book's kernels: any M, N, K >= 1; arrays of
    this backend (CuPy on a GPU), PyTorch tensors or any array with ``__cuda_array_interface__``
    or ``__dlpack__`` (read in place; C comes back as the kind of array A is, ``out`` as passed;
    PyTorch's tensors run on PyTorch's current stream: ``arrays``). Each of A, B and ``out`` may
    be C-contiguous, the rows of a wider array
    (``X[:, :n]`` of a C-contiguous X: adjacent floats along a row, rows a leading dimension
    apart, as in BLAS), or the transpose of either (``X.T``, F-contiguous): read as they are,
    without a copy. Writes into ``out`` (M x N) when given and returns C; ``beta`` other than 0
    needs ``out`` (where beta is 0, out is only written: NaN there does not reach C).
    ``precision='tf32x3'``: chapter 10's 3xTF32 kernel on wgmma, each row of A and column of B
    whose largest element lies outside 2^-40 .. 2^40 scaled by a power of two first (any finite
    magnitude keeps float32's accuracy), the rows and columns that hold Inf or NaN recomputed
    with FFMA (their Inf and NaN as cuBLAS SGEMM's), split-K where tiles of C are few
    (``tf32x3_splits``), A split in registers where N <= TF32X3_AREG_MAX_N, and where
    M <= TF32X3_AREG_MAX_N < N the transpose C^T = B^T A^T the same way (B split in
    registers); it reads C-contiguous copies of A and B where they are views.
    ``precision='ozaki'``: ``ozaki.ozaki_sgemm`` with the fewest moduli that keep its error
    below an SGEMM's (``ozaki.OZAKI_MODULI``: 9, with its accuracy guard), K < 2^17.
    Safe on concurrent
    streams and threads: each (stream, thread) keeps its own scratch memory (``launch.streams``;
    ``streams.release()`` frees it), so calls in flight together never share a workspace."""
    if type(A) is xp.ndarray and type(B) is xp.ndarray and (out is None or type(out) is xp.ndarray):
        key = (_key(A, B, out, alpha, beta, precision) if type(alpha) in _SCALARS
               and type(beta) in _SCALARS and type(precision) is str else None)
        hit = replay.TABLE.get(key)  # (a call seen before: its launches again, on these arrays)
        if hit is None:
            return _sgemm(A, B, out, alpha, beta, precision, key)
        if out is None:
            out = xp.empty((A.shape[0], B.shape[1]), dtype=xp.float32)
        hit(A, B, out, key[-3])
        return out
    with stream_of(A, B, out):
        result = _sgemm(as_backend(A, "A"), as_backend(B, "B"),
                        None if out is None else as_backend(out, "out"), alpha, beta, precision)
    return returned(result, A, out)


_SCALARS = (int, float)


def _key(A, B, out, alpha, beta, precision) -> tuple:
    """What a call's launches depend on besides its operands' addresses: their shapes, strides,
    types and addresses mod 16 (the builds for rows that start off 16 bytes), alpha and beta
    with their signs (-0.0 == 0.0, but a launch given -0.0 writes -0.0 where 0.0 writes 0.0),
    the precision, the switches that change a plan (BOOK_ASSUME_CC, BOOK_SGEMM_LEARN), and the
    (stream, device, thread) whose scratch memory they use."""
    env = (_environ.get("BOOK_ASSUME_CC"), _environ.get("BOOK_SGEMM_LEARN"))
    if BACKEND == "gpu":
        return (A.shape, A.strides, A.dtype, A.data.ptr & 15, B.shape, B.strides, B.dtype,
                B.data.ptr & 15, None if out is None else
                (out.shape, out.strides, out.dtype, out.data.ptr & 15), alpha, copysign(1, alpha),
                beta, copysign(1, beta), precision, env, xp.cuda.get_current_stream().ptr,
                xp.cuda.runtime.getDevice(), get_ident())
    return (A.shape, A.strides, A.dtype, A.ctypes.data & 15, B.shape, B.strides, B.dtype,
            B.ctypes.data & 15, None if out is None else
            (out.shape, out.strides, out.dtype, out.ctypes.data & 15), alpha, copysign(1, alpha),
            beta, copysign(1, beta), precision, env, 0, 0, get_ident())


def _replay_fp32(run, flips: tuple):
    """A repeated fp32 call: ``run`` (``Recording.replay``) on the operands as the first call
    passed them to its plan (``flips``: whether A, B and out were read transposed)."""
    if BACKEND == "gpu":
        def again(A, B, out, stream: int) -> None:
            a, b, c = A.data.ptr, B.data.ptr, out.data.ptr
            run((b, a, c) if flips[2] else (a, b, c), stream)
    else:
        def again(A, B, out, stream: int) -> None:
            a, b, c = (x.T if t else x for x, t in zip((A, B, out), flips))
            run((b, a, c) if flips[2] else (a, b, c), stream)
    return again


def _sgemm(A, B, out, alpha: float, beta: float, precision: str, key=None):
    """sgemm on arrays of this backend; ``key`` (``_key``): where given, the launches of a plan
    that is settled (tuned or learned) are recorded, and the next call with the same key
    repeats them (``replay``) without this path's work."""
    for name, x in (("A", A), ("B", B)) + ((("out", out),) if out is not None else ()):
        if not isinstance(x, xp.ndarray) or x.ndim != 2:
            raise LaunchError(f"sgemm: {name} must be a 2-D {xp.__name__} array, got "
                              f"{type(x).__name__} with shape {getattr(x, 'shape', None)}")
        if x.dtype != xp.float32:
            raise LaunchError(f"sgemm: {name} must be float32, got {x.dtype}")
    (M, K), (K2, N) = A.shape, B.shape
    if K2 != K or 0 in (M, N, K):
        raise LaunchError(f"sgemm: A is {M} x {K} and B is {K2} x {N}; need A's columns = B's "
                          "rows and every size >= 1")
    alpha, beta = float(alpha), float(beta)
    if precision not in PRECISIONS:
        raise LaunchError(f"sgemm: precision {precision!r}: one of {', '.join(map(repr, PRECISIONS))}")
    if out is None:
        if beta != 0.0:
            raise LaunchError(f"sgemm: beta = {beta} adds beta * out to the product: pass out")
        out = xp.empty((M, N), dtype=xp.float32)
    elif out.shape != (M, N):
        raise LaunchError(f"sgemm: out has shape {out.shape}; A @ B is {M} x {N}")
    watch = None
    if precision == "auto":
        known = auto.BY_CALL.get(key) if key is not None else None
        if known is not None:  # (a call seen before that does not replay: one lookup)
            precision, watch = known
        else:
            watch = _fp32_shape(A, B, out)
            precision, settled = auto.method(*watch, time_call=auto.timer(_scratch_run(A, B))
                                             if learning() else None)
            if not settled:
                key = None  # (the shape's method is not chosen yet: no replay under its key)
            elif key is not None:
                auto.remember(key, (precision, watch))
    if precision == "ozaki":
        since = replay.generation()
        again = _ozaki(A, B, out, alpha, beta, key)
        if again is not None:
            if watch is not None:
                again = auto.watched(again, watch, M, lambda: guard_count(M, N))
            replay.keep(key, again, since)
        return out
    if precision == "tf32x3":
        since = replay.generation()
        _tf32x3(A, B, out, alpha, beta)
        again = None if key is None else _tf32x3_replay(A, B, out, alpha, beta)
        if again is not None:
            replay.keep(key, again, since)
        return out
    (a, ta, lda), (b, tb, ldb) = _operand(A, "A"), _operand(B, "B")
    c, tc, ldc = _operand(out, "out")
    flips = (ta, tb, tc)
    if tc:  # out stores C's columns as rows: compute C^T = B^T A^T into them
        (a, ta, lda), (b, tb, ldb), M, N = (b, not tb, ldb), (a, not ta, lda), N, M
    layout = "tn"[not ta] + "tn"[not tb]
    since = replay.generation()  # (a plan changed by another thread meanwhile: not kept)
    plan = plan_for(M, N, K, layout)
    if plan.config == FALLBACK:
        _fallback(plan, A, B, out, alpha, beta)
        return out
    settled = _known(M, N, K, layout) or not learning()  # (its plan will not change: recorded)
    if not settled:
        scratch = _workspace(M * N, slot=2).reshape(M, N)
        learned = settle(M, N, K, lambda p: p.run(a, b, scratch, M, N, K, lda, ldb, N), layout,
                         (lda, ldb), (a, b))
        settled, plan = learned is not None, learned or plan
    plan = in_layout(plan, layout)
    if plan is None:
        raise LaunchError(f"sgemm: the plan for {M} x {N} x {K} cannot read layout {layout!r}")
    # (the emulator copies whole arrays: give it arrays whose shape[1] is the leading dimension,
    # copies where they are views, and copy C back; on a GPU, views as they are)
    wa, wb, wc = (a, b, c) if BACKEND == "gpu" else (_whole(a, lda), _whole(b, ldb), _whole(c, ldc))
    if key is None or not settled or wa is not a or wb is not b or wc is not c:
        plan.run(wa, wb, wc, M, N, K, lda, ldb, ldc, alpha=alpha, beta=beta)
    else:
        with replay.recording(a, b, c) as rec:
            plan.run(a, b, c, M, N, K, lda, ldb, ldc, alpha=alpha, beta=beta)
        run = rec.replay()
        if run is not None:
            replay.keep(key, _replay_fp32(run, flips), since)
    if wc is not c:
        c[...] = wc[:, :c.shape[1]]
    return out


def _fp32_shape(A, B, out) -> tuple:
    """(M, N, K, layout) as the fp32 path's plan sees the call (``choice``'s key): C^T = B^T A^T
    where out stores C's columns as rows."""
    (M, K), N = A.shape, B.shape[1]
    ta, tb, tc = (_operand(x, name)[1] for x, name in ((A, "A"), (B, "B"), (out, "out")))
    if tc:
        ta, tb, M, N = not tb, not ta, N, M
    return M, N, K, "tn"[not ta] + "tn"[not tb]


def _scratch_run(A, B):
    """``run(method)``: A B by ``method`` into this stream's scratch memory (``precision='auto'``
    times the methods on the call's own operands)."""
    def run(method: str) -> None:
        scratch = _workspace(A.shape[0] * B.shape[1], slot=6).reshape(A.shape[0], B.shape[1])
        sgemm(A, B, scratch, precision=method)
    return run


def _fallback(plan: Plan, A, B, out, alpha: float, beta: float) -> None:
    """Below compute capability 8.0: chapter 8's warp-tile kernel on C-contiguous copies (where
    A, B or out are not C-contiguous), alpha and beta applied after it."""
    (M, K), N = A.shape, B.shape[1]
    a, b = xp.ascontiguousarray(A), xp.ascontiguousarray(B)
    _into(out, alpha, beta, lambda c: plan.run(a, b, c, M, N, K, K, N, N))
