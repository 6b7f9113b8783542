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


def show_source(filename: str):
    """A kernel file from book/kernels/ as a highlighted code block."""
    from IPython.display import Markdown
    return Markdown(f"```cuda\n{resolve(filename).read_text().rstrip()}\n```")


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
