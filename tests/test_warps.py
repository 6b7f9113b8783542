"""Warps on whichever backend runs: shuffles (with width), votes, the active mask, __syncwarp,
integer intrinsics and a warp-aggregated atomic. The expected values follow CUDA's definitions,
so the GPU host checks the emulator bit for bit against the hardware."""
import numpy as np
import pytest

from book import to_device, to_host, xp


def test_warp_sum_by_shuffle_down(semantics):
    x = np.random.default_rng(0).integers(-100, 100, 256).astype(np.float32)  # exact sums
    out = xp.full(8, xp.nan, dtype=xp.float32)
    semantics("warp_sum")(4, 64, (to_device(x), out))
    np.testing.assert_array_equal(to_host(out), x.reshape(8, 32).sum(axis=1))


def expected_shuffles(threads: int, width: int) -> np.ndarray:
    rows = []
    for t in range(threads):
        lane, warp = t % 32, t - t % 32
        base = lane & ~(width - 1)
        value = lambda src: 100 + warp + src  # noqa: E731
        up = lane - 2 if lane - base >= 2 else lane
        down = lane + 3 if lane - base + 3 < width else lane
        other = lane ^ 5
        xor = other if other < base + width else lane  # an earlier segment may be read
        pair = base + ((t ^ 1) & (width - 1))
        rows.append([value(base + (3 & (width - 1))), value(up), value(down), value(xor),
                     int(pair == lane ^ 1)])
    return np.array(rows, dtype=np.int32)


@pytest.mark.parametrize("width", [32, 16, 8, 4, 2, 1])
def test_shuffle_variants_with_width(semantics, width):
    out = xp.full(5 * 64, -1, dtype=xp.int32)
    semantics("shuffles")(1, 64, (out, np.int32(width)))
    np.testing.assert_array_equal(to_host(out).reshape(64, 5), expected_shuffles(64, width))


@pytest.mark.parametrize("live", [64, 40, 17, 1])
def test_votes_active_mask_and_syncwarp(semantics, live):
    pred = np.random.default_rng(live).integers(0, 2, 64).astype(np.int32)
    pred[:8] = 1  # warp 0's first lanes agree, so __all_sync can be true when few are live
    out = xp.full(4 * 64, 7, dtype=xp.uint32)
    semantics("votes")(1, 64, (to_device(pred), out, np.int32(live)))
    got = to_host(out).reshape(64, 4)
    for t in range(64):
        if t >= live:
            assert (got[t] == 7).all()  # exited: wrote nothing
            continue
        warp = range(t - t % 32, min(t - t % 32 + 32, live))
        mask = sum(1 << (u % 32) for u in warp)
        ballot = sum(int(pred[u]) << (u % 32) for u in warp)
        assert list(got[t]) == [ballot, ballot != 0, ballot == mask, mask], t


def test_integer_intrinsics(semantics):
    x = np.array([0, 1, 2, 3, 0x80000000, 0xFFFFFFFF, 0x00F0F000, 12345678], dtype=np.uint32)
    out = xp.full(6 * len(x), -1, dtype=xp.int32)
    semantics("bit_ops")(1, 32, (to_device(x), out, np.int32(len(x))))
    got = to_host(out).reshape(len(x), 6)
    for v, row in zip(x.tolist(), got.tolist()):
        popc = bin(v).count("1")
        ffs = (v & -v).bit_length()
        clz = 32 - v.bit_length()
        brev = int(f"{v:032b}"[::-1], 2)
        assert row == [popc, ffs, clz, np.int32(np.uint32(brev)), 2 * popc, 64 - v.bit_length()], v


@pytest.mark.parametrize("live", [192, 150, 33])
def test_warp_aggregated_atomic(semantics, live):
    counter = xp.zeros(1, dtype=xp.int32)
    slot = xp.full(192, -1, dtype=xp.int32)
    semantics("aggregated_count")(3, 64, (counter, slot, np.int32(live)))
    assert int(to_host(counter)[0]) == live
    got = to_host(slot)
    assert sorted(got[:live]) == list(range(live)) and (got[live:] == -1).all()


def test_full_mask_collectives_after_some_lanes_returned(semantics):
    """`if (i >= n) return;` then a full-mask __ballot_sync, __any_sync, __all_sync and
    __syncwarp: legal, the exited lanes absent (the emulator once refused it, naming the exited
    lane); the GPU host runs the same kernel."""
    n = 20
    x = np.random.default_rng(3).integers(-10, 10, 32).astype(np.int32)
    ballot, anyall, synced = (xp.zeros(32, dtype=t) for t in (xp.uint32, xp.int32, xp.int32))
    semantics("collectives_after_return")(1, 32, (to_device(x), ballot, anyall, synced, np.int32(n)))
    want = sum(1 << i for i in range(n) if x[i] > 0)
    assert (to_host(ballot)[:n] == want).all() and (to_host(ballot)[n:] == 0).all()
    assert (to_host(anyall)[:n] == int((x[:n] > 5).any()) + 2).all()
    assert (to_host(synced)[:n] == 1).all() and (to_host(synced)[n:] == 0).all()
