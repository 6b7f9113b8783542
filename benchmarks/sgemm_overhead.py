"""Chapter 9 on a GPU: what one call of book.sgemm costs on the host, beside the kernel it runs.

cupyx's benchmark records a CUDA event, calls the function, records another and waits: host
work done before the launch lands inside the GPU time too, since the GPU sits idle meanwhile. At
small sizes that is a visible share of a call. Per shape: cuBLAS (CuPy's matmul), book.sgemm and
the same plan launched directly (Plan.run), every result checked first; saved as
results/<gpu>/09_sgemm_overhead.csv (chapter 9 runs the same).

    python benchmarks/sgemm_overhead.py          # on a GPU host
"""
import sys

import pandas as pd

from book import BACKEND
from book.harness import results
from book.studies import sgemm_lab

if BACKEND != "gpu":
    sys.exit("this benchmark needs a GPU")
pd.set_option("display.width", 200)
df = results.keep(sgemm_lab.call_overhead(), sgemm_lab.OVERHEAD_FILE)
print(df.round(2).to_string())
sys.exit(0 if (df.status == "ok").all() else 1)
