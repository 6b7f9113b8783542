"""Scratch memory a call of ``book.sgemm`` keeps between calls, one set per stream and thread.

A launch that writes a workspace and a later launch that reads it (split-K's slices and their
sum, 3xTF32's records and flags and its product) must not meet another call's launches in
between. Calls on one stream run in the order they were issued; calls on two streams do not, and
two threads on one stream may issue their launches in turns. So each (device, stream, thread)
gets its own set (:func:`here`), which nobody else reads or writes.

Memory freed from a set goes back to CuPy's pool for the stream it was allocated on, and only
allocations on that stream take it again, after the launches already there: dropping a set never
frees memory another stream may still be using. A set holds its stream object, so that the
stream's handle is not reused while the set lives. At most ``LIMIT`` sets are kept (the least
recently used is dropped); :func:`release` drops them all.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from . import replay
from .runtime import BACKEND, xp

LIMIT = 16
"""Sets kept at once: a program with more live (stream, thread) pairs than this rebuilds a set
(its allocations and, for 3xTF32, its bound launches) when it comes back to one."""

_SETS: OrderedDict = OrderedDict()
_LOCK = threading.Lock()


def _where() -> tuple:
    """(key, stream) of the caller: its device, stream and thread (the CPU emulator runs one
    launch at a time, in order: its thread alone)."""
    if BACKEND != "gpu":
        return (threading.get_ident(),), None
    stream = xp.cuda.get_current_stream()
    return (xp.cuda.runtime.getDevice(), stream.ptr, threading.get_ident()), stream


def here() -> dict:
    """The calling stream's and thread's own dict of scratch state (empty at first)."""
    key, stream = _where()
    with _LOCK:
        entry = _SETS.get(key)
        if entry is None:
            entry = _SETS[key] = {"_stream": stream}
            while len(_SETS) > LIMIT:
                _SETS.popitem(last=False)
                replay.clear()  # (replays hold that set's memory: let it go)
        else:
            _SETS.move_to_end(key)
    return entry


def release() -> None:
    """Drop every set (their memory goes back to the pool of the stream that allocated it)."""
    with _LOCK:
        _SETS.clear()
    replay.clear()


def buffer(name, size: int, dtype=None, zeros: bool = False):
    """The first ``size`` elements of this stream's and thread's buffer ``name``, grown as needed
    and kept: a launch then allocates nothing. ``zeros``: made as zeros (counters that every
    launch leaves zero), at least 1024, returned whole."""
    entry = here()
    got = entry.get(name)
    if got is None or got.size < size:
        dtype = dtype or xp.float32
        if got is not None:
            replay.clear()  # (replays hold the buffer replaced: let it go)
        got = entry[name] = (xp.zeros(max(size, 1024), dtype=dtype) if zeros
                             else xp.empty(size, dtype=dtype))
    got = got if zeros else got[:size]
    replay.note_buffer(got)
    return got
