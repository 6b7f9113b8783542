"""Progress bars for the book's long loops: tqdm's (``tqdm.auto``: a widget in Jupyter where
ipywidgets is installed, else text on stderr), shown only once a loop has run for DELAY_S
seconds, and gone when it ends (the results are the tables the loop returns).

Where bars show: the environment's ``BOOK_PROGRESS`` decides where it is set ('0' never, '1'
always); unset, in a terminal (stderr a TTY) and in a Jupyter kernel, and never under pytest.
A notebook keeps what its cells wrote: nbval compares those outputs, stderr included, with the
stored ones, so its kernels (which inherit pytest's PYTEST_CURRENT_TEST) show none, and
``python -m book.harness.execute``, which stores the outputs the book shows, starts its kernels
with BOOK_PROGRESS=0. Where no bar shows, tqdm is not even imported.
"""
from __future__ import annotations

import os
import sys

DELAY_S = 2.0
"""A bar appears once its loop has taken this long (seconds): quick loops leave no trace."""


def shown() -> bool:
    """Whether bars show here (the module's docstring says where)."""
    setting = os.environ.get("BOOK_PROGRESS", "").strip().lower()
    if setting:
        return setting not in ("0", "false", "no", "off")
    if "PYTEST_CURRENT_TEST" in os.environ:
        return False
    if _in_kernel():  # tqdm.auto picks its bar: a widget, or text where ipywidgets is missing
        return True
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def _in_kernel() -> bool:
    """Whether this is a Jupyter kernel (IPython's shell over ZeroMQ, as tqdm.auto tells)."""
    if "ipykernel.zmqshell" not in sys.modules:
        return False
    shell = sys.modules["IPython"].get_ipython()
    return type(shell).__name__ == "ZMQInteractiveShell"


def bar(iterable=None, *, show: bool = True, **kwargs):
    """``tqdm.auto.tqdm(iterable, **kwargs)`` where bars show (:func:`shown`) and ``show``, with
    ``delay`` DELAY_S and ``leave`` False unless given; elsewhere a stand-in with the same calls
    that shows nothing (its ``write`` prints, as tqdm's does)."""
    if not (show and shown()):
        return Quiet(iterable)
    import warnings

    from tqdm.std import TqdmWarning
    with warnings.catch_warnings():  # Jupyter without ipywidgets: tqdm's text bar, no warning
        warnings.simplefilter("ignore", TqdmWarning)
        from tqdm.auto import tqdm
    kwargs.setdefault("delay", DELAY_S)
    kwargs.setdefault("leave", False)
    return tqdm(iterable, disable=False, **kwargs)  # (tqdm's own default hides it off a TTY)


class Quiet:
    """What :func:`bar` gives where no bar shows: iterates, counts nothing, shows nothing."""

    def __init__(self, iterable=None):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass

    @staticmethod
    def write(s: str, file=None, end: str = "\n") -> None:
        """Print ``s`` (on stdout unless ``file``), as ``tqdm.write`` does beside a bar; flushed,
        so that a log shows it at once."""
        print(s, end=end, file=file, flush=True)
