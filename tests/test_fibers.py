"""The emulator's two ways of switching between a block's threads (cuda_emu/context.h): its own
switch in user space on x86-64, and glibc's ucontext functions elsewhere (or where a build
defines CUDA_EMU_UCONTEXT). Both give CUDA's results for barriers, early exits and warp votes."""
import numpy as np
import pytest

from book import BACKEND, load_kernel, to_device, to_host, xp
from conftest import SEMANTICS

pytestmark = pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own fibers")


@pytest.mark.parametrize("defines", [{}, {"CUDA_EMU_UCONTEXT": 1}], ids=["own-switch", "ucontext"])
def test_both_switches_run_barriers_exits_and_votes(defines):
    def kernel(name):
        return load_kernel(SEMANTICS, name, defines)

    x = np.random.default_rng(1).integers(-50, 50, 1000).astype(np.float32)  # exact sums
    out = xp.full(4, xp.nan, dtype=xp.float32)
    kernel("block_sum")(4, 256, (to_device(x), out, np.int32(1000)))
    np.testing.assert_array_equal(to_host(out), np.pad(x, (0, 24)).reshape(4, 256).sum(axis=1))

    out = xp.full(256, xp.nan, dtype=xp.float32)
    kernel("early_exit")(2, 128, (to_device(x[:256]), out, np.int32(77)))
    got, want = to_host(out).reshape(2, 128), x[:256].reshape(2, 128)
    np.testing.assert_array_equal(got[:, :77], want[:, :77][:, ::-1])
    assert np.isnan(got[:, 77:]).all()

    pred = np.random.default_rng(2).integers(0, 2, 64).astype(np.int32)
    out = xp.full(4 * 64, 7, dtype=xp.uint32)
    kernel("votes")(1, 64, (to_device(pred), out, np.int32(64)))
    ballots = [sum(int(pred[u]) << (u % 32) for u in range(w, w + 32)) for w in (0, 32)]
    np.testing.assert_array_equal(to_host(out).reshape(64, 4)[:, 0], np.repeat(ballots, 32))
