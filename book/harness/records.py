"""The results files as plain rows, for the library (``book.blas``): where they are, which GPUs
recorded them, and a file's rows as dicts -- without pandas, whose import costs a first call of
``book.sgemm`` about 0.4 s (an H200 host). The chapters read the same files through
:mod:`book.harness.results`, as DataFrames."""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2]
RESULTS = Path(os.environ.get("BOOK_RESULTS_DIR") or (
    _CHECKOUT / "results" if (_CHECKOUT / "results").is_dir() else Path.cwd() / "results"))
"""The results folder: ``BOOK_RESULTS_DIR``, else the checkout's ``results/`` (the package used
from a clone), else ``./results`` (the package installed on its own, e.g. by ``pip install``)."""


def recorded_gpus(folder: Path | None = None) -> list[str]:
    """GPU folders holding results (in ``folder``, default RESULTS), the one saved last first
    (then by name)."""
    def saved(path: Path) -> str:
        report = json.loads(path.read_text())
        return report.get("saved", report.get("date", ""))
    found = sorted((folder or RESULTS).glob("*/device.json"), key=lambda p: p.parent.name)
    found.sort(key=saved, reverse=True)  # stable: equal times stay in name order
    return [p.parent.name for p in found]


def rows(chapter: str, gpu: str) -> list[dict]:
    """The rows of ``results/<gpu>/<chapter>.csv`` as dicts, numbers as int or float (as pandas
    reads them; an empty field is None). FileNotFoundError where it was not recorded."""
    with open(RESULTS / gpu / f"{chapter}.csv", newline="") as f:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _number(text: str):
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def append_row(path: Path, header: str, row: str) -> None:
    """Add ``row`` (a CSV line) to the file at ``path``, writing ``header`` first where the file
    is new: what a first call keeps on disk (``blas.choice``'s plans, ``blas.auto``'s methods)."""
    new = not path.exists()
    with open(path, "a", newline="") as f:
        if new:
            f.write(header + "\n")
        f.write(row + "\n")
