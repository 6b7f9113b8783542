"""Run every registered kernel and every plan of ``book.sgemm`` under compute-sanitizer
(memcheck and racecheck) on a GPU host, or under the CPU emulator's check mode anywhere.

    python -m book.profile.sanitize                  # all kernels and plans, both tools
    python -m book.profile.sanitize tiled16 rowA     # only these kernels
    python -m book.profile.sanitize --cpu            # the emulator: its memory checks plus BOOK_EMU_CHECK=1

Each tool runs once over one child process that launches every kernel at odd and non-square
sizes (plus the shared-memory microbenchmark), printing a marker before each launch, so every
sanitizer report is attributed to the launch it follows. Prints a table of errors per kernel
and tool; exits 1 if any kernel has an error.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from . import find

SIZES = [(65, 64, 63), (33, 100, 17), (100, 37, 129), (260, 516, 70), (130, 70, 33), (130, 269, 37)]
# (260 x 516 has inner blocks; the last two have inner blocks with B's rows on 8 and on 4 bytes,
# book.sgemm's ROW_ALIGN builds)
TOOLS = ("memcheck", "racecheck")
MARK = "@@launch "
ERROR_LINE = r"=+ (Invalid |Error|Race |Uninitialized|Program hit|Barrier error|Out-of-range)"


def _all_ids(kernels) -> list[str]:
    """The ids of these registry kernels and of book.sgemm's plans that this device can run."""
    from ..blas import sanitizer_plans
    from ..registry import usable
    return [s.id for s in usable(kernels)] + [p.id for p in sanitizer_plans() if not p.why_not_here()]


def fitted(spec, M: int, N: int, K: int) -> tuple[int, int, int]:
    """(M, N, K), or the nearest shape that ``spec`` computes where it is built for few rows,
    columns or values of k (book.sgemm's skinny plans): that dimension cut to 7, 3 or 1."""
    covers = getattr(spec, "covers", None)
    if covers is None:
        return M, N, K
    layout = getattr(spec, "layout", "nn")

    def why(m, n, k):
        return covers(m, n, k, m if layout[0] == "t" else k, k if layout[1] == "t" else n, n)
    for shape in [(M, N, K)] + [tuple(v if d == i else x for d, x in enumerate((M, N, K)))
                                for i in range(3) for v in (7, 3, 1)]:
        if not why(*shape):
            return shape
    return M, N, K  # (none: the launch names why)


def _target(ids: list[str]) -> None:
    import numpy as np

    from ..harness.check import random_inputs
    from ..harness.measure import padded
    from ..launch.runtime import load_kernel, synchronize, to_device, xp
    for kernel_id in ids:
        spec = find(kernel_id)
        for M, N, K in SIZES:
            M, N, K = fitted(spec, M, N, K)
            print(f"{MARK}{kernel_id} {M}x{N}x{K}", flush=True)
            a, b = random_inputs(M, N, K, seed=0)
            for align in (1, 32) if spec.leading_dims else (1,):  # rows padded to 128 bytes too
                C = padded(xp.full((M, N), np.nan, dtype=np.float32), align)
                spec.launch(padded(to_device(a), align), padded(to_device(b), align), C, M, N, K)
                synchronize()
    print(f"{MARK}smem_stride strides 1..33", flush=True)
    kernel, out = load_kernel("05_bank_conflicts.cu", "smem_stride"), xp.zeros(4, np.float32)
    for s in range(1, 34):
        kernel((4,), (256,), (out, np.int32(s), np.int32(64)))
    synchronize()
    print(f"{MARK}end", flush=True)


def run(ids: list[str], tools=TOOLS) -> dict[tuple[str, str], int]:
    """{(launch, tool): number of sanitizer errors reported after that launch}."""
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    counts = {}
    for tool in tools:
        cmd = [sanitizer, "--tool", tool, "--print-limit", "20", sys.executable, "-m",
               "book.profile.sanitize", "--target", *ids]
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              env=dict(os.environ, BOOK_BACKEND="gpu"))
        current = "startup"
        for line in proc.stdout.splitlines():
            if line.startswith(MARK):
                current = line[len(MARK):].split()[0]
                counts.setdefault((current, tool), 0)
            elif current != "end" and re.match(ERROR_LINE, line):
                counts[(current, tool)] = counts.get((current, tool), 0) + 1
                print(f"[{tool}] {current}: {line}")
        summary = re.findall(r"(?:ERROR|RACECHECK) SUMMARY: (\d+)", proc.stdout)
        print(f"{tool}: exit {proc.returncode}, ERROR SUMMARY {summary or 'missing'}", flush=True)
        if proc.returncode != 0 or not summary:
            print(proc.stdout[-3000:], proc.stderr[-3000:])
            counts[("(run)", tool)] = counts.get(("(run)", tool), 0) + 1
    return counts


CPU_SIZES = [(65, 64, 63), (33, 100, 17)]
"""Odd and non-square sizes small enough for the emulator's check mode."""


def cpu_check(ids: list[str], sizes=CPU_SIZES) -> dict[str, str]:
    """{kernel id: the first error} for the kernels that fail on the emulator in check mode
    (shared-memory races, reads of unwritten shared memory, out-of-bounds indices of __shared__
    arrays and of array arguments) or give a wrong result; empty when every kernel is clean."""
    import numpy as np

    from ..harness.check import random_inputs, relative_error, run_matmul, tolerance_of
    from ..launch.runtime import BACKEND, LaunchError
    if BACKEND != "cpu" or os.environ.get("BOOK_EMU_CHECK") != "1":
        raise RuntimeError("run with BOOK_BACKEND=cpu BOOK_EMU_CHECK=1 (python -m book.profile.sanitize --cpu)")
    errors = {}
    for kernel_id in ids:
        for M, N, K in sizes:
            M, N, K = fitted(find(kernel_id), M, N, K)
            a, b = random_inputs(M, N, K, seed=0)
            try:
                err = relative_error(run_matmul(find(kernel_id), a, b), a.astype(np.float64) @ b)
            except LaunchError as exc:
                errors[kernel_id] = str(exc)
                break
            if not err < tolerance_of(find(kernel_id)):
                errors[kernel_id] = f"{M}x{N}x{K}: relative error {err:.2e}"
                break
    return errors


def main(argv: list[str]) -> int:
    if argv[:1] == ["--target"]:
        _target(argv[1:])
        return 0
    if argv[:1] == ["--cpu"]:
        if os.environ.get("BOOK_EMU_CHECK") != "1" or os.environ.get("BOOK_BACKEND") != "cpu":
            env = dict(os.environ, BOOK_BACKEND="cpu", BOOK_EMU_CHECK="1")
            return subprocess.run([sys.executable, "-m", "book.profile.sanitize", *argv], env=env).returncode
        from ..registry import correct_kernels
        ids = argv[1:] or _all_ids(correct_kernels())
        errors = cpu_check(ids)
        for kernel_id in ids:
            print(f"{kernel_id:<52} {errors.get(kernel_id, 'clean')}")
        print(f"\nemulator check mode, sizes {CPU_SIZES}: "
              f"{'no errors' if not errors else f'{len(errors)} kernels with errors'}")
        return 1 if errors else 0
    from ..registry import KERNELS
    ids = argv or _all_ids(KERNELS.values())
    counts = run(ids)
    names = sorted({k for k, _ in counts if k not in ("end",)}, key=lambda k: (k not in ids, k))
    print(f"\n{'kernel':<28}" + "".join(f"{t:>11}" for t in TOOLS))
    for name in names:
        print(f"{name:<28}" + "".join(f"{counts.get((name, t), '-'):>11}" for t in TOOLS))
    bad = sum(v for (name, _), v in counts.items() if name != "end")
    print(f"\nsizes {SIZES}; {'no errors' if not bad else f'{bad} errors'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
