"""The SM clock, board power and the reason for any clock below its maximum while each GEMM of
chapter 10 runs in a loop (book.studies.tf32_lab.tf32x3_power): cuBLAS SGEMM, cuBLAS TF32, the
3xTF32 product alone and the whole sgemm(precision='tf32x3') call, at 4096^3 and 8192^3,
interleaved in two rounds, each checked first against float64. Saves
results/<gpu>/10_tf32x3_power.csv (unless BOOK_SAVE_RESULTS=0).

    python benchmarks/tf32x3_power.py            # on a Hopper GPU host with nvidia-smi
"""
import sys

import pandas as pd

from book import BACKEND
from book.harness import results
from book.studies.tf32_lab import POWER_FILE, tf32x3_power
from book.studies.tf32_report import power_table

if BACKEND != "gpu":
    sys.exit("this benchmark needs a Hopper GPU")
pd.set_option("display.width", 200)
df = results.keep(tf32x3_power(), POWER_FILE)
print(power_table({df.device.iloc[0]: df}).to_string())
fp32 = df[df.kernel != "cublas_tf32"]  # every float32-accurate call checked
sys.exit(0 if (fp32.rel_error < 1e-5).all() else 1)
