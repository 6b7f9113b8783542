"""One launch API for every kernel of the book, on a GPU (CuPy) or on the CPU (emulator).

Introduced in chapter 0. A notebook uses it like this, identically on both backends::

    from book import load_kernel, xp, to_device, to_host
    kernel = load_kernel("04_tiled.cu", "matmul_tiled", defines={"TILE": 16})
    A, B = to_device(a), to_device(b); C = xp.full((M, N), xp.nan, dtype=xp.float32)
    kernel(((N + 15) // 16, (M + 15) // 16), (16, 16), (A, B, C, np.int32(M), np.int32(N), np.int32(K)))
    c = to_host(C)

The backend is the GPU when CuPy sees one (``cupy.cuda.is_available()``), else the CPU
emulator; ``BOOK_BACKEND=cpu`` forces the emulator on a GPU host (``=gpu`` insists on a GPU).
Before every launch the arguments are checked against the kernel's own C signature and the
launch geometry against the device's limits, with the same errors on both backends. A kernel is
named as its source declares it: extern "C" or not, ``ns::k`` in a namespace, ``"k<128, float>"``
for a template's instance (NVRTC's name expressions on the GPU, an export of ``::k<128, float>``
in the emulator). Vectors and structs pass by value as NumPy arrays and structured scalars, and
``Kernel.set_constant`` fills ``__constant__`` memory, the same way on both backends.
``to_device`` and ``to_host`` copy on both, as between a GPU and its host.

On the CPU a kernel's own bugs raise :class:`LaunchError` too, and never take this process down:
every emulated launch runs in a worker process (``book/launch/worker.py``), on copies of the array
arguments in shared memory, each placed so that its last element ends a page, with 64 GiB of
inaccessible addresses on both sides (256 MiB under an address-space limit). A signal handler in
the worker reports a memory fault or an integer division by zero (the address, load or store,
block and thread) and the worker exits; this process names the array, the element and how far
outside it lies, and starts a new worker at the next launch. Arrays passed as ``const``
parameters are mapped read-only: a write through one is reported, where a GPU would write it.
Every index ``p[i]`` of a pointer parameter is checked against the array argument ``p`` points
into (``book/launch/rewrite_memory.py``): ``in[-1]`` is named where it happens, with its line.
A launch that runs longer than ``timeout_s`` (default 30 s, or ``BOOK_EMU_TIMEOUT_S``) or is
interrupted (Ctrl-C, Jupyter's interrupt: KeyboardInterrupt) is stopped the same way; the worker
also ends with this process. A worker process was chosen over catching the signals in this
process because a kernel that writes past an array corrupts whatever memory lies there: only
memory the kernel cannot reach (guard regions, another process) makes every such bug a clear
error, and only a separate process can be stopped in the middle of an endless loop. Every index
into a ``__shared__`` array is checked against its dimension (the array is named in the error);
the check mode (``BOOK_EMU_CHECK=1``) also finds shared-memory races and reads of unwritten shared
memory (``book/launch/include/cuda_emu.h``). ``BOOK_EMU_ISOLATION=0`` runs launches in this
process, without the net. Appendix A lists what the emulator checks and what it does not.
Floating-point division by zero gives inf or NaN, as on the GPU; it is no error.
"""
from __future__ import annotations

import os
import re
import threading
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from . import compiler_log, cuda_source
from . import replay as _replay
from .cubin import (CompilerWarning, _libcuda, _NoFlushModule, _toolchain, _warn,  # noqa: F401
                    gpu_arch, mark_built, marked)
from .cuda_source import KernelSourceError, Param

try:
    import cupy
except Exception:  # no CuPy at all: the CPU backend still works
    cupy = None


def _gpu_present() -> bool:
    try:
        return cupy is not None and bool(cupy.cuda.is_available())
    except Exception:
        return False


_choice = os.environ.get("BOOK_BACKEND", "").strip().lower()
if _choice not in ("", "cpu", "gpu"):
    raise ValueError(f"BOOK_BACKEND={_choice!r}: use 'cpu', 'gpu' or leave it unset")
if _choice == "gpu" and not _gpu_present():
    raise RuntimeError("BOOK_BACKEND=gpu, but CuPy sees no GPU")

BACKEND = "gpu" if (_choice == "gpu" or (_choice == "" and _gpu_present())) else "cpu"
"""'gpu' (CuPy) or 'cpu' (the emulator): which backend runs kernels in this process."""



class _HostNumPy(type(np)):
    """NumPy, for the CPU backend, but for ``empty`` and ``empty_like``: their bytes start as
    0xFF (NaN as floats, -1 as integers), as the emulator's shared memory does. A GPU's fresh
    memory holds whatever it held; NumPy's often holds zeros (a new page), and an accumulator
    never zeroed would come out right by luck here and wrong on a GPU."""

    def __getattr__(self, name):
        return getattr(np, name)

    def __dir__(self):
        return dir(np)

    @staticmethod
    def _poisoned(a):
        if not a.dtype.hasobject and a.size:
            a.ravel(order="K").view(np.uint8).fill(0xFF)  # (fresh: contiguous, a view)
        return a

    def empty(self, *args, **kwargs):
        return self._poisoned(np.empty(*args, **kwargs))

    def empty_like(self, *args, **kwargs):
        return self._poisoned(np.empty_like(*args, **kwargs))


xp = cupy if BACKEND == "gpu" else _HostNumPy("numpy", np.__doc__)
"""The array module of the backend: ``cupy`` on a GPU, ``numpy`` on the CPU (whose ``empty``
and ``empty_like`` fill the array with 0xFF bytes, as a GPU's memory is not zeros)."""

CPU_ARCH = "sm_90"  # the architecture whose ptxas report the CPU backend shows (an H100/H200)


def to_device(a):
    """Copy a host array to where kernels run. A copy on the CPU backend too, as on a GPU: a
    kernel that writes its input in place leaves the caller's array as it was."""
    return xp.asarray(a) if BACKEND == "gpu" else np.array(a)


def to_host(a) -> np.ndarray:
    """Copy a backend array back to a NumPy array (a copy on both backends)."""
    return cupy.asnumpy(a) if BACKEND == "gpu" else np.array(a)


def synchronize() -> None:
    """Wait for the GPU to finish queued work (kernels on the CPU backend are synchronous)."""
    if BACKEND == "gpu":
        cupy.cuda.get_current_stream().synchronize()


class LaunchError(ValueError):
    """A launch that cannot be made: bad arguments or geometry. The message names the kernel."""


class KernelCompileError(RuntimeError):
    """A kernel source that does not compile; the message carries the compiler's own output."""


def device_limits() -> dict[str, int]:
    """Launch limits of the backend's device (the CPU backend uses an H100/H200's)."""
    return dict(_device_limits())


@lru_cache(maxsize=None)
def _device_limits() -> dict[str, int]:
    limits = {"max_threads_per_block": 1024, "max_block": (1024, 1024, 64),
              "max_grid": (2**31 - 1, 65535, 65535), "shared_per_block": 48 * 1024,
              "shared_per_block_optin": 227 * 1024}
    if BACKEND == "gpu":
        attrs = cupy.cuda.Device().attributes
        limits.update(
            max_threads_per_block=attrs["MaxThreadsPerBlock"],
            max_block=(attrs["MaxBlockDimX"], attrs["MaxBlockDimY"], attrs["MaxBlockDimZ"]),
            max_grid=(attrs["MaxGridDimX"], attrs["MaxGridDimY"], attrs["MaxGridDimZ"]),
            shared_per_block=attrs["MaxSharedMemoryPerBlock"],
            shared_per_block_optin=attrs["MaxSharedMemoryPerBlockOptin"])
    return limits


def _dims(value, what: str, name: str, limit: tuple[int, ...]) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, (int, np.integer)) for d in dims):
        raise LaunchError(f"{name}: {what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    for axis, d, top in zip("xyz", dims, limit):
        if d < 1:
            raise LaunchError(f"{name}: {what} dimension {axis} is {d}; every dimension must be >= 1")
        if d > top:
            raise LaunchError(f"{name}: {what} dimension {axis} is {d}, over the device's limit of {top}")
    return dims


_COMPLEX = {("float2", np.dtype(np.complex64)), ("double2", np.dtype(np.complex128))}
"""Arrays a float2 or double2 pointer also takes: complex numbers, laid out as their pairs
(cuComplex.h's cuFloatComplex and cuDoubleComplex are float2 and double2)."""


def _check_arg(name: str, index: int, param: Param, value, size: int | None = None) -> None:
    """LaunchError where ``value`` does not fit the parameter; ``size``: a struct's sizeof."""
    where = f"{name}: argument {index} '{param.name}' ({param.ctype})"
    if param.pointer:
        array_type = cupy.ndarray if BACKEND == "gpu" else np.ndarray
        if not isinstance(value, array_type):
            raise LaunchError(f"{where} expects a {array_type.__module__.split('.')[0]} array on "
                              f"the {BACKEND} backend, got {type(value).__name__} (use to_device)")
        if (value.dtype != param.dtype and param.kind != "void"
                and (param.base, value.dtype) not in _COMPLEX):
            raise LaunchError(f"{where} expects a {param.dtype} array, got {value.dtype}")
        if not value.flags.c_contiguous:
            raise LaunchError(f"{where} expects a C-contiguous array, got a strided view "
                              f"(use xp.ascontiguousarray)")
        address = value.data.ptr if BACKEND == "gpu" else value.ctypes.data
        if address % param.alignment:
            raise LaunchError(f"{where} needs {param.alignment}-byte aligned data")
    elif param.kind == "vector":  # float4 by value: its components, or a structured scalar
        count = param.itemsize // param.dtype.itemsize
        if not (isinstance(value, np.ndarray) and value.dtype == param.dtype and value.size == count
                or isinstance(value, np.void) and value.dtype.itemsize == param.itemsize):
            raise LaunchError(f"{where} is a {param.base} passed by value: pass its {count} "
                              f"components as a NumPy array, np.array([...], np.{param.dtype})")
    elif param.kind == "struct":
        if not (isinstance(value, np.void) or isinstance(value, np.ndarray) and value.size == 1
                and value.dtype.kind == "V"):
            raise LaunchError(
                f"{where} is a struct passed by value: pass a NumPy structured scalar whose fields "
                f"are the struct's, in its order, e.g. np.array((1.0, 2), dtype=np.dtype([(\"a\", "
                f"\"f4\"), (\"n\", \"i4\")], align=True))[()]; got {type(value).__name__}")
        if size is not None and value.dtype.itemsize != size:
            raise LaunchError(f"{where}: the value given has {value.dtype.itemsize} bytes, "
                              f"sizeof({param.base}) is {size}: give its dtype the struct's fields "
                              f"in order, with align=True (C's padding)")
    else:
        if not isinstance(value, np.generic):
            raise LaunchError(f"{where} expects np.{param.dtype}, got Python "
                              f"{type(value).__name__}; pass np.{param.dtype}(value)")
        if value.dtype != param.dtype:
            raise LaunchError(f"{where} expects np.{param.dtype}, got np.{value.dtype}")


def _by_value(param: Param, value):
    """An argument as CuPy passes it: a vector or struct by value as a NumPy array of one
    element holding its bytes (CuPy passes such an array's bytes; it refuses np.void)."""
    if param.pointer or param.kind not in ("vector", "struct"):
        return value
    return np.frombuffer(np.asarray(value).tobytes(), np.dtype((np.void, param.itemsize
                                                              if param.kind == "vector" else
                                                              np.asarray(value).nbytes)))


class Kernel:
    """A compiled kernel: call it as ``kernel(grid, block, args, shared_mem=0)``."""

    def __init__(self, module: "_Module", name: str):
        self.module, self.name = module, name
        self.params: tuple[Param, ...] = module.signatures[name]
        self._max_dynamic_shared = module.limits["shared_per_block"]

    def __repr__(self) -> str:
        args = ", ".join(f"{p.ctype} {p.name}" for p in self.params)
        return f"<Kernel {self.name}({args}) from {self.module.filename} on {BACKEND}>"

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        """Shared memory (static + dynamic) a launch may use: 48 KiB unless raised (opt in)."""
        return self._max_dynamic_shared

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value: int) -> None:
        top = self.module.limits["shared_per_block_optin"]
        if not 0 <= int(value) <= top:
            raise LaunchError(f"{self.name}: max_dynamic_shared_size_bytes={value} is over the "
                              f"device's opt-in limit of {top} bytes")
        if BACKEND == "gpu":
            static = self.module.static_shared(self.name)  # not .attributes: no ptxas report
            self.module.function(self.name).max_dynamic_shared_size_bytes = int(value) - static
        self._max_dynamic_shared = int(value)

    @cached_property
    def attributes(self) -> dict:
        """Registers, static shared memory and local memory (spills) as the GPU compiler reports.

        On the GPU, from the loaded binary (CuPy's ``RawKernel.attributes``) plus ptxas's spill
        counts; on the CPU, from ptxas through NVRTC for sm_90, so no GPU is needed.
        """
        return self.module.attributes(self.name)

    def __call__(self, grid, block, args, shared_mem: int = 0, timeout_s: float | None = None) -> None:
        """Launch: ``grid`` and ``block`` as ints or 1 to 3 ints, ``args`` matching the C
        signature. ``timeout_s`` limits an emulated launch (CPU backend; default 30 s)."""
        _replay.note_foreign()  # (a checked launch is not repeated by a recording)
        self._launch(grid, block, args, shared_mem, timeout_s)

    def _launch(self, grid, block, args, shared_mem: int = 0, timeout_s: float | None = None) -> None:
        limits = self.module.limits
        grid = _dims(grid, "grid", self.name, limits["max_grid"])
        block = _dims(block, "block", self.name, limits["max_block"])
        threads = block[0] * block[1] * block[2]
        if threads > limits["max_threads_per_block"]:
            raise LaunchError(f"{self.name}: block {block[0]}x{block[1]}x{block[2]} has {threads} "
                              f"threads, over the limit of {limits['max_threads_per_block']} per block")
        args = tuple(args)
        if len(args) != len(self.params):
            names = ", ".join(p.name for p in self.params)
            raise LaunchError(f"{self.name} takes {len(self.params)} arguments ({names}), "
                              f"got {len(args)}")
        for i, (param, value) in enumerate(zip(self.params, args), start=1):
            size = self.module.param_sizes(self.name)[i - 1] if param.kind == "struct" else None
            _check_arg(self.name, i, param, value, size)
        shared_mem = int(shared_mem)
        if shared_mem < 0:
            raise LaunchError(f"{self.name}: shared_mem={shared_mem} is negative")
        if shared_mem:
            static = self.module.static_shared(self.name)
            if static + shared_mem > self._max_dynamic_shared:  # sure? (the emulator's first
                static = self.module.static_shared(self.name, exact=True)  # count may be high)
            if static + shared_mem > self._max_dynamic_shared:
                raise LaunchError(
                    f"{self.name}: {shared_mem} bytes of dynamic shared memory (+ {static} static) "
                    f"exceed the {self._max_dynamic_shared}-byte limit per block; a kernel may opt "
                    f"in to up to {limits['shared_per_block_optin']} bytes by setting "
                    f"kernel.max_dynamic_shared_size_bytes")
        if BACKEND != "gpu" and threads > 256:  # (255 registers x 256 threads always fit)
            self._check_registers(threads)
        self.module.launch(self.name, grid, block, args, self.params, shared_mem, timeout_s)

    def _check_registers(self, threads: int) -> None:
        """On the emulator, the GPU's refusal of a block whose registers (NVRTC's report of the
        optimized build, allocated per warp in units of 256) exceed the 65,536 of a block."""
        report = self.module._report_or_compile_error().get(self.name)
        if not report:
            return  # (no NVRTC here: no register count)
        regs = report["num_regs"]
        need = -(-threads // 32) * (-(-regs * 32 // 256) * 256)
        if need > REGISTERS_PER_BLOCK:
            raise LaunchError(
                f"{self.name}: {threads} threads a block at {regs} registers each take {need:,} "
                f"registers (a warp's are allocated in units of 256), over the "
                f"{REGISTERS_PER_BLOCK:,} of a block: a GPU refuses this launch "
                f"(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 'too many resources requested for launch'). "
                f"Launch fewer threads a block, or declare __launch_bounds__({threads}): the "
                f"compiler then keeps each thread within {REGISTERS_PER_BLOCK // threads // 8 * 8} "
                f"registers, spilling the rest to local memory")

    def set_constant(self, name: str, values) -> None:
        """Fill the ``__constant__`` (or ``__device__``) variable ``name`` of this kernel's source
        with ``values`` (a NumPy array or scalar of the variable's type, at most its size), as
        ``cudaMemcpyToSymbol`` does; every kernel of the same build sees it from the next launch."""
        self.module.set_constant(name, values)


def _toolkit_lacks_groups(error: str, text: str) -> bool:
    """Whether NVRTC failed only because the CUDA headers found here (the pip runtime package's)
    hold cooperative_groups.h without the CCCL headers it includes (nv/target): the CPU backend
    then builds without NVRTC's check."""
    return "nv/target" in error and bool(compiler_log.GPU_ONLY_INCLUDE.search(text))


STATIC_SHARED = 48 * 1024
"""The static shared memory ptxas lets one kernel declare (more fails to compile)."""
REGISTERS_PER_BLOCK = 65536
"""The registers one block may hold, on every GPU from compute capability 5.0 to 9.0."""


def _nvrtc_inputs(text: str, source, defines: dict, options: tuple, instance: str | None = None):
    """NVRTC's options for one build (its -D defines, ``options``, the headers' include paths) and
    its name expressions: the kernels and variables whose names C++ mangles."""
    gpu_options = (tuple(f"-D{k}={v}" for k, v in defines.items()) + tuple(options)
                   + compiler_log.header_options(text))
    mangled = [n for n, d in source.kernels.items()
               if d.template is None and n not in source.problems and not d.extern_c]
    names = tuple(mangled + ([instance] if instance else [])
                  + [f"&{v}" for v in source.variables if "::" in v])
    return gpu_options, names


def _nvrtc_build(source: str | Path, defines: dict | None, options) -> tuple:
    """(path, text, NVRTC's options, name expressions) of one build, as a load of it has them."""
    path, defines, _, text = _build_key(source, defines, tuple(options))
    return (path, text, *_nvrtc_inputs(text, cuda_source.scan(text, defines), defines, tuple(options)))


def gpu_module(source: str | Path, defines: dict | None = None, options=()) -> "_NoFlushModule":
    """The NVRTC build of one (source, defines, options), as a GPU load of it makes it, without
    loading it, on any backend: its ``write_cubin(arch)`` fills the cache that a GPU's
    :func:`load_kernel` of the same build reads (``book.blas.prebuild``)."""
    path, text, gpu_options, names = _nvrtc_build(source, defines, options)
    return _NoFlushModule(text, gpu_options, path.name, names)


def nvrtc_attributes(source: str | Path, name: str, defines: dict | None = None, options=()) -> dict:
    """What ``load_kernel(...).attributes`` gives on the CPU backend -- ptxas's report of NVRTC's
    optimized build for an sm_90 GPU: registers, spills, static shared and local memory --
    without building the emulator's library (seconds a kernel): for tables of registers and
    occupancy, on any backend."""
    path, text, gpu_options, names = _nvrtc_build(source, defines, options)
    try:
        report = compiler_log.ptxas_report(text, path.name, gpu_options, CPU_ARCH, names)
    except KernelSourceError as exc:
        raise KernelCompileError(str(exc)) from None
    if name not in report:
        raise KernelSourceError(f"{path.name}: NVRTC reports no kernel {name!r}")
    return dict(report[name])


class _Module:
    """One source file compiled with one set of defines, on the current backend; with
    ``instance`` (``"k<128, float>"``), also that instance of the template kernel k."""

    def __init__(self, path: Path, text: str, defines: dict[str, str], options: tuple[str, ...],
                 instance: str | None = None):
        self.filename = path.name
        self.text = text
        self.source = cuda_source.scan(self.text, defines)
        if self.source.refusal:  # (before any compile: NVRTC takes some such sources)
            raise KernelSourceError(f"{self.filename}: {self.source.refusal}")
        self.signatures = {name: cuda_source.signature(self.source, decl)
                           for name, decl in self.source.kernels.items() if decl.template is None}
        self.cxx = {name: decl.qualified for name, decl in self.source.kernels.items()
                    if decl.template is None and name not in self.source.problems}
        if instance:  # checked before anything is compiled
            decl = self.source.kernels.get(re.sub(r"\s*<.*", "", instance, flags=re.S))
            if decl is None or decl.template is None:
                raise KernelSourceError(f"{self.filename} has no template kernel named as in "
                                        f"{instance!r} (it defines: {', '.join(self.source.kernels)})")
            arguments = cuda_source.template_arguments(decl, instance)
            self.signatures[instance] = cuda_source.signature(self.source, decl, arguments)
            self.cxx[instance] = "::" + instance.lstrip(":")
        self.defines, self.options = defines, options
        self.gpu_options, self.names = _nvrtc_inputs(self.text, self.source, defines, options, instance)
        self.limits = device_limits()
        self._report = self._debug_report = None
        self._report_error = "NVRTC found no such kernel"
        self._static_shared: dict[tuple[str, bool], int] = {}
        self._sizes: dict[str, list] = {}
        if BACKEND == "gpu":
            self._raw = _NoFlushModule(self.text, self.gpu_options, self.filename, self.names)
            self._functions = {}
        else:
            from .emulator import CompileError, CpuModule, unsupported_header
            missing = unsupported_header(self.text)
            if missing:
                raise KernelCompileError(f"{self.filename} includes {missing}, a CUDA library "
                                         f"header the CPU emulator does not provide (it runs "
                                         f"CUDA C with float, double, integer, cuda_fp16.h's and "
                                         f"cuda_bf16.h's "
                                         f"half types, and the book's TF32 tensor-core "
                                         f"instructions): run this kernel "
                                         f"on a GPU, or do without {missing}")
            self._report_or_compile_error(debug=True)  # NVRTC first: the GPU's own compile errors
            try:
                self._cpu = CpuModule(self.text, self.filename, self.cxx,
                                      list(self.source.variables), defines)
            except CompileError as exc:
                raise KernelCompileError(str(exc)) from None
            _warn(self._cpu.warnings)

    @cached_property
    def source_text_masked(self) -> str:
        """The source with comments, literals and preprocessor lines blanked (for _pointer_member)."""
        return cuda_source._mask(self.text)

    def function(self, name: str):
        """The CuPy RawKernel (GPU backend), compiled on first use."""
        if name not in self._functions:
            try:
                self._functions[name] = self._raw.get_function(name)
            except cupy.cuda.compiler.CompileException as exc:
                raise KernelCompileError(f"{self.filename} does not compile (NVRTC, for {name}):\n"
                                         f"{exc}{compiler_log.compile_hint(str(exc))}") from None
        return self._functions[name]

    def _report_or_compile_error(self, debug: bool = False):
        """ptxas's report for every kernel of the module ({} where NVRTC gives none). With
        ``debug`` (the CPU backend's first step) it comes from a compile to PTX without
        optimization (-G, no ptxas): a third of a second instead of up to half a minute for
        09_sgemm.cu, with the same compile errors, and the static shared memory of the whole
        module (compiler_log.MODULE: a bound for each kernel); registers, spills and each
        kernel's own shared memory come from the optimized build, made when first asked for."""
        global _no_report
        attr = "_debug_report" if debug else "_report"
        if getattr(self, attr) is None and _no_report and BACKEND == "gpu":  # none before: don't
            # compile again (on the CPU the NVRTC compile also reports the GPU compiler's errors)
            setattr(self, attr, {})
            self._report_error = _no_report
        if getattr(self, attr) is None:
            arch = CPU_ARCH
            if BACKEND == "gpu":
                arch = "sm_" + cupy.cuda.Device().compute_capability
            options = self.gpu_options + (("-G",) if debug else ())
            try:
                report = compiler_log.ptxas_report(self.text, self.filename, options, arch,
                                                   self.names, ptx_only=debug)
                if report.get(compiler_log.MODULE, {}).get("shared_size_bytes", 0) > STATIC_SHARED:
                    # over ptxas's limit for some kernel, maybe: ptxas's own answer (its error)
                    report = compiler_log.ptxas_report(self.text, self.filename, options, arch,
                                                       self.names)
                setattr(self, attr, report)
            except KernelSourceError as exc:
                if BACKEND == "cpu" and _toolkit_lacks_groups(str(exc), self.text):
                    setattr(self, attr, {})  # the emulator has its own cooperative groups
                    return {}
                raise KernelCompileError(str(exc)) from None
            except RuntimeError as exc:
                setattr(self, attr, {})  # no NVRTC report here: the resource report is unavailable
                self._report_error = _no_report = str(exc)
        return getattr(self, attr)

    def attributes(self, name: str) -> dict:
        report = self._report_or_compile_error().get(name)
        if BACKEND == "gpu":
            attrs = dict(self.function(name).attributes)
            for key in ("spill_stores", "spill_loads"):  # None where NVRTC gives no ptxas report
                attrs[key] = report[key] if report else None
            return attrs
        if report is None:
            raise RuntimeError(f"{name}: no resource report ({self._report_error}); "
                               f"`pip install -r requirements.txt` provides nvidia-cuda-nvrtc-cu12")
        return dict(report)

    def static_shared(self, name: str, exact: bool = False) -> int:
        """Static shared memory of kernel ``name``, queried once (launches ask for it each time).
        On the CPU it first comes from the unoptimized build, which may count more (shared
        arrays the optimizer drops); ``exact`` asks the optimized build, as the GPU has it. A
        launch the first count refuses is checked again with the exact one."""
        exact = exact and BACKEND == "cpu"
        if (name, exact) not in self._static_shared:
            if BACKEND == "gpu":
                value = self.function(name).attributes["shared_size_bytes"]
            else:
                report = self._report_or_compile_error(debug=not exact)
                report = report.get(name) or report.get(compiler_log.MODULE)
                value = report["shared_size_bytes"] if report else 0
            self._static_shared[name, exact] = value
        return self._static_shared[name, exact]

    def param_sizes(self, name: str) -> list:
        """sizeof of each parameter of kernel ``name`` as the compiler has it (None where
        unknown: a GPU driver older than CUDA 12.4)."""
        if name not in self._sizes:
            self._sizes[name] = (_gpu_param_sizes(self.function(name), len(self.signatures[name]))
                                 if BACKEND == "gpu" else self._cpu.param_sizes(name))
        return self._sizes[name]

    def set_constant(self, name: str, values) -> None:
        """Kernel.set_constant: checks ``values`` against the variable, then writes them (GPU)
        or keeps them for the worker to write before every launch (CPU)."""
        var = self.source.variables.get(name)
        if var is None:
            known = ", ".join(self.source.variables) or "none"
            raise LaunchError(f"{self.filename} has no __constant__ or __device__ variable {name!r} "
                              f"at namespace scope (it has: {known})")
        if var.const:
            raise LaunchError(f"{name} ({var.file}, line {var.line}) is declared const: the "
                              f"compiler may have used its initial value already; drop the const "
                              f"to set it from Python")
        data = np.ascontiguousarray(values)
        info = cuda_source.type_info(var.base)
        if info and data.dtype != info[1]:
            raise LaunchError(f"{name} holds {var.base} values: pass np.{info[1]} data, got "
                              f"{data.dtype}")
        if BACKEND == "gpu":
            memory, size = self._raw.get_global(name)
        else:
            size = self._cpu.symbol_size(name)
        if size is not None and data.nbytes > size:
            raise LaunchError(f"{name} ({var.file}, line {var.line}) has {size} bytes; "
                              f"{data.nbytes} bytes given ({data.size} {data.dtype})")
        if BACKEND == "gpu":
            memory.copy_from_host(data.ctypes.data, data.nbytes)
        else:
            self._cpu.symbols[name] = data.tobytes()

    def launch(self, name, grid, block, args, params, shared_mem, timeout_s=None):
        if BACKEND == "cpu":
            from .emulator import KernelFault
            from .emulator import launch_message, pointer_member_refusal
            refusal = pointer_member_refusal(params, self.source_text_masked)
            if refusal:
                raise LaunchError(f"{name}: {refusal}")
            try:
                self._cpu.launch(name, grid, block, args, params, shared_mem, timeout_s)
            except KernelFault as exc:
                raise LaunchError(f"{name}: {launch_message(str(exc), args, params)}") from None
            return
        args = tuple(_by_value(p, a) for p, a in zip(params, args))
        try:
            self.function(name)(grid, block, args, shared_mem=shared_mem)
        except cupy.cuda.driver.CUDADriverError as exc:
            raise LaunchError(f"{name}: the launch failed: {exc}") from None


def _gpu_param_sizes(function, count: int) -> list:
    """The size of each of a CuPy kernel's parameters, from the driver (cuFuncGetParamInfo,
    CUDA 12.4 and later), or Nones."""
    import ctypes
    info = getattr(_libcuda(), "cuFuncGetParamInfo", None)
    if info is None:
        return [None] * count
    info.restype = ctypes.c_int
    info.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
                     ctypes.POINTER(ctypes.c_size_t)]
    sizes = []
    for i in range(count):
        offset, size = ctypes.c_size_t(), ctypes.c_size_t()
        ok = info(function.kernel.ptr, i, ctypes.byref(offset), ctypes.byref(size)) == 0
        sizes.append(size.value if ok else None)
    return sizes


_no_report: str | None = None
"""Why NVRTC gives no resource report in this process (CUDA 13's NVRTC drops ptxas's -v output),
once seen: later modules skip that extra compile."""
_modules: dict[tuple, _Module] = {}
_kernels: dict[tuple, Kernel] = {}
_lock = threading.Lock()


def _build_key(source: str | Path, defines: dict | None, options,
               instance: str | None = None) -> tuple[Path, dict, tuple, str]:
    """One build's source path, its defines as strings (not those equal to the source's own
    defaults), the key of its module and its text. The key holds a hash of the expanded text: a
    header edited since the last load makes a new build in this process too."""
    path = cuda_source.resolve(source)
    text, digest = _expanded(path)
    defaults = cuda_source.default_defines(text)  # -DX=X's default: the build without it
    defines = {str(k): str(v) for k, v in (defines or {}).items() if defaults.get(str(k)) != str(v)}
    from .emulator import checking
    check = BACKEND == "cpu" and checking()  # the check mode is another build
    key = (BACKEND, str(path), digest, tuple(sorted(defines.items())), tuple(options), check,
           instance)
    return path, defines, key, text


_texts: dict[Path, tuple] = {}
"""A source's path -> the files read_source read, their os.stat signatures, the text and its
hash: a load reads and hashes the files again only where one of them changed (``KernelSpec``
loads its kernel at every launch)."""


def _signature(files) -> tuple:
    found = []
    for f in files:
        try:
            st = os.stat(f)
            found.append((st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino))
        except OSError:
            found.append(None)
    return tuple(found)


def _expanded(path: Path) -> tuple[str, str]:
    """The text of ``path`` with its includes expanded (read_source), and its SHA-256."""
    import hashlib
    cached = _texts.get(path)
    if cached is None or _signature(cached[0]) != cached[1]:
        files: list[Path] = []
        text = cuda_source.read_source(path, files=files)
        cached = _texts[path] = (files, _signature(files), text,
                                 hashlib.sha256(text.encode()).hexdigest())
    return cached[2], cached[3]


def _module(source: str | Path, defines: dict | None, options,
            instance: str | None = None) -> tuple[tuple, _Module]:
    """The module of one build (created once: on the GPU CuPy compiles it at its first
    function), and its key; ``instance``: a template kernel's name expression it builds too."""
    path, defines, key, text = _build_key(source, defines, options, instance)
    with _lock:
        module = _modules.get(key)
    if module is None:
        module = _Module(path, text, defines, tuple(options), instance)
        with _lock:
            module = _modules.setdefault(key, module)
    return key, module


def load_kernel(source: str | Path, name: str, defines: dict | None = None,
                options: tuple[str, ...] = ()) -> Kernel:
    """Compile (once) the kernel ``name`` of ``source`` with ``-D`` defines; return it.

    ``source`` is a file in ``book/kernels/`` or a path. ``options`` go to NVRTC on the GPU
    (e.g. ``("--fmad=false",)``); the CPU build never contracts a*b+c into an FMA. ``name`` is a
    ``__global__`` function's name, extern "C" or not (``ns::k`` in a namespace), or a template
    kernel's with its arguments, ``"k<128, float>"`` (its own build, on both backends).
    """
    instance = " ".join(name.split()) if "<" in name else None
    key, module = _module(source, defines, options, instance)
    name = instance or name
    decl = module.source.kernels.get(name)
    if name in module.source.problems:
        raise KernelSourceError(f"{module.filename}: {module.source.problems[name]}")
    if decl is not None and decl.template is not None:
        raise KernelSourceError(
            f"{module.filename}: {name} is a template kernel, {decl.template_text()} ({decl.file}, "
            f"line {decl.line}): name its arguments, as in load_kernel(src, \"{cuda_source.example(decl)}"
            f"\"), or add an extern \"C\" __global__ kernel that calls {name}<...> with them")
    if name not in module.signatures:
        known = ", ".join(module.source.kernels) or "none"
        raise KernelSourceError(f"{module.filename} has no __global__ kernel "
                                f"{name!r} (it defines: {known})")
    problem = next((p.problem for p in module.signatures[name] if p.problem), None)
    if problem:
        raise KernelSourceError(f"{module.filename}: {problem}")
    if BACKEND == "gpu":
        module.function(name)  # compile now, so compile errors surface at load time
    if (key, name) not in _kernels:
        _kernels[key, name] = Kernel(module, name)
    return _kernels[key, name]


def built(builds) -> bool:
    """Whether every build of ``builds`` (``(source, defines, options)``) is compiled already:
    loaded in this process or its cubin in the book's cache (always, on the CPU backend). A
    build's marker (:func:`build_marker`) answers without reading the source's declarations."""
    if BACKEND != "gpu":
        return True
    return all(_built(source, defines, tuple(options)) for source, defines, options in builds)


def _built(source, defines, options) -> bool:
    marker = build_marker(source, defines, options)
    if marked(marker):
        return True
    module = _module(source, defines, options)[1]._raw
    if not module.built():
        return False
    mark_built(marker, module._paths()[0])
    return True


def build_marker(source, defines, options, arch: str | None = None) -> Path:
    """Where the cubin cache notes that one build (``source``, ``defines``, ``options``) for
    ``arch`` (default: this GPU's) is there: a file named by a hash of the build as given,
    holding the cubin's name -- found without the scan of the source that the cubin's own key
    needs (a few ms per build of 09_sgemm.cu, a third of a second over a first call's plans)."""
    import hashlib
    path, defines, key, _ = _build_key(source, defines, tuple(options))
    name = hashlib.sha256(repr((key[2], sorted(defines.items()), tuple(options),
                                *_toolchain(arch))).encode()).hexdigest()[:24]
    return cuda_source.cache_dir("cubin") / "built" / name


def build_all(builds, workers: int | None = None, device: int | None = None) -> int:
    """Compile many builds at once on the GPU, one thread each (NVRTC builds are independent and
    CuPy's compile runs outside Python's lock); returns how many compiled.

    ``builds`` holds ``(source, defines, options)``. Each becomes the module that a later
    :func:`load_kernel` of the same build finds ready (and the cubin cache keeps it for the
    next process). A build that fails is left for that load to report, with its own message.
    ``sweep`` and ``check_kernels`` call it with every kernel they are given, so a chapter's
    first run compiles its kernels side by side instead of one after the other. On the CPU
    backend nothing is built ahead (the emulator caches its libraries on disk). ``device``: the
    GPU to build for (default: the calling thread's). (A compile that must not hold up the
    caller runs in a process of its own: ``blas.choice.compile_behind``.)
    """
    if BACKEND != "gpu":
        return 0
    from concurrent.futures import ThreadPoolExecutor

    device = cupy.cuda.Device().id if device is None else device

    def build(job) -> bool:
        try:
            cupy.cuda.Device(device).use()  # binds the context to this thread (cudaSetDevice)
            source, defines, options = job
            _module(source, defines, tuple(options))[1]._raw.compile()  # NVRTC's build, now
            return True
        except Exception:  # noqa: BLE001 -- the chapter's own load reports it
            return False

    jobs = {}  # each build once: two threads would compile the same module twice
    for source, defines, options in builds:
        jobs.setdefault(_build_key(source, defines, tuple(options))[2], (source, defines, options))
    workers = workers or min(32, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return sum(pool.map(build, jobs.values()))


