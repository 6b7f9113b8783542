"""The package as a reader installs it: a regular (non-editable) wheel, used from outside the
repository. Builds the wheel, unpacks it onto a temporary path and, in a child process whose
working directory is elsewhere, launches a kernel of its own and a registered kernel on the
emulator."""
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from conftest import ROOT

CHILD = r"""
import sys, numpy as np
import book
from book import load_kernel, to_device, to_host, xp
from book.registry import KERNELS
assert book.__file__.startswith(sys.argv[1]), book.__file__  # the unpacked wheel, not the checkout
open("scale.cu", "w").write('''
extern "C" __global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}''')
x = to_device(np.arange(100, dtype=np.float32))
load_kernel("scale.cu", "scale")(4, 32, (x, np.float32(2), np.int32(100)))
assert (to_host(x) == 2 * np.arange(100)).all()
rng = np.random.default_rng(0)
a, b = rng.random((19, 23), np.float32), rng.random((23, 17), np.float32)
C = xp.full((19, 17), np.nan, np.float32)
KERNELS["tiled16"].launch(to_device(a), to_device(b), C, 19, 17, 23)
err = np.abs(to_host(C) - a.astype(np.float64) @ b).max()
assert err < 1e-5, err
outside = [name for name, m in list(sys.modules.items()) if name.split(".")[0] == "book"
           and not (getattr(m, "__file__", None) or "").startswith(sys.argv[1])]
assert not outside, outside  # every submodule came from the wheel
print("ok", book.__file__)
"""


def _build_wheel(tmp_path) -> tuple[str, str]:
    """Build the wheel from a copy of what it is made of (so the checkout gets no build/ or
    egg-info); returns the wheel's path and the build's output."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "book", src / "book", ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps",
                           "--no-build-isolation", "-w", str(tmp_path / "dist"), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheels = list((tmp_path / "dist").glob("*.whl"))
    assert len(wheels) == 1, wheels
    return str(wheels[0]), proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return _build_wheel(tmp_path_factory.mktemp("wheel"))


def test_wheel_builds_without_warnings(wheel):
    _, log = wheel
    for bad in ("Warning", "absent from the", "Cannot find any files"):
        assert bad not in log, log[log.find(bad) - 500:log.find(bad) + 500]


def test_wheel_holds_every_subpackage_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel[0]).namelist())
    expected = {str(p.relative_to(ROOT)) for p in (ROOT / "book").rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}
    assert expected <= names, sorted(expected - names)


def test_unpacked_wheel_launches_kernels_from_elsewhere(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel[0]).extractall(site)
    work = tmp_path / "work"
    work.mkdir()
    # -S: no site-packages .pth files, so the checkout's editable install cannot supply modules;
    # NumPy, pandas and matplotlib come from this environment's site-packages after the wheel.
    packages = os.path.dirname(os.path.dirname(np.__file__))
    env = dict(os.environ, BOOK_BACKEND="cpu", PYTHONPATH=os.pathsep.join([str(site), packages]))
    proc = subprocess.run([sys.executable, "-S", "-c", CHILD, str(site)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok")
