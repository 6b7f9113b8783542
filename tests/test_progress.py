"""Progress bars (book.harness.progress): shown in a terminal and in Jupyter once a loop has run
for a while, never under pytest (nbval compares the stderr a notebook's cells write) nor in the
outputs ``python -m book.harness.execute`` stores."""
import os
import subprocess
import sys

import pytest

from book.harness import progress
from conftest import ROOT

SLOW_LOOP = """
import sys
import time
from book.harness import progress
progress.DELAY_S = 0.2
for _ in progress.bar(range(8), desc="slow loop"):
    time.sleep(0.05)
for _ in progress.bar(range(8), desc="quick loop"):
    pass
print(f"done, tqdm imported: {'tqdm' in sys.modules}")
"""


def env_outside_pytest(**extra) -> dict:
    """This process's environment as a reader's shell has it: no pytest, no BOOK_PROGRESS."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "BOOK_PROGRESS")}
    return dict(env, PYTHONPATH=str(ROOT), **extra)


def test_no_bar_under_pytest_unless_book_progress_asks(monkeypatch, capsys):
    assert "PYTEST_CURRENT_TEST" in os.environ and not progress.shown()
    assert isinstance(progress.bar(range(3)), progress.Quiet)
    assert list(progress.bar(range(3))) == [0, 1, 2]
    progress.bar().write("a line")  # where no bar shows, write prints on stdout
    assert capsys.readouterr() == ("a line\n", "")
    monkeypatch.setenv("BOOK_PROGRESS", "1")
    assert progress.shown()
    assert list(progress.bar(range(3), desc="asked for", delay=0)) == [0, 1, 2]
    assert "asked for:" in capsys.readouterr().err  # (a bar, erased once its loop ends)
    assert isinstance(progress.bar(range(3), show=False), progress.Quiet)  # a caller's no
    monkeypatch.setenv("BOOK_PROGRESS", "0")
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    assert not progress.shown()


def test_a_terminal_shows_a_bar_for_a_slow_loop_only():
    pty = pytest.importorskip("pty")
    import fcntl
    import struct
    import termios
    out = []
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdout and stderr are a terminal of 24 rows and 100 columns
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
        os.execve(sys.executable, [sys.executable, "-c", SLOW_LOOP], env_outside_pytest())
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child has exited
            break
        if not chunk:
            break
        out.append(chunk.decode(errors="replace"))
    os.waitpid(pid, 0)
    text = "".join(out)
    assert "slow loop" in text and "quick loop" not in text and "done, tqdm imported: True" in text
    piped = subprocess.run([sys.executable, "-c", SLOW_LOOP], env=env_outside_pytest(),
                           capture_output=True, text=True, timeout=120)
    assert (piped.stdout, piped.stderr) == ("done, tqdm imported: False\n", "")  # no terminal


def _needs_a_jupyter_kernel():
    """Skip where no Jupyter kernel can start (a GPU host without the carried wheels)."""
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from jupyter_client.kernelspec import KernelSpecManager
    if "python3" not in KernelSpecManager().find_kernel_specs():
        pytest.skip("no python3 Jupyter kernel here")


def notebook_with_a_slow_loop():
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SLOW_LOOP)]
    return nb


def test_a_jupyter_kernel_shows_a_bar_and_nbval_s_kernel_none(tmp_path):
    """In a reader's Jupyter the slow loop shows a bar (tqdm's text bar on stderr here, where
    ipywidgets is not installed, and no warning about it); a kernel started under pytest, as
    nbval's and book.harness.execute's are, writes nothing but the cell's own output."""
    _needs_a_jupyter_kernel()
    from nbclient import NotebookClient
    outputs = {}
    for name, env in (("reader", env_outside_pytest()),
                      ("pytest", dict(env_outside_pytest(), PYTEST_CURRENT_TEST="x.ipynb::Cell 0")),
                      ("execute", env_outside_pytest(BOOK_PROGRESS="0"))):
        nb = notebook_with_a_slow_loop()
        NotebookClient(nb, timeout=120, kernel_name="python3",
                       resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
        outputs[name] = [(o.name, o.text) for o in nb.cells[0].outputs]
    err = "".join(text for stream, text in outputs["reader"] if stream == "stderr")
    assert "slow loop" in err and "quick loop" not in err and "Warning" not in err
    assert outputs["pytest"] == outputs["execute"] == [("stdout", "done, tqdm imported: False\n")]


def test_nbval_passes_a_notebook_whose_slow_loop_would_show_a_bar(tmp_path):
    """The stored output holds only the cell's print: pytest --nbval re-executes the cell and
    finds no bar in what it wrote."""
    _needs_a_jupyter_kernel()
    pytest.importorskip("nbval")
    import nbformat
    from nbclient import NotebookClient
    nb = notebook_with_a_slow_loop()
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute(
        env=env_outside_pytest(BOOK_PROGRESS="0"))
    nbformat.write(nb, tmp_path / "slow.ipynb")
    proc = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", str(tmp_path / "slow.ipynb")], cwd=tmp_path,
                          env=env_outside_pytest(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_execute_starts_its_kernels_with_bars_off(tmp_path, monkeypatch):
    import nbclient
    import nbformat
    from book.harness import execute
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("text"), nbformat.v4.new_code_cell("1 + 1")]
    nbformat.write(nb, tmp_path / "00_one.ipynb")
    seen = {}

    class Client:  # nbclient's NotebookClient as execute calls it, without a kernel
        def __init__(self, nb, on_cell_executed, **kwargs):
            self.nb, self.hook = nb, on_cell_executed

        def execute(self, env):
            seen["env"] = env
            for i, cell in enumerate(self.nb.cells):
                if cell.cell_type == "code":  # (nbclient calls the hook for these only)
                    self.hook(cell=cell, cell_index=i, execute_reply=None)

    monkeypatch.setattr(nbclient, "NotebookClient", Client)
    monkeypatch.setattr(execute, "NOTEBOOKS", tmp_path)
    monkeypatch.setenv("BOOK_PROGRESS", "1")  # bars here; none in the kernels
    assert execute.main([]) == 0
    assert seen["env"]["BOOK_PROGRESS"] == "0"
