"""book.sgemm on concurrent streams, from one thread and from several (issue: silent wrong
answers): each call's workspace is its stream's and thread's own, so calls in flight together
never read each other's slices, records or flags. GPU host only (the emulator has no streams)."""
import threading

import numpy as np
import pytest

from book import BACKEND, xp
from book import blas as S
from book.harness.check import TOLERANCE, relative_error
from book.registry import KERNELS, device_cc

pytestmark = pytest.mark.skipif(BACKEND != "gpu", reason="streams run on a GPU")

SHAPES = [(1024, 1024, 16384), (1024, 1024, 16384), (512, 768, 8192), (1024, 1024, 16384),
          (300, 5, 20000), (1000, 100, 5000)]
"""Split-K (slices, then their sum: two launches over one workspace), a skinny plan with split
sums (tickets), and for 3xTF32 split-K records and flags (precision='ozaki': its buffers are
each call's own); repeated shapes share a workspace
wherever one is shared by shape alone, new ones drop it."""


def _precisions():
    tf32x3 = KERNELS["tf32x3_wgmma"].why_not_here() is None
    return ["fp32"] + (["tf32x3"] if tf32x3 else []) + (["ozaki"] if device_cc() >= (8, 0) else [])


def _inputs(shape, seed):
    M, N, K = shape
    rng = xp.random.default_rng(seed)
    a = rng.standard_normal((M, K), dtype=xp.float32)
    b = rng.standard_normal((K, N), dtype=xp.float32)
    return a, b


def _errors(pairs, outs):
    return [relative_error(xp.asnumpy(c), xp.asnumpy(a).astype(np.float64) @ xp.asnumpy(b))
            for (a, b), c in zip(pairs, outs)]


@pytest.mark.parametrize("precision", _precisions())
def test_calls_on_streams_of_one_thread(precision):
    """One call per stream, all issued before any is waited for, three rounds."""
    pairs = [_inputs(s, seed) for seed, s in enumerate(SHAPES)]
    streams = [xp.cuda.Stream(non_blocking=True) for _ in pairs]
    xp.cuda.Device().synchronize()
    for _ in range(3):
        outs = []
        for (a, b), stream in zip(pairs, streams):
            with stream:
                outs.append(xp.full((a.shape[0], b.shape[1]), xp.nan, dtype=xp.float32))
                S.sgemm(a, b, out=outs[-1], precision=precision)
        xp.cuda.Device().synchronize()
        errors = _errors(pairs, outs)
        assert max(errors) < TOLERANCE, errors


@pytest.mark.parametrize("precision", _precisions())
@pytest.mark.parametrize("shared_stream", [False, True], ids=["own-streams", "one-stream"])
def test_calls_from_several_threads(precision, shared_stream):
    """Four threads, each calling in a loop on its own stream, or all on one stream (two threads
    on one stream issue their launches in turns): every result right."""
    one = xp.cuda.Stream(non_blocking=True)
    errors, failures = {}, []
    xp.cuda.Device().synchronize()

    def work(i):
        try:
            stream = one if shared_stream else xp.cuda.Stream(non_blocking=True)
            with stream:
                pairs = [_inputs(s, 100 * i + j) for j, s in enumerate(SHAPES[i % 2::2])]
                stream.synchronize()
                outs = [S.sgemm(a, b, precision=precision) for a, b in pairs for _ in range(2)]
                stream.synchronize()
            errors[i] = _errors([p for p in pairs for _ in range(2)], outs)
        except BaseException as e:  # (reported by the main thread)
            failures.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    worst = max(e for v in errors.values() for e in v)
    assert len(errors) == 4 and worst < TOLERANCE, errors
