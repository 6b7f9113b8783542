"""The chapters' "try it" helpers: a changed define or line is compiled, launched and checked."""
import numpy as np
import pytest

from book import KernelSourceError
from book.harness.check import random_inputs, relative_error, run_matmul
from book.harness.measure import check_kernels
from book.registry import KERNELS, edited, variant


def test_an_edited_line_changes_what_runs():
    wrong = edited(KERNELS["naive16"], "k < K", "k < K - 1")
    assert (check_kernels([wrong], [(17, 33, 9), (31, 57, 40)]) == "FAILED").all().all()
    assert (check_kernels([KERNELS["naive16"]], [(17, 33, 9)]) == "ok").all().all()


def test_an_edit_in_a_helper_skips_the_comment_that_quotes_it():
    """07_kahan.cu quotes the compensation line in its header comment; the edit must reach code."""
    plain = edited(KERNELS["kahan_naive16"], "comp = (t - sum) - y;", "comp = 0.0f;")
    text = open(plain.source).read()
    assert "    comp = 0.0f;" in text and "//       comp = (t - sum) - y;" in text
    a, b = random_inputs(16, 16, 4096, seed=3, low=0.0, high=1.0)
    ref = a.astype(np.float64) @ b
    kahan = relative_error(run_matmul(KERNELS["kahan_naive16"], a, b), ref)
    assert relative_error(run_matmul(plain, a, b), ref) > 4 * kahan


def test_an_edit_that_matches_nothing_says_so():
    with pytest.raises(KernelSourceError, match="is not in it; copy the text exactly"):
        edited(KERNELS["naive16"], "k <= K", "k < K")


@pytest.mark.parametrize("kernel, change, block", [("tiled16", {"TILE": 24}, (24, 24)),
                                                   ("coarse8", {"OUT": 4}, (32, 8)),
                                                   ("reg128x128x16_8x8", {"TN": 4}, (512, 1))])
def test_a_variant_follows_its_defines_and_passes_the_check(kernel, change, block):
    mine = variant(KERNELS[kernel], **change)
    assert mine.block == block and dict(mine.defines).items() >= change.items()
    assert (check_kernels([mine], [(17, 33, 9), (65, 64, 63)]) == "ok").all().all()


def test_a_variant_refuses_a_define_the_kernel_does_not_have():
    with pytest.raises(KeyError, match="naive16 has no define TILE"):
        variant(KERNELS["naive16"], TILE=8)
