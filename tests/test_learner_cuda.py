"""Legal CUDA a learner writes -- atomics with literals of another type, shared-memory atomics,
the math API's intrinsics, block-wide votes -- accepted and right on whichever backend runs."""
import numpy as np

from book import load_kernel, to_device, to_host, xp
from conftest import ROOT

LEARNER = ROOT / "tests" / "kernels" / "learner.cu"


def test_atomics_take_literals_and_shared_memory():
    n = 300
    keys = np.arange(n, dtype=np.int32) * 7
    count, total = xp.zeros(1, dtype=xp.uint32), xp.zeros(1, dtype=xp.float32)
    hist = xp.zeros(4, dtype=xp.int32)
    load_kernel(LEARNER, "atomics")((3,), (128,), (count, total, hist, to_device(keys), np.int32(n)))
    assert to_host(count)[0] == n and to_host(total)[0] == n
    assert list(to_host(hist)) == list(np.bincount(keys % 4, minlength=4))


def test_math_intrinsics():
    x = np.array([0.25, 1.5, 2.5, 4.0], dtype=np.float32)
    out, u = xp.zeros(32, dtype=xp.float32), xp.zeros(2, dtype=xp.uint32)
    load_kernel(LEARNER, "intrinsics")((1,), (4,), (to_device(x), out, u))
    got = to_host(out).reshape(4, 8)
    expect = np.stack([1 / np.sqrt(x), 1 / x, np.clip(x - 1, 0, 1), 1 / x, np.rint(x),
                       3 * np.trunc(x), np.ones(4), np.minimum(x, 2)], axis=1)
    assert np.allclose(got, expect, rtol=2e-6), got
    assert list(to_host(u)) == [0xF, 1]


def test_block_wide_votes_at_a_barrier():
    rng = np.random.default_rng(0)
    flags = (rng.random(3 * 96) < 0.3).astype(np.int32)
    flags[96:192] = 1  # a block where every thread votes yes
    out = xp.zeros(12, dtype=xp.int32)
    load_kernel(LEARNER, "votes")((3,), (96,), (to_device(flags), out))
    got = to_host(out).reshape(3, 4)
    per_block = flags.reshape(3, 96)
    for b in range(3):
        s = int(per_block[b].sum())
        assert list(got[b]) == [s, int(s == 96), int(s > 0), 96 - s], (b, got[b])


def test_any_kernel_name():
    """Kernels named g, args, err, fault: names the emulator's wrapper once used itself."""
    x = xp.zeros(4, dtype=xp.float32)
    for name in ("g", "args", "err", "fault"):
        load_kernel(LEARNER, name)((1,), (4,), (x,))
    assert list(to_host(x)) == [10.0] * 4
