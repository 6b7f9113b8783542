"""The chapters' diagrams: each draws, and what it draws agrees with the chapter's model."""
import numpy as np
import pytest

from book.models import banks, diagrams, pitch
from book.models.coalescing import one_step
from book.registry import KERNELS, TUNING_SPACE, async_tile, ceil_div, chapter_kernels, variant


@pytest.mark.parametrize("kernel", ["naive8", "naive16", "naive1d", "xrows16", "xrows32"])
@pytest.mark.parametrize("M, N", [(40, 56), (17, 33)])
def test_every_element_of_c_has_one_thread(kernel, M, N):
    lay = diagrams.thread_layout(KERNELS[kernel], M, N)
    assert (lay["covered"] == 1).all()
    assert lay["idle_threads"] == lay["threads"] - M * N


@pytest.mark.parametrize("kernel, a, b", [("naive32", 1, 4), ("xrows32", 32, 1)])
def test_the_sectors_drawn_are_the_models(kernel, a, b):
    spec = KERNELS[kernel]
    lay = diagrams.sector_layout(spec, 32, 32, 32)
    model = one_step(spec, 32, 32, 32).iloc[0]
    assert (lay["A sectors"], lay["B sectors"]) == (model["A (load)"], model["B (load)"]) == (a, b)


@pytest.mark.parametrize("kernel", ["tiled8", "tiled16", "tiled32"])
def test_the_tiles_along_k_cover_k_once(kernel):
    spec = KERNELS[kernel]
    lay = diagrams.tile_layout(spec, 64, 64, 81)
    assert lay["steps"] == ceil_div(81, spec.tile[0])
    assert sum(w for *_, w in lay["A"]) == sum(h for _, _, h, _ in lay["B"]) == 81


@pytest.mark.parametrize("kernel, lanes_in_one_bank", [("tstore32", 32), ("tstore_pad32", 1),
                                                       ("tstore16", 8), ("tstore_pad16", 2)])
def test_the_lanes_that_share_a_bank_are_the_conflict_degree(kernel, lanes_in_one_bank):
    spec = KERNELS[kernel]
    lay = diagrams.bank_layout(spec)
    assert np.bincount(lay["banks"]).max() == lanes_in_one_bank == lay["degree"]
    assert lay["degree"] == banks.degree(lay["words"])


@pytest.mark.parametrize("spec", [s for s in chapter_kernels(6) if s.id.startswith("reg")], ids=str)
def test_each_thread_owns_one_register_tile(spec):
    lay = diagrams.register_layout(spec, thread=5)
    assert lay["threads"] == spec.block[0]
    assert (np.bincount(lay["owner"].ravel()) == lay["TM"] * lay["TN"]).all()
    assert (lay["owner"][np.ix_(lay["a_rows"], lay["b_cols"])] == 5).all()


def test_padded_rows_touch_the_sectors_the_pitch_model_counts():
    aligned = diagrams.pitch_layout(1024, 1024, 16)
    assert (aligned["sectors"] == 2).all()
    assert pitch.sectors_per_request(1024, 1024, 16) == 2 * 2  # two rows of 16 floats per request
    packed = diagrams.pitch_layout(1001, 1001, 16)
    assert packed["sectors"].max() == 3 and pitch.sectors_per_request(1001, 1001, 16) > 4


@pytest.mark.parametrize("spec", [async_tile(**c) for c in TUNING_SPACE] + chapter_kernels(8)[2:4],
                         ids=lambda s: s.id)
def test_warps_and_a_lanes_pieces_match_the_defines(spec):
    d = dict(spec.defines)
    lay = diagrams.warp_layout(spec, lane=7)
    assert len(np.unique(lay["warp"])) == lay["warps"] == d["THREADS"] // 32
    assert lay["mine"].sum() == lay["wmiter"] * d["TM"] * d["WNITER"] * d["TN"]  # acc's size
    assert (np.bincount(lay["warp"].ravel()) == d["WM"] * d["WN"]).all()


@pytest.mark.parametrize("stages", [2, 3, 4, 6])
def test_the_pipeline_never_overwrites_the_stage_being_read(stages):
    steps = diagrams.pipeline_layout(async_tile(STAGES=stages), tiles=10)
    for s in steps:
        assert s["held"][s["computed"]] == s["t"]
        assert len(s["in_flight"]) == min(stages - 1, 10 - 1 - s["t"])


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_the_bulk_copy_pipeline_loads_after_the_wgmmas(stages):
    """10_wgmma.cu issues tile t + STAGES - 1 after iteration t's wgmmas and barrier, into the
    stage tile t - 1 left: while tile t is read, STAGES - 2 copies are in flight, and the wait on
    stage t % STAGES expects the parity of its (t // STAGES)-th fill."""
    spec = variant(KERNELS["tf32x3_wgmma"], STAGES=stages)
    for s in diagrams.pipeline_layout(spec, tiles=10):
        assert s["held"][s["computed"]] == s["t"] and s["parity"] == s["t"] // stages % 2
        assert sorted(s["in_flight"]) == list(range(s["t"] + 1, min(s["t"] + stages - 1, 10)))


def test_every_picture_draws():
    k = KERNELS
    figs = [diagrams.thread_map(k["naive16"]), diagrams.thread_map(k["naive1d"], 8, 40),
            diagrams.thread_map(k["xrows16"]), diagrams.sector_map(k["naive32"], k["xrows32"]),
            diagrams.tile_walk(k["tiled16"]), diagrams.bank_map(k["tstore16"], k["tstore_pad16"]),
            diagrams.register_tile(k["reg64x64x8_4x4"]),
            diagrams.pitched_rows(k["tiled_ld16"], 1001, {"packed": 1, "128 B": 32}),
            diagrams.warp_tiles(async_tile()), diagrams.pipeline(async_tile(STAGES=3)),
            diagrams.pipeline(KERNELS["tf32x3_wgmma"])]
    assert all(f.axes for f in figs)


@pytest.mark.parametrize("tiles_m, tiles_n, steps, sms, splits", [(4, 3, 6, 8, 3), (5, 5, 7, 6, 4),
                                                                   (1, 2, 3, 4, 8)])
def test_work_split_shares_every_step_once(tiles_m, tiles_n, steps, sms, splits):
    """Chapter 9's picture: waves of one tile per SM, split-K slices with none empty, stream-K
    shares that are contiguous, cover the steps of the tiles left exactly once, and split a tile
    exactly where two shares hold its steps."""
    from book.models.diagrams import work_split, work_split_layout
    lay = work_split_layout(tiles_m, tiles_n, steps, sms, splits)
    tiles = tiles_m * tiles_n
    assert lay["wave"] == [t // sms for t in range(tiles)]
    assert sorted(set(lay["slices"])) == list(range(lay["per"])) and lay["per"] <= splits
    owner = lay["owner"]
    assert len(owner) == (tiles - lay["first"]) * steps and lay["first"] % lay["shares"] == 0
    assert owner == sorted(owner)  # each share is one contiguous run of steps
    split = {lay["first"] + g // steps for g in range(len(owner))
             if len(set(owner[g - g % steps:g - g % steps + steps])) > 1}
    assert sorted(split) == lay["split_tiles"]
    work_split(tiles_m, tiles_n, steps, sms, splits)


@pytest.mark.parametrize("x", [np.pi, 1 / 3, 0.1, -7.25e-3, 1 + 2**-11, 3e30])
def test_the_3xtf32_split_keeps_22_bits_in_two_tf32_parts(x):
    """Chapter 10's picture: big and small each hold at most 11 significant bits, small starts
    below big's last, and what neither holds is below 2^-21 of x."""
    from book.studies.tf32_models import split_layout, split_picture
    lay = split_layout(x)
    big, small = lay["bits"]["big"], lay["bits"]["small"]
    assert big and max(big) - min(big) < 11
    assert not small or (max(small) - min(small) < 11 and min(small) > max(big))
    assert lay["big"] + lay["small"] + lay["rest"] == pytest.approx(lay["x"], rel=1e-15)
    assert abs(lay["rest"]) <= 2.0 ** -21 * abs(lay["x"])
    split_picture(x, 1 / 3)
