"""`make lab`, the README's way into the notebooks, starts JupyterLab as root too (GPU containers
and many cloud images run as root, and JupyterLab refuses root without --allow-root), and
without that option for anyone else. The Makefile's recipe runs against a stand-in `jupyter`
and `id`, so no JupyterLab starts."""
import os
import shutil
import stat
import subprocess

import pytest

from conftest import ROOT


def fake(path, text):
    path.write_text("#!/bin/sh\n" + text + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("uid, root", [(0, True), (1000, False)])
def test_make_lab_allows_root_only_as_root(tmp_path, uid, root):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "notebooks").mkdir()
    env_bin = tmp_path / "venv" / "bin"
    env_bin.mkdir(parents=True)
    (env_bin / ".installed").touch()
    (tmp_path / "requirements.txt").touch()
    os.utime(env_bin / ".installed")  # newer than requirements.txt: nothing to install
    fake(env_bin / "python", "exit 0")  # `import jupyterlab` succeeds
    fake(env_bin / "jupyter", 'echo "jupyter $*" > ../lab-args')
    tools = tmp_path / "tools"
    tools.mkdir()
    fake(tools / "id", f"echo {uid}")
    subprocess.run(["make", "lab", "VENV=venv"], cwd=tmp_path, check=True, capture_output=True,
                   env={**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"})
    args = (tmp_path / "lab-args").read_text().split()
    assert args[:2] == ["jupyter", "lab"]
    assert ("--allow-root" in args) == root
