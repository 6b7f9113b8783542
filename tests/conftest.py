import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEMANTICS = ROOT / "tests" / "kernels" / "semantics.cu"
sys.path.insert(0, str(ROOT))


def pytest_addoption(parser):
    parser.addoption("--sweep", action="store_true",
                     help="run the exhaustive sweeps' other cases too (make test-sweep, make test-all)")


def pytest_configure(config):
    config.addinivalue_line("markers", "sweep: a case of an exhaustive sweep beyond the "
                                       "representatives that make test runs")


LONGEST_FIRST = (
    "tests/test_sgemm.py", "tests/test_emulator_errors.py", "tests/test_ozaki.py",
    "tests/test_matmul.py", "tests/test_archs.py", "tests/test_figures.py",
    "tests/test_tensor_cores.py", "tests/test_learner_cuda.py", "tests/test_tf32x3_sgemm.py",
    "notebooks/01_cpu_loop.ipynb", "notebooks/L10_tensor_cores_notes.ipynb",
    "notebooks/10_tensor_cores.ipynb", "notebooks/09_every_shape.ipynb",
    "notebooks/08_toward_cublas.ipynb", "notebooks/06_coarsening.ipynb")
"""make test's longest files (a profile of 2026-11-29), run first: with --dist loadfile a worker
takes a whole file, and a long one taken last would leave the other core idle at the end."""


def pytest_collection_modifyitems(config, items):
    """Without --sweep (make test) the cases marked sweep are skipped, saying where they run.
    The longest files go first (LONGEST_FIRST; the order within a file is kept)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
    if not config.getoption("--sweep"):
        skip = pytest.mark.skip(reason="a case of the exhaustive sweep: make test-sweep runs it")
        for item in items:
            if item.get_closest_marker("sweep"):
                item.add_marker(skip)


KERNEL_REPRESENTATIVES = (
    "naive16", "naive1d", "xrows16", "tiled16", "rowA", "src000_16", "tstore_pad16", "coarse4",
    "reg128x64x8_8x4", "kahan_naive16", "kahan_tiled16", "rowA_ld", "tiled_ld16",
    "vec4_128x128x8_8x8_pad4", "warp_db_128x128x16_w64x32_n2_8x4_t256_pad4_m1",
    "async_128x256x16_w64x64_n4_8x4_t256_s4_pad4_m1_serp", "tf32_naive", "tf32x3_tiled",
    "tf32x3_wgmma")
"""One correct registry kernel of each kernel function (each source's __global__ function):
make test sweeps these over every size and check; make test-sweep the other tile sizes, pads,
splits and configurations of the same functions (tests/test_matmul.py checks the choice)."""


def sweep_params(values, representatives):
    """pytest.param of each value, those not among ``representatives`` marked sweep (make test
    runs the representatives, make test-sweep the rest)."""
    unknown = set(representatives) - set(values)
    assert not unknown, f"representatives {unknown} are not among the values"
    return [pytest.param(v, id=str(v)) if v in representatives else
            pytest.param(v, id=str(v), marks=pytest.mark.sweep) for v in values]


@pytest.fixture
def check_mode(monkeypatch):
    """The emulator's check mode (BOOK_EMU_CHECK=1) for one test."""
    monkeypatch.setenv("BOOK_EMU_CHECK", "1")


def line_of(path, marker: str) -> int:
    """The line of the file ``path`` that holds ``marker`` (a test's kernel, marked by a comment)."""
    return next(i for i, text in enumerate(Path(path).read_text().splitlines(), 1) if marker in text)


@pytest.fixture
def semantics():
    """Load a kernel of tests/kernels/semantics.cu by name."""
    from book import load_kernel
    return lambda name: load_kernel(SEMANTICS, name)


def run_with_backend(code: str, backend: str) -> str:
    """Run Python code in a child process on the given backend ('cpu' or 'gpu'); return stdout."""
    env = dict(os.environ, BOOK_BACKEND=backend, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(autouse=True)
def _no_replays_from_other_tests():
    """Each test starts without book.sgemm's replays (``launch.replay``): a test that forces a
    plan must run that plan, not one another test recorded at the same shape."""
    from book.launch import replay
    replay.clear()
