"""precision='ozaki' as a user's loop sees it, beside the GPU's clock (book.studies.ozaki_calls):
the accuracy guard's cost on inputs that need nothing (GPU time with and without it, and the share
of elements it took another way), the passes with and without it, then for each shape:
  * gpu ms: the call's time on the GPU alone (CUDA events around repeats);
  * loop ms: a loop of back-to-back calls, host included, one synchronize every 50, per call;
  * host us: wall time to issue 20 calls without waiting for the GPU, per call;
for precision='ozaki', the scaling alone (no replay), precision='fp32' and cuBLAS SGEMM, and the
ratios x cuBLAS. ``--sustained S``: loops of S seconds at 4096^3 and 8192^3 with the SM clock and
power. ``--mma``: the mma.sync product kernel too (compute capability 8.x's), GPU time only.

    python benchmarks/ozaki_loop.py [--rounds 3] [--sustained 3] [--guard] [--mma]
"""
import argparse

import pandas as pd

from book import BACKEND

if __name__ == "__main__":
    if BACKEND != "gpu":
        raise SystemExit("this benchmark needs a GPU")
    import cupy as cp

    from book.studies import ozaki_calls as oc
    from book.studies.ozaki_lab import passes
    parser = argparse.ArgumentParser()
    parser.add_argument("--sustained", type=float, default=0.0)
    parser.add_argument("--rounds", type=int, default=oc.ROUNDS)
    parser.add_argument("--guard", action="store_true", help="only the guard's cost")
    parser.add_argument("--mma", action="store_true", help="the mma.sync products too")
    args = parser.parse_args()
    pd.set_option("display.width", 250)
    print(cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    print(f"\nThe accuracy guard's cost, GPU time (medians of {args.rounds}):")
    print(oc.guard_cost(rounds=args.rounds).round(3).to_string(index=False))
    both = pd.concat([passes([(n,) * 3 for n in (2048, 4096, 8192)], guard=g) for g in (False, True)])
    print("\nThe passes with and without the guard (ms, GPU time):")
    print(both.pivot_table(index=["M", "pass"], columns="guard", values="time_ms", sort=False).round(3))
    if args.guard:
        raise SystemExit
    print(oc.loop(rounds=args.rounds, products=args.mma).round(4).to_string(index=False))
    if args.sustained:
        print(f"\nSustained loops of {args.sustained:g} s (medians of two each):")
        print(oc.sustained(args.sustained).round(3).to_string(index=False))
