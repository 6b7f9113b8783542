"""Check mode's races on global memory (memory.h's track_global): two threads' writes of one
element with different values, a block reading another block's result in the same launch, an
in-place update whose reads another thread's write overtakes; the legal patterns beside them
(one flag set by many threads, a barrier between the reads and the writes, the threadfence
reduction) run, on the emulator in check mode and on a GPU. Also the two source-level mistakes
found beside them: a kernel that writes __constant__ memory (refused on both backends) and an
array from xp.empty that a kernel accumulates into (NaN on the CPU, not zeros by luck)."""
import numpy as np
import pytest

from book import BACKEND, KernelSourceError, LaunchError, load_kernel, to_device, to_host, xp
from conftest import ROOT, line_of

SOURCE = ROOT / "tests" / "kernels" / "global_races.cu"
on_cpu = pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own checks")


def kernel(name):
    return load_kernel(SOURCE, name)


@on_cpu
def test_two_threads_writing_different_values_to_one_element(check_mode):
    line = line_of(SOURCE, "// two writers")
    with pytest.raises(LaunchError, match=(
            rf"race on global memory: thread \(0, 0, 0\) of block \(0, 0, 0\) wrote out\[i / 2\] "
            rf"on line {line} \(element 0 of `out`\), and thread \(1, 0, 0\) of block \(0, 0, 0\) "
            rf"wrote a different value there.*out\[i\], not out\[i / 2\]")):
        kernel("downsample")(1, 64, (to_device(np.arange(64, dtype=np.float32)),
                                     xp.zeros(32, dtype=xp.float32), np.int32(64)))


def test_many_threads_setting_one_flag_is_left_alone(check_mode):
    found = xp.zeros(1, dtype=xp.int32)
    x = np.linspace(-1, 1, 300).astype(np.float32)
    kernel("any_positive")(3, 128, (to_device(x), found, np.int32(300)))
    assert to_host(found)[0] == 1


@on_cpu
def test_a_block_reading_another_blocks_result(check_mode):
    """Blocks run on several OS threads at once: block b reads first (a write over its read is
    reported) or block b - 1 writes first (the read is); either is named."""
    line = line_of(SOURCE, "// another block's write")
    with pytest.raises(LaunchError, match=(
            r"block \(\d, 0, 0\), thread \(0, 0, 0\): race on global memory: this thread "
            rf"(reads part\[b - 1\] on line {line}|writes part\[b\] on line {line + 2}) \(element "
            r"\d of `part`\), which thread \(0, 0, 0\) of block \(\d, 0, 0\) (wrote|read) on line "
            r"\d+ in this launch, and threads of two blocks are never ordered within a launch.*"
            r"(read them in a second launch|split the kernel into two launches)")):
        kernel("chained")(4, 64, (to_device(np.ones(256, np.float32)), xp.zeros(4, dtype=xp.float32)))


@on_cpu
def test_an_in_place_shift_whose_write_overtakes_a_read(check_mode):
    line = line_of(SOURCE, "// shift write")
    with pytest.raises(LaunchError, match=(
            rf"thread \(1, 0, 0\): race on global memory: this thread writes x\[i\] on line {line} "
            rf"\(element 1 of `x`\), which thread \(0, 0, 0\) of block \(0, 0, 0\) read on line "
            rf"{line} in this launch with no __syncthreads\(\) between them.*read them into a "
            r"variable, __syncthreads\(\), then write \(or write to a second array\)")):
        kernel("shift_left")(1, 64, (to_device(np.arange(64, dtype=np.float32)), np.int32(64)))


@on_cpu
def test_an_update_through_a_helpers_reference_parameter_is_a_lost_update(check_mode):
    line = line_of(SOURCE, "// through a reference")
    with pytest.raises(LaunchError, match=(
            rf"thread \(1, 0, 0\): lost update: c on line {line} reads and writes element 0 of "
            r"`count`, which thread \(0, 0, 0\) of block \(0, 0, 0\) also updated")):
        kernel("count_by_reference")(1, 64, (to_device(np.ones(64, np.float32)),
                                             xp.zeros(1, dtype=xp.int32), np.int32(64)))


@on_cpu
def test_a_check_then_write_is_told_to_be_an_atomic(check_mode):
    line = line_of(SOURCE, "// check then write")
    with pytest.raises(LaunchError, match=(
            rf"race on global memory: this thread writes \*best on line {line} .*read on line "
            rf"{line}.*Threads read and write this one element: make the update one atomic "
            r"\(atomicMax")):
        kernel("racy_max")(1, 128, (to_device(np.arange(128, dtype=np.int32)),
                                   xp.zeros(1, dtype=xp.int32), np.int32(128)))


@on_cpu
def test_an_in_place_stencil_is_told_to_read_then_barrier_then_write(check_mode):
    line = line_of(SOURCE, "// stencil")
    with pytest.raises(LaunchError, match=(
            rf"thread \(2, 0, 0\): race on global memory: this thread reads x\[i - 1\] on line "
            rf"{line} \(element 1 of `x`\), which thread \(1, 0, 0\) of block \(0, 0, 0\) wrote "
            rf"on line {line}.*read them into a variable, __syncthreads\(\), then write")):
        kernel("smooth_in_place")(1, 32, (to_device(np.arange(32, dtype=np.float32)), np.int32(32)))


def test_legal_global_patterns_run_in_check_mode(check_mode):
    x = to_device(np.arange(64, dtype=np.float32))
    kernel("shift_left_synced")(1, 64, (x, np.int32(64)))
    assert np.array_equal(to_host(x)[:63], np.arange(1, 64, dtype=np.float32))

    values = np.arange(70 * 64, dtype=np.float32)  # (more blocks than threads: strided reads)
    part, done, out = xp.zeros(70, dtype=xp.float32), xp.zeros(1, dtype=xp.uint32), xp.zeros(1, dtype=xp.float32)
    kernel("last_block_sum")(70, 64, (to_device(values), part, done, out))
    assert to_host(out)[0] == values.sum()


def test_one_value_then_ordered_atomics_and_a_failed_launch_leave_no_race(check_mode):
    """Writes of one value by every thread, then atomics after a barrier (the pending second
    write is compared at the barrier, not at the block's end); and a launch that failed leaves
    nothing pending for the next one."""
    x = to_device(np.linspace(-1, 1, 128).astype(np.float32))
    count = xp.zeros(2, dtype=xp.float32)
    kernel("count_positive")(2, 64, (x, count))
    assert to_host(count).tolist() == [0.0, 64.0]
    out = xp.zeros(64, dtype=xp.float32)
    if BACKEND == "cpu":
        with pytest.raises(LaunchError, match=r"out\[1000\]"):
            kernel("same_then_fail")(1, 64, (x, out))
    out[...] = 7
    kernel("twice")(1, 64, (x, out))
    assert np.array_equal(to_host(out), 2 * to_host(x)[:64])


def test_a_kernel_writing_constant_memory_is_refused(tmp_path):
    """NVRTC compiles an element's store (with a warning) and the launch fails on a GPU (an
    H200: 'unspecified launch failure'); the emulator would keep it. Refused on both backends,
    with the line, before anything is compiled (NVRTC refuses a scalar's store itself)."""
    source = tmp_path / "write_constant.cu"
    source.write_text("__constant__ float coeffs[4];\n__constant__ float scale;\n"
                      "extern \"C\" __global__ void update(const float* x, float* y) {\n"
                      "    int i = threadIdx.x;\n"
                      "    y[i] = coeffs[i & 3] * scale;\n"
                      "    if (i < 4) coeffs[i] = x[i];\n}\n")
    with pytest.raises(KernelSourceError, match=(
            r"coeffs\[i\] \(write_constant.cu, line 6\) writes the __constant__ variable coeffs: "
            r"kernels can only read constant memory.*set_constant\('coeffs', values\)")):
        load_kernel(source, "update")
    source.write_text(source.read_text().replace("coeffs[i] = x[i]", "scale *= 2.f"))
    with pytest.raises(KernelSourceError, match=r"scale \(write_constant.cu, line 6\) writes"):
        load_kernel(source, "update")
    source.write_text(source.read_text().replace("scale *= 2.f", "atomicAdd(&scale, 1.f)"))
    with pytest.raises(KernelSourceError, match=r"atomicAdd\(&scale, \.\.\.\) \(write_constant.cu, "
                                                r"line 6\) writes the __constant__ variable scale"):
        load_kernel(source, "update")


def test_a_parameter_or_local_named_as_a_constant_may_be_written(tmp_path):
    """Another kernel's parameter or local array of the same name is its own variable."""
    source = tmp_path / "shadows.cu"
    source.write_text("__constant__ float scale;\n__constant__ float w[4];\n__constant__ int n;\n"
                      "struct Gain { float scale; __device__ void set(float s) { scale = s; } };\n"
                      "__device__ float times(float x, float scale = 2.0f) { return x * scale; }\n"
                      "extern \"C\" __global__ void k(const float* x, float* y, float scale) {\n"
                      "    float w[4];\n"
                      "    for (int k = 0; k < 4; ++k) w[k] = k;\n"
                      "    scale *= 0.5f;\n"
                      "    for (int i = 0, n = 1; i < n; ++i) scale += 0.f;\n"
                      "    Gain g; g.set(1.f);\n"
                      "    y[threadIdx.x] = times(x[threadIdx.x] * scale * g.scale) / 2 + w[threadIdx.x & 3];\n}\n")
    y = xp.zeros(8, dtype=xp.float32)
    load_kernel(source, "k")(1, 8, (to_device(np.ones(8, np.float32)), y, np.float32(4)))
    assert np.array_equal(to_host(y), 2 + np.arange(8) % 4)


@on_cpu
def test_empty_arrays_are_not_zeros_on_the_cpu():
    """xp.empty's bytes start as 0xFF on the CPU backend, as shared memory's do: an accumulator
    never zeroed comes out NaN, as wrong as on a GPU, not right by luck."""
    assert np.isnan(xp.empty((3, 5), dtype=xp.float32)).all()
    assert (xp.empty_like(np.zeros((4, 2), np.int32).T) == -1).all()
    assert xp.empty(0).size == 0 and type(xp.empty(2)) is np.ndarray
