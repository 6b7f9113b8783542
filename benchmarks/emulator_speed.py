"""How fast the CPU emulator runs the book's kernels (issue: launch API). Prints a table.

    python benchmarks/emulator_speed.py            # BOOK_BACKEND=cpu is implied

'first' includes compiling (or loading the cached library); 'launch' is the median of 5 runs in
the normal mode, 'check' in the check mode (BOOK_EMU_CHECK=1); both give the same C.
"""
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("BOOK_BACKEND", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from book import BACKEND  # noqa: E402
from book.harness.check import TOLERANCE, random_inputs, relative_error, run_matmul  # noqa: E402
from book.registry import KERNELS  # noqa: E402

CASES = [("tiled16", 64), ("naive16", 64), ("tiled32", 64), ("naive32", 64),
         ("tiled16", 128), ("tiled16", 256), ("naive16", 256)]


def launch_seconds(spec, a, b, check: bool) -> tuple[float, float, np.ndarray]:
    """(first launch incl. compiling or loading, median of 5 launches, C) in one mode."""
    os.environ["BOOK_EMU_CHECK"] = "1" if check else "0"
    t0 = time.perf_counter()
    c = run_matmul(spec, a, b)
    first = time.perf_counter() - t0
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        run_matmul(spec, a, b)
        runs.append(time.perf_counter() - t0)
    return first, float(np.median(runs)), c


def main() -> None:
    print(f"backend: {BACKEND}, {os.cpu_count()} CPU cores; 'check': BOOK_EMU_CHECK=1 (shared-memory "
          f"races, unwritten reads, __shared__ bounds)")
    print(f"{'kernel':<10}{'block':>8}{'n':>6}{'first s':>10}{'launch s':>10}{'check s':>10}"
          f"{'x':>6}{'rel err':>10}  ok")
    for kernel_id, n in CASES:
        spec = KERNELS[kernel_id]
        a, b = random_inputs(n, n, n, seed=n)
        first, normal, c = launch_seconds(spec, a, b, check=False)
        _, checked, c2 = launch_seconds(spec, a, b, check=True)
        err = relative_error(c, a.astype(np.float64) @ b)
        ok = err < TOLERANCE and np.array_equal(c, c2)
        block = f"{spec.block[0]}x{spec.block[1]}"
        print(f"{kernel_id:<10}{block:>8}{n:>6}{first:>10.3f}{normal:>10.3f}{checked:>10.3f}"
              f"{checked / normal:>6.1f}{err:>10.1e}  {'yes' if ok else 'NO'}")


if __name__ == "__main__":
    main()
