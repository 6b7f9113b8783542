"""The CPU emulator names a learner's bug instead of returning a wrong result, and the process
goes on: after each error a correct kernel runs in the same process. (On a GPU these bugs are
undefined behaviour or a hang, so these tests run on the emulator only.)"""
import numpy as np
import pytest

from book import BACKEND, LaunchError, load_kernel
from conftest import ROOT

pytestmark = pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own checks")
BUGS = ROOT / "tests" / "kernels" / "bugs.cu"


def bug(name):
    return load_kernel(BUGS, name)


def still_works():
    """A correct kernel right after the error: the process and the emulator survived."""
    from book.check import random_inputs, relative_error, run_matmul
    from book.registry import KERNELS
    a, b = random_inputs(33, 17, 9, seed=0)
    assert relative_error(run_matmul(KERNELS["tiled16"], a, b), a.astype(np.float64) @ b) < 1e-6


def test_barrier_divergence_names_both_sides():
    with pytest.raises(LaunchError, match=(
            r"divergent_barrier: block \(0, 0, 0\): barrier divergence: 16 threads, the first "
            r"\(0, 0, 0\), wait at the __syncthreads\(\) on line 6, and 16 threads, the first "
            r"\(16, 0, 0\), at the one on line 8")):
        bug("divergent_barrier")(1, 32, (np.zeros(32, np.float32),))
    still_works()


def test_threads_that_exit_before_a_barrier_do_not_count():
    out = np.full(32, np.nan, np.float32)
    bug("barrier_then_exit")(1, 32, (out,))
    np.testing.assert_array_equal(out, np.arange(32))


def test_shuffle_naming_an_exited_lane():
    with pytest.raises(LaunchError, match=(
            r"shfl_after_exit: block \(0, 0, 0\): a __shfl\*_sync at line 21 in thread "
            r"\(0, 0, 0\) has mask 0xffffffff, which names lane 31, but thread \(31, 0, 0\) has "
            r"exited")):
        bug("shfl_after_exit")(1, 32, (np.zeros(32, np.float32),))
    still_works()


def test_shuffle_reading_a_lane_outside_its_mask():
    with pytest.raises(LaunchError, match=(
            r"shfl_outside_mask: block \(0, 0, 0\), thread \(0, 0, 0\): a __shfl\*_sync at line 26 "
            r"reads lane 20, which its mask 0x0000ffff leaves out")):
        bug("shfl_outside_mask")(1, 32, (np.zeros(32, np.int32),))
    still_works()


def test_shuffle_width_must_be_a_power_of_two():
    with pytest.raises(LaunchError, match=(
            r"shfl_bad_width: block \(0, 0, 0\), thread \(0, 0, 0\): a __shfl\*_sync at line 31 "
            r"has width 12; it must be a power of 2 from 1 to 32")):
        bug("shfl_bad_width")(1, 32, (np.zeros(32, np.int32),))
    still_works()


def test_mask_must_name_the_calling_lane():
    with pytest.raises(LaunchError, match=(
            r"mask_without_caller: block \(0, 0, 0\), thread \(1, 0, 0\): a vote "
            r"\(__ballot/__any/__all_sync\) at line 36 has mask 0x00000001, which leaves out the "
            r"calling lane 1")):
        bug("mask_without_caller")(1, 32, (np.zeros(32, np.uint32),))
    still_works()
