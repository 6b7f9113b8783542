"""The CPU backend: the same CUDA C source, compiled as C++20 with ``include/cuda_emu.h``.

Used by :mod:`book.runtime` when there is no GPU (chapter 0 explains the two backends). Each
(source, defines) pair becomes one shared library exporting ``cuda_emu_launch_<kernel>`` for
every kernel in the file; libraries are cached on disk by a hash of everything that goes into
them (source text, defines, header, compiler and flags), so a second run does not recompile.
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import mmap
import os
import pickle
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import cuda_source

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


_EXTERN_SHARED = re.compile(
    r"^(\s*)extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?([A-Za-z_][\w ]*?)\s+(\w+)\s*\[\s*\]\s*;",
    re.M)


_SHARED_DECL = re.compile(
    r"(?:^|(?<=[{;]))(?P<indent>[ \t]*)(?P<quals>(?:(?:static|volatile)\s+)*)__shared__\s+"
    r"(?P<rest>(?:__align__\s*\(\s*\d+\s*\)\s*)?[^;{}()]*);", re.M)
"""A static __shared__ declaration, whatever its form: at a line's start or after { or ; on
it, with static or volatile, one or several declarators (``float As[16][16], Bs[16][16];``)."""
_DECLARATOR = re.compile(r"^\s*(\w+)\s*((?:\[[^\]\[]+\]\s*)*)$")


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def _checked_shared(match: re.Match) -> str:
    """Each array of a static __shared__ declaration as cuda_emu.h's shared_array (its indices
    checked; in check mode its accesses too); each scalar as a plain static thread_local; both
    volatile where declared so (a loop that waits on one reads it each time). A form
    it cannot read is left as it was (the __shared__ macro then makes it static thread_local)."""
    indent, rest = match.group("indent"), match.group("rest")
    rest = re.sub(r"__align__\s*\(\s*\d+\s*\)\s*", "", rest)
    volatile = "volatile " if re.search(r"\bvolatile\b", match.group("quals") + rest) else ""
    rest = re.sub(r"\bvolatile\b\s*", "", rest).strip()
    pieces = _split_top(rest)
    head = re.match(r"^([A-Za-z_][\w ]*?)\s+(\w+\s*(?:\[[^\]\[]+\]\s*)*)$", pieces[0].strip())
    if not head:
        return match.group(0)
    ctype, declarators = head.group(1), [head.group(2)] + pieces[1:]
    out = []
    for text in declarators:
        d = _DECLARATOR.match(text)
        if not d:
            return match.group(0)
        name, dims = d.groups()
        sizes = re.findall(r"\[([^\]]+)\]", dims)
        if not sizes:
            out.append(f"static thread_local {volatile}{ctype} {name};")
            continue
        args = ", ".join(f"({x})" for x in sizes)
        declared = ctype + "".join(f"[{x.strip()}]" for x in sizes)
        out.append(f'static thread_local ::cuda_emu::shared_array<{volatile}{ctype}, {args}> {name}'
                   f'{{"{name}", "{declared}"}};')
    return indent + " ".join(out)


_CUDA_HEADERS = re.compile(
    r"^\s*#\s*include\s*[<\"]((?:cuda_bf16|cuda_fp8|mma|cooperative_groups|cuda_pipeline|"
    r"cuda_awbarrier|curand_kernel|curand|cuda/[\w/]+|cub/[\w/.]+|thrust/[\w/.]+|"
    r"cooperative_groups/[\w/.]+)(?:\.h|\.hpp|\.cuh)?)[>\"]", re.M)


def unsupported_header(text: str) -> str | None:
    """The first CUDA library header ``text`` includes that the emulator does not provide."""
    m = _CUDA_HEADERS.search(text)
    return m.group(1) if m else None


def checking() -> bool:
    """Whether the emulator's check mode is on (``BOOK_EMU_CHECK=1``): shared-memory races,
    reads of unwritten shared memory and out-of-bounds indices of __shared__ arrays."""
    return os.environ.get("BOOK_EMU_CHECK", "0") == "1"


_VECTOR_CAST = re.compile(
    r"\breinterpret_cast\s*<\s*((?:(?:const|volatile)\s+)*(float[24]|int[24]|double2)"
    r"(?:\s+(?:const|volatile))*\s*\*)\s*>\s*\(")
"""``reinterpret_cast<float4*>(`` and the like: a cast to a pointer to a vector type."""


def emulate_source(text: str) -> str:
    """Rewrite every static ``__shared__`` array into cuda_emu.h's shared_array (its indices are
    checked; in check mode its accesses too), ``extern __shared__ T name[];`` to read the
    launch's dynamic shared buffer, and casts to vector pointers (``reinterpret_cast<float4*>``)
    into cuda_emu.h's vector_cast, which checks their alignment as the GPU does; drop
    ``#include <cuda_fp16.h>`` (cuda_emu.h has its __half)."""
    text = cuda_source.FP16_INCLUDE.sub(r"// \1: cuda_emu.h's __half", text)
    text = _SHARED_DECL.sub(_checked_shared, text)
    text = _VECTOR_CAST.sub(r'::cuda_emu::vector_cast<\1>("\2", __LINE__, ', text)
    return _EXTERN_SHARED.sub(
        r"\1#define \3 (reinterpret_cast<\2*>(::cuda_emu::dynamic_smem))", text)


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


class KernelFault(RuntimeError):
    """A launch stopped by an error the emulator found (the runtime raises it as LaunchError)."""


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


def _argv(values) -> tuple:
    """ctypes cells for the kernel's arguments (pointers and scalars) and the void** to them."""
    cells = [ctypes.c_void_p(v) if isinstance(v, int) else ctypes.create_string_buffer(v, len(v))
             for v in values]
    argv = (ctypes.c_void_p * max(1, len(cells)))(*[ctypes.addressof(c) for c in cells])
    return cells, argv


def _call(library: str, kernel: str, grid, block, shared_mem: int, argv, workers: int,
          fault: int | None) -> str | None:
    """Runs the launch through the library's export; the emulator's error message, or None."""
    fn = getattr(_library(library), f"cuda_emu_launch_{kernel}")
    fn.restype = ctypes.c_int
    message = ctypes.create_string_buffer(2048)
    failed = fn((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block),
                ctypes.c_size_t(shared_mem), argv, ctypes.c_uint(workers), message,
                ctypes.c_size_t(len(message)), ctypes.c_void_p(fault))
    return message.value.decode(errors="replace") if failed else None


@lru_cache(maxsize=None)
def _library(path: str):
    return ctypes.CDLL(path)


def _launch_here(library, kernel, grid, block, args, params, shared_mem, workers) -> None:
    values = [a.ctypes.data if p.pointer else np.asarray(a).tobytes() for a, p in zip(args, params)]
    cells, argv = _argv(values)
    error = _call(library, kernel, grid, block, shared_mem, argv, workers, None)
    if error:
        raise KernelFault(error)


# ---- isolation: emulated launches run in a worker process -------------------------------------

PAGE = mmap.PAGESIZE
GUARD = 1 << 28
"""Bytes of inaccessible address space on each side of every array argument in the worker: an
index up to 256 MiB outside an array faults, and the report names the array and the element."""
FAULT = struct.Struct("<iiiiQ3I3I")
"""cuda_emu.h's FaultReport: signal, si_code, write (1) / read (0) / unknown (-1), inside a kernel
thread, address, block, thread. The worker's signal handler writes it at the arena's start."""
POINTERS = 256
"""Where in the arena's first page the worker writes the address it gave each array argument
(0 for a scalar), then each argument's bytes; how many arguments, at ARGUMENTS."""
ARGUMENTS = 240
WAITING = struct.Struct("<Ii3I3IQ")
"""cuda_emu.h's BarrierNote, one per worker thread from WAITING_AT (WAITING_NOTES of them):
threads of a block waiting at a __syncthreads(), its line, the block, the thread that ran last,
and the worker's count of switches to a thread (for a launch stopped by the time limit)."""
WAITING_AT, WAITING_NOTES = 2048, 32
UNREACHABLE = "the worker could not open the arena through /proc"
"""The worker's reply where it may not open /proc/<pid>/fd/<fd> (the parent then keeps names)."""
SHARED_NAME = 4096 - 256
"""Where in the arena's first page the fault handler names the __shared__ array overrun (code -4:
cuda_emu.h's kSharedNameAt)."""
PROT_NONE, PROT_READ, PROT_WRITE = 0, 1, 2  # mmap(2)'s flags, as Linux numbers them
MAP_SHARED, MAP_PRIVATE, MAP_FIXED, MAP_ANONYMOUS, MAP_NORESERVE = 0x1, 0x2, 0x10, 0x20, 0x4000
STACK_KIB = 256
"""Each emulated thread's stack (cuda_emu.h's kStackBytes)."""
TIMEOUT_S = 30.0
"""Default limit of one emulated launch in seconds (BOOK_EMU_TIMEOUT_S, or timeout_s= per call)."""


def timeout_limit(timeout_s: float | None = None) -> float:
    return float(timeout_s if timeout_s is not None else
                 os.environ.get("BOOK_EMU_TIMEOUT_S", TIMEOUT_S))


class _Arena:
    """A file in shared memory holding a launch's arrays: the parent writes them in, the worker
    maps each between guard regions, the parent copies the results out. Its name is removed at
    once: the worker opens it through the parent's open descriptor (/proc/<pid>/fd/<fd>), so
    nothing is left in /dev/shm however the process ends (killed included). ``key``: what the
    worker opens, and a serial number (a later arena may get the same descriptor)."""
    serial = 0
    named = False  # set where the worker cannot open /proc/<pid>/fd: names stay until close

    def __init__(self, size: int):
        folder = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.fd, path = tempfile.mkstemp(prefix="cuda-emu-", dir=folder)
        proc = f"/proc/{os.getpid()}/fd/{self.fd}"
        self.name = path if _Arena.named or not os.path.exists(proc) else None
        if self.name is None:
            os.unlink(path)
            path = proc
        os.ftruncate(self.fd, size)
        self.size, self.map = size, mmap.mmap(self.fd, size)
        _Arena.serial += 1
        self.key = (path, _Arena.serial)

    def close(self) -> None:
        self.map.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)
        if self.name is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.name)


class _Worker:
    """The worker process: started at the first launch, started again after a crash or a timeout."""

    def __init__(self):
        self.proc, self.arena = None, None
        self.lock = threading.RLock()  # (re-entered once: see UNREACHABLE)
        atexit.register(self.close)

    def close(self) -> None:
        """Stop the worker and remove the arena's file from /dev/shm (at exit: nothing left)."""
        self.stop()
        if self.arena is not None:
            self.arena.close()
            self.arena = None

    def start(self) -> None:
        from_parent, to_child = os.pipe()
        from_child, to_parent = os.pipe()
        code = f"from book.launch.emulator import serve; serve({from_parent}, {to_parent})"
        self.proc = subprocess.Popen([sys.executable, "-c", code], pass_fds=(from_parent, to_parent),
                                     env=dict(os.environ, BOOK_BACKEND="cpu"))
        os.close(from_parent)
        os.close(to_parent)
        self.send_fd, self.recv_fd = to_child, from_child

    def stop(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait()
            os.close(self.send_fd)
            os.close(self.recv_fd)
            self.proc = None

    def launch(self, library, kernel, grid, block, args, params, shared_mem, workers, timeout_s):
        with self.lock:
            places, copies, size = _layout(args, params)
            if POINTERS + 16 * len(places) > WAITING_AT:
                raise KernelFault(f"{len(places)} arguments: the emulator takes at most "
                                  f"{(WAITING_AT - POINTERS) // 16}")
            if self.arena is None or self.arena.size < size:
                if self.arena is not None:
                    self.arena.close()
                self.arena = _Arena(max(size, 1 << 24))
            view = self.arena.map
            view[:PAGE] = bytes(PAGE)
            for c in copies:
                view[c.start:c.at] = bytes([GUARD_BYTE]) * (c.at - c.start)
                view[c.at:c.at + c.array.nbytes] = c.array.tobytes()
            if self.proc is None or self.proc.poll() is not None:
                self.start()
            request = pickle.dumps((library, kernel, tuple(grid), tuple(block), shared_mem,
                                    workers, self.arena.key, places))
            os.write(self.send_fd, struct.pack("<Q", len(request)) + request)
            reply = self.wait(timeout_s)
            if reply == UNREACHABLE and not _Arena.named:  # once: a named arena from now on
                _Arena.named = True
                self.arena.close()
                self.arena = None
                return self.launch(library, kernel, grid, block, args, params, shared_mem,
                                   workers, timeout_s)
            if reply is None:  # the worker died: its signal handler left a report
                self.proc.wait()
                message = _explain_crash(view, places, params, self.proc.returncode, shared_mem)
                self.stop()
                raise KernelFault(message)
            for c in copies:
                if c.written:
                    c.array[...] = np.frombuffer(view, c.array.dtype, c.array.size,
                                                 c.at).reshape(c.array.shape)
            if reply != "ok":
                raise KernelFault(reply)
            before = _written_before(view, copies)
            if before:
                raise KernelFault(before)

    def wait(self, timeout_s: float):
        """The worker's reply, or None if it died. A timeout or Ctrl-C (SIGINT) stops it."""
        deadline = time.monotonic() + timeout_s
        try:
            header = self.read(8, deadline, timeout_s)
            body = header and self.read(struct.unpack("<Q", header)[0], deadline, timeout_s)
            return pickle.loads(body) if body else None
        except KeyboardInterrupt:
            self.stop()  # the next launch starts a fresh worker
            raise

    def waiting(self) -> str:
        """Before the worker is stopped: a block whose threads wait at a barrier while one of its
        threads runs and does not come back (its worker's switch count still after 0.25 s), as
        cuda_emu.h's BarrierNote has it; "" where none (a kernel that is only slow)."""
        def notes():
            return [WAITING.unpack_from(self.arena.map, WAITING_AT + i * WAITING.size)
                    for i in range(WAITING_NOTES)]
        before = notes()
        time.sleep(0.25)
        for (count, line, *where, switches), then in zip(notes(), before):
            if count and switches == then[-1]:
                return (". When it was stopped, {} thread{} of block ({}, {}, {}) waited at the "
                        "__syncthreads() on line {} while thread ({}, {}, {}) ran and did not come "
                        "back: if that thread waits for them (a flag only they would set), the "
                        "block can never finish, on a GPU either".format(
                            count, "s" * (count != 1), *where[:3], line, *where[3:6]))
        return ""

    def read(self, n: int, deadline: float, timeout_s: float) -> bytes | None:
        data = b""
        while len(data) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                stuck = self.waiting()
                self.stop()
                raise KernelFault(
                    f"the launch ran for {timeout_s:g} s, the emulator's limit, and was stopped: "
                    f"an endless loop, or more work than the emulator does in that time (it runs "
                    f"every thread on the CPU, millions of times slower than a GPU; a naive "
                    f"2048^3 matmul takes about half a minute). Raise the limit with "
                    f"timeout_s= on the launch or BOOK_EMU_TIMEOUT_S=<seconds>" + stuck)
            if select.select([self.recv_fd], [], [], min(left, 0.2))[0]:
                chunk = os.read(self.recv_fd, n - len(data))
                if not chunk:
                    return None
                data += chunk
        return data


_worker = _Worker()


@dataclass
class _Copy:
    """An array argument's place in the arena: its data ends a page at ``at``; the bytes from
    ``start`` (the page's beginning) to ``at`` are guard bytes that nothing may write."""
    array: np.ndarray
    param: object
    at: int
    start: int
    span: int
    written: bool = False


def _layout(args, params) -> tuple[list, list, int]:
    """Places every array argument in the arena so that its last byte ends a page. Arguments
    whose memory overlaps -- an array passed twice, or two views of one array (a[:10], a[5:15])
    -- share one place holding all of their bytes, as they share one memory on a GPU. Returns
    (what the worker maps for each argument, the _Copy of each place, the arena bytes needed)."""
    arrays = [(v.ctypes.data, v.ctypes.data + v.nbytes, i) for i, (v, p) in
              enumerate(zip(args, params)) if p.pointer]
    group_of, groups = {}, []  # argument -> index of its group; groups: [lo, hi, [arguments]]
    for lo, hi, i in sorted(arrays):
        if groups and lo < groups[-1][1]:  # overlaps the group before (sorted by start)
            groups[-1][1] = max(groups[-1][1], hi)
            groups[-1][2].append(i)
        else:
            groups.append([lo, hi, [i]])
        group_of[i] = len(groups) - 1
    copies, offset = [], PAGE  # page 0: the fault report and the worker's addresses
    for lo, hi, members in groups:
        first = args[members[0]]
        whole = first if len(members) == 1 or all(
            (args[i].ctypes.data, args[i].nbytes) == (lo, hi - lo) for i in members) else \
            np.ctypeslib.as_array((ctypes.c_uint8 * (hi - lo)).from_address(lo))
        span = max(PAGE, -(-(hi - lo) // PAGE) * PAGE)
        copies.append(_Copy(whole, params[members[0]], offset + span - (hi - lo), offset, span))
        offset += span
    places = []
    for i, (value, param) in enumerate(zip(args, params)):
        if not param.pointer:
            places.append(("scalar", np.asarray(value).tobytes()))
            continue
        g = group_of[i]
        copy = copies[g]
        written = not param.ctype.startswith("const")
        copy.written |= written
        if written and not value.flags.writeable:
            raise KernelFault(f"{param.name} is a read-only array, and the kernel may write it "
                              f"(its parameter is {param.ctype}, not const): pass a writable "
                              f"array (np.array(x) copies one), or declare the parameter "
                              f"const {param.ctype}")
        inside = value.ctypes.data - groups[g][0]
        places.append(("array", copy.start, copy.span, copy.at - copy.start + inside, value.nbytes))
    return places, copies, offset


GUARD_BYTE = 0xFF
"""What the bytes just before each array hold during a launch: NaN as floats, -1 as ints, so a
read there spoils the result, and a write there is found when the launch ends."""


def _written_before(view, copies) -> str | None:
    """The first array whose guard bytes before its start were written, as an error message."""
    for c in copies:
        guard = np.frombuffer(view, np.uint8, c.at - c.start, c.start)
        changed = np.flatnonzero(guard != GUARD_BYTE)
        if len(changed):
            item, count = c.param.alignment, c.array.nbytes // c.param.alignment
            index = -(-(len(guard) - changed[0]) // item)  # the farthest one written
            return (f"wrote {c.param.name}[-{index}], {index} before the start of {c.param.name} "
                    f"({count} {c.param.base}{'s' * (count != 1)}); found when the launch ended, so "
                    f"which thread wrote it is not known")
    return None


def _explain_crash(view, places, params, status: int, shared_mem: int = 0) -> str:
    sig, code, write, in_kernel, address, *where = FAULT.unpack(view[:FAULT.size])
    if not sig:
        return f"the emulator's worker process died (exit status {status})"
    who = "block ({}, {}, {}), thread ({}, {}, {}): ".format(*where) if in_kernel else ""
    verb = {1: "wrote", 0: "read"}.get(write, "accessed")
    side = "past the end" if code in (-3, -4) else "before the start"
    if code in (-3, -5):  # the dynamic shared memory's guards
        return (f"{who}{verb} {side} of the dynamic shared memory (extern __shared__)"
                + (": the launch gave" if code == -3 else ", of which the launch gave")
                + f" {shared_mem} bytes (shared_mem= of the launch"
                + (", which was not given" if not shared_mem else "") + ")")
    if code in (-4, -6):  # a static __shared__ array's guards
        declared = bytes(view[SHARED_NAME:SHARED_NAME + 256]).split(b"\0")[0].decode(errors="replace")
        return (f"{who}{verb} {side} of the __shared__ array {declared}, through a pointer "
                f"taken from it (&s[i], a cast such as reinterpret_cast<float4*>, or a row passed "
                f"to a function); indexes s[i][j] are checked and name the index")
    if code == -2:
        return (f"{who}stack overflow: the thread used more than the emulator's "
                f"{STACK_KIB} KiB of stack (recursion that goes too deep or never ends, or a "
                f"large local array); a GPU thread's stack is small too (cudaLimitStackSize)")
    if sig == signal.SIGFPE:
        return who + ("integer division by zero (or INT_MIN / -1): on a GPU the result is "
                      "undefined" if code in (1, 2) else "an arithmetic trap (SIGFPE)")
    addresses = np.frombuffer(view, np.uint64, len(places), POINTERS)
    nearest = []
    for i, (place, param) in enumerate(zip(places, params)):
        if place[0] != "array" or not addresses[i]:
            continue
        pointer, nbytes, item = int(addresses[i]), place[4], param.alignment  # element bytes
        index, count = (address - pointer) // item, nbytes // item
        side = f"{index - count + 1} past the end" if index >= count else f"{-index} before the start"
        text = f"{param.name}[{index}], {side} of {param.name} ({count} {param.base}{'s' * (count != 1)})"
        if pointer - GUARD <= address < pointer + nbytes + GUARD:
            return f"{who}{verb} {text}"
        if abs(index) < 1 << 33:  # within reach of a 32-bit index (one that wrapped, say)
            nearest.append((abs(address - pointer), text))
    guess = f" (as an index into the nearest array argument: {min(nearest)[1]})" if nearest else ""
    return (f"{who}{verb} address 0x{address:x}, outside every array argument{guess}: a "
            f"__shared__ array indexed out of bounds, an index that wrapped around as unsigned, a "
            f"bad pointer or a thread's stack overflowing ({signal.Signals(sig).name})")


def serve(from_parent: int, to_parent: int) -> None:
    """The worker process: runs launch requests until the parent closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    arena, fd, page0 = None, -1, None
    while True:
        header = _read_exactly(from_parent, 8)
        if not header:
            return
        library, kernel, grid, block, smem, workers, key, places = pickle.loads(
            _read_exactly(from_parent, struct.unpack("<Q", header)[0]))
        if key != arena:  # a new arena: (what to open, its serial number)
            if fd >= 0:
                os.close(fd)
                fd, arena = -1, None
            try:
                fd = os.open(key[0], os.O_RDWR)
            except OSError:  # (/proc/<pid>/fd not open to this process: the parent names it)
                reply = pickle.dumps(UNREACHABLE)
                os.write(to_parent, struct.pack("<Q", len(reply)) + reply)
                continue
            arena, page0 = key, mmap.mmap(fd, PAGE)
        values, reserved, mapped = [], [], {}
        pointers = np.frombuffer(page0, np.uint64, len(places), POINTERS)
        sizes = np.frombuffer(page0, np.uint64, len(places), POINTERS + 8 * len(places))
        np.frombuffer(page0, np.uint64, 1, ARGUMENTS)[0] = len(places)
        for i, place in enumerate(places):
            if place[0] == "scalar":
                values.append(place[1])
                pointers[i] = 0
                continue
            _, start, span, data, _ = place
            if start not in mapped:  # one mapping per place; arguments that share it, inside
                base = libc.mmap(None, span + 2 * GUARD, PROT_NONE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                libc.mmap(base + GUARD, span, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                          start)
                reserved.append((base, span + 2 * GUARD))
                mapped[start] = base + GUARD
            values.append(mapped[start] + data)
            pointers[i], sizes[i] = mapped[start] + data, place[4]
        cells, argv = _argv(values)
        error = _call(library, kernel, grid, block, smem, argv, workers,
                      ctypes.addressof(ctypes.c_char.from_buffer(page0)))
        for base, size in reserved:
            libc.munmap(base, size)
        reply = pickle.dumps(error or "ok")
        os.write(to_parent, struct.pack("<Q", len(reply)) + reply)


def _read_exactly(fd: int, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return b""
        data += chunk
    return data
