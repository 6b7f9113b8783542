"""The CPU backend: the same CUDA C source, compiled as C++20 with ``include/cuda_emu.h``.

Used by :mod:`book.runtime` when there is no GPU (chapter 0 explains the two backends). Each
(source, defines) pair becomes one shared library exporting ``cuda_emu_launch_<kernel>`` for
every kernel in the file; libraries are cached on disk by a hash of everything that goes into
them (source text, defines, header, compiler and flags), so a second run does not recompile.
"""
from __future__ import annotations

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

from . import cuda_source
from .rewrite import checking, emulate_source, unsupported_header  # noqa: F401 (re-exported)
from .worker import (STACK_KIB, KernelFault, _launch_here, _worker,  # noqa: F401 (re-exported)
                     timeout_limit)

HEADER = Path(__file__).resolve().parent / "include" / "cuda_emu.h"
"""The header in front of every kernel; it includes its parts, ``include/cuda_emu/*.h``."""


def header_text() -> str:
    """The text of cuda_emu.h and of every part it includes (what a build's cache key hashes)."""
    parts = sorted(HEADER.parent.rglob("*.h"))
    return "\0".join(f"{p.relative_to(HEADER.parent)}\n{p.read_text()}" for p in parts)
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
    return cuda_source.cache_dir("cpu")


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
                return tuple(cmd), re.sub(r"^(\S+?)-real\b", r"\1", line)  # a wrapper's name
            tried.append(f"{' '.join(cmd)}: {(build.stderr or version.stderr).strip()[:300]}")
    raise CompilerNotFound("no C++20 compiler with <atomic>, <thread> and ucontext found for the "
                           "CPU backend. Install g++ or `pip install -r requirements.txt` (ziglang)."
                           "\nTried:\n  " + "\n  ".join(tried))


def _wrapper(text: str, kernels, check: bool = False) -> str:
    exports = "\n".join(
        f'extern "C" int cuda_emu_launch_{k}(const unsigned* cuda_emu_grid, '
        f'const unsigned* cuda_emu_block, std::size_t cuda_emu_smem, void** cuda_emu_args, '
        f'unsigned cuda_emu_workers, char* cuda_emu_err, std::size_t cuda_emu_err_size, '
        f'void* cuda_emu_fault) '
        f'{{ return ::cuda_emu::launch(::{k}, cuda_emu_grid, cuda_emu_block, cuda_emu_smem, '
        f'cuda_emu_args, cuda_emu_workers, cuda_emu_err, cuda_emu_err_size, cuda_emu_fault); }}'
        for k in kernels)  # the parameters' names cannot shadow a kernel's (a kernel named g)
    mode = "#define CUDA_EMU_CHECK 1\n" if check else ""  # the check mode's extra checks
    return (f'{mode}#include "cuda_emu.h"\n{emulate_source(text)}\n#line 1 "<cuda_emu exports>"\n'
            f'{exports}\n')


class CompileError(RuntimeError):
    """The C++ compiler rejected a kernel source; the message carries its output."""


_lock = threading.Lock()


def build_library(unit: str, stem: str, args: list[str], suffix: str = ".cpp") -> Path:
    """Compile ``unit`` into a shared library in the cache (once per content hash); its path."""
    cmd, version = compiler()
    key = hashlib.sha256("\0".join([unit, header_text(), " ".join(cmd), version,
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
    """One compiled source on the CPU: launch any of its kernels (in the worker process)."""

    def __init__(self, text: str, filename: str, kernels, defines: dict[str, str]):
        args = [*FLAGS, f"-I{HEADER.parent}", *(f"-D{k}={v}" for k, v in defines.items())]
        self.check = checking()
        stem = Path(filename).stem + ("-check" if self.check else "")
        self.path = build_library(_wrapper(text, kernels, self.check), stem, args)

    def launch(self, kernel: str, grid, block, args, params, shared_mem: int,
               timeout_s: float | None = None) -> None:
        workers = int(os.environ.get("BOOK_CPU_THREADS") or os.cpu_count() or 1)
        if os.environ.get("BOOK_EMU_ISOLATION", "1") == "0":  # in this process: no safety net
            return _launch_here(str(self.path), kernel, grid, block, args, params, shared_mem,
                                workers)
        _worker.launch(str(self.path), kernel, grid, block, args, params, shared_mem, workers,
                       timeout_limit(timeout_s))
