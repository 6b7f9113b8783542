"""Small helpers for notebook cells (chapter 0): the device report, kernel sources, glue."""
from __future__ import annotations

import pandas as pd

from ..launch.cuda_source import resolve
from .device import device_report


def show_device(full: bool = False):
    """The device this chapter runs on, in one line (``full``: the whole report as a table)."""
    d = device_report()
    if full:
        return pd.DataFrame({"value": pd.Series(d, dtype=object)})
    from IPython.display import Markdown
    if d["backend"] == "gpu":
        what = (f"**{d['name']}** (compute capability {d['compute_capability']}, {d['sms']} SMs, "
                f"{d['memory_gib']} GiB), driver {d['driver']}, CUDA runtime {d['cuda_runtime']}, "
                f"CuPy {d['cupy']}")
    else:
        what = "**the CPU emulator** (no GPU: small sizes; figures show results recorded on a GPU)"
    return Markdown(f"Running on {what}; host {d['host_cpu']}, {d['cpu_cores']} cores.")


def show_source(filename: str, start: str | None = None, end: str | None = None):
    """A kernel file from book/kernels/ as a highlighted code block: all of it, or from the
    first line that contains ``start`` up to (not including) the next line that contains
    ``end`` (to the end of the file without one)."""
    from IPython.display import Markdown
    lines = resolve(filename).read_text().rstrip().splitlines()
    if start is not None:
        first = next((i for i, line in enumerate(lines) if start in line), None)
        if first is None:
            raise ValueError(f"{filename} has no line containing {start!r}")
        after = range(first + 1, len(lines))
        last = next((i for i in after if end is not None and end in lines[i]), len(lines))
        lines = lines[first:last]
    text = "\n".join(lines).rstrip()
    return Markdown(f"```cuda\n{text}\n```")


def glue(name: str, value, display: bool = False) -> None:
    """Store ``value`` under ``name`` for ``{glue:text}`name`'' in the chapter's prose.

    The same output format as ``myst_nb.glue`` (which this book does not import, so that the
    notebooks also run where only a Jupyter kernel is installed).
    """
    import IPython
    import numpy as np
    from IPython.display import display as ipy_display
    if isinstance(value, np.generic):
        value = value.item()  # '2.5', not 'np.float64(2.5)': myst-nb formats the text as a number
    bundle, metadata = IPython.core.formatters.format_display_data(value)
    prefix = "" if display else "application/papermill.record/"
    metadata["scrapbook"] = dict(name=name, mime_prefix=prefix)
    ipy_display({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)
