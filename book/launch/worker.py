"""Isolation: every emulated launch runs in a worker process, on copies of its array arguments in
shared memory, each between guard regions, so that a kernel's bug is reported as an error and
never takes the caller's process down (``book/launch/runtime.py`` explains why).

The worker is ``python -c _BOOT``: it loads this file alone (which imports nothing of ``book``,
only numpy and the standard library) with the parent's ``sys.path``, so that a notebook that found
the book through ``sys.path.insert`` (nothing installed) has a worker that finds what it found. It
ends with its parent, however the parent ends: a thread of the worker waits for the request pipe
to hang up (the parent's end closes when it dies), and on Linux PR_SET_PDEATHSIG kills it too.

The arena that carries the arrays lives in /dev/shm, or in the temporary folder where /dev/shm has
no room (_Arena). A place whose arguments are all const parameters is mapped read-only in the
worker: a kernel's write through one is reported, where a GPU would write (_layout)."""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import errno
import mmap
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


class KernelFault(RuntimeError):
    """A launch stopped by an error the emulator found (the runtime raises it as LaunchError)."""


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
    try:
        return ctypes.CDLL(path)
    except OSError as exc:  # (not cached: a later launch tries again)
        raise KernelFault(f"the kernel's compiled library could not be loaded: {exc}") from None


def _set_symbols(library: str, symbols) -> None:
    """Before a launch: each (export, bytes) pair of ``symbols`` copied to the address that the
    library's ``void* <export>()`` returns -- how ``__constant__`` memory is set from Python."""
    for export, data in symbols:
        try:
            address = _library(library)[export]
        except AttributeError:
            raise KernelFault(f"the kernel's library exports no {export}(), the address of the "
                              f"variable to set before the launch") from None
        address.restype, address.argtypes = ctypes.c_void_p, []
        ctypes.memmove(address(), bytes(data), len(data))


def _launch_here(library, kernel, grid, block, args, params, shared_mem, workers,
                 symbols=()) -> None:
    values = [a.ctypes.data if p.pointer else np.asarray(a).tobytes() for a, p in zip(args, params)]
    _set_symbols(library, symbols)
    cells, argv = _argv(values)
    error = _call(library, kernel, grid, block, shared_mem, argv, workers, None)
    if error:
        raise KernelFault(error)


PAGE = mmap.PAGESIZE
GUARD = 1 << 36
"""Bytes of inaccessible address space on each side of every array argument in the worker (64
GiB, address space only: no memory). An index outside an array faults in that array's own guard,
even a 32-bit index that overflowed and wrapped (float4[2^32] is 64 GiB away), so the report
names the right array and the element. Where the address space is limited (ulimit -v):
GUARD_LIMITED, and the worker writes which one it gave at GUARD_AT in the arena's first page."""
GUARD_LIMITED, GUARD_AT = 1 << 28, 232
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
READY = "ready"
"""The worker's first message: it started (imported numpy) and waits for launches."""
SHARED_NAME = 4096 - 256
"""Where in the arena's first page the fault handler names the __shared__ array overrun (code -4:
cuda_emu.h's kSharedNameAt)."""
PROT_NONE, PROT_READ, PROT_WRITE = 0, 1, 2  # mmap(2)'s flags, as Linux numbers them
MAP_SHARED, MAP_PRIVATE, MAP_FIXED, MAP_ANONYMOUS, MAP_NORESERVE = 0x1, 0x2, 0x10, 0x20, 0x4000
MAP_FAILED = 2 ** 64 - 1  # (void*) -1, as ctypes returns it
PR_SET_PDEATHSIG = 1  # prctl(2)
STACK_KIB = 256
"""Each emulated thread's stack (cuda_emu.h's kStackBytes)."""
TIMEOUT_S = 30.0
"""Default limit of one emulated launch in seconds (BOOK_EMU_TIMEOUT_S, or timeout_s= per call)."""
START_S = 120.0
"""How long the worker may take to start (a Python that imports numpy) before it is given up."""
ARENA_MARGIN = 8 << 20
"""Bytes an arena leaves free in its folder's file system (other programs use /dev/shm too)."""


def timeout_limit(timeout_s: float | None = None) -> float:
    return float(timeout_s if timeout_s is not None else
                 os.environ.get("BOOK_EMU_TIMEOUT_S", TIMEOUT_S))


def _free_bytes(folder: str) -> int:
    """Bytes free to this user in the file system that holds ``folder`` (0 where unknown)."""
    try:
        stats = os.statvfs(folder)
    except OSError:
        return 0
    return stats.f_bavail * stats.f_frsize


def _arena_folders() -> list[str]:
    """Where an arena may live, best first: /dev/shm (memory), then the temporary folder (TMPDIR
    names another), a disk's on most systems but as good for a file that is mostly in the page
    cache."""
    folders = []
    for folder in ("/dev/shm", tempfile.gettempdir()):
        if os.path.isdir(folder) and not any(os.path.samefile(folder, f) for f in folders):
            folders.append(folder)
    return folders


class _Arena:
    """A file holding a launch's arrays: the parent writes them in, the worker maps each between
    guard regions, the parent copies the results out. It lives in /dev/shm, or in the temporary
    folder where /dev/shm has no room (a container's is 64 MiB unless told otherwise), and the
    bytes a launch uses are allocated before they are written (``reserve``): a sparse file written
    past its file system's room kills the writer with SIGBUS. Its name is removed at once: the
    worker opens it through the parent's open descriptor (/proc/<pid>/fd/<fd>), so nothing is left
    behind however the process ends (killed included). ``key``: what the worker opens, and a
    serial number (a later arena may get the same descriptor)."""
    serial = 0
    named = False  # set where the worker cannot open /proc/<pid>/fd: names stay until close

    def __init__(self, size: int, folder: str):
        self.fd, path = tempfile.mkstemp(prefix="cuda-emu-", dir=folder)
        proc = f"/proc/{os.getpid()}/fd/{self.fd}"
        self.name = path if _Arena.named or not os.path.exists(proc) else None
        if self.name is None:
            os.unlink(path)
            path = proc
        os.ftruncate(self.fd, size)
        self.size, self.map = size, mmap.mmap(self.fd, size)
        self.folder, self.reserved = folder, 0
        _Arena.serial += 1
        self.key = (path, _Arena.serial)

    @classmethod
    def with_room(cls, size: int) -> "_Arena":
        """A new arena whose first ``size`` bytes are reserved, in the first folder with room."""
        looked = []
        for folder in _arena_folders():
            try:
                arena = cls(max(size, 1 << 24), folder)
            except OSError as exc:
                looked.append(f"{folder} cannot hold it ({exc.strerror})")
                continue
            if arena.reserve(size):
                return arena
            arena.close()
            looked.append(f"{folder} has {_free_bytes(folder) / 2**20:.1f} MiB free")
        raise KernelFault(
            f"the launch's arrays need {size / 2**20:.1f} MiB in a file that this process shares "
            f"with the emulator's worker process, and no folder has that much room with "
            f"{ARENA_MARGIN >> 20} MiB to spare: {'; '.join(looked) or 'none found'}. Make room: "
            f"a container's /dev/shm is 64 MiB unless it is started with more (docker run "
            f"--shm-size=2g), TMPDIR=<folder> names another temporary folder; or launch with "
            f"smaller arrays")

    def reserve(self, nbytes: int) -> bool:
        """Allocates the file's first ``nbytes`` now, so that writing them cannot fault; False
        where its file system has no room for them (and ARENA_MARGIN besides)."""
        if nbytes <= self.reserved:
            return True
        if _free_bytes(self.folder) < nbytes - self.reserved + ARENA_MARGIN:
            return False
        if hasattr(os, "posix_fallocate"):  # (the free space can change after the check)
            try:
                os.posix_fallocate(self.fd, 0, nbytes)
            except OSError as exc:  # another error: a file system without it; the check must do
                if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.ENOMEM, errno.EFBIG):
                    return False
        self.reserved = nbytes
        return True

    def close(self, remove: bool = True) -> None:
        """Unmaps and closes it (and removes its name, if it kept one, unless ``remove`` is
        False: in a child made by fork, whose parent goes on using it)."""
        with contextlib.suppress(BufferError):  # (a view of it left in a traceback's frame)
            self.map.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)
        if self.name is not None and remove:
            with contextlib.suppress(OSError):
                os.unlink(self.name)


_BOOT = ("import sys, importlib.util as u; a = sys.argv; sys.path[:0] = a[5:]; "
         "s = u.spec_from_file_location('book_emu_worker', a[1]); m = u.module_from_spec(s); "
         "sys.modules[s.name] = m; s.loader.exec_module(m); m.serve(*map(int, a[2:5]))")
"""The worker's program: argv[1] is this file, argv[2:5] serve()'s numbers, argv[5:] the
parent's sys.path, put first in its own. (Loading this file alone, not ``book``, spares each
start CuPy's import.)"""


class _Worker:
    """The worker process: started at the first launch, started again after a crash or a timeout."""

    def __init__(self):
        self.proc, self.arena = None, None
        self.lock = threading.RLock()  # (re-entered once: see UNREACHABLE)
        atexit.register(self.close)

    def close(self) -> None:
        """Stop the worker and remove the arena's file (at exit: nothing left)."""
        self.stop()
        if self.arena is not None:
            self.arena.close()
            self.arena = None

    def forget(self) -> None:
        """In a child made by fork: the worker and the arena are the parent's. Drops this
        process's descriptors of them without stopping or removing them (so that the worker
        still sees its pipe hang up when the parent dies); the child starts its own worker."""
        self.lock = threading.RLock()  # (another thread of the parent may have held it)
        if self.proc is not None:
            for fd in (self.send_fd, self.recv_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.proc = None
        if self.arena is not None:
            self.arena.close(remove=False)
            self.arena = None

    def start(self) -> None:
        """Starts the worker and waits for it to say it is ready, so that its start does not
        count against a launch's time limit; a worker that cannot start is an error that shows
        what it wrote to stderr."""
        from_parent, to_child = os.pipe()
        from_child, to_parent = os.pipe()
        # PR_SET_PDEATHSIG fires when the *thread* that started the worker ends: asked for only
        # from the main thread (the worker's watch of its pipe covers every other case).
        main = threading.current_thread() is threading.main_thread()
        paths = [p or os.getcwd() for p in sys.path if isinstance(p, str)]
        argv = [sys.executable, "-c", _BOOT, os.path.abspath(__file__), str(from_parent),
                str(to_parent), str(int(main)), *paths]
        self.errors = tempfile.TemporaryFile()  # its stderr (see drain)
        try:
            self.proc = subprocess.Popen(argv, pass_fds=(from_parent, to_parent),
                                         stderr=self.errors,
                                         env=dict(os.environ, BOOK_BACKEND="cpu"))
        except OSError as exc:
            for fd in (to_child, from_child):
                os.close(fd)
            self.errors.close()
            raise KernelFault(f"the emulator's worker process could not be started "
                              f"({sys.executable}): {exc}") from None
        finally:
            os.close(from_parent)
            os.close(to_parent)
        self.send_fd, self.recv_fd = to_child, from_child
        try:
            ready = self.receive(time.monotonic() + START_S)
        except KeyboardInterrupt:
            self.stop()
            raise
        except TimeoutError:
            self.stop()
            raise KernelFault(f"the emulator's worker process did not start within {START_S:g} s "
                              f"({sys.executable})") from None
        if ready != READY:
            status, output = self.ended()
            self.stop()
            raise KernelFault(
                f"the emulator's worker process could not start: it {_ending(status)}. It runs "
                f"{sys.executable} with this process's sys.path, and needs numpy there"
                + (f"; its error output ends:\n{output}" if output else ""))

    def ended(self) -> tuple[int, str]:
        """After the worker died: its exit status and the end of what it wrote to stderr."""
        return self.proc.wait(), self.drain().strip()[-3000:]

    def drain(self) -> str:
        """What the worker wrote to stderr since the last call, while it waits or after it ended.
        Its stderr is a file, not a pipe: a pipe nobody reads would stop a worker that writes
        much, and reading one would take a thread."""
        fd = self.errors.fileno()
        data = os.pread(fd, os.fstat(fd).st_size, 0)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)  # (its offset is the worker's too: it writes from 0 again)
        return data.decode(errors="replace")

    def echo(self) -> None:
        """Shows what the worker wrote to stderr (a notebook shows this process's stderr)."""
        text = self.drain()
        if text:
            sys.stderr.write(text)
            sys.stderr.flush()

    def stop(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            self.proc.wait()
            os.close(self.send_fd)
            os.close(self.recv_fd)
            self.echo()
            self.errors.close()
            self.proc = None

    def make_room(self, size: int) -> None:
        """An arena with ``size`` bytes reserved: the one in use where it has them, else a new
        one where there is room."""
        if self.arena is not None and self.arena.size >= size and self.arena.reserve(size):
            return
        if self.arena is not None:
            self.arena.close()
            self.arena = None
        self.arena = _Arena.with_room(size)

    def launch(self, library, kernel, grid, block, args, params, shared_mem, workers, timeout_s,
               symbols=()):
        """Runs a launch in the worker. ``symbols``: (export, bytes) pairs the worker copies to
        the addresses the library's ``void* <export>()`` return before the kernel runs."""
        with self.lock:
            places, copies, size = _layout(args, params)
            if POINTERS + 16 * len(places) > WAITING_AT:
                raise KernelFault(f"{len(places)} arguments: the emulator takes at most "
                                  f"{(WAITING_AT - POINTERS) // 16}")
            self.make_room(size)
            view = self.arena.map
            view[:PAGE] = bytes(PAGE)
            for c in copies:
                view[c.start:c.at] = bytes([GUARD_BYTE]) * (c.at - c.start)
                view[c.at:c.at + c.array.nbytes] = c.array.tobytes()
                view[c.at + c.array.nbytes:c.start + c.span] = (
                    bytes([GUARD_BYTE]) * (c.start + c.span - c.at - c.array.nbytes))
            if self.proc is None or self.proc.poll() is not None:
                self.stop()  # (one that died since the last launch: its pipes closed)
                self.start()
            request = pickle.dumps((library, kernel, tuple(grid), tuple(block), shared_mem,
                                    workers, self.arena.key, places,
                                    tuple((str(name), bytes(data)) for name, data in symbols)))
            self.running = (int(np.prod(grid)), max(int(workers), 1))  # (for waiting())
            reply = self.wait(request, timeout_s)
            if reply == UNREACHABLE and not _Arena.named:  # once: a named arena from now on
                _Arena.named = True
                self.arena.close()
                self.arena = None
                return self.launch(library, kernel, grid, block, args, params, shared_mem,
                                   workers, timeout_s, symbols)
            if reply is None:  # the worker died: its signal handler left a report
                status, output = self.ended()
                message = _explain_crash(view, places, params, status, shared_mem, output)
                self.stop()
                raise KernelFault(message)
            self.echo()
            for c in copies:
                if c.written:
                    c.array[...] = np.frombuffer(view, c.array.dtype, c.array.size,
                                                 c.at).reshape(c.array.shape)
            if reply != "ok":
                raise KernelFault(reply)
            before = _written_before(view, copies)
            if before:
                raise KernelFault(before)

    def wait(self, request: bytes, timeout_s: float):
        """Sends a request; the worker's reply, or None if it died. A timeout or Ctrl-C
        (SIGINT) stops it."""
        try:
            try:
                _write_all(self.send_fd, struct.pack("<Q", len(request)) + request)
            except BrokenPipeError:  # it died since the last launch (killed, say)
                return None
            return self.receive(time.monotonic() + timeout_s)
        except TimeoutError:
            stuck = self.waiting()
            self.stop()
            raise KernelFault(
                f"the launch ran for {timeout_s:g} s, the emulator's limit, and was stopped: "
                f"an endless loop, or more work than the emulator does in that time (it runs "
                f"every thread on the CPU, millions of times slower than a GPU; a naive "
                f"2048^3 matmul takes about half a minute). Raise the limit with "
                f"timeout_s= on the launch or BOOK_EMU_TIMEOUT_S=<seconds>" + stuck) from None
        except KeyboardInterrupt:
            self.stop()  # the next launch starts a fresh worker
            raise

    def receive(self, deadline: float):
        """The worker's next message; None where it died; TimeoutError at the deadline."""
        header = self.read(8, deadline)
        body = header and self.read(struct.unpack("<Q", header)[0], deadline)
        return pickle.loads(body) if body else None

    def waiting(self) -> str:
        """Before the worker is stopped: a block whose threads wait at a barrier while one of its
        threads runs and does not come back (its worker's switch count still after 0.25 s), as
        cuda_emu.h's BarrierNote has it; "" where none (a kernel that is only slow)."""
        def notes():
            return [WAITING.unpack_from(self.arena.map, WAITING_AT + i * WAITING.size)
                    for i in range(WAITING_NOTES)]
        before = notes()
        time.sleep(0.25)
        blocks, at_once = getattr(self, "running", (1, 1))
        for (count, line, *where, switches), then in zip(notes(), before):
            if count and switches == then[-1]:
                return (". When it was stopped, {} thread{} of block ({}, {}, {}) waited at the "
                        "__syncthreads() on line {} while thread ({}, {}, {}) ran and did not come "
                        "back: if that thread waits for them (a flag only they would set), the "
                        "block can never finish, on a GPU either".format(
                            count, "s" * (count != 1), *where[:3], line, *where[3:6]) + (
                        "; if it waits for a flag that another block sets, that block may not "
                        f"have started: the emulator runs {at_once} block{'s' * (at_once != 1)} "
                        "at a time (BOOK_CPU_THREADS, or this machine's cores), and on a GPU such "
                        "a wait works only while both blocks are resident, which CUDA does not "
                        "promise" if blocks > at_once else ""))
        return ""

    def read(self, n: int, deadline: float) -> bytes | None:
        """``n`` bytes from the worker; None where it closed its end (it died)."""
        data = b""
        poller = select.poll()  # (select.select fails on descriptors above 1023)
        poller.register(self.recv_fd, select.POLLIN)
        while len(data) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if poller.poll(min(left, 0.2) * 1000):
                chunk = os.read(self.recv_fd, n - len(data))
                if not chunk:
                    return None
                data += chunk
        return data


def _ending(status: int) -> str:
    """How a process ended, from its exit status: 'exited with status 1', 'was killed by SIGKILL'."""
    if status >= 0:
        return f"exited with status {status}"
    try:
        name = signal.Signals(-status).name
    except ValueError:
        name = f"signal {-status}"
    return f"was killed by {name}" + (" (the system may have run out of memory)"
                                      if -status == signal.SIGKILL else "")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


_worker = _Worker()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _worker.forget())


@dataclass
class _Copy:
    """An array argument's place in the arena: its data starts at ``at`` and ends a page (but for
    up to 15 bytes, _layout); the bytes from ``start`` (the page's beginning) to ``at``, and
    those after its end, are guard bytes that nothing may write.
    ``written``: some argument in it is not const (the worker maps the others read-only)."""
    array: np.ndarray
    param: object
    at: int
    start: int
    span: int
    written: bool = False


def _const_data(param) -> bool:
    """Whether a pointer parameter points to const data: ``const float*`` or ``float const*``
    (a const after the ``*``, as in ``float* const p``, makes the pointer const, not the data)."""
    return "const" in param.ctype.split("*")[0].split()


def _layout(args, params) -> tuple[list, list, int]:
    """Places every array argument in the arena so that its last byte ends a page. Arguments
    whose memory overlaps -- an array passed twice, or two views of one array (a[:10], a[5:15])
    -- share one place holding all of their bytes, as they share one memory on a GPU. Returns
    (what the worker maps for each argument, the _Copy of each place, the arena bytes needed).
    A place is writable where one of its arguments is not const; the worker maps the others
    read-only, so that a kernel's write through a const parameter faults and is reported (a GPU
    would write: copying it back here would hide that the signature says otherwise)."""
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
        # Its data ends a page, but for `pad` bytes (guard bytes too): so that its start sits
        # where it would on a GPU modulo 16 bytes, the most any vector type needs -- a float4
        # load of a legal index then runs (x86 faults on a misaligned one), and one of a view
        # x[1:] is refused as on a GPU (its arrays start on 256 bytes)
        pad = (-(hi - lo) - _gpu_phase(args[members[0]], lo)) % 16
        span = max(PAGE, -(-(hi - lo + pad) // PAGE) * PAGE)
        copies.append(_Copy(whole, params[members[0]], offset + span - (hi - lo) - pad, offset,
                            span))
        offset += span
    for i, (value, param) in enumerate(zip(args, params)):
        if param.pointer and not _const_data(param):
            copies[group_of[i]].written = True
            if not value.flags.writeable:
                raise KernelFault(f"{param.name} is a read-only array, and the kernel may write "
                                  f"it (its parameter is {param.ctype}, not const): pass a "
                                  f"writable array (np.array(x) copies one), or declare the "
                                  f"parameter const {param.ctype}")
    places = []
    for i, (value, param) in enumerate(zip(args, params)):
        if not param.pointer:
            places.append(("scalar", np.asarray(value).tobytes()))
            continue
        g = group_of[i]
        copy = copies[g]
        inside = value.ctypes.data - groups[g][0]
        places.append(("array", copy.start, copy.span, copy.at - copy.start + inside,
                       value.nbytes, copy.written))
    return places, copies, offset


def _gpu_phase(array: np.ndarray, address: int) -> int:
    """Where ``address`` (inside ``array``) would sit modulo 16 on a GPU: counted from the start
    of the array that owns the memory (a view's base), as a GPU allocation starts on 256 bytes."""
    owner = array
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    return (address - owner.ctypes.data) % 16


def _elements(param, nbytes: int) -> str:
    """An array argument's size in its elements: '32 floats', '1 float4', '100 bytes' (void*)."""
    count = nbytes // param.itemsize
    noun = "byte" if param.kind == "void" else param.base
    return f"{count} {noun}{'s' * (count != 1)}"


GUARD_BYTE = 0xFF
"""What the bytes just before each array hold during a launch: NaN as floats, -1 as ints, so a
read there spoils the result, and a write there is found when the launch ends."""


def _written_before(view, copies) -> str | None:
    """The first array whose guard bytes before its start or after its end were written, as
    an error message."""
    for c in copies:
        guard = np.frombuffer(view, np.uint8, c.at - c.start, c.start)
        changed = np.flatnonzero(guard != GUARD_BYTE)
        if len(changed):
            index = -(-(len(guard) - changed[0]) // c.param.itemsize)  # the farthest one written
            return (f"wrote {c.param.name}[-{index}], {index} before the start of {c.param.name} "
                    f"({_elements(c.param, c.array.nbytes)}); found when the launch ended, so "
                    f"which thread wrote it is not known")
        end = c.at + c.array.nbytes  # the pad after its end (_layout), up to 15 bytes
        changed = np.flatnonzero(np.frombuffer(view, np.uint8, c.start + c.span - end, end)
                                 != GUARD_BYTE)
        if len(changed):
            count = c.array.nbytes // c.param.itemsize
            return (f"wrote {c.param.name}[{count + changed[-1] // c.param.itemsize}], past the "
                    f"end of {c.param.name} ({_elements(c.param, c.array.nbytes)}); found when "
                    f"the launch ended, so which thread wrote it is not known")
    return None


def _explain_crash(view, places, params, status: int, shared_mem: int = 0,
                   output: str = "") -> str:
    """The message for a worker that died: from its fault report, else from how it ended and
    the end of its stderr (``output``)."""
    sig, code, write, in_kernel, address, *where = FAULT.unpack(view[:FAULT.size])
    if not sig:
        return (f"the emulator's worker process died: it {_ending(status)}, with no report from "
                f"the emulator" + (f"; its error output ends:\n{output}" if output else ""))
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
    arrays = [(int(addresses[i]), place, param) for i, (place, param) in
              enumerate(zip(places, params)) if place[0] == "array" and addresses[i]]
    for pointer, (_, _, span, data, nbytes, writable), param in arrays:
        # A place of const arguments only is mapped read-only: what faults inside it is a write.
        if not writable and pointer - data <= address < pointer - data + span:
            verb = "wrote"
            if pointer <= address < pointer + nbytes:
                return (f"{who}wrote {param.name}[{(address - pointer) // param.itemsize}] "
                        f"through the const parameter `{param.ctype} {param.name}`: a GPU would "
                        f"write it (casting const away), the emulator reports it; declare the "
                        f"parameter without const if the kernel writes it")
    guard = int(np.frombuffer(view, np.uint64, 1, GUARD_AT)[0]) or GUARD_LIMITED
    nearest = []
    for pointer, place, param in arrays:
        nbytes, item = place[4], param.itemsize  # element bytes
        index, count = (address - pointer) // item, nbytes // item
        side = f"{index - count + 1} past the end" if index >= count else f"{-index} before the start"
        text = f"{param.name}[{index}], {side} of {param.name} ({_elements(param, nbytes)})"
        if pointer - guard <= address < pointer + nbytes + guard:
            return f"{who}{verb} {text}" + (
                ": an index this far out is most often an int that overflowed (a product such "
                "as row * n past 2^31); compute it in 64 bits, (size_t)row * n + col"
                if abs(index) >= 1 << 30 else "")
        if abs(index) < 1 << 33:  # within reach of a 32-bit index (one that wrapped, say)
            nearest.append((abs(address - pointer), text))
    guess = f" (as an index into the nearest array argument: {min(nearest)[1]})" if nearest else ""
    return (f"{who}{verb} address 0x{address:x}, outside every array argument{guess}: a "
            f"__shared__ array indexed out of bounds, an index that wrapped around as unsigned, a "
            f"bad pointer or a thread's stack overflowing ({signal.Signals(sig).name})")


# ---- the worker process ----------------------------------------------------------------------

def serve(from_parent: int, to_parent: int, death_signal: int = 0) -> None:
    """The worker process: runs launch requests until the parent closes the pipe.
    ``death_signal``: 1 to ask Linux to kill it when the parent's thread that started it ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    libc = ctypes.CDLL(None, use_errno=True)
    _follow_parent(libc, from_parent, death_signal)
    with contextlib.suppress(Exception):  # (where the C library's stdout has another name)
        # A kernel's printf reaches the parent's output line by line, not when a buffer fills:
        # what a launch printed before it crashed or was stopped is not lost.
        libc.setvbuf.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        libc.setvbuf(ctypes.c_void_p.in_dll(libc, "stdout").value, None, 1, 0)  # 1: _IOLBF
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.fflush.argtypes = [ctypes.c_void_p]
    _reply(to_parent, READY)
    arena, fd, page0 = None, -1, None
    while True:
        header = _read_exactly(from_parent, 8)
        if not header:
            return
        library, kernel, grid, block, smem, workers, key, places, symbols = pickle.loads(
            _read_exactly(from_parent, struct.unpack("<Q", header)[0]))
        if key != arena:  # a new arena: (what to open, its serial number)
            if fd >= 0:
                os.close(fd)
                fd, arena = -1, None
            try:
                fd = os.open(key[0], os.O_RDWR)
            except OSError:  # (/proc/<pid>/fd not open to this process: the parent names it)
                _reply(to_parent, UNREACHABLE)
                continue
            arena, page0 = key, mmap.mmap(fd, PAGE)
        reserved = []  # (address, bytes) of each place's mapping with its guards
        try:
            values = _map_places(libc, fd, page0, places, reserved)
            _set_symbols(library, symbols)
            cells, argv = _argv(values)
            error = _call(library, kernel, grid, block, smem, argv, workers,
                          ctypes.addressof(ctypes.c_char.from_buffer(page0)))
        except KernelFault as exc:
            error = str(exc)
        except Exception:  # noqa: BLE001 (told, not a dead worker with a traceback)
            error = f"the emulator's worker failed (a bug of the emulator):\n{traceback.format_exc()}"
        finally:
            for base, size in reserved:
                libc.munmap(base, size)
            libc.fflush(None)  # (a last line without a newline)
        _reply(to_parent, error or "ok")


def _map_places(libc, fd: int, page0, places, reserved: list) -> list:
    """Maps each place of the arena between guard regions, read-only where none of its arguments
    may be written (all const), and writes each argument's address and bytes into the arena's
    first page (for cuda_emu/memory.h's checks and _explain_crash). The kernel's argument values."""
    values, mapped, guard = [], {}, GUARD
    pointers = np.frombuffer(page0, np.uint64, len(places), POINTERS)
    sizes = np.frombuffer(page0, np.uint64, len(places), POINTERS + 8 * len(places))
    np.frombuffer(page0, np.uint64, 1, ARGUMENTS)[0] = len(places)
    for i, place in enumerate(places):
        if place[0] == "scalar":
            values.append(place[1])
            pointers[i] = 0
            continue
        _, start, span, data, nbytes, writable = place
        if start not in mapped:  # one mapping per place; arguments that share it, inside
            base = libc.mmap(None, span + 2 * guard, PROT_NONE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
            if base in (None, MAP_FAILED) and guard > GUARD_LIMITED:  # (ulimit -v)
                guard = GUARD_LIMITED
                base = libc.mmap(None, span + 2 * guard, PROT_NONE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
            _check_mapped(base)
            reserved.append((base, span + 2 * guard))
            _check_mapped(libc.mmap(base + guard, span, PROT_READ | (PROT_WRITE if writable else 0),
                                    MAP_SHARED | MAP_FIXED, fd, start))
            mapped[start] = base + guard
        values.append(mapped[start] + data)
        pointers[i], sizes[i] = mapped[start] + data, nbytes
    np.frombuffer(page0, np.uint64, 1, GUARD_AT)[0] = guard  # (the smallest one given)
    return values


def _check_mapped(address) -> None:
    if address in (None, MAP_FAILED):
        raise KernelFault(f"the emulator's worker could not map the launch's arrays: "
                          f"{os.strerror(ctypes.get_errno())}")


def _follow_parent(libc, from_parent: int, death_signal: int) -> None:
    """Makes the worker end with its parent, however the parent ends (SIGTERM, SIGKILL): a kernel
    in an endless loop never reads the pipe, and would spin on alone. On Linux, PR_SET_PDEATHSIG
    has the kernel send SIGKILL when the parent's thread that started it ends; and a thread waits
    for the request pipe to hang up (every copy of its writing end closed: the parent died),
    which also covers a parent that died before the prctl (its pipe has hung up already: no
    getppid() check needed) and a worker started from a thread that ended."""
    if death_signal and sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            libc.prctl(ctypes.c_int(PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL),
                       ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))

    def watch() -> None:
        poller = select.poll()
        poller.register(from_parent, 0)  # no events asked: poll returns at a hang-up or error
        while not poller.poll():
            pass
        os._exit(0)
    threading.Thread(target=watch, name="cuda-emu-parent-watch", daemon=True).start()


def _reply(fd: int, value) -> None:
    message = pickle.dumps(value)
    _write_all(fd, struct.pack("<Q", len(message)) + message)


def _read_exactly(fd: int, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return b""
        data += chunk
    return data
