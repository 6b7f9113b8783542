"""Chapter 10's 3xTF32 call on a Hopper GPU, taken apart (book.studies.tf32_lab.tf32x3_parts): its
launches -- the split (finding each row's exponent), the check for rows to scale, the product
kernel (step 3's; step 4's producer warpgroup, without and with two partial sums taking turns;
step 5's, A split in registers) --
each timed alone beside the whole call, cuBLAS SGEMM and cuBLAS TF32, interleaved in rounds,
every product checked first. Saves
results/<gpu>/10_tf32x3_parts.csv (unless BOOK_SAVE_RESULTS=0).

    python benchmarks/tf32x3_parts.py            # on a Hopper GPU host
"""
import sys

import pandas as pd

from book import BACKEND
from book.harness import results
from book.studies.tf32_lab import PARTS_FILE, tf32x3_parts

if BACKEND != "gpu":
    sys.exit("this benchmark needs a Hopper GPU")
pd.set_option("display.width", 200)
df = results.keep(tf32x3_parts(), PARTS_FILE)
print(df.drop(columns=["device", "date"]).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
calls = df[df.part.str.startswith("sgemm")]  # every product the same bits, every call accurate
sys.exit(0 if df.same_bits.dropna().astype(bool).all() and (calls.rel_error < 1e-5).all() else 1)
