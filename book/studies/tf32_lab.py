"""Chapter 10's measurements: the tensor cores' TF32 ceilings (:func:`peaks`), cuBLAS TF32 as a
pseudo-kernel, the chapter's check-then-time rounds (:func:`measure`) and error against K
(:func:`error_vs_k`), and ``book.sgemm(precision='tf32x3')``'s runs -- its error at every
magnitude, its speed on chapter 9's suite and on a held-out set, the call taken apart, and the
clock it runs at -- with the command line that records them::

    python -m book.studies.tf32_lab --magnitudes --suite --heldout --parts --power

The 3xTF32 call itself is the library's (``book.blas.tf32x3``; the wgmma kernel's launches live
in ``book.launch.wgmma``); the tables and figure of these runs are in ``tf32_report``. The
long runs show progress bars where bars show (``book.harness.progress``).
"""
from __future__ import annotations

import numpy as np

from ..harness.check import random_inputs
from ..harness.progress import bar
from ..launch.runtime import BACKEND, cupy, load_kernel, to_device, to_host, xp
from ..launch.wgmma import OPTIONS
from ..registry import KERNELS, TF32_TOLERANCE, chapter_kernels, device_cc, usable


def peaks(iters: int | None = None) -> "pd.DataFrame":
    """The TF32 ceiling of each tensor-core instruction this GPU runs, in TFLOP/s: mma.sync
    (10_tf32.cu's mma_peak) and, on Hopper, wgmma (10_wgmma.cu's wgmma_peak), each on operands
    that never leave the SM; and what 3xTF32 could reach at best on each (a third of it)."""
    import pandas as pd

    from ..harness.device import device_report
    from ..harness.measure import time_launch
    gpu = BACKEND == "gpu"
    sms = device_report()["sms"] if gpu else 2
    iters = iters or (2048 if gpu else 2)
    out = xp.zeros(sms * 4 * 256, dtype=xp.float32)
    rows = []
    kinds = []
    if device_cc() >= (8, 0):
        kinds.append(("mma.sync m16n8k8", "10_tf32.cu", "mma_peak", (), sms * 4, 0,
                      16 * 8 * 8 * 16 * 8))  # per block: 8 warps x 16 chains of 16x8x8 per iteration
    if device_cc() == (9, 0):
        kinds.append(("wgmma m64n128k8", "10_wgmma.cu", "wgmma_peak", OPTIONS, sms, 2 * 65536 + 1024,
                      2 * 12 * 64 * 128 * 8))  # per block: 2 warpgroups x 12 wgmmas per iteration
    for name, source, entry, options, blocks, smem, macs in kinds:
        kernel = load_kernel(source, entry, options=options)
        if smem > kernel.max_dynamic_shared_size_bytes:
            kernel.max_dynamic_shared_size_bytes = smem
        t = time_launch(lambda: kernel(blocks, 256, (out, np.int32(iters)), shared_mem=smem))
        tflops = 2.0 * macs * iters * blocks / (t["time_ms"] * 1e9)
        rows.append({"instruction": name, "tflops": tflops, "tf32x3_ceiling_tflops": tflops / 3})
    df = pd.DataFrame(rows, columns=["instruction", "tflops", "tf32x3_ceiling_tflops"])
    df["device"] = device_report()["name"]
    df["date"] = pd.Timestamp.today().date().isoformat()
    return df


DEFAULT_MATH, TF32_MATH = 0, 3  # cublasMath_t: CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH


class CublasTF32:
    """cuBLAS with TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH) as a pseudo-kernel for
    :func:`book.harness.measure.sweep`: the speed TF32 can reach, at TF32's accuracy."""

    id, label, chapter, tolerance = "cublas_tf32", "cuBLAS TF32 (tensor cores)", 0, TF32_TOLERANCE

    @staticmethod
    def why_not_here() -> str | None:
        if BACKEND != "gpu":
            return "needs cuBLAS on a GPU"
        return None if device_cc() >= (8, 0) else "needs compute capability 8.0 (TF32)"

    @staticmethod
    def launch(A, B, C, M, N, K) -> None:
        cublas = cupy.cuda.cublas
        handle = cupy.cuda.device.get_cublas_handle()
        cublas.setMathMode(handle, TF32_MATH)
        try:
            xp.matmul(A, B, out=C)
        finally:
            cublas.setMathMode(handle, DEFAULT_MATH)


def measure(sizes, rounds: int = 3) -> "pd.DataFrame":
    """Chapter 10's kernels and cuBLAS TF32, checked then timed beside cuBLAS SGEMM at each n
    (M = N = K) in ``rounds`` rounds (every kernel in turn in each): the median GFLOP/s, the
    largest error, 'ok' only if every round passed its check, and GFLOP/s and % of SGEMM's."""
    import pandas as pd

    from ..harness.measure import sweep
    import contextlib
    import io
    specs = usable(chapter_kernels(10) + [CublasTF32()], quiet=True)
    runs = []
    for r in bar(range(rounds), desc="rounds", unit="round"):  # a failed check: printed once
        with contextlib.redirect_stdout(io.StringIO()) if r else contextlib.nullcontext():
            runs.append(sweep(specs, sizes, seed=0).assign(round=r))
    runs = pd.concat(runs)
    ok = runs.status == "ok"
    df = runs.groupby(["M", "N", "K", "kernel"], sort=False).agg(
        label=("label", "first"), chapter=("chapter", "first"), gflops=("gflops", "median"),
        rel_error=("rel_error", "max"), device=("device", "first"), date=("date", "first")).reset_index()
    status = runs.assign(ok=ok).groupby(["M", "N", "K", "kernel"], sort=False).apply(
        lambda g: "ok" if g.ok.all() else g.status[~g.ok].iloc[0], include_groups=False)
    df["status"] = status.to_numpy()
    df.loc[df.status != "ok", "gflops"] = float("nan")  # a failed check is never timed
    base = df[df.kernel == "cublas"].set_index(["M", "N", "K"]).gflops
    df["pct_of_cublas"] = 100 * df.gflops / base.reindex(
        pd.MultiIndex.from_frame(df[["M", "N", "K"]])).to_numpy()
    return df


def error_vs_k(Ks, n: int, kinds=("positive", "mixed")):
    """Chapter 7's error-against-K measurement (``book.models.accuracy.error_vs_k``: n x n x K,
    fresh inputs per K, the floor of float32 and cuBLAS SGEMM included) for chapter 7's plain and
    Kahan loops, cuBLAS TF32 and chapter 10's kernels."""
    from ..models.accuracy import error_vs_k as measure_errors
    specs = [KERNELS["naive16"], KERNELS["kahan_naive16"], CublasTF32()] + chapter_kernels(10)
    return measure_errors([s for s in specs if not s.why_not_here()], Ks, n, n, kinds=kinds,
                          fmad=(True,))


MAGNITUDES_FILE, TF32X3_SUITE_FILE, PARTS_FILE = "10_magnitudes", "10_tf32x3_suite", "10_tf32x3_parts"
MAGNITUDES_CMD, SUITE_CMD, PARTS_CMD = ("python -m book.studies.tf32_lab --magnitudes",
                                        "python -m book.studies.tf32_lab --suite",
                                        "python -m book.studies.tf32_lab --parts")
"""The commands that record them, on a GPU with wgmma."""
HELDOUT_FILE, HELDOUT_CMD = "10_tf32x3_heldout", "python -m book.studies.tf32_lab --heldout"
HELDOUT_SEED, HELDOUT_COUNT, HELDOUT_LOW = 20261128, 24, 128
"""precision='tf32x3' on shapes it was never tuned or judged on: 24 drawn as chapter 9's
held-out sets are (``sgemm_lab.heldout_shapes``), M, N and K each log-uniform from 128 (not 1: below
that a tensor core's tile is mostly padding) to 16384, from a seed of their own, fixed before
their first run."""
MAGNITUDE_FAMILIES = {
    "A and B x s": (1e-18, 1e-12, 1e-6, 1.0, 1e6, 1e12, 1e18),
    "A x s, B / s": (1e-30, 1e-20, 1e-10, 1e10, 1e20, 1e30),
    "rows of A, columns of B x 2^-60..2^60": (1.0,),
}
"""Chapter 10's input families: uniform [-1, 1) scaled as named, s the magnitude (C stays
inside float32's range in every one); the last scales each row of A and column of B by its own
power of two."""
SPREAD_FAMILY = "each element x 2^-s..2^s"
"""Chapter 12's family more: every element of A and B times its own power of two, from 2^-s to
2^s (s the magnitude), so that a row's elements span 2s binades: the Ozaki scheme's integers
keep p bits of a row's largest element, fewer of its small ones."""


def magnitude_inputs(family: str, s: float, M: int, N: int, K: int, seed: int = 0):
    """Host A and B of one family of :data:`MAGNITUDE_FAMILIES` at magnitude ``s``."""
    a, b = random_inputs(M, N, K, seed=seed)
    if family == "A and B x s":
        return (a * np.float32(s)).astype(np.float32), (b * np.float32(s)).astype(np.float32)
    if family == "A x s, B / s":
        return (a * np.float32(s)).astype(np.float32), (b / np.float32(s)).astype(np.float32)
    rng = np.random.default_rng(seed + 1)
    if family == SPREAD_FAMILY:
        e = int(s)
        return ((a * np.exp2(rng.integers(-e, e + 1, a.shape))).astype(np.float32),
                (b * np.exp2(rng.integers(-e, e + 1, b.shape))).astype(np.float32))
    return ((a * np.exp2(rng.integers(-60, 61, (M, 1)))).astype(np.float32),
            (b * np.exp2(rng.integers(-60, 61, (1, N)))).astype(np.float32))


def magnitudes(M: int = 2048, N: int = 2048, K: int = 4096,
               runs: dict | None = None, families: dict | None = None) -> "pd.DataFrame":
    """The relative error (against float64) of book.sgemm(precision='tf32x3'), chapter 10's
    3xTF32 kernel without the scaling, FFMA book.sgemm and cuBLAS SGEMM (``cublas``) on every
    family and magnitude of :data:`MAGNITUDE_FAMILIES` (or ``families``), one row each; ``runs``:
    {kernel: run(A, B) -> C} to compare instead (chapter 12's)."""
    import pandas as pd

    from .. import blas
    from ..harness.check import relative_error, run_matmul
    from ..registry import KERNELS
    from .sgemm_lab import BookSgemm
    runs = runs or {
        "tf32x3": lambda a, b: blas.sgemm(a, b, precision="tf32x3"),
        "tf32x3_unscaled": lambda a, b: to_device(run_matmul(KERNELS["tf32x3_wgmma"], to_host(a), to_host(b))),
        BookSgemm.id: lambda a, b: blas.sgemm(a, b),
        "cublas": lambda a, b: xp.matmul(a, b)}
    rows = []
    points = [(family, s) for family, scales in (families or MAGNITUDE_FAMILIES).items()
              for s in scales]
    for family, s in bar(points, desc="magnitudes", unit="input"):
        a, b = magnitude_inputs(family, s, M, N, K)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        A, B = to_device(a), to_device(b)
        for kernel, run in runs.items():
            rows.append({"family": family, "scale": s, "M": M, "N": N, "K": K,
                         "kernel": kernel, "rel_error": relative_error(to_host(run(A, B)), ref)})
    return pd.DataFrame(rows)


class Tf32x3Sgemm:
    """``book.sgemm(precision='tf32x3')`` as a pseudo-kernel for ``sweep``."""

    id, label, chapter = "tf32x3_sgemm", "book.sgemm, precision='tf32x3'", 10

    @staticmethod
    def why_not_here():
        return KERNELS["tf32x3_wgmma"].why_not_here()

    @staticmethod
    def launch(A, B, C, M, N, K) -> None:
        from ..blas import sgemm
        sgemm(A, B, out=C, precision="tf32x3")


def tf32x3_suite(shapes=None, rounds: int = 3) -> "pd.DataFrame":
    """book.sgemm in 'tf32x3' and 'fp32' beside cuBLAS SGEMM on chapter 9's suite, checked then
    timed in ``rounds`` interleaved rounds (medians; % of cuBLAS SGEMM)."""
    from . import sgemm_lab
    shapes = shapes or (sgemm_lab.SUITE if BACKEND == "gpu" else sgemm_lab.CPU_SUITE[:2])
    return sgemm_lab.suite(shapes, rounds, specs=(Tf32x3Sgemm, sgemm_lab.BookSgemm))


def tf32x3_heldout(rounds: int = 3) -> "pd.DataFrame":
    """:func:`tf32x3_suite` on the held-out shapes (:data:`HELDOUT_SEED`; on the CPU emulator,
    two small shapes of the same kinds instead)."""
    from . import sgemm_lab
    shapes = sgemm_lab.heldout_shapes(HELDOUT_COUNT, HELDOUT_SEED, low=HELDOUT_LOW)
    if BACKEND != "gpu":  # (the emulator: two small shapes of the same kinds)
        shapes = [(133, 149, 37), (29, 161, 70)]
    return tf32x3_suite(shapes, rounds)


PARTS_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (1024, 1024, 16384),
                (1024, 1024, 1024)]
PRODUCTS = {"": (), "_producer": (("PRODUCER", 1), ("PINGPONG", 0)),
            "_pingpong": (("PRODUCER", 1), ("PINGPONG", 1)),
            "_areg": (("AREG", 1),)}
"""The product kernels :func:`tf32x3_parts` compares, by suffix: step 3's
(matmul_tf32x3_wgmma); step 4's matmul_tf32x3_ws with a producer warpgroup, without and with
two partial sums taking turns; step 5's matmul_tf32x3_areg, A split in registers (10_wgmma.cu)
-- as defines added to ``blas.TF32X3_DEFINES``."""


def _packed_case(M: int, N: int, K: int):
    """The inputs the parts and power runs time, on a Hopper GPU: A (M x K) and B (K x N)
    uniform in [-1, 1) from seed 0, their float64 product, and ``sgemm(precision='tf32x3')``'s
    launches on them as functions -- ``pack`` and ``rescale`` (each timed alone), and
    ``product(out, defines)``, the product kernel alone (step 5's where ``defines`` has AREG = 1)
    on records and flags packed once here, with the split-K of ``book.sgemm``."""
    from .. import blas
    from ..harness.device import device_report
    from ..launch import wgmma as W
    rng = cupy.random.default_rng(0)
    A = rng.uniform(-1, 1, (M, K), dtype=cupy.float32)
    B = rng.uniform(-1, 1, (K, N), dtype=cupy.float32)
    ref = A.astype(cupy.float64) @ B.astype(cupy.float64)
    base, splits = blas.TF32X3_DEFINES, blas.tf32x3_splits(M, N, K, device_report().get("sms", 132))
    ea, eb, bad = W.flags(M, N)
    a_rec, b_rec = W.records(M, K), W.records(N, K)
    W.pack(A, B, a_rec, b_rec, M, N, K, base, ea, eb, bad)

    def product(out, defines=base):  # (step 5 reads A itself, and the same records of B)
        a = A if dict(defines).get("AREG") else a_rec
        W.product(a, b_rec, out, M, N, K, defines, splits, ea, eb, A, B, bad)

    launches = {"pack": lambda: W.pack(A, B, a_rec, b_rec, M, N, K, base, ea, eb, bad),
                "rescale": lambda: W.rescale(A, B, a_rec, b_rec, M, N, K, base, ea, eb),
                "product": product}
    return A, B, ref, splits, launches


def tf32x3_parts(shapes=None, rounds: int = 3) -> "pd.DataFrame":
    """``sgemm(precision='tf32x3')`` taken apart, on a Hopper GPU: per shape, each launch timed
    alone -- ``pack`` (the split, gathering each row's and column's magnitude), ``rescale``
    (the check for rows and columns to scale: none here), ``product`` (each of
    :data:`PRODUCTS`) -- beside the whole call with each product kernel, cuBLAS SGEMM and cuBLAS
    TF32, interleaved in ``rounds`` rounds (median ms). Every product is checked first: bit for
    bit the same as chapter 10's (``same_bits``), and each whole call against float64
    (``rel_error``). ``x_sgemm``: cuBLAS SGEMM's time over the row's; ``tf32_tflops``: the TF32
    rate of a product kernel (three products a multiply-add) or of cuBLAS TF32; ``host_us``:
    the host's time for one call (``sgemm(precision='tf32x3')``, on the ``sgemm_tf32x3`` row,
    and cuBLAS SGEMM's), the GPU idle before it (cupyx's benchmark, median of 50)."""
    import pandas as pd
    from cupyx.profiler import benchmark

    from .. import blas
    from ..blas.tf32x3 import _tf32x3
    from ..harness.measure import relative_error_xp, time_launch
    if KERNELS["tf32x3_wgmma"].why_not_here():
        raise RuntimeError("tf32x3_parts: " + KERNELS["tf32x3_wgmma"].why_not_here())
    rows = []
    for M, N, K in bar(shapes or PARTS_SHAPES, desc="parts", unit="shape"):
        A, B, ref, splits, launches = _packed_case(M, N, K)
        C = cupy.full((M, N), cupy.nan, dtype=cupy.float32)
        work = cupy.empty((M, N), dtype=cupy.float32)
        base = blas.TF32X3_DEFINES

        def product(defines):
            return lambda: launches["product"](work, defines)

        def whole(defines):  # book.sgemm(precision='tf32x3')'s call, with this product kernel
            return lambda: _tf32x3(A, B, C, 1.0, 0.0, defines)

        calls = {"pack": launches["pack"], "rescale": launches["rescale"],
                 **{"product" + v: product(base + d) for v, d in PRODUCTS.items()},
                 **{"sgemm_tf32x3" + v: whole(base + d) for v, d in PRODUCTS.items()},
                 "cublas": lambda: cupy.matmul(A, B, out=C),
                 "cublas_tf32": lambda: CublasTF32.launch(A, B, C, M, N, K)}
        outs = {}
        for v in PRODUCTS:
            work.fill(cupy.nan)
            calls["product" + v]()
            outs[v] = work.copy()
        same = {v: bool(cupy.array_equal(outs[""], o, equal_nan=True)) for v, o in outs.items()}
        errors = {}
        for name in [n for n in calls if n.startswith("sgemm")] + ["cublas", "cublas_tf32"]:
            C.fill(cupy.nan)
            calls[name]()
            errors[name] = relative_error_xp(C, ref)
        times = {name: [] for name in calls}
        for _ in range(rounds):
            for name, fn in calls.items():
                times[name].append(time_launch(fn, target_s=0.3)["time_ms"])
        med = {name: float(np.median(t)) for name, t in times.items()}
        host = {name: 1e6 * float(np.median(benchmark(fn, n_repeat=50, n_warmup=5).cpu_times))
                for name, fn in (("sgemm_tf32x3", lambda: blas.sgemm(A, B, out=C, precision="tf32x3")),
                                 ("cublas", calls["cublas"]))}
        flops = 2.0 * M * N * K
        for name, ms in med.items():
            rows.append({"M": M, "N": N, "K": K, "splits": splits, "part": name, "ms": ms,
                         "x_sgemm": med["cublas"] / ms if name.startswith(("sgemm", "cublas")) else np.nan,
                         "tf32_tflops": (3 if name.startswith("product") else 1) * flops / ms / 1e9
                         if name.startswith("product") or name == "cublas_tf32" else np.nan,
                         "same_bits": same.get(name.removeprefix("product").removeprefix("sgemm_tf32x3"), np.nan)
                         if name.startswith(("product", "sgemm")) else np.nan,
                         "rel_error": errors.get(name, np.nan), "host_us": host.get(name, np.nan)})
        del A, B, ref, C, work, launches, calls
        cupy.get_default_memory_pool().free_all_blocks()
    return pd.DataFrame(rows)


POWER_FILE, POWER_CMD = "10_tf32x3_power", "python -m book.studies.tf32_lab --power"
POWER_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]


def tf32x3_power(shapes=None, rounds: int = 2, seconds: float = 3.0) -> "pd.DataFrame":
    """The clock each GEMM runs at, on a Hopper GPU: per shape, cuBLAS SGEMM, cuBLAS TF32,
    step 3's product alone (on records packed once) and the whole ``sgemm(precision='tf32x3')``
    call, each called in a loop for ``seconds`` while nvidia-smi samples the SM clock, the
    board's power and why the clock is below its maximum (``harness.device.clocks_while``),
    interleaved in ``rounds`` rounds. Every one is checked first against float64
    (``rel_error``). ``ms``: the loop's mean time of one call; ``max_mhz``: the GPU's maximum
    SM clock."""
    import pandas as pd

    from ..blas.tf32x3 import TF32X3_DEFINES, _tf32x3
    from ..harness.device import clocks_while, device_report
    from ..harness.measure import relative_error_xp
    if KERNELS["tf32x3_wgmma"].why_not_here():
        raise RuntimeError("tf32x3_power: " + KERNELS["tf32x3_wgmma"].why_not_here())
    rows, top = [], device_report().get("max_sm_clock_mhz", float("nan"))
    shapes = shapes or POWER_SHAPES
    done = bar(total=len(shapes) * rounds, desc="clocks", unit="round")
    for M, N, K in shapes:
        A, B, ref, _, launches = _packed_case(M, N, K)
        C = cupy.full((M, N), cupy.nan, dtype=cupy.float32)
        calls = {"cublas": lambda: cupy.matmul(A, B, out=C),
                 "cublas_tf32": lambda: CublasTF32.launch(A, B, C, M, N, K),
                 "product": lambda: launches["product"](C),
                 "sgemm_tf32x3": lambda: _tf32x3(A, B, C, 1.0, 0.0, TF32X3_DEFINES)}
        errors = {}
        for name, fn in calls.items():
            C.fill(cupy.nan)
            fn()
            errors[name] = relative_error_xp(C, ref)
        for r in range(rounds):
            for name, fn in calls.items():
                rows.append({"M": M, "N": N, "K": K, "kernel": name, "round": r,
                             **clocks_while(fn, seconds), "max_mhz": top, "rel_error": errors[name]})
            done.update()
        del A, B, ref, C, launches, calls
        cupy.get_default_memory_pool().free_all_blocks()
    done.close()
    return pd.DataFrame(rows)


def main(argv: list[str]) -> int:
    import pandas as pd

    from ..harness import results
    pd.set_option("display.width", 200)
    if "--magnitudes" in argv:
        print(results.keep(magnitudes(), MAGNITUDES_FILE).to_string())
    if "--suite" in argv:
        print(results.keep(tf32x3_suite(), TF32X3_SUITE_FILE).round(1).to_string())
    if "--heldout" in argv:
        print(results.keep(tf32x3_heldout(), HELDOUT_FILE).round(1).to_string())
    if "--power" in argv:
        print(results.keep(tf32x3_power(), POWER_FILE).to_string(float_format=lambda v: f"{v:.4g}"))
    if "--parts" in argv:
        print(results.keep(tf32x3_parts(), PARTS_FILE).to_string(float_format=lambda v: f"{v:.4g}"))
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
