"""Every registered matmul kernel matches float64 NumPy on odd and non-square sizes."""
import numpy as np
import pytest

from book.check import TOLERANCE, random_inputs, relative_error, run_matmul
from book.registry import KERNELS

SIZES = [(1, 1, 1), (17, 33, 9), (65, 64, 63), (100, 1, 100), (31, 257, 129)]


@pytest.mark.parametrize("M, N, K", SIZES)
@pytest.mark.parametrize("kernel_id", list(KERNELS))
def test_matches_float64(kernel_id, M, N, K):
    a, b = random_inputs(M, N, K, seed=M * 1000 + N + K)
    c = run_matmul(KERNELS[kernel_id], a, b)
    err = relative_error(c, a.astype(np.float64) @ b.astype(np.float64))
    assert err < TOLERANCE, f"{kernel_id} at {M}x{N}x{K}: relative error {err:.2e}"
