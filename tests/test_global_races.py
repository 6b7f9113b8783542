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
    line = line_of(SOURCE, "// another block's write")
    with pytest.raises(LaunchError, match=(
            rf"block \(1, 0, 0\), thread \(0, 0, 0\): race on global memory: this thread reads "
            rf"part\[b - 1\] on line {line} \(element 0 of `part`\), which thread \(0, 0, 0\) of "
            r"block \(0, 0, 0\) wrote on line \d+ in this launch, and threads of two blocks are "
            r"never ordered within a launch.*read them in a second launch")):
        kernel("chained")(4, 64, (to_device(np.ones(256, np.float32)), xp.zeros(4, dtype=xp.float32)))


@on_cpu
def test_an_in_place_shift_whose_write_overtakes_a_read(check_mode):
    line = line_of(SOURCE, "// shift write")
    with pytest.raises(LaunchError, match=(
            rf"thread \(1, 0, 0\): race on global memory: this thread writes x\[i\] on line {line} "
            rf"\(element 1 of `x`\), which thread \(0, 0, 0\) of block \(0, 0, 0\) read on line "
            rf"{line} in this launch with no __syncthreads\(\) between them.*lanes of warp 0")):
        kernel("shift_left")(1, 64, (to_device(np.arange(64, dtype=np.float32)), np.int32(64)))


def test_legal_global_patterns_run_in_check_mode(check_mode):
    x = to_device(np.arange(64, dtype=np.float32))
    kernel("shift_left_synced")(1, 64, (x, np.int32(64)))
    assert np.array_equal(to_host(x)[:63], np.arange(1, 64, dtype=np.float32))

    values = np.arange(5 * 64, dtype=np.float32)
    part, done, out = xp.zeros(5, dtype=xp.float32), xp.zeros(1, dtype=xp.uint32), xp.zeros(1, dtype=xp.float32)
    kernel("last_block_sum")(5, 64, (to_device(values), part, done, out))
    assert to_host(out)[0] == values.sum()


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


@on_cpu
def test_empty_arrays_are_not_zeros_on_the_cpu():
    """xp.empty's bytes start as 0xFF on the CPU backend, as shared memory's do: an accumulator
    never zeroed comes out NaN, as wrong as on a GPU, not right by luck."""
    assert np.isnan(xp.empty((3, 5), dtype=xp.float32)).all()
    assert (xp.empty_like(np.zeros((4, 2), np.int32).T) == -1).all()
    assert xp.empty(0).size == 0 and type(xp.empty(2)) is np.ndarray
