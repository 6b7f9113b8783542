"""Theoretical occupancy: the model against the CUDA driver's answers."""
import pytest

from book.models.occupancy import SM90, occupancy, report
from book.registry import chapter_kernels
from book.launch.runtime import BACKEND

# (threads per block, registers per thread, static shared bytes) -> blocks per SM, as
# cuOccupancyMaxActiveBlocksPerMultiprocessor answered on an NVIDIA H200 (chapter 6's kernels).
DRIVER_H200 = [((1024, 32, 8192), 2), ((512, 40, 8192), 3), ((256, 38, 8192), 6),
               ((128, 51, 8192), 9), ((64, 84, 8192), 10), ((32, 200, 8192), 8),
               ((256, 56, 4096), 4), ((64, 128, 4096), 8), ((256, 126, 8192), 2),
               ((256, 76, 6144), 3), ((256, 128, 16384), 2)]


@pytest.mark.parametrize("launch, blocks", DRIVER_H200)
def test_model_matches_driver_on_h200(launch, blocks):
    assert occupancy(*launch, limits=SM90)["blocks_per_sm"] == blocks


def test_shared_memory_limits():
    # 100 KiB per block: two fit in 228 KiB with the 1 KiB reserve each
    out = occupancy(128, 32, 100 * 1024, limits=SM90)
    assert (out["blocks_per_sm"], out["limited_by"]) == (2, "shared memory")


@pytest.mark.skipif(BACKEND != "gpu", reason="needs the CUDA driver")
def test_model_matches_driver_here():
    table = report(chapter_kernels(6))
    assert (table.blocks_per_sm == table.driver_blocks_per_sm).all(), table
