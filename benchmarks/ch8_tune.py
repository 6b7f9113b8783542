"""Chapter 8 on a GPU: the registered steps and the warp-tile tuning space, checked then timed at
n = 4096 and 8192 beside cuBLAS; prints the registers, occupancy and a table of GFLOP/s and % of
cuBLAS. (Chapter 8's notebook runs the same and saves results/<gpu>/08_steps.csv and 08_tune.csv;
this script saves them too unless BOOK_SAVE_RESULTS=0.)

    python benchmarks/ch8_tune.py            # on a GPU host
"""
import sys

import pandas as pd

from book import BACKEND
from book.harness import results
from book.harness.measure import sweep
from book.models.occupancy import report
from book.registry import KERNELS, TUNING_SPACE, async_tile, chapter_kernels
from book.tune import tune, winner

pd.set_option("display.width", 200)
sizes = [4096, 8192] if BACKEND == "gpu" else [64, 96]
steps = [KERNELS["reg128x128x16_8x8"]] + chapter_kernels(8)
print(report(steps + [async_tile(**c) for c in TUNING_SPACE]).to_string(), flush=True)
df = sweep(steps, sizes)  # (a progress bar in a terminal)
tuned = tune(sizes)
df, tuned = results.keep(df, "08_steps"), results.keep(tuned, "08_tune")  # saved where results.saving()
for name, d in (("steps", df), ("tuning", tuned)):
    print(f"\n{name}: GFLOP/s and % of cuBLAS")
    print(d.pivot_table(index="kernel", columns="M", values=["gflops", "pct_of_cublas"], sort=False).round(1).to_string())
print("\nwinner:", winner(tuned)[["kernel", "M", "gflops", "pct_of_cublas"]].to_dict())
sys.exit(0 if (df.status == "ok").all() else 1)
