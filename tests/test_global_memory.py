"""Global memory on the emulator as on a GPU: a vector access checked for alignment however its
pointer was cast, an index outside an array argument named where it happens, inline PTX kept for
the GPU under #ifdef __CUDA_ARCH__ (and refused, with its line, where it is not). The legal
kernels give the same answers on a GPU."""
import numpy as np
import pytest

from book import BACKEND, KernelCompileError, LaunchError, load_kernel, to_device, to_host, xp
from conftest import ROOT, line_of

SOURCE = ROOT / "tests" / "kernels" / "global_memory.cu"
on_cpu = pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own checks")


def kernel(name):
    return load_kernel(SOURCE, name)


@pytest.mark.parametrize("how", [0, 1, 2])
def test_vector_loads_through_any_cast(how):
    x = np.arange(4 * 32 + 4, dtype=np.float32)
    out = xp.zeros(32, dtype=xp.float32)
    kernel("vector_sum")(1, 32, (to_device(x), out, np.int32(0), np.int32(how)))
    assert np.array_equal(to_host(out), x[:128].reshape(32, 4).sum(axis=1))


@on_cpu
@pytest.mark.parametrize("how, cast", [(0, "cast to float4"), (1, "reinterpret_cast to vec4"),
                                       (2, "reinterpret_cast to V")])
def test_a_misaligned_vector_load_is_refused_however_cast(how, cast):
    x = np.zeros(4 * 32 + 4, np.float32)
    with pytest.raises(LaunchError, match=rf"vector_sum: block \(0, 0, 0\), thread \(0, 0, 0\): "
                                          rf"misaligned address: the {cast}\* on line \d+ gives an "
                                          r"address 4 bytes past a 16-byte boundary"):
        kernel("vector_sum")(1, 32, (x, np.zeros(32, np.float32), np.int32(1), np.int32(how)))


def test_vector_loads_from_an_array_of_any_length():
    """129 floats: not a whole number of float4s. The emulator once placed such an array 4 bytes
    off 16, and the CPU faulted on a legal float4 load (x86's aligned moves)."""
    x = np.arange(4 * 32 + 1, dtype=np.float32)
    out = xp.zeros(32, dtype=xp.float32)
    kernel("vector_sum")(1, 32, (to_device(x), out, np.int32(0), np.int32(0)))
    assert np.array_equal(to_host(out), x[:128].reshape(32, 4).sum(axis=1))


@on_cpu
def test_a_vector_load_from_a_misaligned_view_is_refused():
    """x[1:] starts 4 bytes into its array: on a GPU a float4 load at its start is misaligned."""
    x = np.zeros(4 * 32 + 4, np.float32)
    with pytest.raises(LaunchError, match=r"misaligned address: the cast to float4\* on line \d+ "
                                          r"gives an address 4 bytes past a 16-byte boundary"):
        kernel("vector_sum")(1, 32, (x[1:], np.zeros(32, np.float32), np.int32(0), np.int32(0)))


@on_cpu
def test_an_index_before_a_views_start_says_the_emulator_copies_only_the_view():
    x = np.arange(40, dtype=np.float32)
    with pytest.raises(LaunchError, match=r"element -1 of `in` .*`in` is a view of a larger array "
                                          r"\(32 of its 40 elements\).*pass the whole array"):
        kernel("stencil_left")(1, 32, (x[8:], np.zeros(32, np.float32), np.int32(0)))


@on_cpu
def test_a_struct_holding_a_pointer_is_refused_by_value():
    span = np.dtype([("n", "i4"), ("data", "u8")], align=True)
    out = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match=r"span_fill: parameter 's' is a Span passed by value, and "
                                          r"its member `float\* data` is a pointer.*Pass the arrays "
                                          r"as pointer parameters"):
        kernel("span_fill")(1, 4, (np.array((4, out.ctypes.data), span)[()],))


@on_cpu
def test_a_misaligned_double_is_refused():
    x = np.zeros(66, np.float32)
    out = np.zeros(32, np.float64)
    kernel("as_double")(1, 32, (x, out, np.int32(0)))  # element 2t: on 8 bytes
    with pytest.raises(LaunchError, match=r"misaligned address: the cast to double\* on line "
                                          r"\d+ gives an address 4 bytes past a 8-byte boundary"):
        kernel("as_double")(1, 32, (x, out, np.int32(1)))


@on_cpu
def test_an_index_before_the_start_is_named_inside_a_device_function():
    x = np.arange(32, dtype=np.float32)
    with pytest.raises(LaunchError, match=r"stencil_left: block \(0, 0, 0\), thread \(0, 0, 0\): "
                                          r"row\[i - 1\] on line 8 is element -1 of `in` \(32 "
                                          r"elements of 4 bytes\): 1 before its start"):
        kernel("stencil_left")(1, 32, (x, np.zeros(32, np.float32), np.int32(0)))
    out = np.zeros(31, np.float32)
    kernel("stencil_left")(1, 31, (x, out, np.int32(1)))
    assert np.array_equal(out, x[:31])


def test_pointers_that_move_and_views_of_one_array_are_legal():
    a = np.arange(6 * 8, dtype=np.float32)
    whole = to_device(a)
    rows = xp.zeros(6, dtype=xp.float32)
    kernel("moved_pointers")(6, 1, (whole, rows, whole[40:48], np.int32(8)))
    assert np.array_equal(to_host(rows), a.reshape(6, 8).sum(axis=1) + a[40])


def test_inline_ptx_under_cuda_arch_runs_on_both_backends():
    out = xp.zeros(64, dtype=xp.int32)
    kernel("lane_ids")(1, 64, (out,))
    assert np.array_equal(to_host(out), np.arange(64) % 32)


@on_cpu
def test_inline_ptx_the_cpu_would_compile_is_refused_with_its_line():
    with pytest.raises(KernelCompileError, match=r"(?s)inline_ptx.cu:4.*inline PTX \(an asm "
                                                 r"statement\) runs only on a GPU.*#ifdef "
                                                 r"__CUDA_ARCH__"):
        load_kernel(ROOT / "tests" / "kernels" / "inline_ptx.cu", "lane_ptx")


def test_a_spin_lock_on_atomics_ends():
    """Threads that spin on atomicCAS let the holder of the lock run (on the emulator: a thread
    that repeats an atomic on one address yields), so every thread gets its turn."""
    lock, total = xp.zeros(1, dtype=xp.int32), xp.zeros(1, dtype=xp.int32)
    kernel("locked_count")(4, 32, (lock, total), **({"timeout_s": 20} if BACKEND == "cpu" else {}))
    assert int(to_host(total)[0]) == 4 * 32


def test_a_local_row_pointer_is_legal_inside_its_array():
    a = np.arange(4 * 8, dtype=np.float32)
    out = xp.zeros(32, dtype=xp.float32)
    kernel("table_fill")(1, 8, (np.int32(8),))
    kernel("row_left")(3, 8, (to_device(a), out, np.int32(8), np.int32(0)))
    expected = a[:24] + np.tile(np.arange(8, dtype=np.float32), 3)
    assert np.array_equal(to_host(out)[:24], expected)


@on_cpu
def test_an_index_through_a_local_pointer_before_the_start_is_named():
    with pytest.raises(LaunchError, match=r"row_left: block \(0, 0, 0\), thread \(0, 0, 0\): "
                                          r"row\[\(int\)threadIdx.x - shift\] on line \d+ is element "
                                          r"-1 of `in`"):
        kernel("row_left")(3, 8, (np.arange(32, dtype=np.float32), np.zeros(32, np.float32),
                                  np.int32(8), np.int32(1)))


@on_cpu
def test_a_device_array_indexed_past_its_end_is_named():
    with pytest.raises(LaunchError, match=r"table_fill: block \(0, 0, 0\), thread \(0, 0, 0\): "
                                          r"table\[i\] on line \d+: index 8 is outside the array, "
                                          r"which has 8 elements"):
        kernel("table_fill")(1, 8, (np.int32(16),))


def test_restrict_pointers_read_right():
    x = np.arange(4 * 32 + 4, dtype=np.float32)
    out = xp.zeros(32, dtype=xp.float32)
    kernel("restrict_read_at")(1, 32, (to_device(x), out, np.int32(2)))
    assert np.array_equal(to_host(out), x[2:34])
    kernel("restrict_float4")(1, 32, (to_device(x), out, np.int32(4)))
    assert np.array_equal(to_host(out), x[4:132].reshape(32, 4).sum(axis=1))


@on_cpu
def test_an_index_through_a_restrict_pointer_is_checked_as_any_other():
    """const float* __restrict__: g++'s is_pointer is false for it, and the check was skipped
    (in[-1] read the guard bytes' NaN, with no message)."""
    with pytest.raises(LaunchError, match=r"restrict_read_at: block \(0, 0, 0\), thread \(0, 0, 0\): "
                                          r"in\[offset \+ \(int\)threadIdx.x\] on line \d+ is element -1 "
                                          r"of `in`"):
        kernel("restrict_read_at")(1, 32, (np.zeros(32, np.float32), np.zeros(32, np.float32),
                                           np.int32(-1)))
    with pytest.raises(LaunchError, match=r"restrict_local: .*row\[-1\] on line \d+ is element -1 of `x`"):
        kernel("restrict_local")(1, 32, (np.zeros(32, np.int32), np.zeros(32, np.int32)))


@on_cpu
def test_a_misaligned_vector_load_through_a_restrict_pointer_is_refused():
    with pytest.raises(LaunchError, match=r"restrict_float4: block \(0, 0, 0\), thread \(0, 0, 0\): "
                                          r"misaligned address: the reinterpret_cast to float4\* on "
                                          r"line \d+ gives an address 4 bytes past a 16-byte boundary"):
        kernel("restrict_float4")(1, 32, (np.zeros(4 * 32 + 4, np.float32), np.zeros(32, np.float32),
                                          np.int32(1)))


def test_a_launch_within_launch_bounds_runs():
    out = xp.zeros(256, dtype=xp.float32)
    kernel("bounded")(1, 128, (out,))
    kernel("bounded_t<256>")(1, 128, (out,))
    assert to_host(out)[:128].tolist() == [2.0] * 128


@on_cpu
def test_a_launch_past_launch_bounds_is_refused_as_a_gpu_refuses_it():
    """A GPU fails such a launch (CUDA_ERROR_INVALID_VALUE); the emulator once ran it (and then
    named a line of its own rewritten text, 54 lines off in a learner's one-kernel file)."""
    line = line_of(SOURCE, "__launch_bounds__(128) bounded(")
    with pytest.raises(LaunchError, match=r"bounded: block \(0, 0, 0\), thread \(0, 0, 0\): the launch "
                                          r"has 256 threads a block, but the kernel's __launch_bounds__ "
                                          rf"on line {line} allows at most 128"):
        kernel("bounded")(1, 256, (np.zeros(256, np.float32),))
    with pytest.raises(LaunchError, match=r"allows at most 128"):
        kernel("bounded_t<256>")(1, 256, (np.zeros(256, np.float32),))


def test_fetch_float4_copies_whole_vectors():
    x = np.arange(128, dtype=np.float32)
    out = xp.zeros(128, dtype=xp.float32)
    kernel("fetch_float4_copy")(1, 32, (to_device(x), out, np.int32(128)))
    assert np.array_equal(to_host(out), x)


def floats(n, zeros=False):
    return np.zeros(n, np.float32) if zeros else np.arange(n, dtype=np.float32)


@on_cpu
@pytest.mark.parametrize("name, threads, args, says", [
    # reinterpret_cast<float4*>(&x[i])[0] at i = n - 2: its last 8 bytes lie past the array (it once
    # ran silently, inside the 16 bytes the array is padded to)
    ("fetch_float4_copy", 32, (floats(102), floats(102, True), np.int32(102)),
     r"thread \(25, 0, 0\): the reinterpret_cast to float4\* indexed \[0\] on line \d+ is element 25 "
     r"of `in` \(408 bytes: 25 whole elements of 16 bytes\): its last 8 bytes past the end"),
    # pointers whose declarations show no *: a typedef'd parameter, an auto local (once silent)
    ("alias_shift", 128, (floats(101), floats(101, True), np.int32(101)),
     r"thread \(100, 0, 0\): in\[i \+ 1\] on line \d+ is element 101 of `in` \(101 elements of 4 "
     r"bytes\): 1 past its end"),
    ("alias_shift", 128, (floats(102), floats(100, True), np.int32(101)),
     r"row\[0\] on line \d+ is element 100 of `out`"),
    # for (unsigned i = n - 1; i >= 0; --i): once blamed on an int product's overflow
    ("reverse_sums", 1, (floats(16), floats(16, True), np.int32(16)),
     r"x\[i\] on line \d+ is element 4294967295 of `x`.*an unsigned int that went below 0 and wrapped"),
], ids=["fetch_float4", "typedef", "auto", "unsigned"])
def test_an_index_outside_is_named_however_the_pointer_was_written(name, threads, args, says):
    with pytest.raises(LaunchError, match=says):
        kernel(name)(1, threads, args)
