"""Every registered matmul kernel matches float64 NumPy on odd and non-square sizes; the kernels
that reproduce a source's bug fail exactly where the bug bites."""
import numpy as np
import pytest

from book.harness.check import TOLERANCE, random_inputs, relative_error, run_matmul
from book.registry import KERNELS, correct_kernels
from book.launch.runtime import BACKEND
from conftest import KERNEL_REPRESENTATIVES, sweep_params

# 1000 x 1000 (not a multiple of any tile) runs the full 1000^3 product on a GPU; the emulator
# computes the same 1000 x 1000 C over a short K.
SIZES = [(1, 1, 1), (17, 33, 9), (65, 64, 63), (100, 1, 100), (31, 257, 129), (300, 200, 500),
         (1000, 1000, 1000 if BACKEND == "gpu" else 24)]


def error_of(spec, M, N, K) -> float:
    a, b = random_inputs(M, N, K, seed=M * 1000 + N + K)
    return relative_error(run_matmul(spec, a, b), a.astype(np.float64) @ b.astype(np.float64))


SIZE_PARAMS = [pytest.param(*size, id="-".join(map(str, size)),
                            marks=[pytest.mark.sweep] if size in SIZES[-2:] else [])
               for size in SIZES]
"""make test: the five smaller sizes (several tiles along N at 31 x 257 x 129); make test-sweep
the two largest, where a kernel runs for seconds on the emulator (gpu-test runs them all)."""


@pytest.mark.parametrize("M, N, K", SIZE_PARAMS)
@pytest.mark.parametrize("kernel_id", sweep_params([s.id for s in correct_kernels()], KERNEL_REPRESENTATIVES))
def test_matches_float64(kernel_id, M, N, K):
    why = KERNELS[kernel_id].why_not_here()
    if why:
        pytest.skip(f"{kernel_id} {why}")
    err = error_of(KERNELS[kernel_id], M, N, K)
    assert err < KERNELS[kernel_id].tolerance, f"{kernel_id} at {M}x{N}x{K}: relative error {err:.2e}"


# (kernel, a size where its bug does not bite, a size where it does)
BUGS = [
    ("src001_16", (40, 70, 33), (40, 20, 33)),      # tiles along N: 5 >= 3 along K; then 2 < 3
    ("divisible16", (48, 32, 64), (65, 64, 63)),     # multiples of 16; then not
    ("src001_tstore16", None, (48, 32, 64)),         # wrong at every size
]


def test_each_kernel_function_has_one_representative():
    """make test runs one kernel of each (source, __global__ function) over every size (the
    sweep's other kernels in make test-sweep): a new kernel function needs a representative."""
    chosen = {(KERNELS[k].source, KERNELS[k].name) for k in KERNEL_REPRESENTATIVES}
    assert all(k in {s.id for s in correct_kernels()} for k in KERNEL_REPRESENTATIVES)
    assert len(chosen) == len(KERNEL_REPRESENTATIVES)
    assert chosen == {(s.source, s.name) for s in correct_kernels()}


def test_every_buggy_kernel_is_listed():
    assert {k for k, _, _ in BUGS} == {s.id for s in KERNELS.values() if s.bug}


@pytest.mark.parametrize("kernel_id, good, bad", BUGS)
def test_source_bug_shows(kernel_id, good, bad):
    spec = KERNELS[kernel_id]
    if good:
        assert error_of(spec, *good) < TOLERANCE
    assert not error_of(spec, *bad) < TOLERANCE, f"{kernel_id} passed at {bad}: its bug ({spec.bug}) did not show"
