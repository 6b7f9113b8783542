"""A replay's launches as one CUDA graph (``replay``'s host path for calls of many launches).

A replayed call of ``book.sgemm`` sends its launches one by one, and each ``cuLaunchKernel``
costs the host about 5 us (an H200's host, 2026-11-28): precision='ozaki''s eleven launches
spent 60 of its 72 us there. Here they become the kernel nodes of one graph, in their order
(each node after the one before: the stream's order), instantiated once; a call then writes
the new operands' addresses into the nodes that take them (``cuGraphExecKernelNodeSetParams``,
only where they changed since the last call) and sends the graph with one ``cuGraphLaunch``.
Launches already sent are not touched by a change (the driver copies the parameters).

Through the driver's C API with ctypes (CUDA 12's ``_v2`` calls and CUDA_KERNEL_NODE_PARAMS_v2);
where the driver has no such calls, or ``BOOK_NO_GRAPHS`` is set, ``build`` returns None and
the replay sends its launches one by one, as before.
"""
from __future__ import annotations

import ctypes
import os
import weakref
from functools import lru_cache

from . import replay
from .runtime import LaunchError, _libcuda

MIN_LAUNCHES = 3
"""Replays of fewer launches send them one by one (a graph's launch costs about one launch)."""


class NodeParams(ctypes.Structure):
    """CUDA_KERNEL_NODE_PARAMS_v2 (cuda.h)."""
    _fields_ = [("func", ctypes.c_void_p), ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_uint), ("params", ctypes.c_void_p), ("extra", ctypes.c_void_p),
                ("kern", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


_CALLS = {"cuGraphCreate": 2, "cuGraphAddKernelNode_v2": 5, "cuGraphInstantiateWithFlags": 3,
          "cuGraphExecKernelNodeSetParams_v2": 3, "cuGraphLaunch": 2, "cuGraphExecDestroy": 1,
          "cuGraphDestroy": 1}


@lru_cache(maxsize=1)
def _driver():
    """{name: the driver's function} for ``_CALLS``, or None where one is missing."""
    lib = _libcuda()
    if lib is None or os.environ.get("BOOK_NO_GRAPHS"):
        return None
    calls = {}
    for name, n in _CALLS.items():
        fn = getattr(lib, name, None)
        if fn is None:
            return None
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] * n if name != "cuGraphInstantiateWithFlags" else [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulonglong]
        calls[name] = fn
    return calls


def _check(status: int, what: str) -> None:
    if status != 0:
        raise LaunchError(f"{what} failed (CUresult {status})")


def build(launches: list, where: list):
    """The launches as one graph: ``launches``, each (function handle, grid, block, shared
    memory, the address of its parameters' array); ``where[i]``: launch i's [(ctypes value,
    operand's index), ...], the parameters a call changes. Returns ``run(operands, stream)``
    (operands: the call's addresses), or None where graphs are not available."""
    cu = _driver()
    if cu is None or len(launches) < MIN_LAUNCHES:
        return None
    graph, execution = ctypes.c_void_p(), ctypes.c_void_p()
    _check(cu["cuGraphCreate"](ctypes.addressof(graph), 0), "cuGraphCreate")
    finalizer = _Freed(cu, graph)
    nodes, before = [], None
    for fn, grid, block, shared, params in launches:
        p = NodeParams(fn, (ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), shared, params)
        node = ctypes.c_void_p()
        _check(cu["cuGraphAddKernelNode_v2"](ctypes.addressof(node), graph, None if before is None
                                             else ctypes.addressof(before), 0 if before is None
                                             else 1, ctypes.addressof(p)), "cuGraphAddKernelNode")
        nodes.append((node, p))
        before = node
    _check(cu["cuGraphInstantiateWithFlags"](ctypes.addressof(execution), graph, 0),
           "cuGraphInstantiate")
    finalizer.execution = execution
    updates = [(node, ctypes.addressof(p), changed)
               for (node, p), changed in zip(nodes, where) if changed]
    set_params, launch = cu["cuGraphExecKernelNodeSetParams_v2"], cu["cuGraphLaunch"]
    last = [None]

    def run(operands, stream) -> None:
        if operands != last[0]:  # (new addresses: written into the nodes that take them)
            for node, p, changed in updates:
                for value, which in changed:
                    value.value = operands[which]
                _check(set_params(execution, node, p), "cuGraphExecKernelNodeSetParams")
            last[0] = operands
        _check(launch(execution, stream), "cuGraphLaunch")
    run.keep = (nodes, weakref.finalize(run, finalizer))
    return run


class _Freed:
    """Destroys a graph and its instantiation (when its replay is dropped)."""

    def __init__(self, cu, graph):
        self.cu, self.graph, self.execution = cu, graph, None

    def __call__(self) -> None:
        try:
            if self.execution is not None:
                self.cu["cuGraphExecDestroy"](self.execution)
            self.cu["cuGraphDestroy"](self.graph)
        except Exception:  # (at the interpreter's exit the driver may be gone)
            pass


replay.GRAPHS = build
