"""Check, then time: the harness every chapter uses (introduced in chapter 0).

:func:`sweep` runs each kernel on fresh random inputs with its output poisoned with NaN,
compares it with a float64 reference (relative Frobenius error, NaN fails), and only then
times it: CUDA events after a warm-up, queued behind a busy kernel so that they time the GPU's
work and not the host's launch path (:func:`held_event_seconds`), on a GPU; the host clock on the
CPU emulator. A kernel that fails its check is reported as failed and never timed.
"""
from __future__ import annotations

import os
import time
from datetime import date

import numpy as np
import pandas as pd

from .check import TOLERANCE, device_inputs, tolerance_of
from .device import device_report
from .progress import bar
from ..launch.runtime import BACKEND, build_all, cupy, synchronize, xp

POINT_BUDGET_S = 20.0
"""Seconds one size of a sweep may take (all its kernels, checked and timed) before the sweep
stops growing n. On an H100 the largest point of the book takes a few seconds."""

TARGET_SECONDS = 0.05
"""About this much GPU time per measured point: a kernel of 0.25 ms gets the maximum of 200
repeats, one of 1 ms 50, one of 17 ms (or longer) the minimum of 3, whose spread is already well
under a percent. Three times as long (0.15 s) cost the whole book about 50 s on an H100 and moved
no median by more than the spread between repeated runs (benchmarks/timing_target.py: chapter 8's
steps, cuBLAS and two simple kernels at n = 256 ... 4096, four interleaved rounds)."""


def event_seconds(fn) -> float:
    """Seconds of one ``fn()`` on the GPU, between two CUDA events recorded around it on an idle
    GPU: they include the host's time to issue the call (chapter 2's pitfalls show how much)."""
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) / 1e3


_hold = None


def held_event_seconds(fn, repeats: int = 1, hold_s: float | None = None) -> np.ndarray:
    """Seconds of ``fn()`` on the GPU, ``repeats`` times, each between two CUDA events queued
    behind a kernel that keeps the GPU busy (``hold_s``, default: three times the host's time to
    issue ``fn``, at least 20 µs). The host issues the start event and ``fn``'s launches while
    the GPU is still held, so the events time the GPU's work alone: on an idle GPU they would
    also time the host's launch path (tens of µs of Python per call), which at n = 128 is most
    of what they measure."""
    global _hold
    if _hold is None:
        from ..launch.cuda_source import resolve
        _hold = cupy.RawModule(code=resolve("00_hold.cu").read_text()).get_function("hold_stream")
    if hold_s is None:
        synchronize()
        t0 = time.perf_counter()
        fn()
        issue = time.perf_counter() - t0
        synchronize()
        hold_s = max(3 * issue, 20e-6)
    hold = (np.uint64(hold_s * 1e9),)
    times = np.empty(repeats)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for i in range(repeats):
        _hold((1,), (1,), hold)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times[i] = cupy.cuda.get_elapsed_time(start, stop) / 1e3
    return times


STEADY = 0.05
RETRIES = 2
"""A measurement whose repeats' quartiles lie more than STEADY apart (third over first, less 1)
was disturbed while it ran (a clock change, another process on the GPU): :func:`time_launch`
times it again, up to RETRIES times, and keeps the steadiest. On the H100, chapter 6's register
tile and chapter 8's warp tiles had come out at n = 4096 with quartiles 39% and 23% apart, their
medians 11% below another run of the same kernel and 17% below its H200 figure."""


def quartile_spread(times) -> float:
    """How far apart the quartiles of ``times`` lie: third over first, less 1."""
    q1, q3 = np.percentile(times, [25, 75])
    return q3 / q1 - 1


def time_launch(fn, target_s: float = TARGET_SECONDS, max_repeat: int = 200,
                min_repeat: int = 3, warmed: bool = False) -> dict:
    """Median and quartiles (ms) of ``fn()``'s device time, after warm-up.

    On a GPU: CUDA events queued behind a short busy kernel (:func:`held_event_seconds`), so
    they time the GPU's work and not the host's launch path; the repeat count is chosen so
    that the measurement takes about ``target_s`` (between ``min_repeat`` and ``max_repeat``
    runs, the first of them the timed run that sizes the count). A warm-up run comes first and
    is not counted (module load, first-launch costs), unless ``warmed``: the caller has just run
    ``fn`` (``sweep`` checks each kernel before it times it). A disturbed measurement is taken
    again (:data:`STEADY`). On the CPU emulator: the host clock, 3 runs.
    """
    if not warmed:
        fn()  # warm-up: module load, first-launch costs
    synchronize()
    if BACKEND == "gpu":
        tries = []
        for _ in range(RETRIES + 1):  # (again while the run's repeats spread: a disturbed run)
            once = held_event_seconds(fn)[0]
            n = int(np.clip(target_s / max(once, 1e-6), min_repeat, max_repeat))
            times = np.array([once * 1e3])
            if n > 1:
                times = np.concatenate([times, held_event_seconds(fn, n - 1) * 1e3])
            tries.append(times)
            if quartile_spread(times) <= STEADY:
                break
        times = min(tries, key=quartile_spread)
    else:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        times = np.array(times)
    q1, med, q3 = np.percentile(times, [25, 50, 75])
    return {"time_ms": med, "time_q1_ms": q1, "time_q3_ms": q3, "repeats": len(times)}


def relative_error_xp(out, ref) -> float:
    """||out - ref|| / ||ref|| computed where the arrays live; inf when out has NaN or inf."""
    if not bool(xp.isfinite(out).all()):
        return float("inf")
    diff = out.astype(xp.float64) - ref
    return float(xp.linalg.norm(diff) / xp.linalg.norm(ref))


def fits_in_memory(M: int, N: int, K: int) -> tuple[bool, str]:
    """Float32 A, B, C plus float64 copies for the reference, against free GPU memory."""
    need = 12 * (M * K + K * N + M * N)
    if BACKEND != "gpu":
        return True, ""
    free = cupy.cuda.runtime.memGetInfo()[0]
    return need < 0.8 * free, f"needs {need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"


class Baseline:
    """The library matmul as a pseudo-kernel: cuBLAS SGEMM on a GPU, NumPy's BLAS on the CPU."""

    id = "cublas"
    label = "cuBLAS SGEMM" if BACKEND == "gpu" else "NumPy BLAS (CPU)"
    chapter = 0  # the library: its own colour in every figure

    @staticmethod
    def launch(A, B, C, M, N, K) -> None:
        xp.matmul(A, B, out=C)


def build_ahead(specs) -> int:
    """Compile the kernels of ``specs`` that this device runs side by side, before the first
    launch (``runtime.build_all``; a spec without ``builds`` is skipped); how many were built."""
    return build_all(b for s in specs if not getattr(s, "why_not_here", lambda: None)()
                     for b in getattr(s, "builds", lambda: ())())


def sweep(specs, sizes, *, baseline: bool = True, seed: int = 0, tolerance: float = TOLERANCE,
          progress: bool = True, ld_align: int = 1, target_s: float = TARGET_SECONDS,
          max_repeat: int = 200, min_repeat: int = 3) -> pd.DataFrame:
    """Check then time every spec at every size; one row per (kernel, size).

    ``sizes`` holds n (for M = N = K = n) or (M, N, K) tuples. Inputs are fresh uniform random
    numbers in [-1, 1) for every size; the reference is A @ B in float64 on the same device.

    ``ld_align`` > 1 (chapter 7; kernels with ``leading_dims`` only, no baseline): every row of
    A, B and C starts at a multiple of ``ld_align`` floats. The padding between rows holds NaN,
    so a kernel that reads it fails the check, and C's padding must still be NaN afterwards.

    A kernel this device cannot run (``spec.why_not_here()``: compute capability, shared memory)
    gets rows with status 'skipped (...)'; so does every size that does not fit in free memory.
    Sizes grow no further once one size took longer than POINT_BUDGET_S seconds (or the
    environment's BOOK_POINT_BUDGET_S): larger ones are skipped, with a printed line, so that a
    slow GPU finishes the chapter.

    A progress bar counts the (kernel, size) points where bars show (``harness.progress``: a
    terminal or Jupyter, never nbval); ``progress=False``: none.
    """
    if ld_align > 1 and (baseline or not all(s.leading_dims for s in specs)):
        raise ValueError("ld_align > 1 needs kernels with leading_dims and baseline=False")
    specs = list(specs) + ([Baseline()] if baseline else [])
    build_ahead(specs)
    device = device_report()["name"]
    budget = float(os.environ.get("BOOK_POINT_BUDGET_S", POINT_BUDGET_S))
    over_budget = None  # (M * N * K, text) of the first size that took longer than the budget
    rows, sizes = [], list(sizes)
    with bar(total=len(sizes) * len(specs), desc="sweep", unit="point", show=progress) as points:
        for size in sizes:
            M, N, K = (size, size, size) if np.isscalar(size) else size
            base = {"M": M, "N": N, "K": K, "device": device, "date": date.today().isoformat()}
            ok, why = fits_in_memory(M, N, K)
            if ok and over_budget and M * N * K > over_budget[0]:
                ok, why = False, over_budget[1]
            if not ok:
                points.write(f"skipping {M}x{N}x{K}: {why}")
                rows += [{**base, "kernel": s.id, "label": s.label, "chapter": s.chapter,
                          "status": f"skipped ({why})"}
                         for s in specs]
                points.update(len(specs))
                continue
            started = time.perf_counter()
            A, B = (xp.asarray(x) for x in device_inputs(M, N, K, seed=seed + M * 7 + N * 13 + K))
            ref = A.astype(xp.float64) @ B.astype(xp.float64)
            A, B = padded(A, ld_align), padded(B, ld_align)
            C = xp.empty((M, padded_length(N, ld_align)), dtype=xp.float32)
            base.update(lda=A.shape[1], ldb=B.shape[1], ldc=C.shape[1])
            for spec in specs:
                points.set_postfix_str(f"{M}x{N}x{K} {spec.id}", refresh=False)
                row = {**base, "kernel": spec.id, "label": spec.label, "chapter": spec.chapter}
                cannot = getattr(spec, "why_not_here", lambda: None)()
                if cannot:
                    rows.append({**row, "status": f"skipped ({cannot})"})
                    points.update()
                    continue
                C.fill(xp.nan)
                spec.launch(A, B, C, M, N, K)
                row["rel_error"] = relative_error_xp(C[:, :N], ref)
                outside = not bool(xp.isnan(C[:, N:]).all())
                if outside or not row["rel_error"] < tolerance_of(spec, tolerance):
                    row["status"] = "FAILED check"
                    why = ("wrote into C's row padding" if outside
                           else f"relative error {row['rel_error']:.2e}")
                    points.write(f"{getattr(spec, 'label', spec.id)} at {M}x{N}x{K}: FAILED, {why}")
                else:
                    row["status"] = "ok"
                    row.update(time_launch(lambda: spec.launch(A, B, C, M, N, K), target_s,
                                           max_repeat, min_repeat,
                                           warmed=True))  # the check was the warm-up
                    row["gflops"] = 2.0 * M * N * K / (row["time_ms"] * 1e6)
                rows.append(row)
                points.update()
            del A, B, C, ref
            took = time.perf_counter() - started
            if took > budget and not over_budget:
                over_budget = (M * N * K, f"{M}x{N}x{K} took {took:.0f} s, over the {budget:.0f}"
                                          f" s budget per size (BOOK_POINT_BUDGET_S)")
    df = pd.DataFrame(rows)
    return add_cublas_share(df) if baseline else df


def padded_length(n: int, align: int) -> int:
    """n rounded up to a multiple of ``align`` (a leading dimension, in elements)."""
    return -(-n // align) * align


def padded(a, align: int):
    """``a`` (rows x cols) copied into rows of ``padded_length(cols, align)`` elements; the padding
    holds NaN. With ``align`` = 1, ``a`` itself (chapter 7)."""
    if align <= 1:
        return a
    out = xp.full((a.shape[0], padded_length(a.shape[1], align)), xp.nan, dtype=a.dtype)
    out[:, :a.shape[1]] = a
    return out


def add_cublas_share(df: pd.DataFrame) -> pd.DataFrame:
    """Add 'pct_of_cublas': each row's GFLOP/s over the baseline's at the same (M, N, K)."""
    if "gflops" not in df:
        return df
    base = df[df.kernel == Baseline.id].set_index(["M", "N", "K"])["gflops"]
    key = pd.MultiIndex.from_frame(df[["M", "N", "K"]])
    df = df.copy()
    df["pct_of_cublas"] = 100 * df["gflops"].to_numpy() / base.reindex(key).to_numpy()
    return df


def check_kernels(specs, sizes, seed: int = 1, tolerance: float = TOLERANCE) -> pd.DataFrame:
    """'ok' or 'FAILED' for every kernel (rows, by label) at every (M, N, K) (columns); nothing
    timed.

    The table holds no error values, so it reads the same on every backend and GPU. A progress
    bar counts the (kernel, size) points where bars show (``harness.progress``).
    """
    from .check import random_inputs, relative_error, run_matmul
    labels = [s.label for s in specs]
    names = [s.label if labels.count(s.label) == 1 else s.id for s in specs]  # rows by label
    build_ahead(specs)
    table, sizes = {}, list(sizes)
    with bar(total=len(sizes) * len(specs), desc="check", unit="point") as points:
        for M, N, K in sizes:
            a, b = random_inputs(M, N, K, seed=seed + M + N + K)
            ref = a.astype(np.float64) @ b.astype(np.float64)
            column = table[f"{M}x{N}x{K}"] = {}
            for name, s in zip(names, specs):
                column[name] = ("skipped" if s.why_not_here() else
                                "ok" if relative_error(run_matmul(s, a, b), ref)
                                < tolerance_of(s, tolerance) else "FAILED")
                points.update()
    return pd.DataFrame(table).rename_axis("kernel")


def timing_pitfalls(spec, n: int) -> pd.DataFrame:
    """Time one n^3 matmul of the registered kernel ``spec`` in up to six ways; only the events
    queued behind a busy kernel (the last two) measure the kernel alone.

    The first call uses a define no cache has seen, so it includes compiling the kernel.
    """
    from ..launch.runtime import load_kernel
    A, B = (xp.asarray(x) for x in device_inputs(n, n, n, seed=0))
    C = xp.full((n, n), xp.nan, dtype=xp.float32)
    args = (A, B, C, np.int32(n), np.int32(n), np.int32(n))
    grid = spec.grid(n, n)
    rows = []

    t0 = time.perf_counter()
    fresh = load_kernel(spec.source, spec.name, defines={"FRESH_BUILD": time.time_ns()})
    fresh(grid, spec.block, args)
    synchronize()
    rows.append(("first call: compile + launch + wait, host clock", time.perf_counter() - t0))

    kernel = spec.kernel()
    launch = lambda: kernel(grid, spec.block, args)  # noqa: E731
    launch()
    synchronize()
    t0 = time.perf_counter()
    launch()
    rows.append(("host clock around the launch, no synchronize", time.perf_counter() - t0))
    synchronize()
    t0 = time.perf_counter()
    launch()
    synchronize()
    rows.append(("host clock around launch + synchronize", time.perf_counter() - t0))
    if BACKEND == "gpu":
        rows.append(("CUDA events, one run on an idle GPU", event_seconds(launch)))
        rows.append(("CUDA events, one run queued behind a busy kernel", held_event_seconds(launch)[0]))
    stats = time_launch(launch)
    rows.append((f"median of {stats['repeats']} runs after warm-up "
                 f"({'CUDA events' if BACKEND == 'gpu' else 'host clock'})", stats["time_ms"] / 1e3))
    return pd.DataFrame(rows, columns=["method", "seconds"]).assign(
        ms=lambda d: (d.seconds * 1e3).round(4)).drop(columns="seconds")
