import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEMANTICS = ROOT / "tests" / "kernels" / "semantics.cu"
sys.path.insert(0, str(ROOT))


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
