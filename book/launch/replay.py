"""A library call's launches recorded once and replayed (``book.sgemm``'s host path).

A call of ``book.sgemm`` at a shape, layout and alignment it has seen does the same launches as
last time: the same kernels, grids and sizes, on the same scratch memory (``streams.buffer``),
only A's, B's and C's addresses differ. Working them out again costs more host time than the
launches. So the call runs once inside :func:`recording`, which notes every launch made through
:func:`direct.unchecked`, and :meth:`Recording.replay` gives a function of the new operands
that repeats them: on a GPU each launch laid out once (its parameters in a ctypes array, the
operands' addresses written in place) and sent with CuPy's ``driver.launchKernel``, or, for
three launches or more, all of them as one CUDA graph (``graphs``: one launch of the host's).

A recording is refused (``replay`` returns None) unless every array a launch was given is one
of the call's operands or scratch memory from ``streams.buffer``: a copy made during the call
(an aligned copy of B, a transposed view copied, a temporary C) would be stale the next time,
and GPU work done without a launch of ``unchecked`` (a CuPy operation) only ever writes such a
copy. A launch through the checked API (``Kernel.__call__``), a launch after another
(``unchecked_after``), an address passed as an integer, or two operands that are one array also
refuse it: the call then takes its full path every time, as before.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np

_HERE = threading.local()

LIMIT = 256
"""Replays kept (``TABLE``, the oldest recorded dropped first)."""
TABLE: OrderedDict = OrderedDict()
"""{a call's key: its replay}, filled by the library's calls (``book.sgemm``)."""
_LOCK = threading.Lock()
GRAPHS = None
"""``graphs.build``, set where that module is imported (``direct`` imports it: the library's
launches), so that a replay of many launches becomes one CUDA graph; None: launch by launch."""
_GENERATION = [0]


def generation() -> int:
    """A count of ``clear``s: a call reads it before it chooses its plan, and ``keep`` drops
    a replay recorded across a clear (another thread's plan change)."""
    return _GENERATION[0]


def keep(key, run, since: int | None = None) -> None:
    """Remember ``run`` (``Recording.replay``) as the replay of calls with ``key``, unless the
    table was cleared since ``generation()`` gave ``since``."""
    with _LOCK:
        if since is not None and since != _GENERATION[0]:
            return
        TABLE[key] = run
        while len(TABLE) > LIMIT:
            TABLE.popitem(last=False)


def clear() -> None:
    """Forget every replay: where a call's plan may have changed (a tuning table set, a shape's
    plan learned) or the scratch memory it uses was replaced or released (``streams``)."""
    with _LOCK:
        TABLE.clear()
        _GENERATION[0] += 1


class Recording:
    """The launches of one call, and whether they can be replayed."""

    def __init__(self, operands: tuple):
        self.operands = {id(x): i for i, x in enumerate(operands)}
        self.ok = len(self.operands) == len(operands)  # (one array as two operands: refused)
        self.launches: list = []
        self.buffers: list = []

    def replay(self):
        """A function ``run(addresses, stream)`` (addresses: of the operands, in order; stream: a
        CUDA stream's handle, 0 on the CPU) that repeats the launches, or None where they
        cannot be repeated (see the module's note)."""
        if not self.ok or not self.launches:
            return None
        owned = {id(_root(x)) for x in self.buffers}
        steps = []
        for fn, grid, block, args, shared in self.launches:
            slots = {}
            for i, a in enumerate(args):
                if isinstance(a, (np.int32, np.float32, np.int64, np.uint32, np.float64)):
                    continue
                if not hasattr(a, "shape"):  # (an address as an int: whose, unknown)
                    return None
                if id(a) in self.operands:
                    slots[i] = self.operands[id(a)]
                elif id(_root(a)) not in owned:
                    return None
            steps.append(_step(fn, grid, block, list(args), shared, slots))
        keep = self.buffers
        if GRAPHS is not None and all(hasattr(s, "graph") for s in steps):  # (a GPU's: one graph)
            graph = GRAPHS([s.graph for s in steps], [s.where for s in steps])
            if graph is not None:
                graph.keep = (graph.keep, keep, [s.keep for s in steps])
                return graph

        def run(operands, stream) -> None:
            for step in steps:
                step(operands, stream)
        run.keep = keep  # (the scratch memory the launches use lives as long as they may run)
        return run


@contextmanager
def recording(*operands):
    """Note the launches made in this thread inside the block (``Recording``); ``operands``:
    the arrays whose addresses change from call to call (as passed to the launches)."""
    outer = getattr(_HERE, "rec", None)
    rec = _HERE.rec = Recording(operands)
    try:
        yield rec
    finally:
        _HERE.rec = outer
        if outer is not None:
            outer.ok = False  # (nested recordings: the outer one is not replayed)


def active() -> Recording | None:
    return getattr(_HERE, "rec", None)


def note_launch(fn, grid, block, args, shared_mem: int) -> None:
    rec = getattr(_HERE, "rec", None)
    if rec is not None:
        rec.launches.append((fn, grid, block, tuple(args), shared_mem))


def note_foreign() -> None:
    """A launch that a recording cannot repeat happened."""
    rec = getattr(_HERE, "rec", None)
    if rec is not None:
        rec.ok = False


def note_buffer(x) -> None:
    """``x`` is scratch memory that stays where it is for later calls (``streams.buffer``)."""
    rec = getattr(_HERE, "rec", None)
    if rec is not None:
        rec.buffers.append(x)


def _root(x):
    """The allocation x lies in: a CuPy array's memory, or a NumPy array's first base."""
    data = getattr(x, "data", None)
    mem = getattr(data, "mem", None)
    if mem is not None:
        return mem
    while getattr(x, "base", None) is not None:
        x = x.base
    return x


def _step(fn, grid, block, args: list, shared: int, slots: dict):
    """One launch to repeat, the operands' addresses (slots: {argument's index: operand's
    index}) filled in from each call."""
    grid, block = (tuple(g) if isinstance(g, tuple) else (g,) for g in (grid, block))
    raw = getattr(fn, "ptr", None)
    if raw is None:  # the CPU emulator (or a launch function without a handle): call it
        def call(operands, stream) -> None:
            given = list(args)
            for i, which in slots.items():
                given[i] = operands[which]
            fn(grid, block, tuple(given), shared_mem=shared)
        for i in slots:  # (the recorded call's operands are not kept alive)
            args[i] = None
        return call
    import ctypes

    from cupy.cuda import driver
    values = []
    for a in args:
        if isinstance(a, np.int32):
            values.append(ctypes.c_int32(int(a)))
        elif isinstance(a, np.uint32):
            values.append(ctypes.c_uint32(int(a)))
        elif isinstance(a, np.int64):
            values.append(ctypes.c_int64(int(a)))
        elif isinstance(a, np.float32):
            values.append(ctypes.c_float(float(a)))
        elif isinstance(a, np.float64):
            values.append(ctypes.c_double(float(a)))
        else:
            values.append(ctypes.c_void_p(a.data.ptr))
    params = (ctypes.c_void_p * max(len(values), 1))(
        *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
    where = [(values[i], which) for i, which in slots.items()]
    for i in slots:  # (the recorded call's operands are not kept alive: only their addresses)
        args[i] = None
    (gx, gy, gz), (bx, by, bz) = ((d + (1, 1))[:3] for d in (grid, block))
    address, launch, keep = ctypes.addressof(params), driver.launchKernel, (args, params, values)

    def send(operands, stream) -> None:
        for value, which in where:
            value.value = operands[which]
        launch(raw, gx, gy, gz, bx, by, bz, shared, stream, address, 0)
    send.keep = keep
    send.graph, send.where = (raw, (gx, gy, gz), (bx, by, bz), shared, address), where
    return send
