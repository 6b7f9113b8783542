"""Does the time spent per measured point change what is measured? (``measure.TARGET_SECONDS``)

Chapter 8's steps, cuBLAS, naive32 and tiled32 at n = 256 ... 4096, swept with 0.05 s and with
0.15 s of GPU time per point, in four interleaved rounds. Prints, per kernel and n, the median
GFLOP/s of the rounds for each target, the spread between rounds ((max - min) / median, %) and
the difference of the medians (%).

On an H100 (2026-11-23) no difference was larger than the spread between rounds of either target
(40 of 40; the largest 25%, at n = 1024, where the rounds themselves spread by 20-55%); at
n = 4096 the medians agreed within 4.4%.

    python benchmarks/timing_target.py
"""
import pandas as pd

from book.harness.measure import sweep
from book.registry import KERNELS, chapter_kernels

TARGETS, SIZES, ROUNDS = (0.05, 0.15), [256, 1024, 2048, 4096], 4


def main() -> None:
    specs = ([KERNELS["reg128x128x16_8x8"]] + chapter_kernels(8)
             + [KERNELS[k] for k in ("naive32", "tiled32")])
    frames = [sweep(specs, SIZES, target_s=t).assign(target=t, round=r)
              for r in range(ROUNDS) for t in (TARGETS if r % 2 == 0 else TARGETS[::-1])]
    df = pd.concat(frames)
    g = df[df.status == "ok"].groupby(["kernel", "M", "target"]).gflops
    table = pd.DataFrame({"median": g.median(),
                          "spread %": 100 * (g.max() - g.min()) / g.median()}).unstack("target")
    table["diff %"] = 100 * (table[("median", TARGETS[0])] / table[("median", TARGETS[1])] - 1)
    pd.set_option("display.width", 200)
    print(table.round(2).to_string())
    within = table["diff %"].abs() <= table["spread %"].max(axis=1)
    print(f"{within.sum()} of {len(table)} differences within the spread between rounds")


if __name__ == "__main__":
    main()
