"""Small helpers for notebook cells (chapter 0): the device report, kernel sources, glue."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd

from ..launch.cuda_source import resolve
from .device import device_report


def show_device(full: bool = False):
    """The device this chapter runs on, in one line (``full``: the whole report as a table)."""
    d = device_report()
    if full:
        whole = {k.replace("_", " "): f"{int(v):,}" if isinstance(v, float) and v.is_integer() else v
                 for k, v in d.items()}
        return pd.DataFrame({"value": pd.Series(whole, dtype=object)})
    from IPython.display import Markdown
    if d["backend"] == "gpu":
        what = (f"**{d['name']}** (compute capability {d['compute_capability']}, {d['sms']} SMs, "
                f"{d['memory_gib']} GiB), driver {d['driver']}, CUDA runtime {d['cuda_runtime']}, "
                f"CuPy {d['cupy']}")
    else:
        what = "**the CPU emulator** (no GPU: small sizes; figures show results recorded on a GPU)"
    return Markdown(f"Running on {what}; host {d['host_cpu']}, {d['cpu_cores']} cores.")


ROOT = Path(__file__).resolve().parents[2]
"""The repository: a listing may name a file by its path from here (``book/studies/...py``)."""


def _source_file(filename: str) -> Path:
    """A kernel file of book/kernels/ (or any existing path), or a file of the package named by
    its path from the repository, as chapter 11 shows Triton's kernel."""
    here = ROOT / filename
    return here if filename.startswith("book/") and here.is_file() else resolve(filename)


def _language(filename: str) -> str:
    return "python" if filename.endswith(".py") else "cuda"


LISTING_OPEN = 40
"""The longest listing a page shows as plain text: a longer whole file is collapsed (one click
away), and so is a longer excerpt (its file and lines named): cut excerpts to the lines that
change."""


def show_source(filename: str, start: str | None = None, end: str | None = None, *,
                through: str | None = None, collapsed: bool = False, whole: bool = True):
    """A kernel file from book/kernels/ as a highlighted code block (introduced in chapter 0); a
    file of the package by its path (``book/studies/triton_gemm.py``, chapter 11) as Python.

    All of it; or an excerpt, from the first line that contains ``start`` up to (not including)
    the next line that contains ``end``, or up to and including the next one that contains
    ``through`` (to the end of the file without either). An excerpt names its file and lines and
    is followed by the whole file, collapsed: one click away, as ``collapsed=True`` shows a whole
    file, and as any whole file of more than LISTING_OPEN lines is shown (``whole=False``: the
    excerpt alone, where another cell has the file). The excerpts are the lines that change from the previous kernel; the pictures before
    them show the idea."""
    from IPython.display import Markdown
    lines = _source_file(filename).read_text().rstrip().splitlines()
    lang = _language(filename)
    if start is None:  # (a whole file of more than LISTING_OPEN lines is collapsed: excerpt it)
        body = _fenced(lines, lang)
        collapsed = collapsed or len(lines) > LISTING_OPEN
        return Markdown(_collapsed(filename, body, len(lines)) if collapsed else body)
    first, last = _excerpt(filename, lines, start, end, through)
    excerpt = textwrap.dedent("\n".join(lines[first:last])).splitlines()
    shown = f"`{filename}`, lines {first + 1}-{last}:\n\n{_fenced(excerpt, lang)}"
    if len(excerpt) > LISTING_OPEN:  # (an excerpt that long is collapsed too: one click away)
        shown = (f"<details><summary>`{filename}`, lines {first + 1}-{last} "
                 f"({len(excerpt)} lines)</summary>\n\n{_fenced(excerpt, lang)}\n\n</details>")
    return Markdown(shown + "\n\n" + _collapsed(filename, _fenced(lines, lang), len(lines)) if whole
                    else shown)


def show_diff(old: tuple, new: tuple, context: int = 2):
    """The lines that change from one kernel to the next, as a unified diff: ``old`` and ``new``
    are ``(filename, start, end)`` excerpts as :func:`show_source` takes them (``end`` may be
    None). Removed lines start with -, added ones with +; the new file follows, collapsed."""
    import difflib

    from IPython.display import Markdown
    parts = []
    for filename, start, end in (old, new):
        lines = _source_file(filename).read_text().rstrip().splitlines()
        first, last = _excerpt(filename, lines, start, end, None)
        parts.append((f"{filename}, lines {first + 1}-{last}", lines[first:last], lines))
    (a_name, a, _), (b_name, b, whole_b) = parts
    diff = list(difflib.unified_diff(a, b, a_name, b_name, lineterm="", n=context))
    if not diff:
        raise ValueError(f"{a_name} and {b_name} are the same")
    body = "```diff\n" + "\n".join(diff) + "\n```"
    return Markdown(f"From `{old[0]}` to `{new[0]}` (- removed, + added):\n\n{body}\n\n"
                    + _collapsed(new[0], _fenced(whole_b, _language(new[0])), len(whole_b)))


def _excerpt(filename: str, lines: list[str], start: str, end: str | None,
             through: str | None) -> tuple[int, int]:
    """The first and one-past-last line of an excerpt (see :func:`show_source`)."""
    first = next((i for i, line in enumerate(lines) if start in line), None)
    if first is None:
        raise ValueError(f"{filename} has no line containing {start!r}")
    after = range(first + 1, len(lines))
    if through is not None:
        last = next((i + 1 for i in after if through in lines[i]), None)
        if last is None:
            raise ValueError(f"{filename} has no line containing {through!r} after {start!r}")
    else:
        last = next((i for i in after if end is not None and end in lines[i]), len(lines))
    while last > first + 1 and lines[last - 1].strip() in ("", "#pragma unroll"):
        last -= 1  # an excerpt ends on code, not on a pragma of the lines it leaves out
    return first, last


def _fenced(lines: list[str], language: str = "cuda") -> str:
    text = "\n".join(lines).rstrip()
    return f"```{language}\n{text}\n```"


def _collapsed(filename: str, body: str, count: int) -> str:
    """``body`` inside an HTML <details> element: closed until the reader opens it (in the book
    and in Jupyter alike)."""
    return (f"<details><summary>The whole file: {filename} ({count} lines)</summary>\n\n{body}"
            f"\n\n</details>")


def glue(name: str, value, display: bool = False, claim: tuple | None = None) -> None:
    """Store ``value`` under ``name`` for ``{glue:text}`name`'' in the chapter's prose.

    The same output format as ``myst_nb.glue`` (which this book does not import, so that the
    notebooks also run where only a Jupyter kernel is installed). ``claim``: what the value
    states, (kernel, n, GPU, measure), kept in the output's metadata (``book_claim``), where
    ``tests/test_claims.py`` holds every page that states it to one value.
    """
    import IPython
    import numpy as np
    from IPython.display import display as ipy_display
    if isinstance(value, np.generic):
        value = value.item()  # '2.5', not 'np.float64(2.5)': myst-nb formats the text as a number
    bundle, metadata = IPython.core.formatters.format_display_data(value)
    prefix = "" if display else "application/papermill.record/"
    metadata["scrapbook"] = dict(name=name, mime_prefix=prefix)
    if claim is not None:
        metadata["book_claim"] = [str(x) for x in claim]
    ipy_display({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)


def each_gpu(values: dict, form=str) -> str:
    """A figure per GPU as a sentence says it: "10 on each GPU" where every GPU's value reads the
    same once written (``form``), else "10 on the H100 and 9 on the H200" ({device: value})."""
    from .results import short_name
    texts = {device: form(v) for device, v in values.items()}
    if len(texts) > 1 and len(set(texts.values())) == 1:
        return f"{next(iter(texts.values()))} on each GPU"
    return " and ".join(f"{t} on the {short_name(d)}" for d, t in texts.items())


LISTING_CALLS = ("show_source(", "show_diff(")
"""The calls whose output is a kernel listing: a function of the source files alone."""


def _one_call(src: str) -> bool:
    """Whether a cell's source is one call and nothing else (over one line or several)."""
    import ast
    try:
        body = ast.parse(src).body
    except SyntaxError:
        return False
    return len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call)


def stale_listings(path) -> list[tuple[int, str, str]]:
    """(cell index, stored markdown, what the call gives now) for every code cell of the notebook
    at ``path`` that is one listing call (``show_source`` or ``show_diff``) and whose stored
    output no longer matches the kernel sources."""
    import nbformat
    nb = nbformat.read(path, as_version=4)
    stale = []
    for i, cell in enumerate(nb.cells):
        src = cell.source.strip()
        if (cell.cell_type != "code" or not src.startswith(LISTING_CALLS) or not _one_call(src)
                or not cell.get("outputs")):
            continue
        now = eval(src, {"show_source": show_source, "show_diff": show_diff}).data  # noqa: S307
        stored = "".join(cell.outputs[0].get("data", {}).get("text/markdown", ""))
        if stored != now:
            stale.append((i, stored, now))
    return stale


def refresh_listings(paths) -> list[str]:
    """Re-render the stored kernel listings of these notebooks from book/kernels/ (a kernel's
    comment or code changed since the notebook ran: the listing is all that changes, on any
    machine). Returns the names of the notebooks it rewrote.

        python -m book.harness.notebook notebooks/*.ipynb
    """
    import nbformat
    changed = []
    for path in paths:
        stale = stale_listings(path)
        if not stale:
            continue
        nb = nbformat.read(path, as_version=4)
        for i, _, now in stale:
            nb.cells[i].outputs[0]["data"]["text/markdown"] = now
        nbformat.write(nb, path)
        changed.append(str(path))
    return changed


if __name__ == "__main__":
    import sys
    for name in refresh_listings(sys.argv[1:]):
        print(f"listings re-rendered in {name}")
