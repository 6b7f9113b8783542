"""The cost model: the GPU time of a plan at a shape (``model_seconds``), from the rate each
configuration reaches at full load (this GPU's tuning run, else the GPU recorded last), its
blocks' k-steps wave by wave on the SMs, and what split-K, stream-K, B's aligned copy, packing
and the skinny kernels add; ``ranked`` orders a shape's candidate plans by it. It ranks the
plans of a shape nobody tuned; a first call on a GPU times the best few (``choice.learn``).
"""
from __future__ import annotations

import math
import os
from functools import lru_cache

import numpy as np

from ..harness import records
from ..launch.runtime import BACKEND
from ..registry import ceil_div
from .kernels import _BK, CONFIGS, FALLBACK, SKINNY_WARPS, _spec
from .plans import Packed, Plan, Skinny, candidates

PLANS_FILE, CANDIDATES_FILE = "09_sgemm_plans", "09_sgemm_candidates"
"""The tuning run's results files the library reads (results/<gpu>/; written by
``python -m book.studies.sgemm_lab --tune``): the fastest plan per suite shape, and every
candidate's measurement (the rates of the cost model)."""


LAUNCH_S = 3e-6
"""GPU time one more kernel of a plan costs beside the main one (split-K's sum, stream-K's
fix-up, B's aligned copy): the gap between two dependent launches."""
LONE = 1.5
"""How much faster than in a full SM a block runs alone on its SM, where two or more fit."""
CHAIN_S = 1.4e-9
"""Seconds per FMA of one thread's chain where its warp has its SM's scheduler to itself (small
shapes): what a k-step of TM x TN outputs per thread costs at least (BK x TM x TN of them). From
an H100 probe: 64 x 64 tiles (8 x 4 outputs per thread) took 0.75 us per k-step of 16, 32 x 32
tiles (4 x 4) 0.4 us, on 13 x 23 x 93 -- a shape of the held-out set, so for small shapes that
set is not fully held out (chapter 9 says so)."""
STREAMK_STEP = 1.15
"""Stream-K's shares run their steps this much slower than whole tiles (chapter 9)."""
OUTER_RATE = 0.4
"""skinny_outer's FMA rate as a share of the tile kernels' best, where it is not bound by writing
C: 37-46% on an H100 probe at K from 16 to 32 (3000^2 x 32, 1500 x 9000 x 30, 1000 x 20000 x 24,
2048 x 8192 x 16; shapes outside the held-out sets). The first call times it beside the tile
plans."""


LAYOUT_SPEED = {"nn": 1.0, "tn": 0.937, "nt": 0.857, "tt": 0.905}
"""The tile kernels' speed with operands read as each layout stores them, as a share of NN's:
book.sgemm's native plans at 4096^3 on an H100 (before packing; chapter 9's layouts run)."""
PACK_SLOW = 1.25
"""09_transpose.cu's time over a copy of the same bytes at chapter 0's copy bandwidth (an
estimate; the first call times packed plans beside the others)."""


WARP_BYTES_S = 25e9
"""Bytes per second one warp of 09_skinny.cu streams from X, for the cost model (an estimate:
where few warps run, they, not DRAM, set the pace)."""


def _blocks_per_sm(config: str) -> int:
    """Blocks of ``config`` an SM holds at once, estimated without compiling it: shared memory
    (227 KiB per SM), threads (2048) and registers (65,536; about 40 + 1.25 per output a thread
    accumulates, as ptxas allocated them for chapter 8's configurations)."""
    spec = _spec(config)
    threads = spec.block[0]
    outputs = spec.tile[0] * spec.tile[1] // threads
    regs = min(255, 8 * math.ceil((40 + 1.25 * outputs) / 8))
    return max(1, min(227 * 1024 // (spec.stage_bytes + 1024), 2048 // threads,
                      65536 // (threads * regs)))


@lru_cache(maxsize=1)
def _rates() -> dict[str, float]:
    """GFLOP/s of each configuration at full load: its best whole-tile plan on the large squares
    of this GPU's tuning run (09_sgemm_candidates), else of the GPU recorded last."""
    from ..harness.device import device_report, gpu_slug
    gpus = ([gpu_slug(device_report()["name"])] if BACKEND == "gpu" else []) + records.recorded_gpus()
    for gpu in gpus:
        try:
            found = records.rows(CANDIDATES_FILE, gpu)
        except FileNotFoundError:
            continue
        big = [r for r in found if r["status"] == "ok" and min(r["M"], r["N"], r["K"]) >= 2048]
        rates = {c: max([r["gflops"] for r in big if r["kernel"] == Plan(c).id], default=np.nan)
                 for c in CONFIGS}
        measured = {c: v for c, v in rates.items() if np.isfinite(v)}
        if measured:  # a configuration the run did not time: from the nearest tile it did
            return {c: v if np.isfinite(v) else _scaled_rate(c, measured) for c, v in rates.items()}
    return {c: _scaled_rate(c, {"128x256": 40000.0}) for c in CONFIGS}


def _scaled_rate(config: str, measured: dict[str, float]) -> float:
    """An estimate of ``config``'s rate at full load from a measured configuration's: the one
    whose tile's area is nearest, times the ratio of their areas to the power 1/4 (smaller tiles
    load more bytes per FMA; the exponent fits chapter 8's tiles from 64 x 64 to 128 x 256)."""
    area = lambda c: _spec(c).tile[0] * _spec(c).tile[1]
    ref = min(measured, key=lambda c: (abs(math.log(area(c) / area(config))), c))
    return measured[ref] * (area(config) / area(ref)) ** 0.25


@lru_cache(maxsize=1)
def _bandwidth() -> float:
    """Bytes per second of a device-to-device copy (chapter 0's ceiling), else 3e12."""
    named = os.environ.get("BOOK_RESULTS_GPU")
    for gpu in ([named] if named else []) + records.recorded_gpus():  # (saved last first)
        try:
            found = {r["ceiling"]: r["value"] for r in records.rows("00_ceilings", gpu)}
        except FileNotFoundError:
            continue
        if "copy_bandwidth" in found:
            return float(found["copy_bandwidth"]) * 1e9
    return 3e12


def model_seconds(plan: Plan, M: int, N: int, K: int, sms: int = 132) -> float:
    """The cost model's GPU time for ``plan`` at (M, N, K): its blocks' k-steps at the rate its
    configuration reaches at full load, wave by wave on ``sms`` SMs (the busiest SM's blocks; a
    block alone on its SM a little faster), plus what the plan adds -- split-K's slices written
    and summed, stream-K's slower shared steps and fix-up, B's aligned copy, a packed operand's
    copy -- and a launch gap per extra kernel. Tile plans that read transposed operands as they
    are run at LAYOUT_SPEED of their rate."""
    if plan.config == FALLBACK:
        return 0.0
    if isinstance(plan, Packed):
        packed = (M * K if plan.layout[0] == "t" else 0) + (K * N if plan.layout[1] == "t" else 0)
        copies = plan.layout.count("t")
        return (model_seconds(plan.plan, M, N, K, sms)
                + PACK_SLOW * 8 * packed / _bandwidth() + copies * LAUNCH_S)
    floor = 4 * (M * K + K * N + M * N) / _bandwidth() + LAUNCH_S  # every plan moves its bytes
    if isinstance(plan, Skinny) and plan.side == "k":  # OUTER_RATE of the tiles' best rate
        return max(floor, 2 * M * N * K / (OUTER_RATE * max(_rates().values()) * 1e9) + LAUNCH_S)
    if isinstance(plan, Skinny):
        R, P = (M, N) if plan.side == "n" else (N, M)
        warps = ceil_div(R, plan.per_block) * SKINNY_WARPS * plan.splits
        x = 4 * (R + P) * K
        t = max(x / _bandwidth(), x / (min(warps, sms * 64) * WARP_BYTES_S)) + LAUNCH_S
        return max(floor, t + ((2 * plan.splits + 1) * 4 * R * P / _bandwidth()
                               if plan.splits > 1 else 0.0))  # (its last blocks add the slices)
    spec = _spec(plan.config)
    (bm, bn), bk = spec.tile, _BK[plan.config]
    r = _blocks_per_sm(plan.config)
    step = (2 * bm * bn * bk / (_rates()[plan.config] * LAYOUT_SPEED[plan.layout] * 1e9)
            * sms * r)  # one block-step, full GPU
    tiles, steps = ceil_div(M, bm) * ceil_div(N, bn), ceil_div(K, bk)
    bw = _bandwidth()
    extra = 4 * M * N / bw  # C, written after the k-loop (what sets the pace where K is small)
    if plan.pad_b and N % 4:
        extra += 8 * K * 4 * ceil_div(N, 4) / bw + LAUNCH_S
    if plan.streamk:
        whole = tiles // (sms * r) * (sms * r)
        t = whole // (sms * r) * steps * step  # whole waves at full load
        rest = (tiles - whole) * steps
        if rest:
            share = ceil_div(rest, sms * r)
            t += share * step * STREAMK_STEP + 2 * sms * r * bm * bn * 4 / bw + 2 * LAUNCH_S
        return max(floor, t + extra)
    s = min(plan.splits, steps)
    blocks, per_block = tiles * s, ceil_div(steps, s)
    defines = dict(spec.defines)
    chain = bk * defines["TM"] * defines["TN"] * CHAIN_S  # a k-step of one block alone
    t = per_block * max(step / r * max(ceil_div(blocks, sms), min(LONE, r)), chain)
    if s > 1:
        t += (2 * s + 1) * M * N * 4 / bw + LAUNCH_S
    return max(floor, t + extra)


def ranked(M: int, N: int, K: int, sms: int = 132, layout: str = "nn") -> list:
    """The candidate plans of a shape and layout, fastest first by :func:`model_seconds`."""
    return sorted(candidates(M, N, K, sms=sms, layout=layout),
                  key=lambda p: model_seconds(p, M, N, K, sms))
