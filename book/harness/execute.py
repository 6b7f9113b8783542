"""Execute every chapter notebook in place on this machine, in order (``python -m book.harness.execute``).

Run it on a GPU host: each chapter measures, saves ``results/<gpu>/`` and stores its outputs,
which the HTML book then shows. Prints the cells that took longer than SLOW_CELL_S as they finish,
the time each notebook took, then the total; in a terminal, progress bars over the notebooks and
over each one's code cells (``harness.progress``). The kernels run with BOOK_PROGRESS=0: the
outputs they store are the book's, and carry no bars.

    python -m book.harness.execute                 # all of notebooks/*.ipynb
    python -m book.harness.execute 02_naive        # only the notebooks whose names start with these
    python -m book.harness.execute --cold          # as a first run: empty kernel caches

After a run, ``python -m book.landing`` draws every chapter's "ladder so far" table again from
the results files as the whole run left them (and the README's ladder and the landing figure).

``--cold`` points the book's kernel caches (cubins and the emulator's libraries) and CuPy's at a
new empty folder, so every kernel is compiled again, as on a reader's first run.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from .progress import Quiet, bar

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
SLOW_CELL_S = float(os.environ.get("BOOK_SLOW_CELL_S", 3.0))
"""Cells slower than this (seconds; the environment's BOOK_SLOW_CELL_S) are listed under their chapter's time."""


def cell_seconds(cell) -> float | None:
    """How long a code cell took, from the execution times nbclient records in its metadata
    (None where it holds none)."""
    from datetime import datetime
    run = cell.get("metadata", {}).get("execution", {})
    if cell.cell_type != "code" or "shell.execute_reply" not in run:
        return None
    start, end = (datetime.fromisoformat(run[k].replace("Z", "+00:00"))
                  for k in ("iopub.execute_input", "shell.execute_reply"))
    return (end - start).total_seconds()


def slow_cells(nb, over: float = SLOW_CELL_S) -> list[tuple[float, str]]:
    """(seconds, first line) of the code cells that took longer than ``over``."""
    return [(seconds, cell.source.splitlines()[0][:70]) for cell in nb.cells
            if (seconds := cell_seconds(cell)) is not None and seconds > over]


def _report_cell(cell, cell_index, execute_reply, cells=Quiet()) -> None:
    """nbclient's hook after each cell: print the slow ones as they finish (a run that is stopped
    still shows where its time went), and count the cell on the bar ``cells`` (nbclient calls it
    for the code cells that hold code)."""
    seconds = cell_seconds(cell)
    if seconds is not None and seconds > SLOW_CELL_S:
        cells.write(f"    {seconds:5.1f} s  cell {cell_index}: {cell.source.splitlines()[0][:70]}")
    cells.update()


def main(argv: list[str]) -> int:
    import nbformat
    from nbclient import NotebookClient

    cold = "--cold" in argv
    prefixes = [a for a in argv if not a.startswith("--")]
    if cold:  # the kernel processes inherit these: every kernel is compiled anew
        scratch = Path(tempfile.mkdtemp(prefix="book-execute-"))
        os.environ["CUPY_CACHE_DIR"] = str(scratch / "cupy")
        os.environ["BOOK_CACHE_DIR"] = str(scratch / "emulator")
    paths = sorted(p for p in NOTEBOOKS.glob("*.ipynb")
                   if not prefixes or p.name.startswith(tuple(prefixes)))
    print(f"Executing {len(paths)} notebooks ({'cold: empty kernel caches' if cold else 'warm'})",
          flush=True)
    kernel_env = dict(os.environ, BOOK_PROGRESS="0")  # no bars in the stored outputs
    total, failed = 0.0, []
    with bar(paths, desc="notebooks", unit="notebook") as notebooks:
        for path in notebooks:
            nb = nbformat.read(path, as_version=4)
            code = sum(cell.cell_type == "code" and bool(cell.source.strip()) for cell in nb.cells)
            t0 = time.perf_counter()
            with bar(total=code, desc=path.stem, unit="cell") as cells:
                try:
                    NotebookClient(nb, timeout=1800, kernel_name="python3",
                                   on_cell_executed=partial(_report_cell, cells=cells),
                                   resources={"metadata": {"path": str(NOTEBOOKS)}}
                                   ).execute(env=kernel_env)
                except Exception as exc:  # keep the stored notebook; go on with the next chapter
                    failed.append(path.name)
                    cells.write(f"{path.name}: FAILED, left unchanged\n{exc}")
                    continue
            seconds = time.perf_counter() - t0
            total += seconds
            nbformat.write(nb, path)
            notebooks.write(f"{path.name:<28} {seconds:7.1f} s")
    print(f"{'all notebooks':<28} {total:7.1f} s" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
