"""The CPU backend: the same CUDA C source, compiled as C++20 with ``include/cuda_emu.h``.

Used by :mod:`book.runtime` when there is no GPU (chapter 0 explains the two backends). Each
(source, defines) pair becomes one shared library exporting ``cuda_emu_launch_<kernel>`` for
every kernel in the file (``cuda_emu_sizes_<kernel>``: its parameters' sizes), and
``cuda_emu_symbol_<variable>`` (its address) for every ``__constant__`` / ``__device__``
variable; libraries are cached on disk by a hash of everything that goes into them (source
text, defines, header, compiler and flags), so a second run does not recompile. The compiler's
warnings about the source's own lines are kept beside the library and shown at every load. The
header is precompiled once per header text and flags (:func:`precompiled_header`, g++ only),
and the compiler's probe kept in the cache: a build reads no header and probes nothing.
"""
from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from . import compiler_log, cuda_source
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
# -O1 (with -ftree-vrp, which -Warray-bounds needs): builds about a quarter faster than -O2's, for
# a learner's every edit and make test's cold cache, at the same speed of the tests' launches.
FLAGS = ("-std=c++20", "-O1", "-ftree-vrp", "-shared", "-fPIC", "-pthread", "-ffp-contract=off",
         "-Wno-unknown-pragmas", "-Wno-attributes")
WARNINGS = ("-Wuninitialized", "-Wsequence-point", "-Wsizeof-pointer-div",
            "-Wsizeof-pointer-memaccess", "-Wint-in-bool-context", "-Warray-bounds", "-Wreturn-type")
"""The compiler's warnings shown to the learner (only about lines of the kernel's own source): a
variable read before it is set (``float acc; acc += ...``), ``i = i++``, ``sizeof(p) /
sizeof(p[0])`` of a pointer, a constant index past a local array, a function that does not
return its value."""
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
    """(command, version line) of the first C++ compiler that builds the probe program. The answer
    is kept in the cache (``compiler-<hash of the candidates>.json``), and reused while that
    compiler's version line stays the same: each process asks, and the probe's build costs half
    a second (remove the file to probe again)."""
    candidates = _candidates()
    digest = hashlib.sha256(json.dumps(candidates).encode()).hexdigest()[:16]
    stored = cache_dir() / f"compiler-{digest}.json"
    try:
        known = json.loads(stored.read_text())
        if known["candidates"] == candidates and _version_line(known["cmd"]) == known["version"]:
            return tuple(known["cmd"]), known["version"]
    except (OSError, ValueError, KeyError, TypeError, subprocess.TimeoutExpired):
        pass
    cmd, version = _probe(candidates)
    tmp = stored.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"candidates": candidates, "cmd": list(cmd), "version": version}))
    os.replace(tmp, stored)
    return cmd, version


def _version_line(cmd: list[str]) -> str | None:
    """The first line of ``cmd --version`` (a wrapper's name as the compiler's), or None."""
    version = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=120)
    if version.returncode != 0:
        return None
    line = (version.stdout.strip().splitlines() or ["?"])[0]
    return re.sub(r"^(\S+?)-real\b", r"\1", line)


def _probe(candidates: list[list[str]]) -> tuple[tuple[str, ...], str]:
    tried = []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cpp"
        src.write_text(_PROBE)
        for cmd in candidates:
            try:
                line = _version_line(cmd)
                build = subprocess.run([*cmd, "-std=c++20", "-pthread", str(src), "-o",
                                        str(Path(tmp) / "probe")], capture_output=True,
                                       text=True, timeout=300)
            except (OSError, subprocess.TimeoutExpired) as exc:
                tried.append(f"{' '.join(cmd)}: {exc}")
                continue
            if line is not None and build.returncode == 0:
                return tuple(cmd), line
            tried.append(f"{' '.join(cmd)}: {build.stderr.strip()[:300] or 'no --version'}")
    raise CompilerNotFound("no C++20 compiler with <atomic>, <thread> and ucontext found for the "
                           "CPU backend. Install g++ or `pip install -r requirements.txt` (ziglang)."
                           "\nTried:\n  " + "\n  ".join(tried))


def base_flags(check: bool) -> tuple[str, ...]:
    """The compiler's options for every build of a kernel source, before its -D defines (the
    check mode's builds define CUDA_EMU_CHECK)."""
    return (*FLAGS, *WARNINGS, f"-I{HEADER.parent}",
            *(("-DCUDA_EMU_CHECK=1", *_ub_check()) if check else ()))


def _ub_check() -> tuple[str, ...]:
    """The check mode's flags that stop, at their line, what C++ leaves undefined and a GPU
    does not do as this CPU does (builtins.h's handlers): a shift by the width or more, an index
    past a local or member array of known size (`int hist[4]; hist[k]`, `s.v[32]` of a
    __shared__ struct), an integer division by zero. g++ and clang, not zig's (whose runtime is
    not libubsan's)."""
    if any("ziglang" in part for part in compiler()[0]):
        return ()
    return UB_CHECK


UB_CHECKED = "shift-exponent,bounds,integer-divide-by-zero"
UB_CHECK = (f"-fsanitize={UB_CHECKED}", f"-fno-sanitize-recover={UB_CHECKED}", "-Wl,--as-needed")


def precompiled_header(base: tuple[str, ...]) -> tuple[str, ...]:
    """The options that build a unit on what is compiled once per header text, compiler and
    flags, in a folder of the cache: ``-I`` of g++'s ``cuda_emu.h.gch`` (which g++ takes in
    place of the header where a unit is built with the same flags: reading the header's C++
    library and parts took about a second of every build, half of a small kernel's), and
    ``cuda_emu_runtime.o``, the launch's scheduler and the file-scope definitions
    (CUDA_EMU_EXTERN_RUNTIME, cuda_emu.h), linked into each library instead of compiled into it
    (about 0.7 s more of every build). Built by one process while the others wait; () for clang
    (zig) or where BOOK_EMU_PCH=0: each unit then compiles all of the header, with the same
    result. A unit whose -D defines clash with the header's names does not use the .gch: g++
    then reads the header itself; one that sets the header's own switches (CUDA_EMU_UCONTEXT)
    uses neither. A new folder removes all but the PCH_KEPT newest (75 MB each)."""
    cmd, version = compiler()
    if os.environ.get("BOOK_EMU_PCH", "1") == "0" or "clang" in version.lower():
        return ()
    flags = [a for a in base if a != "-shared" and not a.startswith("-Wl,")] + [EXTERN_RUNTIME]
    key = hashlib.sha256("\0".join([header_text(), " ".join(cmd), version, *flags]).encode()
                         ).hexdigest()[:32]
    folder = cache_dir() / f"pch-{key}"
    gch, runtime = folder / "cuda_emu.h.gch", folder / "cuda_emu_runtime.o"
    if not (gch.exists() and runtime.exists()):
        folder.mkdir(exist_ok=True)
        with open(folder / "lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)  # (released when the file closes)
            except OSError:  # a file system without locks: at worst two processes build it
                pass
            if not (gch.exists() and runtime.exists()) and not (folder / "failed.log").exists():
                src = folder / "cuda_emu_runtime.cpp"
                src.write_text('#define CUDA_EMU_RUNTIME 1\n#include "cuda_emu.h"\n')
                errors = []
                for target, how in ((gch, ["-x", "c++-header", str(HEADER)]), (runtime, ["-c", str(src)])):
                    tmp = folder / f"{target.name}.{os.getpid()}.tmp"
                    proc = subprocess.run([*cmd, *flags, *how, "-o", str(tmp)],
                                          capture_output=True, text=True)
                    if proc.returncode == 0:
                        os.replace(tmp, target)
                    else:  # (never seen) the units then compile all of the header
                        tmp.unlink(missing_ok=True)
                        errors.append(proc.stderr)
                if errors:
                    (folder / "failed.log").write_text("\n".join(errors))
                else:
                    _prune_precompiled()
    elif folder not in _used:
        _used.add(folder)
        with contextlib.suppress(OSError):  # (its age for _prune_precompiled: its last use)
            os.utime(folder)
    if not (gch.exists() and runtime.exists()):
        return ()
    return (EXTERN_RUNTIME, f"-I{folder}", str(runtime))


EXTERN_RUNTIME = "-DCUDA_EMU_EXTERN_RUNTIME=1"


PCH_KEPT = 6
_used: set[Path] = set()


def _prune_precompiled() -> None:
    """Removes all but the PCH_KEPT most recently used precompiled headers (each header edit
    and flag set makes one). A build that has already chosen a removed one reads the header."""
    def age(folder: Path) -> float:
        try:
            return -folder.stat().st_mtime
        except OSError:  # (removed by another process meanwhile)
            return 0.0
    for old in sorted(cache_dir().glob("pch-*"), key=age)[PCH_KEPT:]:
        shutil.rmtree(old, ignore_errors=True)


_SIZES = """template <class... P>
std::size_t cuda_emu_param_sizes(void (*)(P...), std::size_t* out) {
    std::size_t i = 0;
    ((out[i++] = sizeof(std::decay_t<P>)), ...);
    return i;
}"""


def export_id(name: str) -> str:
    """The part of a C export's name that stands for a kernel or variable: its own name, or for
    ``k<128, float>`` and ``ns::k`` one made of its letters and a hash of the whole."""
    if re.fullmatch(r"[A-Za-z_]\w*", name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return re.sub(r"\W+", "_", name).strip("_") + "_" + digest


def _wrapper(text: str, kernels: dict[str, str], variables: dict[str, str] | None = None) -> str:
    """The unit the compiler builds: the emulated source, then for each kernel (export id ->
    its C++ name: ``::k``, ``::k<128, float>``) its launch and the sizes of its parameters, and
    for each variable its address and size."""
    exports = [_SIZES]
    for k, fn in kernels.items():  # the parameters' names cannot shadow a kernel's (one named g)
        exports += [
            f'extern "C" int cuda_emu_launch_{k}(const unsigned* cuda_emu_grid, '
            f'const unsigned* cuda_emu_block, std::size_t cuda_emu_smem, void** cuda_emu_args, '
            f'unsigned cuda_emu_workers, char* cuda_emu_err, std::size_t cuda_emu_err_size, '
            f'void* cuda_emu_fault) '
            f'{{ return ::cuda_emu::launch(&{fn}, cuda_emu_grid, cuda_emu_block, cuda_emu_smem, '
            f'cuda_emu_args, cuda_emu_workers, cuda_emu_err, cuda_emu_err_size, cuda_emu_fault); }}',
            f'extern "C" std::size_t cuda_emu_sizes_{k}(std::size_t* out) '
            f'{{ return cuda_emu_param_sizes(&{fn}, out); }}']
    for v, var in (variables or {}).items():
        exports += [f'extern "C" void* cuda_emu_symbol_{v}() {{ return (void*)&{var}; }}',
                    f'extern "C" std::size_t cuda_emu_symbol_size_{v}() {{ return sizeof({var}); }}']
    return (f'#include "cuda_emu.h"\n{emulate_source(text)}\n#line 1 "<cuda_emu exports>"\n'
            + "\n".join(exports) + "\n")


_UNDECLARED = re.compile(r"error: (?:[‘'](\w+)[’'] (?:was not declared in this scope|does not name a "
                         r"type|has not been declared)|there are no arguments to [‘'](\w+)[’']|"
                         r"use of undeclared identifier '(\w+)'|unknown type name '(\w+)')")
"""g++'s and clang's errors about an unknown name (g++ quotes with ‘’ in a UTF-8 locale)."""
_CUDA_LOOKING = re.compile(
    r"__\w+|make_\w+|u?(?:char|short|int|long|longlong|float|double)[1-4]|half2?|nv_\w+|atomic\w+|"
    r"\w+_sync|cuda\w+|tex\w+|surf\w+|h2?(?:exp|exp2|exp10|log|log2|log10|sqrt|rsqrt|rcp|sin|cos|"
    r"tanh|floor|ceil|trunc|rint|abs|max|min|fma|neg)|(?:erfc?inv|normcdf|normcdfinv|rcbrt|sinpi|"
    r"cospi|sincospi|sincos|exp10|rsqrt|norm3d|norm4d|rnorm3d|rnorm4d|norm|rnorm|rhypot|erfcx|"
    r"cyl_bessel_i[01]|[jy][01n]|fdivide|scalbn|frexp|ldexp|nextafter|remquo)f?")
"""An identifier that looks like one of CUDA's built-ins: its intrinsics (``__double_as_longlong``),
vector types and their make_ functions, atomics, warp functions, half and math API functions."""


def missing_builtin_hint(log: str) -> str:
    """A line naming the CUDA built-ins among the identifiers the compiler did not know (``""``
    where none looks like one): the emulator lacks them, a GPU has them."""
    names = []
    for m in _UNDECLARED.finditer(log):
        name = next(g for g in m.groups() if g)
        if _CUDA_LOOKING.fullmatch(name) and name not in names:
            names.append(name)
    if not names:
        return ""
    listed, one = ", ".join(f"`{n}`" for n in names[:4]), len(names) == 1
    return (f"\n(hint: {listed} look{'s like a' if one else ' like'} CUDA built-in"
            f"{'' if one else 's'} that the CPU emulator does not provide: run the kernel on a GPU, "
            f"or write {'it' if one else 'them'} in plain C++, as "
            f"{'a __device__ function' if one else '__device__ functions'} of your own)")


class CompileError(RuntimeError):
    """The C++ compiler rejected a kernel source; the message carries its output."""


_lock = threading.Lock()


def build_library(unit: str, stem: str, args: list[str], suffix: str = ".cpp",
                  first: tuple[str, ...] = ()) -> Path:
    """Compile ``unit`` into a shared library in the cache (once per content hash); its path.
    The compiler's warnings, if any, are kept beside it (``<library>.log``). ``first``: options
    before ``args`` that do not change what the library does (a precompiled header's folder, the
    runtime object and the -D that has the unit link it: that one is in the key)."""
    cmd, version = compiler()
    key = hashlib.sha256("\0".join([unit, header_text(), " ".join(cmd), version, *args,
                                    *(a for a in first if a.startswith("-D"))]).encode()).hexdigest()[:32]
    lib = cache_dir() / f"{stem}-{key}.so"
    with _lock:
        if lib.exists():
            return lib
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / (stem + suffix)
            src.write_text(unit)
            out = Path(tmp) / lib.name
            proc = subprocess.run([*cmd, *first, *args, str(src), "-o", str(out)],
                                  capture_output=True, text=True)
            COMPILES["count"] += 1
            if proc.returncode != 0:
                raise CompileError(f"{stem}: the C++ compiler ({' '.join(cmd)}) failed:\n"
                                   f"{proc.stderr.strip()}")
            if proc.stderr.strip():  # its warnings, for every later load (written first)
                log = lib.with_suffix(f".{os.getpid()}.log.tmp")
                log.write_text(proc.stderr)
                os.replace(log, lib.with_suffix(".log"))
            os.replace(out, lib)  # atomic: a crash never leaves half a library in the cache
    return lib


class CpuModule:
    """One compiled source on the CPU: launch any of its kernels (in the worker process).

    ``kernels``: load_kernel's name of each kernel -> its C++ name (``::k``, ``::ns::k``,
    ``::k<128, float>``); ``variables``: the names of its ``__constant__`` / ``__device__``
    variables, whose values set from Python (``symbols``) the worker writes before the next launch
    (once: the launches after keep what the kernels wrote there, as on a GPU)."""

    def __init__(self, text: str, filename: str, kernels: dict[str, str], variables: list[str],
                 defines: dict[str, str]):
        self.check = checking()
        base = base_flags(self.check)
        args = [*base, *(f"-D{k}={v}" for k, v in defines.items())]
        stem = Path(filename).stem + ("-check" if self.check else "")
        self.exports = {name: export_id(name) for name in kernels}
        self.variables = {name: export_id(name) for name in variables}
        unit = _wrapper(text, {self.exports[n]: fn for n, fn in kernels.items()},
                        {self.variables[v]: "::" + v for v in variables})
        try:
            own = any(k.startswith("CUDA_EMU_") for k in defines)  # (the header's own switches)
            self.path = build_library(unit, stem, args, first=() if own else precompiled_header(base))
        except CompileError as exc:
            raise CompileError(f"{exc}{missing_builtin_hint(str(exc))}") from None
        log = self.path.with_suffix(".log")
        self.warnings = compiler_log.compiler_warnings(
            log.read_text() if log.exists() else "", text, "the CPU emulator's C++ compiler")
        self.symbols: dict[str, bytes] = {}  # variable -> the bytes set from Python

    @cached_property
    def _library(self):
        """The library loaded in this process too, for its sizes (it runs nothing at load), or
        None where it does not load (the worker then says why, at the launch)."""
        try:
            return ctypes.CDLL(str(self.path))
        except OSError:
            return None

    def param_sizes(self, kernel: str) -> list:
        """sizeof of each parameter of ``kernel``, as the C++ compiler has it (Nones if unknown)."""
        if self._library is None:
            return [None] * 256
        fn = getattr(self._library, f"cuda_emu_sizes_{self.exports[kernel]}")
        fn.restype, out = ctypes.c_size_t, (ctypes.c_size_t * 256)()
        return list(out[:fn(out)])

    def symbol_size(self, name: str) -> int | None:
        """sizeof of the variable ``name`` (None if unknown)."""
        if self._library is None:
            return None
        fn = getattr(self._library, f"cuda_emu_symbol_size_{self.variables[name]}")
        fn.restype = ctypes.c_size_t
        return int(fn())

    def launch(self, kernel: str, grid, block, args, params, shared_mem: int,
               timeout_s: float | None = None) -> None:
        workers = int(os.environ.get("BOOK_CPU_THREADS") or os.cpu_count() or 1)
        export = self.exports[kernel]
        symbols = tuple((f"cuda_emu_symbol_{self.variables[n]}", data)
                        for n, data in self.symbols.items())
        extra = {"symbols": symbols} if symbols else {}  # (a launch without them as before)
        # Written once, as a GPU's copy to the symbol is: later launches keep the kernels' own
        # writes to a __device__ variable (the library stays loaded in the worker).
        self.symbols = {}
        if os.environ.get("BOOK_EMU_ISOLATION", "1") == "0":  # in this process: no safety net
            return _launch_here(str(self.path), export, grid, block, args, params, shared_mem,
                                workers, **extra)
        _worker.launch(str(self.path), export, grid, block, args, params, shared_mem, workers,
                       timeout_limit(timeout_s), **extra)


@lru_cache(maxsize=64)
def pointer_member(masked: str, struct: str) -> str | None:
    """The first pointer member (``float* elements``) of ``struct`` as ``masked`` (the source
    with comments blanked) defines it -- ``struct S {...}`` or ``typedef struct {...} S;`` --
    or None. Member functions, nested in braces or with parentheses, are not members here."""
    for m in re.finditer(rf"\bstruct\s+{re.escape(struct)}\b[^;{{]*\{{|\btypedef\s+struct\b[^;{{]*\{{", masked):
        end = cuda_source._close(masked, m.end() - 1)
        if not m.group(0).startswith("typedef") or re.match(
                rf"\s*{re.escape(struct)}\s*;", masked[end + 1:]):
            body = masked[m.end():end]
            while "{" in body:  # member functions' bodies, innermost first
                body = re.sub(r"\{[^{}]*\}", ";", body)
            for member in body.split(";"):
                declared = member.split("=")[0]  # (not a product in an initializer)
                if "*" in declared and "(" not in declared:
                    return " ".join(declared.split())
    return None


def view_note(text: str, args, params) -> str:
    """For an index outside an argument that is a view of a larger array (``x[3:]``): on a GPU
    the index may be legal, reaching the rest of that array; the emulator copies only the view."""
    m = re.search(r"element -?\d+ of argument #(\d+) ", text)
    if not m or not 0 < int(m.group(1)) <= len(args):
        return ""
    view = owner = args[int(m.group(1)) - 1]
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    if owner is view or owner.nbytes <= view.nbytes:
        return ""
    return (f". `{params[int(m.group(1)) - 1].name}` is a view of a larger array ({view.size} of "
            f"its {owner.size} elements): on a GPU the index may reach the rest of that array, "
            f"but the emulator copies only the view to its worker: pass the whole array and "
            f"add the view's offset in the kernel")

def pointer_member_refusal(params, masked: str) -> str | None:
    """Why an emulated launch is refused where a struct passed by value holds a pointer (the
    worker copies each array argument, so an address held in a struct means nothing there), or
    None."""
    for p in params:
        member = p.kind == "struct" and not p.pointer and pointer_member(masked, p.base)
        if member:
            return (f"parameter '{p.name}' is a {p.base} passed by value, and its member "
                    f"`{member}` is a pointer: the emulator copies each array argument into its "
                    f"worker process, where an address held in a struct means nothing. Pass the "
                    f"arrays as pointer parameters of the kernel (and the struct's other fields "
                    f"beside them), or run this kernel on a GPU")
    return None


def launch_message(text: str, args, params) -> str:
    """An emulated launch's error for the user: a note where the array was a view, and each
    "argument #n" (cuda_emu/memory.h knows arguments by number) named as its parameter."""
    text += view_note(text, args, params)
    return re.sub(r"argument #(\d+)", lambda m: f"`{params[int(m.group(1)) - 1].name}`"
                  if 0 < int(m.group(1)) <= len(params) else m.group(0), text)
