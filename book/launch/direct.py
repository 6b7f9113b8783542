"""The library's own launches (``book.sgemm`` and its 3xTF32 calls), which have checked their
arguments already: CuPy's launch without the launch API's per-call checks (``unchecked``), each
noted where a call is being recorded (``replay``); a launch that may start while the kernel
before it ends (``unchecked_after``: programmatic dependent launch, through cuLaunchKernelEx);
and a launch bound to its arguments once, a few changed from call to call (``bind_launch``).
"""
from __future__ import annotations

import os
from functools import lru_cache

import numpy as np

from . import graphs as _graphs  # noqa: F401 (a replay of many launches: one CUDA graph)
from . import replay as _replay
from .runtime import BACKEND, Kernel, LaunchError, _libcuda, cupy


def unchecked(kernel: Kernel):
    """The launch function of a compiled kernel as the library's calls use it (``sgemm``, its
    3xTF32 launches), which have checked their arguments already: on the GPU CuPy's own, without
    the launch API's per-call checks (they cost tens of µs of host time a launch); on the CPU
    the emulator's launch. Each launch is noted where a call is being recorded (``replay``)."""
    return _Unchecked(kernel.module.function(kernel.name) if BACKEND == "gpu" else kernel)


class _Unchecked:
    """A launch function (CuPy's RawKernel, or the emulator's kernel) whose launches a
    recording notes (``replay.note_launch``); ``ptr``: the driver's handle of the function (GPU)."""

    def __init__(self, fn):
        self.fn = fn
        if BACKEND == "gpu":
            self.ptr, self._send = fn.kernel.ptr, fn
        else:
            self._send = fn._launch  # (the emulator's launch, checked, not noted as foreign)

    def __call__(self, grid, block, args, shared_mem: int = 0) -> None:
        if _replay._HERE.__dict__.get("rec") is not None:
            _replay.note_launch(self, grid, block, args, shared_mem)
        self._send(grid, block, args, shared_mem=shared_mem)



def unchecked_after(kernel: Kernel):
    """As :func:`unchecked`, but on a GPU of compute capability 9.0 or later each launch may
    start while the kernel before it in the stream is ending (programmatic dependent launch:
    ``cuLaunchKernelEx`` with programmatic stream serialization allowed). The kernel must wait
    for that one (``griddepcontrol.wait``, which returns at once in a plain launch) before it
    reads anything it wrote. What it saves is the gap between the two: the launch and the first
    instructions of this one's blocks, while the last blocks of that one run. Elsewhere (the
    CPU emulator, an older GPU or driver, ``BOOK_NO_PDL=1``) the plain launch."""
    launch = unchecked(kernel)
    if (BACKEND != "gpu" or os.environ.get("BOOK_NO_PDL") or _launch_ex() is None
            or int(cupy.cuda.Device().compute_capability) < 90):
        return launch
    return _LaunchAfter(launch.fn)



@lru_cache(maxsize=1)
def _launch_ex():
    """The driver's cuLaunchKernelEx (CUDA 12.0 and later), or None."""
    import ctypes
    fn = getattr(_libcuda(), "cuLaunchKernelEx", None)
    if fn is None:
        return None
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_void_p] * 4
    return fn


class _LaunchAfter:
    """A kernel's launch through cuLaunchKernelEx with one attribute, programmatic stream
    serialization allowed (CUDA's CUlaunchConfig and CUlaunchAttribute, laid out here)."""

    def __init__(self, raw):
        import ctypes

        class Attribute(ctypes.Structure):  # id, padding to 8 bytes, then a 64-byte union
            _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int),
                        ("rest", ctypes.c_char * 60)]

        class Config(ctypes.Structure):
            _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                        ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                        ("attrs", ctypes.POINTER(Attribute)), ("n_attrs", ctypes.c_uint)]

        self.ctypes, self.raw, self.function = ctypes, raw, raw.kernel.ptr
        self.attribute = Attribute(id=6, value=1)  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        self.Config = Config

    def _value(self, a):
        c = self.ctypes
        if isinstance(a, np.int32):
            return c.c_int32(int(a))
        if isinstance(a, np.float32):
            return c.c_float(float(a))
        if hasattr(a, "data") and hasattr(a.data, "ptr"):  # a CuPy array: its address
            return c.c_void_p(a.data.ptr)
        raise LaunchError(f"a launch after another takes CuPy arrays, numpy.int32 and numpy.float32 "
                          f"arguments, not {type(a).__name__}")

    def __call__(self, grid, block, args, shared_mem: int = 0):
        self.bind(grid, block, args, shared_mem)({})

    def bind(self, grid, block, args, shared_mem: int = 0):
        """This launch with ``args`` laid out once (ctypes), to be launched again and again,
        a few arguments changed each time (:func:`bind_launch`)."""
        c = self.ctypes
        grid, block = (tuple(x) + (1,) * (3 - len(x)) for x in (grid, block))
        values = [self._value(a) for a in args]
        params = (c.c_void_p * len(values))(*[c.cast(c.pointer(v), c.c_void_p) for v in values])
        config = self.Config((c.c_uint * 3)(*grid), (c.c_uint * 3)(*block), shared_mem, None,
                             c.pointer(self.attribute), 1)
        launch_ex, function, keep = _launch_ex(), self.function, list(args)  # (keep: the arrays
        # whose addresses the values hold stay alive as long as the launch)
        at_config, at_params, stream = c.addressof(config), c.addressof(params), cupy.cuda.get_current_stream

        def launch(changes: dict) -> None:
            _replay.note_foreign()
            for i, a in changes.items():
                values[i].value = a.data.ptr
                keep[i] = a
            config.stream = stream().ptr
            status = launch_ex(at_config, function, at_params, None)
            if status != 0:
                raise LaunchError(f"cuLaunchKernelEx failed (CUresult {status})")
        launch.keep = (config, params, values)
        return launch


def bind_launch(launch, grid, block, args, shared_mem: int = 0):
    """``launch`` (from :func:`unchecked` or :func:`unchecked_after`) with ``grid``, ``block``,
    ``args`` and ``shared_mem`` fixed, as a function of ``changes`` ({argument's index: array}),
    the arguments that differ from one launch to the next: a library call's launches, built
    once per shape (the host's time of a call is its launches')."""
    if isinstance(launch, _LaunchAfter):
        return launch.bind(grid, block, args, shared_mem)
    args = list(args)

    def plain(changes: dict) -> None:
        for i, a in changes.items():
            args[i] = a
        launch(grid, block, tuple(args), shared_mem=shared_mem)
    return plain
