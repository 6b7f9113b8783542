"""The CPU backend: the same CUDA C source, compiled as C++20 with ``include/cuda_emu.h``.

Used by :mod:`book.runtime` when there is no GPU (chapter 0 explains the two backends). Each
(source, defines) pair becomes one shared library exporting ``cuda_emu_launch_<kernel>`` for
every kernel in the file; libraries are cached on disk by a hash of everything that goes into
them (source text, defines, header, compiler and flags), so a second run does not recompile.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

HEADER = Path(__file__).resolve().parent / "include" / "cuda_emu.h"
# -ffp-contract=off: a * b + c is never fused into an FMA (chapter 7 compares with the GPU's FMA).
FLAGS = ("-std=c++20", "-O2", "-shared", "-fPIC", "-pthread", "-ffp-contract=off",
         "-Wno-unknown-pragmas", "-Wno-attributes")
COMPILES = {"count": 0}  # number of real compiler runs in this process (tests read it)

# What the header needs from the C++ library; a compiler whose library lacks it is skipped.
_PROBE = r"""
#include <atomic>
#include <thread>
#include <tuple>
#include <ucontext.h>
int main() { float f = 0; std::atomic_ref<float>(f).fetch_add(1.0f);
             std::thread t([]{}); t.join(); ucontext_t c; getcontext(&c);
             return std::apply([](int a){ return a - 1; }, std::tuple<int>{1}); }
"""


class CompilerNotFound(RuntimeError):
    """No C++20 compiler with the needed library was found."""


def cache_dir() -> Path:
    root = os.environ.get("BOOK_CACHE_DIR") or Path.home() / ".cache" / "gpu-matmul-book"
    path = Path(root) / "cpu"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _candidates() -> list[list[str]]:
    found = []
    if os.environ.get("CXX"):
        found.append(os.environ["CXX"].split())
    for name in ("c++", "g++", "clang++"):
        if shutil.which(name):
            found.append([name])
    found.append([sys.executable, "-m", "ziglang", "c++"])
    return found


@lru_cache(maxsize=None)
def compiler() -> tuple[tuple[str, ...], str]:
    """(command, version line) of the first C++ compiler that builds the probe program."""
    tried = []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cpp"
        src.write_text(_PROBE)
        for cmd in _candidates():
            try:
                version = subprocess.run([*cmd, "--version"], capture_output=True, text=True,
                                         timeout=120)
                build = subprocess.run([*cmd, "-std=c++20", "-pthread", str(src), "-o",
                                        str(Path(tmp) / "probe")], capture_output=True,
                                       text=True, timeout=300)
            except (OSError, subprocess.TimeoutExpired) as exc:
                tried.append(f"{' '.join(cmd)}: {exc}")
                continue
            if version.returncode == 0 and build.returncode == 0:
                line = (version.stdout.strip().splitlines() or ["?"])[0]
                return tuple(cmd), line
            tried.append(f"{' '.join(cmd)}: {(build.stderr or version.stderr).strip()[:300]}")
    raise CompilerNotFound("no C++20 compiler with <atomic>, <thread> and ucontext found for the "
                           "CPU backend. Install g++ or `pip install -r requirements.txt` (ziglang)."
                           "\nTried:\n  " + "\n  ".join(tried))


_EXTERN_SHARED = re.compile(
    r"^(\s*)extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?([A-Za-z_][\w ]*?)\s+(\w+)\s*\[\s*\]\s*;",
    re.M)


def emulate_source(text: str) -> str:
    """Rewrite ``extern __shared__ T name[];`` to read the launch's dynamic shared buffer."""
    return _EXTERN_SHARED.sub(
        r"\1#define \3 (reinterpret_cast<\2*>(::cuda_emu::dynamic_smem))", text)


def _wrapper(text: str, kernels) -> str:
    exports = "\n".join(
        f'extern "C" int cuda_emu_launch_{k}(const unsigned* g, const unsigned* b, '
        f'std::size_t smem, void** args, unsigned workers, char* err, std::size_t err_size) '
        f'{{ return ::cuda_emu::launch({k}, g, b, smem, args, workers, err, err_size); }}'
        for k in kernels)
    return f'#include "cuda_emu.h"\n{emulate_source(text)}\n#line 1 "<cuda_emu exports>"\n{exports}\n'


class CompileError(RuntimeError):
    """The C++ compiler rejected a kernel source; the message carries its output."""


class KernelFault(RuntimeError):
    """A launch stopped by an error the emulator found (the runtime raises it as LaunchError)."""


_lock = threading.Lock()


def build_library(unit: str, stem: str, args: list[str], suffix: str = ".cpp") -> Path:
    """Compile ``unit`` into a shared library in the cache (once per content hash); its path."""
    cmd, version = compiler()
    key = hashlib.sha256("\0".join([unit, HEADER.read_text(), " ".join(cmd), version,
                                    *args]).encode()).hexdigest()[:32]
    lib = cache_dir() / f"{stem}-{key}.so"
    with _lock:
        if lib.exists():
            return lib
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / (stem + suffix)
            src.write_text(unit)
            out = Path(tmp) / lib.name
            proc = subprocess.run([*cmd, *args, str(src), "-o", str(out)],
                                  capture_output=True, text=True)
            COMPILES["count"] += 1
            if proc.returncode != 0:
                raise CompileError(f"{stem}: the C++ compiler ({' '.join(cmd)}) failed:\n"
                                   f"{proc.stderr.strip()}")
            os.replace(out, lib)  # atomic: a crash never leaves half a library in the cache
    return lib


class CpuModule:
    """One compiled source on the CPU: launch any of its kernels."""

    def __init__(self, text: str, filename: str, kernels, defines: dict[str, str]):
        args = [*FLAGS, f"-I{HEADER.parent}", *(f"-D{k}={v}" for k, v in defines.items())]
        self.path = build_library(_wrapper(text, kernels), Path(filename).stem, args)
        self._lib = ctypes.CDLL(str(self.path))

    def launch(self, kernel: str, grid, block, args, params, shared_mem: int) -> None:
        storage, pointers = [], []
        for value, param in zip(args, params):
            if param.pointer:
                cell = ctypes.c_void_p(value.ctypes.data)
            else:
                cell = ctypes.create_string_buffer(np.asarray(value).tobytes(), param.dtype.itemsize)
            storage.append(cell)
            pointers.append(ctypes.addressof(cell))
        argv = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
        workers = int(os.environ.get("BOOK_CPU_THREADS") or os.cpu_count() or 1)
        fn = getattr(self._lib, f"cuda_emu_launch_{kernel}")
        fn.restype = ctypes.c_int
        message = ctypes.create_string_buffer(2048)
        failed = fn((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block),
                    ctypes.c_size_t(shared_mem), argv, ctypes.c_uint(workers), message,
                    ctypes.c_size_t(len(message)))
        if failed:
            raise KernelFault(message.value.decode(errors="replace"))
