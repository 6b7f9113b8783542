"""precision='auto' in a loop of calls (book.studies.auto_calls): per shape -- chapter 11's model
layers, the squares 2048^3 to 8192^3, tiny, skinny, odd and transposed shapes, and six held-out
shapes nobody tuned -- the method the first calls chose, x cuBLAS SGEMM and x precision='fp32'
(host included), the regret against the fastest method measured in the same rounds, and the
largest elementwise error over cuBLAS's. Saves results/<gpu>/12_auto.csv with --save.

    python benchmarks/auto_loop.py [--rounds 2] [--save]
    python benchmarks/auto_loop.py --host   # the host time it adds to its method's call
"""
import argparse

import numpy as np
import pandas as pd

from book import BACKEND

if __name__ == "__main__":
    if BACKEND != "gpu":
        raise SystemExit("this benchmark needs a GPU")
    from book.studies import auto_calls as ac
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--save", action="store_true")
    parser.add_argument("--host", action="store_true", help="only the host time auto adds")
    args = parser.parse_args()
    pd.set_option("display.width", 250)
    if args.host:
        print(ac.host_added().round(2).to_string(index=False))
        raise SystemExit
    df = ac.run(rounds=args.rounds)
    if args.save:
        from book.harness.results import keep
        keep(df, ac.FILE)
    s = ac.summary(df)
    print(s.round(3).to_string(index=False))
    goal = s[s.group.isin(["model layer", "square"])]
    print(f"\ngeomean x cuBLAS (model layers and squares): {np.exp(np.log(goal.x_cublas).mean()):.3f}")
    print(f"lowest x fp32: {s.x_fp32.min():.3f} ({s['shape'][s.x_fp32.idxmin()]})")
    held = s[s.group == "held out"]
    print(f"held-out regret: geomean {np.exp(np.log1p(held.regret).mean()) - 1:.3%}, "
          f"largest {held.regret.max():.3%}")
    print(f"largest error over cuBLAS's (elementwise): {s.error_vs_sgemm.max():.3f}")
    print(f"host time auto adds to its method's call: median {s.host_us_added.median():.2f} us, "
          f"largest {s.host_us_added.max():.2f} us")
