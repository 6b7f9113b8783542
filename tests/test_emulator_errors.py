"""The CPU emulator names a learner's bug instead of returning a wrong result, and the process
goes on: after each error a correct kernel runs in the same process. (On a GPU these bugs are
undefined behaviour or a hang, so these tests run on the emulator only.)"""
import numpy as np
import pytest

from book import BACKEND, LaunchError, load_kernel
from conftest import KERNEL_REPRESENTATIVES, ROOT, line_of, sweep_params

pytestmark = pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own checks")
BUGS = ROOT / "book" / "kernels" / "bugs.cu"


def bug(name):
    return load_kernel(BUGS, name)


def still_works():
    """A correct kernel right after the error: the process and the emulator survived."""
    from book.harness.check import random_inputs, relative_error, run_matmul
    from book.registry import KERNELS
    a, b = random_inputs(33, 17, 9, seed=0)
    assert relative_error(run_matmul(KERNELS["tiled16"], a, b), a.astype(np.float64) @ b) < 1e-6


def test_barrier_divergence_names_both_sides():
    with pytest.raises(LaunchError, match=(
            r"divergent_barrier: block \(0, 0, 0\): barrier divergence: 16 threads, the first "
            r"\(0, 0, 0\), wait at the __syncthreads\(\) on line 7, and 16 threads, the first "
            r"\(16, 0, 0\), at the one on line 9")):
        bug("divergent_barrier")(1, 32, (np.zeros(32, np.float32),))
    still_works()


def test_threads_that_exit_before_a_barrier_do_not_count():
    out = np.full(32, np.nan, np.float32)
    bug("barrier_then_exit")(1, 32, (out,))
    np.testing.assert_array_equal(out, np.arange(32))


def test_shuffle_reading_an_exited_lane():
    """Lane 31 has exited: the full-mask shuffle runs without it (as on a GPU), but lane 30 reads
    its value, which a GPU leaves undefined."""
    with pytest.raises(LaunchError, match=(
            r"shfl_after_exit: block \(0, 0, 0\), thread \(30, 0, 0\): a __shfl\*_sync at line 22 "
            r"reads lane 31, which finished the kernel without calling it .*: on a GPU the value is undefined")):
        bug("shfl_after_exit")(1, 32, (np.zeros(32, np.float32),))
    still_works()


def test_shuffle_reading_a_lane_outside_its_mask():
    with pytest.raises(LaunchError, match=(
            r"shfl_outside_mask: block \(0, 0, 0\), thread \(0, 0, 0\): a __shfl\*_sync at line 27 "
            r"reads lane 20, which its mask 0x0000ffff leaves out")):
        bug("shfl_outside_mask")(1, 32, (np.zeros(32, np.int32),))
    still_works()


def test_shuffle_width_must_be_a_power_of_two():
    with pytest.raises(LaunchError, match=(
            r"shfl_bad_width: block \(0, 0, 0\), thread \(0, 0, 0\): a __shfl\*_sync at line 32 "
            r"has width 12; it must be a power of 2 from 1 to 32")):
        bug("shfl_bad_width")(1, 32, (np.zeros(32, np.int32),))
    still_works()


def test_mask_must_name_the_calling_lane():
    with pytest.raises(LaunchError, match=(
            r"mask_without_caller: block \(0, 0, 0\), thread \(1, 0, 0\): a vote "
            r"\(__ballot/__any/__all_sync\) at line 37 has mask 0x00000001, which leaves out the "
            r"calling lane 1")):
        bug("mask_without_caller")(1, 32, (np.zeros(32, np.uint32),))
    still_works()


@pytest.mark.parametrize("offset, message", [
    (1, r"thread \(31, 0, 0\): wrote out\[32\], 1 past the end of out \(32 floats\)"),
    (4, r"thread \(28, 0, 0\): wrote out\[32\], 1 past the end of out \(32 floats\)"),
    (1_000_000, r"thread \(0, 0, 0\): wrote out\[1000000\], 999969 past the end of out"),
    (-5000, r"thread \(0, 0, 0\): wrote out\[-5000\], 5000 before the start of out"),
])
def test_writes_through_a_pointer_outside_an_array_name_the_element(offset, message):
    """A pointer walked along (``*p++``), which the emulator does not follow: its guard regions
    find the write and name the element."""
    with pytest.raises(LaunchError, match=r"write_walked: block \(0, 0, 0\), " + message):
        bug("write_walked")(1, 32, (np.zeros(32, np.float32), np.int32(offset)))
    still_works()


@pytest.mark.parametrize("offset", [-1, -3])
def test_a_write_through_a_pointer_just_before_the_start_is_found_when_the_launch_ends(offset):
    with pytest.raises(LaunchError, match=(
            rf"write_walked: wrote out\[{offset}\], {-offset} before the start of out \(32 floats\); "
            r"found when the launch ended")):
        bug("write_walked")(1, 32, (np.zeros(32, np.float32), np.int32(offset)))
    still_works()


@pytest.mark.parametrize("kernel, offset, thread, element, where", [
    ("write_at", 1, 31, 32, "1 past its end"),
    ("write_through", 1, 31, 32, "1 past its end"),
    ("write_through", -5000, 0, -5000, "5000 before its start"),
    ("write_at", -1, 0, -1, "1 before its start"),
    ("write_at", 1_000_000, 0, 1000000, "999969 past its end"),
    ("read_at", -1, 0, -1, "1 before its start"),
    ("read_at", 3, 29, 32, "1 past its end"),
])
def test_an_index_outside_an_array_names_the_expression_line_and_element(kernel, offset, thread,
                                                                        element, where):
    """in[-1] and in[n] are found where they happen, with the expression and its line, though
    they land in the page an array shares with its guard bytes (reads there would give NaN);
    so is *(out + i), pointer arithmetic."""
    args = (np.zeros(32, np.float32), np.int32(offset)) if kernel.startswith("write") else \
        (np.zeros(32, np.float32), np.zeros(32, np.float32), np.int32(offset))
    expression = {"write_at": r"out\[offset \+ \(int\)threadIdx.x\] on line 44",
                  "write_through": r"\*\(out \+ offset \+ \(int\)threadIdx.x\) on line 49",
                  "read_at": r"in\[offset \+ \(int\)threadIdx.x\] on line \d+"}[kernel]
    with pytest.raises(LaunchError, match=(
            rf"{kernel}: block \(0, 0, 0\), thread \({thread}, 0, 0\): {expression} is element "
            rf"{element} of `(out|in)` \(32 elements of 4 bytes\): {where}")):
        bug(kernel)(1, 32, args)
    still_works()


def test_an_index_this_far_out_is_named_as_an_int_that_overflowed():
    with pytest.raises(LaunchError, match=(
            r"write_through: .* is element -2147483648 of `out` .*; an index this far out is "
            r"most often an int that overflowed")):
        bug("write_through")(1, 32, (np.zeros(32, np.float32), np.int32(-2 ** 31)))
    still_works()


@pytest.mark.parametrize("index", [32, 1 << 30, -1])
def test_a_shared_array_indexed_out_of_bounds_is_named(index):
    with pytest.raises(LaunchError, match=(
            rf"shared_at: block \(0, 0, 0\), thread \(0, 0, 0\): index {index} of __shared__ s is "
            r"out of bounds: s is float\[32\] \(its dimension 1 has 32 elements\)")):
        bug("shared_at")(1, 32, (np.zeros(32, np.float32), np.int32(index)))
    still_works()


def test_integer_division_by_zero():
    with pytest.raises(LaunchError, match=r"divide: block \(0, 0, 0\), thread \(0, 0, 0\): integer "
                                          r"division by zero"):
        bug("divide")(1, 32, (np.ones(32, np.int32), np.zeros(32, np.int32), np.int32(0)))
    still_works()


def test_an_endless_loop_stops_at_the_time_limit(monkeypatch):
    with pytest.raises(LaunchError, match=r"forever: the launch ran for 1 s, the emulator.s limit, and was stopped: an endless loop, or more work.*Raise the limit with timeout_s= on the launch or BOOK_EMU_TIMEOUT_S"):
        bug("forever")(1, 32, (np.zeros(1, np.int32),), timeout_s=1)
    monkeypatch.setenv("BOOK_EMU_TIMEOUT_S", "0.5")
    with pytest.raises(LaunchError, match=r"ran for 0.5 s, the emulator.s limit"):
        bug("forever")(1, 32, (np.zeros(1, np.int32),))
    monkeypatch.delenv("BOOK_EMU_TIMEOUT_S")
    still_works()


def test_ctrl_c_stops_a_running_launch_and_the_process_goes_on():
    from conftest import run_with_backend
    program = f"""
import os, signal, threading, numpy as np
from book import load_kernel
from book.harness.check import random_inputs, relative_error, run_matmul
from book.registry import KERNELS
signal.signal(signal.SIGINT, signal.default_int_handler)  # (a shell's background job ignores it)
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    load_kernel({str(BUGS)!r}, "forever")(1, 32, (np.zeros(1, np.int32),))
except KeyboardInterrupt:
    print("interrupted")
a, b = random_inputs(33, 17, 9, seed=0)
print(relative_error(run_matmul(KERNELS["tiled16"], a, b), a.astype(np.float64) @ b) < 1e-6)
"""
    assert run_with_backend(program, "cpu").split() == ["interrupted", "True"]


# ---- check mode (BOOK_EMU_CHECK=1) ---------------------------------------------------------------

def test_check_mode_finds_a_read_before_the_barrier(check_mode):
    with pytest.raises(LaunchError, match=(
            r"sum_without_barrier: block \(0, 0, 0\), thread \(31, 0, 0\): race on shared memory: "
            r"this thread reads s\[0\], which thread \(0, 0, 0\) wrote with no __syncthreads\(\) "
            r"between them")):
        bug("sum_without_barrier")(1, 32, (np.ones(32, np.float32), np.zeros(1, np.float32)))
    still_works()


def test_check_mode_finds_the_missing_second_barrier_of_a_tiled_kernel(check_mode):
    A = np.ones((32, 32), np.float32)
    with pytest.raises(LaunchError, match=r"tiled_one_barrier: block \(0, 0, 0\), thread \(1, 0, 0\): "
                                          r"race on shared memory: this thread reads As\[0\]\[0\]"):
        bug("tiled_one_barrier")((1, 1), (16, 16), (A, A, np.zeros((32, 32), np.float32), np.int32(32)))


REFERENCE_SUM = r"""
extern "C" __global__ void sum_by_reference(const float* in, float* out, int barrier) {
    __shared__ float s[64];
    const int t = threadIdx.x;
    float& mine = s[t];  // a reference to the thread's own element
    mine = in[t];
    __syncthreads();
    for (int k = 32; k > 0; k >>= 1) {
        if (t < k) mine += s[t + k];
        if (barrier) __syncthreads();
    }
    if (t == 0) out[0] = mine;
}
"""


def test_check_mode_follows_a_reference_to_a_shared_element(check_mode, tmp_path):
    """`float& mine = s[t]; mine += s[t + k];` with no barrier in the loop: a race through a
    reference, once unseen (a reference ended the element's tracking). With the barrier, clean."""
    src = tmp_path / "reference.cu"
    src.write_text(REFERENCE_SUM)
    x, out = np.arange(64, dtype=np.float32), np.zeros(1, np.float32)
    with pytest.raises(LaunchError, match=r"sum_by_reference: block \(0, 0, 0\), thread \(\d+, 0, 0\): "
                                          r"race on shared memory: this thread (reads|writes) s\[\d+\]"):
        load_kernel(src, "sum_by_reference")(1, 64, (x, out, np.int32(0)))
    load_kernel(src, "sum_by_reference")(1, 64, (x, out, np.int32(1)))
    assert out[0] == x.sum()


def test_check_mode_finds_unwritten_shared_memory(check_mode):
    with pytest.raises(LaunchError, match=r"reads_unwritten: block \(0, 0, 0\), thread \(0, 0, 0\): "
                                          r"reads s\[32\], which no thread of the block has written"):
        bug("reads_unwritten")(1, 32, (np.zeros(32, np.float32),))


def test_a_2d_shared_tile_indexed_one_row_too_far():
    with pytest.raises(LaunchError, match=(
            r"tile_overflow: block \(0, 0, 0\), thread \(240, 0, 0\): index 16 of __shared__ tile is "
            r"out of bounds: tile is float\[16\]\[16\] \(its dimension 1 has 16 elements\)")):
        bug("tile_overflow")(1, 256, (np.zeros(256, np.float32),))
    still_works()


def test_without_check_mode_the_same_race_goes_unseen():
    out = np.zeros(1, np.float32)
    bug("sum_without_barrier")(1, 32, (np.ones(32, np.float32), out))  # the emulator's order hides it
    assert out[0] == 32


@pytest.mark.parametrize("kernels", sweep_params(["representatives", "the others"], ["representatives"]))
def test_every_book_kernel_is_clean_in_check_mode(check_mode, kernels):
    """python -m book.profile.sanitize --cpu, as CI runs it: no race, no unwritten read, no bad
    index (make test: the representatives of conftest.KERNEL_REPRESENTATIVES; make test-sweep:
    every other kernel)."""
    from book.registry import correct_kernels, usable
    from book.profile.sanitize import cpu_check
    ids = [s.id for s in usable(correct_kernels())
           if (s.id in KERNEL_REPRESENTATIVES) == (kernels == "representatives")]
    assert ids and cpu_check(ids, sizes=[(65, 64, 63)]) == {}


def test_sgemm_plans_are_clean_in_check_mode(check_mode):
    """The plans of book.sgemm under the same checks (python -m book.profile.sanitize --cpu runs
    them all): a one-slice plan, a split-K plan and one that pads B, on a shape with edges; and
    the builds for B's rows on 8 and on 4 bytes (ROW_ALIGN 2 and 1), their edge tiles moved back;
    a stream-K plan. C's rows of 66 and 69 floats pass through shared memory (store_own)."""
    from book.blas import Plan
    from book.profile.sanitize import cpu_check
    ids = [p.id for p in (Plan("64x64"), Plan("128x128", 3), Plan("64x128", 1, True),
                          Plan("64x64", streamk=True))]
    assert cpu_check(ids, sizes=[(65, 66, 63), (70, 70, 33), (70, 69, 17)]) == {}


def test_a_read_only_array_is_refused_before_the_launch():
    """The kernel may write out (float*, not const): a read-only array is named before anything
    runs (it used to run, then fail in numpy's copy back)."""
    out = np.zeros(32, np.float32)
    out.flags.writeable = False
    with pytest.raises(LaunchError, match=r"out is a read-only array, and the kernel may write it "
                                          r"\(its parameter is float\*, not const\)"):
        load_kernel(ROOT / "tests" / "kernels" / "learner.cu", "intrinsics")(
            (1,), (4,), (np.ones(4, np.float32), out, np.zeros(2, np.uint32)))
    still_works()


def test_no_file_is_left_in_dev_shm_after_launches_and_errors():
    """The arena that carries a launch's arrays is a file in /dev/shm whose name is removed as
    soon as it is made: the worker opens it through the parent's descriptor. So a process that
    launched kernels, one of them failing, and is then killed (SIGKILL: no clean-up runs)
    leaves nothing there; while it lives, its arena is already nameless ("(deleted)")."""
    import os
    import signal
    import subprocess
    import sys
    code = ("import sys, time\n"
            "import numpy as np\n"
            "from book import load_kernel, LaunchError\n"
            "from book.launch import worker as emulator\n"
            f"k = load_kernel({str(BUGS)!r}, 'divergent_barrier')\n"
            "try:\n"
            "    k(1, 32, (np.zeros(32, np.float32),))\n"
            "except LaunchError:\n"
            "    pass\n"
            "print(emulator._worker.arena.key[0], flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        opened = proc.stdout.readline().strip()
        assert opened.startswith(f"/proc/{proc.pid}/fd/"), opened
        target = os.readlink(opened)
        assert "cuda-emu-" in target and target.endswith("(deleted)"), target
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)


def test_a_worker_that_may_not_open_proc_gets_a_named_arena(monkeypatch):
    """Where the worker may not open the parent's /proc/<pid>/fd/<fd> (some sandboxes), it says
    so, and the parent goes on with arenas that keep their name in /dev/shm until closed."""
    import os
    from book.launch import worker as emulator
    emulator._worker.close()  # the next launch makes a new arena
    real_exists = os.path.exists
    monkeypatch.setattr(emulator.os, "getpid", lambda: 2 ** 22 + 7)  # a process that is not there
    monkeypatch.setattr(emulator.os.path, "exists",
                        lambda p: True if str(p).startswith("/proc/") else real_exists(p))
    try:
        x = np.arange(8, dtype=np.float32)
        out = np.zeros(8, np.float32)
        load_kernel(ROOT / "tests" / "kernels" / "learner.cu", "tiny_product")((1,), (8,), (x, x, out))
        assert (out == x * x).all()
        assert emulator._Arena.named and emulator._worker.arena.name is not None
    finally:
        monkeypatch.undo()
        emulator._worker.close()  # its named file removed
        emulator._Arena.named = False


def test_a_full_mask_shuffle_in_a_branch_half_the_warp_skips_is_named():
    from conftest import SEMANTICS
    line = line_of(SEMANTICS, "the branch's shuffle")
    with pytest.raises(LaunchError, match=(
            rf"shfl_in_branch: block \(0, 0, 0\), thread \(8, 0, 0\): a __shfl\*_sync at line {line} "
            r"reads lane 16, which finished the kernel without calling it \(it returned early, or a "
            r"branch such as `if \(threadIdx.x < 16\)` skipped the call\): on a GPU the value is "
            r"undefined")):
        load_kernel(SEMANTICS, "shfl_in_branch")(1, 32, (np.ones(32, np.float32), np.zeros(32, np.float32)))
    still_works()


def test_a_shuffle_that_reads_a_lane_which_has_exited_is_named():
    from conftest import SEMANTICS
    with pytest.raises(LaunchError, match=(
            r"shfl_from_exited: block \(0, 0, 0\), thread \(4, 0, 0\): a __shfl\*_sync at line \d+ "
            r"reads lane 20, which finished the kernel without calling it .*: on a GPU the value is undefined")):
        load_kernel(SEMANTICS, "shfl_from_exited")(1, 32, (np.zeros(32, np.int32),
                                                           np.zeros(32, np.int32), np.int32(20)))
    still_works()


SHIFT = r"""
#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(n) (((n) >> LOG_NUM_BANKS) + ((n) >> (2 * LOG_NUM_BANKS)))
extern "C" __global__ void offsets(unsigned* out, int bits) {
    unsigned i = threadIdx.x;
    out[i] = CONFLICT_FREE_OFFSET(i) + (1u << (bits + (int)(i & 1)));
}
"""


def test_check_mode_stops_a_shift_by_the_width_or_more_at_its_line(check_mode, tmp_path):
    """x86 takes a shift's count modulo the width, a GPU's shl clamps it: check mode names the line
    (GPU Gems 3's scan macro shifts by 10 here, legal; 1u << 32 is not)."""
    from book.launch import emulator
    if not emulator._ub_check():
        pytest.skip("this compiler's sanitizer runtime is not libubsan's")
    src = tmp_path / "scan.cu"
    src.write_text(SHIFT)
    out = np.zeros(32, np.uint32)
    load_kernel(src, "offsets")(1, 32, (out, np.int32(30)))
    assert out[1] == (1 << 31) and out[0] == (1 << 30)
    with pytest.raises(LaunchError, match=(
            r"thread \(1, 0, 0\): a shift by 32 of a 32-bit 'unsigned int' \(scan.cu, line 6\).*"
            r"a GPU's shl/shr clamp it to 32")):
        load_kernel(src, "offsets")(1, 32, (out, np.int32(31)))
    still_works()


def test_a_block_needing_more_registers_than_a_gpu_has_is_refused(tmp_path):
    """111 registers (NVRTC's report) x 1024 threads exceed a block's 65,536: a GPU refuses the
    launch; so does the emulator, naming the numbers and the way out. 256 threads fit."""
    from book.launch.runtime import KernelCompileError
    src = tmp_path / "heavy.cu"
    src.write_text(
        'extern "C" __global__ void heavy(const float* x, float* out, int n) {\n'
        '    float acc[96];\n'
        '#pragma unroll\n    for (int j = 0; j < 96; ++j) acc[j] = 0.f;\n'
        '    for (int i = 0; i < n; ++i) {\n        float v = x[i * 1024 + threadIdx.x];\n'
        '#pragma unroll\n        for (int j = 0; j < 96; ++j) acc[j] = acc[j] * v + (float)j;\n    }\n'
        '    float t = 0;\n#pragma unroll\n    for (int j = 0; j < 96; ++j) t += acc[j] * acc[(j * 5) % 96];\n'
        '    out[threadIdx.x] = t;\n}\n')
    k = load_kernel(src, "heavy")
    if not k.module._report_or_compile_error().get("heavy"):
        pytest.skip("no NVRTC here: no register count")
    x, out = np.ones(2048, np.float32), np.zeros(1024, np.float32)
    k(1, 256, (x, out, np.int32(2)))
    with pytest.raises(LaunchError, match=r"heavy: 1024 threads a block at \d+ registers each take "
                                          r"[\d,]+ registers .*\(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"):
        k(1, 1024, (x, out, np.int32(2)))
    still_works()


def test_the_sanitizer_runs_a_skinny_plan_at_a_shape_it_computes():
    """python -m book.profile.sanitize launched the skinny plans at its odd sizes, which they
    do not compute, and counted each as an error: the few dimension is cut to fit."""
    from book.blas import plan_by_id, sanitizer_plans
    from book.profile.sanitize import fitted
    skinny = [p for p in sanitizer_plans() if "skinny" in p.id]
    assert skinny
    for p in skinny:
        shape = fitted(plan_by_id(p.id), 65, 64, 63)
        assert p.covers(*shape, *((shape[0] if p.layout[0] == "t" else shape[2]),
                                  (shape[2] if p.layout[1] == "t" else shape[1]), shape[1])) is None
    assert fitted(plan_by_id("sgemm_64x64_k1"), 65, 64, 63) == (65, 64, 63)


GLOBAL_HISTOGRAM = r"""
extern "C" __global__ void hist(const int* x, int* bins, int n, int atomic) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (atomic) atomicAdd(&bins[x[i] & 15], 1);
    else bins[x[i] & 15]++;  // the lost update
}
extern "C" __global__ void hist_spelled(const int* x, int* bins, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) bins[x[i] & 15] = bins[x[i] & 15] + 1;  // the same, spelled out
}
extern "C" __global__ void row_totals(const float* m, float* totals, int cols, int atomic) {
    float& total = totals[blockIdx.x];  // one element for the block's threads
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        if (atomic) atomicAdd(&total, m[blockIdx.x * cols + c]);
        else total += m[blockIdx.x * cols + c];  // the lost update, through a reference
}
struct Stats { float sum; float count; };
extern "C" __global__ void stats(const float* x, float* raw, int n) {
    Stats* st = reinterpret_cast<Stats*>(raw);
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (n == 1) { st->count = st->count + 1.0f; return; }  // (one thread: no clash)
    st->sum += x[i];  // the lost update, through ->
}
extern "C" __global__ void own_sums(const float* x, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 4 && i < n; ++k) out[i] += x[i];  // (each thread its own element)
    if (i < n) out[i] = out[i] * 0.5f + x[i];
}
"""


def test_check_mode_finds_a_lost_update_in_global_memory(check_mode, tmp_path):
    """A histogram in global memory without atomicAdd: two threads' read-modify-writes of one
    bin lose an update on a GPU (compute-sanitizer checks no global races); check mode names the
    two threads, also where the element is reached through a reference or `->`. With atomicAdd,
    and where each thread updates its own element, it is clean."""
    src = tmp_path / "global_hist.cu"
    src.write_text(GLOBAL_HISTOGRAM)
    x, bins = np.arange(64, dtype=np.int32), np.zeros(16, np.int32)
    with pytest.raises(LaunchError, match=(  # (two blocks run at once: either clash comes first)
            r"hist: block \([01], 0, 0\), thread \(\d+, 0, 0\): lost update: bins\[x\[i\] & 15\] on "
            r"line 6 reads and writes element \d+ of `bins`, which thread \(\d+, 0, 0\) of block "
            r"\([01], 0, 0\) also updated \(line 6\) in this launch with no barrier between them")):
        load_kernel(src, "hist")(2, 32, (x, bins, np.int32(64), np.int32(0)))
    with pytest.raises(LaunchError, match=r"thread \(16, 0, 0\): lost update: bins\[x\[i\] & 15\] on line 10"):
        load_kernel(src, "hist_spelled")(1, 64, (x, bins, np.int32(64)))  # (one block: in order)
    bins[:] = 0
    load_kernel(src, "hist")(2, 32, (x, bins, np.int32(64), np.int32(1)))
    np.testing.assert_array_equal(bins, 4)
    out = np.zeros(64, np.float32)
    load_kernel(src, "own_sums")(2, 32, (np.ones(64, np.float32), out, np.int32(64)))
    np.testing.assert_array_equal(out, 3)
    m = np.ones((2, 64), np.float32)
    with pytest.raises(LaunchError, match=r"row_totals: block \(0, 0, 0\), thread \(1, 0, 0\): lost "
                                          r"update: total on line 16 reads and writes element 0 of "
                                          r"`totals`, which thread \(0, 0, 0\)"):
        load_kernel(src, "row_totals")(1, 32, (m, np.zeros(2, np.float32), np.int32(64), np.int32(0)))
    totals = np.zeros(2, np.float32)
    load_kernel(src, "row_totals")(2, 32, (m, totals, np.int32(64), np.int32(1)))
    np.testing.assert_array_equal(totals, 64)
    with pytest.raises(LaunchError, match=r"stats: block \(0, 0, 0\), thread \(1, 0, 0\): lost update: "
                                          r"st->sum on line 24 reads and writes element 0 of `raw`"):
        load_kernel(src, "stats")(1, 32, (np.ones(32, np.float32), np.zeros(2, np.float32), np.int32(32)))
    raw = np.zeros(2, np.float32)
    load_kernel(src, "stats")(1, 32, (np.ones(1, np.float32), raw, np.int32(1)))
    assert raw.tolist() == [0.0, 1.0]


DEVICE_COUNTER = r"""
__device__ int counter;
__device__ unsigned hits = 0;
__device__ int bins[16];
extern "C" __global__ void count_all(int atomic, int* out) {
    if (atomic) atomicAdd(&counter, 1);
    else counter++;  // the counter's lost update
    if (threadIdx.x == 0 && blockIdx.x == 0) { hits += 2; out[0] = hits; }
}
extern "C" __global__ void count_spelled() {
    counter = counter + 1;  // the same, spelled out
    if (threadIdx.x == 0) hits = 0;  // (an assignment, not an update)
}
extern "C" __global__ void device_hist(int atomic) {
    if (atomic) atomicAdd(&bins[threadIdx.x & 15], 1);
    else bins[threadIdx.x & 15]++;  // a histogram in a __device__ array, without atomics
}
"""


def test_check_mode_finds_a_device_counter_without_atomics(check_mode, tmp_path):
    """`counter++` on a __device__ variable from every thread: a GPU loses most of the updates;
    check mode names the variable and two threads. With atomicAdd, and one thread updating, it
    is clean (and the variable keeps its value between launches, as on a GPU)."""
    src = tmp_path / "counter.cu"
    src.write_text(DEVICE_COUNTER)
    k, out = load_kernel(src, "count_all"), np.zeros(1, np.int32)
    with pytest.raises(LaunchError, match=(
            r"count_all: block \(0, 0, 0\), thread \(1, 0, 0\): lost update: the __device__ "
            r"variable counter is read and written on line 7 by this thread and \(line 7\) by "
            r"thread \(0, 0, 0\) of block \(0, 0, 0\).*atomicAdd\(&counter, 1\)")):
        k(2, 32, (np.int32(0), out))
    with pytest.raises(LaunchError, match=r"thread \(1, 0, 0\): lost update: the __device__ "
                                          r"variable counter is read and written on line 11"):
        load_kernel(src, "count_spelled")(1, 32, ())
    k = load_kernel(src, "count_all")
    k(2, 32, (np.int32(1), out))
    first = int(out[0])
    k(2, 32, (np.int32(1), out))
    assert out[0] == first + 2  # (hits: one thread adds 2 a launch, kept between launches)
    with pytest.raises(LaunchError, match=r"device_hist: block \(0, 0, 0\), thread \(16, 0, 0\): lost "
                                          r"update: bins\[threadIdx.x & 15\] on line 16 reads and "
                                          r"writes element 0 of a __device__ array, which thread "
                                          r"\(0, 0, 0\) of block \(0, 0, 0\) also updated"):
        load_kernel(src, "device_hist")(1, 32, (np.int32(0),))  # (one block: in order)
    load_kernel(src, "device_hist")(1, 32, (np.int32(1),))
