"""book.sgemm on shapes whose rows are not a multiple of 4 floats (issue #50's three, and seven
drawn, seeded, never tuned on), and on their aligned neighbours (N and K rounded up to 4), each
beside cuBLAS: sgemm_lab.heldout's measurement (checked, first call, 3 interleaved rounds).

    python benchmarks/sgemm_unaligned.py [seed]     # on a GPU host; prints one table
"""
import math
import sys
import time

import numpy as np
import pandas as pd

from book.studies import sgemm_lab
rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 2027)
odd = [(2049, 2047, 2051), (3132, 782, 302), (786, 5369, 74)]
while len(odd) < 10:
    M, N, K = (int(round(2 ** x)) for x in rng.uniform(math.log2(256), math.log2(8192), 3))
    if (N % 4 or K % 4) and 12 * (M * K + K * N + M * N) < 4 << 30:
        odd.append((M, N, K))
up = lambda v: 4 * -(-v // 4)
pairs = [(s, (s[0], up(s[1]), up(s[2]))) for s in odd]
t = time.time()
med, _ = sgemm_lab.heldout([s for p in pairs for s in p], rounds=3)
b = med[med.kernel == "book_sgemm"].set_index(["M", "N", "K"])
rows = [{"unaligned": "x".join(map(str, u)), "% cuBLAS": b.loc[u].pct_of_cublas, "plan": b.loc[u].plan,
         "aligned": "x".join(map(str, a)), "% cuBLAS (aligned)": b.loc[a].pct_of_cublas, "plan (aligned)": b.loc[a].plan}
        for u, a in pairs]
pd.set_option("display.width", 250)
df = pd.DataFrame(rows)
print(df.round(1).to_string(index=False))
g = lambda x: 100 * float(np.exp(np.log(np.asarray(x) / 100).mean()))
print("geomean unaligned %.1f, aligned %.1f; seconds %.0f" % (g(df["% cuBLAS"]), g(df["% cuBLAS (aligned)"]), time.time() - t))
