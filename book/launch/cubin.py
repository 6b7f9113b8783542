"""The GPU's cubins: NVRTC's builds kept on disk (``cache_dir("cubin")``) by source, options,
architecture and NVRTC's version, loaded without CuPy's ``-ftz=true``; the markers that say a
build is there without scanning its source; the warnings of a build's log. (``runtime`` uses
this; this uses only ``cuda_source``.)"""
from __future__ import annotations

import os
import threading
import warnings
from functools import lru_cache
from pathlib import Path

from . import compiler_log, cuda_source

try:
    import cupy
except ImportError:  # (the CPU backend without CuPy: nothing here is called)
    cupy = None


class CompilerWarning(UserWarning):
    """A warning of the compiler about a line of the kernel's own source (an uninitialized
    variable, say): shown at every load, from the compiler's run or from the build cache."""


def _warn(found: list[str]) -> None:
    """Each of ``found`` as a CompilerWarning, shown where the caller outside book.launch is."""
    import sys
    level, frame = 2, sys._getframe(1)  # (stacklevel 2: the caller of _warn)
    while frame is not None and frame.f_code.co_filename.startswith(str(Path(__file__).parent)):
        level, frame = level + 1, frame.f_back
    for text in found:
        warnings.warn(text, CompilerWarning, stacklevel=level)


class _NoFlushModule:
    """A CUDA module built by NVRTC with ``options`` and ``-ftz=false``, loaded from a cubin that
    is kept on disk (``cache_dir("cubin")``, by source, options, GPU and NVRTC version).

    Why not ``cupy.RawModule(code=...)``: CuPy appends ``-ftz=true`` to every compile, after the
    caller's options, so a ``-ftz=false`` of ours is overridden (measured on an H100: 1e-20 *
    1e-20 gives 0). Float32 results below 2^-126 would then be flushed to zero -- FFMA products
    of inputs near 1e-18, and 3xTF32's scaled-back outputs -- where cuBLAS SGEMM keeps them as
    subnormals (chapter 10).

    ``names``: the name expressions of the kernels and variables without C linkage (``k``,
    ``k<128, float>``, ``&ns::coef``): NVRTC gives their mangled names, kept beside the cubin
    with NVRTC's log (its warnings are shown at every load)."""

    def __init__(self, text: str, options: tuple[str, ...], filename: str, names: tuple[str, ...] = ()):
        self.text, self.options, self.filename = text, tuple(options) + ("-ftz=false",), filename
        self.names, self.mapping, self._raw = tuple(names), {}, None
        self._lock = threading.Lock()

    def _paths(self, arch: str | None = None) -> tuple[Path, Path]:
        """The cubin on disk for ``arch`` ("90"; default: this GPU's) and its notes ({"mapping":
        lowered names, "log": NVRTC's log})."""
        import hashlib
        key = hashlib.sha256(repr((self.text, self.options, self.names, *_toolchain(arch))
                                  ).encode()).hexdigest()[:24]
        path = cuda_source.cache_dir("cubin") / f"{Path(self.filename).stem}-{key}.bin"
        return path, path.with_suffix(".json")

    def built(self, arch: str | None = None) -> bool:
        """Whether loading this module costs no compile: loaded, or its cubin on disk."""
        return (self._raw is not None and arch is None) or all(p.exists() for p in self._paths(arch))

    def write_cubin(self, arch: str | None = None) -> Path:
        """Compile with NVRTC for ``arch`` ("90"; default: this GPU's) into the cache, unless
        there already: no GPU and no CUDA context needed (``book.blas.prebuild``)."""
        import io
        import json

        from cupy.cuda import compiler
        path, notes = self._paths(arch)
        if not (path.exists() and notes.exists()):
            log = io.StringIO()
            program = compiler._NVRTCProgram(self.text, self.filename,
                                             name_expressions=self.names or None, method="cubin")
            options = (*self.options, f"-arch=sm_{arch or gpu_arch()}",
                       "--device-as-default-execution-space")
            obj, mapping = program.compile(options, log)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps({"mapping": mapping or {}, "log": log.getvalue()}))
            tmp.replace(notes)
            tmp.write_bytes(obj if isinstance(obj, bytes) else obj.encode())
            tmp.replace(path)  # whole, even where two processes build the same module
        return path

    def compile(self):
        with self._lock:  # (two threads, the caller's and a background build's: one compile)
            return self._compile()

    def _compile(self):
        if self._raw is None:
            import json
            path = self.write_cubin()
            notes = path.with_suffix(".json")
            stored = json.loads(notes.read_text())
            self.mapping = stored["mapping"]
            _warn(compiler_log.compiler_warnings(stored["log"], self.text, "NVRTC"))
            self._raw = cupy.RawModule(path=str(path))
        return self._raw

    def get_function(self, name: str):
        return self.compile().get_function(self.mapping.get(name, name))

    def get_global(self, name: str):
        """The device memory of the variable ``name`` (CuPy's MemoryPointer) and its size in
        bytes, from the driver (cuModuleGetGlobal: CuPy's pointer does not hold it), or None."""
        import ctypes
        raw, lowered = self.compile(), self.mapping.get("&" + name, name)
        memory, size = raw.get_global(lowered), None
        get = getattr(_libcuda(), "cuModuleGetGlobal_v2", None)
        if get is None:
            return memory, size
        get.restype = ctypes.c_int
        get.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t),
                        ctypes.c_void_p, ctypes.c_char_p]
        address, found = ctypes.c_uint64(), ctypes.c_size_t()
        if get(ctypes.byref(address), ctypes.byref(found), raw.module.ptr, lowered.encode()) == 0:
            size = found.value
        return memory, size


def gpu_arch() -> str:
    """The current GPU's architecture as NVRTC's -arch takes it ("90"): the newest NVRTC can
    build for, at most the GPU's."""
    from cupy.cuda import compiler
    return compiler._get_arch()


def _toolchain(arch: str | None) -> tuple:
    """What a cubin is built with: (``arch``, default the current GPU's; NVRTC's version; CuPy's),
    the versions asked once."""
    return (arch or gpu_arch(), *_versions())


@lru_cache(maxsize=1)
def _versions() -> tuple:
    from cupy.cuda import nvrtc
    return nvrtc.getVersion(), cupy.__version__


def marked(marker: Path) -> bool:
    """Whether ``marker`` (:func:`build_marker`) names a cubin that is in the cache."""
    return marker.exists() and (marker.parent.parent / marker.read_text()).exists()


def mark_built(marker: Path, cubin: Path) -> None:
    marker.parent.mkdir(exist_ok=True)
    tmp = marker.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(cubin.name)
    tmp.replace(marker)


@lru_cache(maxsize=1)
def _libcuda():
    """The CUDA driver's library (ctypes), or None."""
    import ctypes
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
