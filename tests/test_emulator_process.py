"""The emulator's worker process (book/launch/worker.py): it finds what its parent found, ends with
its parent, never faults for want of room in /dev/shm, and says why when it cannot start; and
the memory semantics of kernel arguments: a write through a const parameter is reported, one
array passed as a const and a non-const argument is written. (Emulator-only tests are marked.)"""
import errno
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

from book import BACKEND, LaunchError, load_kernel, to_device, to_host
from conftest import ROOT

KERNELS = ROOT / "tests" / "kernels" / "process.cu"
emulator_only = pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's worker process")


def kernel(name):
    return load_kernel(KERNELS, name)


def still_works():
    """A correct launch right after: the process and the emulator went on."""
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    kernel("twice")(1, 8, (x, out))
    np.testing.assert_array_equal(out, 2 * x)


# ---- kernel arguments ----------------------------------------------------------------------------

def test_one_array_as_a_const_and_a_non_const_argument_is_written():
    """The same memory passed twice shares one place: writable, since one parameter is not const."""
    a = to_device(np.arange(32, dtype=np.float32))
    kernel("twice")(1, 32, (a, a))
    np.testing.assert_array_equal(to_host(a), 2 * np.arange(32, dtype=np.float32))


@emulator_only
@pytest.mark.parametrize("name", ["write_const", "write_const_after"])
def test_a_write_through_a_const_parameter_is_reported(name):
    """``const float* in`` or ``float const* in`` (the signature parser writes both the first
    way). The array is mapped read-only in the worker: the write faults there."""
    x = np.arange(32, dtype=np.float32)
    with pytest.raises(LaunchError, match=(
            rf"{name}: block \(0, 0, 0\), thread \(5, 0, 0\): wrote in\[5\] through the const "
            r"parameter `const float\* in`: a GPU would write it \(casting const away\), the emulator "
            r"reports it; declare the parameter without const if the kernel writes it")):
        kernel(name)(1, 32, (x, np.zeros(32, np.float32)))
    np.testing.assert_array_equal(x, np.arange(32))
    still_works()


@emulator_only
def test_symbols_are_set_before_the_launch():
    """symbols=((export, bytes), ...): the bytes land where the library's export points, in the
    worker and in this process (BOOK_EMU_ISOLATION=0), before the kernel runs."""
    from book.launch import worker
    k = kernel("read_table")
    library = str(k.module._cpu.path)
    table = np.array([1.5, -2.0, 3.25, 4.0], np.float32)
    out = np.zeros(4, np.float32)
    worker._worker.launch(library, "read_table", (1, 1, 1), (4, 1, 1), (out,), k.params, 0, 1,
                          10.0, symbols=(("process_table", table.tobytes()),))
    np.testing.assert_array_equal(out, table)
    worker._launch_here(library, "read_table", (1, 1, 1), (4, 1, 1), (out,), k.params, 0, 1,
                        symbols=(("process_table", (2 * table).tobytes()),))
    np.testing.assert_array_equal(out, 2 * table)
    with pytest.raises(worker.KernelFault, match=r"the kernel's library exports no nowhere\(\)"):
        worker._worker.launch(library, "read_table", (1, 1, 1), (4, 1, 1), (out,), k.params, 0,
                              1, 10.0, symbols=(("nowhere", b"\0"),))
    still_works()


@emulator_only
def test_an_index_that_wrapped_names_its_own_array():
    """Each array's guards reach 64 GiB: an int index that overflowed lands in its own array's,
    not nearer another array (which used to be blamed)."""
    with pytest.raises(LaunchError, match=(
            r"wrapped_index: block \(0, 0, 0\), thread \(0, 0, 0\): wrote out\[-1794967296\], "
            r"1794967296 before the start of out \(32 floats\): an index this far out is most "
            r"often an int that overflowed")):
        kernel("wrapped_index")(1, 1, (np.zeros(32, np.float32), np.zeros(32, np.float32),
                                       np.int32(50000)))
    still_works()


@emulator_only
def test_guards_shrink_where_the_address_space_is_limited():
    """Under ulimit -v the 64 GiB guards cannot be had: 256 MiB ones, and the same messages."""
    from conftest import run_with_backend
    program = f"""
import resource, numpy as np
from book import LaunchError, load_kernel
resource.setrlimit(resource.RLIMIT_AS, (32 << 30, 32 << 30))
x = np.arange(8, dtype=np.float32)
out = np.zeros(8, np.float32)
load_kernel({str(KERNELS)!r}, "twice")(1, 8, (x, out))
print(bool((out == 2 * x).all()))
try:
    load_kernel({str(KERNELS)!r}, "wrapped_index")(1, 1, (out, x, np.int32(4000)))
except LaunchError as exc:
    print(str(exc).split(": ", 2)[2])
"""
    assert run_with_backend(program, "cpu").splitlines() == [
        "True", "wrote out[16000000], 15999993 past the end of out (8 floats)"]


# ---- the worker's output and messages --------------------------------------------------------

@emulator_only
def test_a_kernels_printf_before_a_crash_is_shown(capfd, monkeypatch):
    """The worker's stdout is line-buffered: what a kernel printed before the worker died is not
    lost in a buffer (it used to be, unless PYTHONUNBUFFERED was set)."""
    from book.launch import worker
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    worker._worker.stop()  # the next one starts so, writing to this test's captured stdout
    with pytest.raises(LaunchError, match=r"print_then_divide: block \(0, 0, 0\), thread "
                                          r"\(\d+, 0, 0\): integer division by zero"):
        kernel("print_then_divide")(1, 4, (np.zeros(4, np.int32), np.int32(0)))
    assert "thread 0 was here" in capfd.readouterr().out
    still_works()


@emulator_only
def test_a_worker_that_cannot_start_shows_its_error_output(monkeypatch):
    from book.launch import worker
    worker._worker.stop()
    monkeypatch.setattr(worker, "_BOOT", "import sys; sys.stderr.write('no numpy here\\n'); "
                                         "sys.exit(3)")
    with pytest.raises(LaunchError, match=r"twice: the emulator's worker process could not start: "
                                          r"it exited with status 3\..*its error output ends:\n"
                                          r"no numpy here"):
        still_works()
    monkeypatch.undo()
    still_works()


@emulator_only
def test_a_worker_that_dies_without_a_report_says_how():
    from book.launch import worker
    still_works()
    worker._worker.proc.kill()  # between launches: the OOM killer, say
    worker._worker.proc.wait()
    still_works()  # a new one is started
    spin = kernel("spin")
    with pytest.raises(LaunchError, match=r"spin: the emulator's worker process died: it was "
                                          r"killed by SIGKILL \(the system may have run out of "
                                          r"memory\), with no report from the emulator"):
        threading.Timer(1.0, lambda: worker._worker.proc.kill()).start()
        spin(1, 1, (np.zeros(1, np.uint32),), timeout_s=60)
    still_works()


# ---- where the arena lives -------------------------------------------------------------------

@pytest.fixture
def fresh_arena():
    """The next launch makes a new arena; after the test, so does the one after."""
    from book.launch import worker
    worker._worker.close()
    yield worker
    worker._worker.close()


@emulator_only
def test_the_arena_moves_to_the_temporary_folder_where_dev_shm_is_full(monkeypatch, fresh_arena):
    worker = fresh_arena
    real = worker._free_bytes
    monkeypatch.setattr(worker, "_free_bytes", lambda f: 0 if f == "/dev/shm" else real(f))
    still_works()
    arena = worker._worker.arena
    assert arena.folder == tempfile.gettempdir()
    assert os.readlink(arena.key[0]).startswith(os.path.realpath(tempfile.gettempdir()))


@emulator_only
def test_an_arena_that_cannot_be_allocated_moves_too(monkeypatch, fresh_arena):
    """The free space may go between the check and the write: the arena's bytes are allocated
    before they are written (posix_fallocate), and a full file system means another folder, not
    SIGBUS."""
    worker = fresh_arena
    real = os.posix_fallocate

    def full_dev_shm(fd, offset, length):
        if os.readlink(f"/proc/self/fd/{fd}").startswith("/dev/shm/"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, offset, length)
    monkeypatch.setattr(worker.os, "posix_fallocate", full_dev_shm)
    still_works()
    assert worker._worker.arena.folder == tempfile.gettempdir()


@emulator_only
def test_no_folder_with_room_is_an_error(monkeypatch, fresh_arena):
    worker = fresh_arena
    monkeypatch.setattr(worker, "_free_bytes", lambda folder: 5 << 20)
    with pytest.raises(LaunchError, match=(
            r"twice: the launch's arrays need 0\.0 MiB in a file that this process shares with "
            r"the emulator's worker process, and no folder has that much room with 8 MiB to "
            r"spare: /dev/shm has 5\.0 MiB free.*docker run --shm-size")):
        still_works()
    monkeypatch.undo()
    still_works()


@emulator_only
def test_arrays_larger_than_a_small_dev_shm_run():
    """A container's /dev/shm is 64 MiB unless told otherwise: arrays that do not fit used to
    kill Python with SIGBUS. Here in a mount namespace with a 16 MiB /dev/shm (where this system
    lets unshare make one), two 12 MiB arrays run, their arena in the temporary folder."""
    probe = ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /dev/shm"]
    if not shutil.which("unshare") or subprocess.run(probe, capture_output=True).returncode:
        pytest.skip("no mount namespace for this user here")
    program = f"""
import numpy as np
from book import load_kernel
from book.launch import worker
a = np.ones(3 << 20, np.float32)
out = np.zeros(3 << 20, np.float32)
load_kernel({str(KERNELS)!r}, "twice")(1, 32, (a, out))
print(worker._worker.arena.folder, bool((out[:32] == 2).all()))
"""
    script = (f"mount -t tmpfs -o size=16m tmpfs /dev/shm && exec {shlex.quote(sys.executable)} "
              f"-c {shlex.quote(program)}")
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), BOOK_BACKEND="cpu"),
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [tempfile.gettempdir(), "True"]


# ---- the worker's life -----------------------------------------------------------------------

def _gone(pid: int) -> bool:
    """No such process, or one that has ended and waits to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@emulator_only
@pytest.mark.parametrize("started_in", ["main", "thread"])
def test_the_worker_finds_the_book_and_ends_with_its_parent(started_in, tmp_path):
    """A notebook that found the book with sys.path.insert (installed nowhere: a Python outside
    this virtual environment, run elsewhere) launches kernels (its worker used to die at once,
    "exit status 1"); while a kernel spins forever it gets SIGTERM, and its worker goes with it
    (it used to spin on alone). The worker started by the main thread, or by a thread that has
    ended since."""
    import numpy
    python = getattr(sys, "_base_executable", sys.executable)
    numpy_home = os.path.dirname(os.path.dirname(numpy.__file__))
    program = f"""
import sys, threading, time
sys.path.insert(0, {str(ROOT)!r})
sys.path.append({numpy_home!r})
import numpy as np
from book import load_kernel
from book.launch import worker

def twice():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    load_kernel({str(KERNELS)!r}, "twice")(1, 8, (x, out))
    print(bool((out == 2 * x).all()), flush=True)

if {started_in!r} == "thread":
    t = threading.Thread(target=twice)
    t.start()
    t.join()
else:
    twice()
spin = load_kernel({str(KERNELS)!r}, "spin")
threading.Thread(target=spin, args=(1, 1, (np.zeros(1, np.uint32),)), kwargs={{"timeout_s": 600}},
                 daemon=True).start()
time.sleep(0.5)
print(worker._worker.proc.pid, flush=True)
time.sleep(600)
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    parent = subprocess.Popen([python, "-c", program], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env=dict(env, BOOK_BACKEND="cpu", BOOK_CPU_THREADS="1"))
    try:
        first = parent.stdout.readline().strip()
        assert first == "True", first + parent.communicate(timeout=60)[1]
        pid = int(parent.stdout.readline())
        assert not _gone(pid)
        parent.send_signal(signal.SIGTERM)
        parent.wait(timeout=60)
        deadline = time.monotonic() + 5
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)
            pytest.fail("the worker outlived its parent")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


@emulator_only
def test_a_worker_started_by_a_thread_outlives_the_thread():
    """PR_SET_PDEATHSIG fires when the thread that started the worker ends: a worker started by
    a thread that ended must still serve the launches of the others."""
    from book.launch import worker
    worker._worker.stop()
    starter = threading.Thread(target=still_works)
    starter.start()
    starter.join()
    pid = worker._worker.proc.pid
    time.sleep(0.3)
    still_works()
    assert worker._worker.proc.pid == pid


@emulator_only
def test_a_child_forked_during_a_launch_starts_a_worker_of_its_own():
    """A child made by fork (multiprocessing's default on Linux) while another thread's launch
    runs: it gets a worker of its own, not the parent's (whose lock it used to find held forever,
    and whose pipe it kept open), and the parent's launch goes on."""
    from conftest import run_with_backend
    program = f"""
import os, signal, threading, time, numpy as np
from book import LaunchError, load_kernel
from book.launch import worker
x = np.arange(8, dtype=np.float32)
def twice():
    out = np.zeros(8, np.float32)
    load_kernel({str(KERNELS)!r}, "twice")(1, 8, (x, out))
    return bool((out == 2 * x).all())
def spin():
    try:
        load_kernel({str(KERNELS)!r}, "spin")(1, 1, (np.zeros(1, np.uint32),), timeout_s=3)
    except LaunchError as exc:
        print("spun", "the launch ran for 3 s" in str(exc))
print(twice())
mine = worker._worker.proc.pid
spinning = threading.Thread(target=spin)
spinning.start()
time.sleep(0.5)
child = os.fork()
if child == 0:
    signal.alarm(60)  # (a child that waits for the parent's lock: killed)
    raise SystemExit(0 if twice() and worker._worker.proc.pid != mine else 1)
print("child", os.waitpid(child, 0)[1] == 0)
spinning.join()
print("after", twice())
"""
    lines = sorted(run_with_backend(program, "cpu").splitlines())  # (the first two in any order)
    assert lines == ["True", "after True", "child True", "spun True"]
