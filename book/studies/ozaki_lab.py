"""Chapter 12's studies of the Ozaki scheme II (the call: ``book.blas.ozaki``; the same steps in
NumPy: ``book.models.ozaki``): the number of moduli against error and speed, where a call's time
goes (its four passes), and the error on chapter 10's input families. On a GPU its command line
records them (``results/<gpu>/``)::

    python -m book.studies.ozaki_lab --moduli     # 12_moduli.csv
    python -m book.studies.ozaki_lab --passes     # 12_passes.csv
    python -m book.studies.ozaki_lab --families   # 12_families.csv
    python -m book.studies.ozaki_lab --ceiling    # 12_int8_ceiling.csv (cuBLASLt INT8, PyTorch)
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import pandas as pd

from ..blas import sgemm
from ..blas.ozaki import MIN_CC, moduli_for, ozaki_passes, ozaki_sgemm, products_kernel
from ..harness import results
from ..harness.check import random_inputs
from ..harness.device import device_report
from ..harness.measure import relative_error_xp, time_launch
from ..launch.runtime import BACKEND, LaunchError, to_device, xp
from ..registry import TF32_TOLERANCE, cc_text, device_cc
from . import alternatives
from .alternatives import Alternative
from .tf32_lab import MAGNITUDE_FAMILIES, SPREAD_FAMILY, magnitudes

SPREADS = (5, 10, 20, 40)
"""The spreads s of the family where each element has its own power of two, 2^-s .. 2^s."""
MODULI_FILE, PASSES_FILE, FAMILIES_FILE, CEILING_FILE = ("12_moduli", "12_passes", "12_families",
                                                        "12_int8_ceiling")
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048)]
CPU_SHAPES = [(48, 40, 72)]
"""Where the GPU measures (the ladder's size, the issue's goal of 3x cuBLAS SGEMM at 8192^3),
and the emulator's size."""
MODULI_TRIED = (6, 7, 8, 9)


def stamp() -> dict:
    """This GPU's name and today's date, as every row of these studies carries them."""
    return {"device": device_report()["name"], "date": time.strftime("%Y-%m-%d")}


def ozaki(n: int | None = None) -> Alternative:
    """``ozaki_sgemm`` with ``n`` moduli, the scheme alone (None: ``precision='ozaki'``, its
    moduli and its accuracy guard) as a
    pseudo-kernel of ``sweep``; checked against TF32's tolerance, so that too few moduli are
    timed too (their error is in the row)."""
    return Alternative(f"ozaki_n{n}" if n else "ozaki", f"Ozaki II, {n} moduli" if n else
                       "book.sgemm, precision='ozaki'", "the book", "ozaki", chapter=12,
                       tolerance=TF32_TOLERANCE, gpu_only=False, min_cc=MIN_CC,
                       run=lambda A, B, C: ozaki_sgemm(A, B, n, out=C, guard=not n))


def moduli(shapes=None, ns=MODULI_TRIED, rounds: int = alternatives.ROUNDS) -> pd.DataFrame:
    """Each number of moduli in ``ns``, ``precision='ozaki'``, the book's 3xTF32 and FFMA
    SGEMM beside cuBLAS SGEMM (chapter 11's ``measure``: checked, ``rounds`` interleaved
    rounds, x cuBLAS and the error of each)."""
    book = {a.id: a for a in alternatives.ALTERNATIVES}  # (chapter 11's, run on the emulator too)
    specs = [ozaki(n) for n in ns] + [ozaki()] + [
        replace(book["book_tf32x3"], chapter=10, gpu_only=False),
        replace(book["book_sgemm"], chapter=9, gpu_only=False)]
    shapes = shapes or (SHAPES if BACKEND == "gpu" else CPU_SHAPES)
    return alternatives.measure(shapes, rounds, specs).assign(
        moduli=lambda d: [int(k[7:]) if k.startswith("ozaki_n") else
                          moduli_for(K) if k == "ozaki" else 0 for k, K in zip(d.kernel, d.K)],
        **stamp())


def passes(shapes=None, n: int | None = None, guard: bool = True) -> pd.DataFrame:
    """Where a call's time goes: each of ``ozaki_passes``'s four passes timed alone (after a
    check of the whole call against float64), the whole call, and cuBLAS SGEMM on the same
    inputs; one row per (shape, pass), with its share of the call. ``guard``: with the accuracy
    guard (precision='ozaki''s), whose levels' product is one more INT8 product (int8_tops counts
    it), or the scaling alone. Where the products run on wgmma, those of compute capability
    8.x (mma.sync, tiled) too: the same bits, timed alone ("products, mma.sync tiled")."""
    rows = []
    for M, N, K in shapes or (SHAPES if BACKEND == "gpu" else CPU_SHAPES):
        A, B = (to_device(x) for x in random_inputs(M, N, K, seed=M + N + K))
        steps, C = ozaki_passes(A, B, n, guard=guard)
        for _, run in steps:
            run()
        error = relative_error_xp(C, A.astype(xp.float64) @ B.astype(xp.float64))
        if not error < TF32_TOLERANCE:
            raise LaunchError(f"ozaki_passes at {M}x{N}x{K}: relative error {error:.2e}")
        times = {name: time_launch(run)["time_ms"] for name, run in steps}
        times["the call"] = time_launch(lambda: [run() for _, run in steps])["time_ms"]
        times["cuBLAS SGEMM"] = time_launch(lambda: xp.matmul(A, B))["time_ms"]
        if products_kernel() == "wgmma":  # (and compute capability 8.x's products, checked first)
            tiled, C2 = ozaki_passes(A, B, n, guard=guard, products="tiled")
            for _, run in tiled:
                run()
            if not xp.array_equal(C2, C):
                raise LaunchError(f"the tiled mma.sync products at {M}x{N}x{K} differ from wgmma's")
            times["products, mma.sync tiled"] = time_launch(dict(tiled)["products"])["time_ms"]
        moduli_used = n or moduli_for(K)
        for name, ms in times.items():
            rows.append({"M": M, "N": N, "K": K, "moduli": moduli_used, "guard": guard, "pass": name,
                         "time_ms": ms, "of_call": ms / times["the call"], "rel_error": error,
                         "int8_tops": (2e-9 * (moduli_used + guard) * M * N * K / ms
                                       if name.startswith("products") else np.nan),
                         **stamp()})
    return pd.DataFrame(rows)


def int8_ceiling(sizes=(4096, 8192), iters: int | None = None) -> pd.DataFrame:
    """What INT8 can reach on this GPU, TOPS: the wgmma products' own ceiling (12_ozaki_wgmma.cu's
    int8_peak: their wgmmas on operands that never leave the SM, as chapter 10 measures TF32's),
    mma.sync's (12_ozaki.cu's int8_mma_peak, operands in registers: compute capability 8.x's path),
    and cuBLASLt's INT8 GEMM (PyTorch's ``torch._int_mm``: int8 in, int32 out) at n^3. A row
    each; status says where PyTorch, wgmma or a GPU is missing."""
    from ..blas.ozaki import _mma_peak, _wgmma_peak
    row = stamp()
    rows = []
    peak = {**row, "what": "wgmma m64n256k32, operands in shared memory", "n": np.nan}
    if device_cc() == (9, 0):
        kernel, smem, blocks, macs = _wgmma_peak()
        iters = iters or (4096 if BACKEND == "gpu" else 2)
        out = xp.zeros(blocks * 256, np.int32)
        ms = time_launch(lambda: kernel((blocks,), (256,), (out, np.int32(iters)),
                                        shared_mem=smem))["time_ms"]
        rows.append({**peak, "status": "ok", "time_ms": ms,
                     "tops": 2e-9 * macs * iters * blocks / ms})
    else:
        rows.append({**peak, "status": "skipped (wgmma: compute capability 9.0)"})
    mma = {**row, "what": "mma.sync m16n8k32, operands in registers", "n": np.nan}
    if device_cc() >= MIN_CC:
        kernel, blocks, macs = _mma_peak()
        iters = iters or (4096 if BACKEND == "gpu" else 2)
        out = xp.zeros(blocks * 256, np.int32)
        ms = time_launch(lambda: kernel((blocks,), (256,), (out, np.int32(iters))))["time_ms"]
        rows.append({**mma, "status": "ok", "time_ms": ms, "tops": 2e-9 * macs * iters * blocks / ms})
    else:
        rows.append({**mma, "status": f"skipped (mma.sync s8: compute capability {cc_text(MIN_CC)})"})
    why = None if BACKEND == "gpu" else "needs a GPU"
    if why is None and device_cc() < (7, 5):
        why = f"needs compute capability 7.5 (INT8 tensor cores); this GPU counts as {cc_text(device_cc())}"
    if why is None and not alternatives.have("torch"):
        why = "needs torch, not installed here"
    if why is None and not alternatives.torch_has_cuda():
        why = "needs PyTorch built with CUDA (this one reaches no GPU)"
    for n in sizes:
        lt = {**row, "what": "cuBLASLt INT8 (torch._int_mm)", "n": n}
        if why:
            rows.append({**lt, "status": f"skipped ({why})"})
            continue
        import torch
        a = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda")
        b = torch.randint(-128, 128, (n, n), dtype=torch.int8, device="cuda").t().contiguous().t()
        c = torch._int_mm(a, b)
        ref = a[:64].double() @ b.double()  # (64 rows checked exactly: sums below 2^53)
        if not torch.equal(c[:64].double(), ref):
            raise LaunchError(f"torch._int_mm at {n}^3 is not the exact integer product")
        ms = time_launch(lambda: torch._int_mm(a, b))["time_ms"]
        rows.append({**lt, "status": "ok", "time_ms": ms, "tops": 2e-9 * n ** 3 / ms})
    return pd.DataFrame(rows)


def families(M: int | None = None, N: int | None = None, K: int = 4096) -> pd.DataFrame:
    """The relative error (against float64) of ``precision='ozaki'``, of 7 and 8 moduli, of
    FFMA book.sgemm and of cuBLAS SGEMM on every input family of chapter 10 and on
    ``SPREAD_FAMILY`` (one row each: chapter 10's ``magnitudes`` with these runs)."""
    M = M or (2048 if BACKEND == "gpu" else 32)
    return magnitudes(M, N or M, K if BACKEND == "gpu" else 64, families={
        **MAGNITUDE_FAMILIES, SPREAD_FAMILY: SPREADS}, runs={
        "ozaki": lambda A, B: ozaki_sgemm(A, B), "ozaki_n7": lambda A, B: ozaki_sgemm(A, B, 7, guard=False),
        "ozaki_n8": lambda A, B: ozaki_sgemm(A, B, 8, guard=False), "book_sgemm": lambda A, B: sgemm(A, B),
        "cublas": lambda A, B: xp.matmul(A, B)})


GOALS = {4096: 2.5, 8192: 3.0}
"""The issue's goals for ``precision='ozaki'``, x cuBLAS SGEMM at n^3."""


def family_summary(every: dict) -> pd.DataFrame:
    """The families study of every GPU recorded ({device: 12_families table}), a row per GPU and
    family: the largest relative error over the family's scales of 8 moduli
    (``precision='ozaki'``), of 7, and of cuBLAS SGEMM, and the largest ratio of 8 moduli's, and
    of 7's, to cuBLAS's at one scale."""
    rows = []
    for device, df in every.items():
        t = df.pivot_table(index=["family", "scale"], columns="kernel", values="rel_error")
        for family, g in t.groupby(level="family", sort=False):
            rows.append({"GPU": device, "family": family, "scales": len(g),
                         "8 moduli": g.ozaki.max(), "7 moduli": g.ozaki_n7.max(),
                         "cuBLAS SGEMM": g.cublas.max(),
                         "8 moduli / cuBLAS": (g.ozaki / g.cublas).max(),
                         "7 moduli / cuBLAS": (g.ozaki_n7 / g.cublas).max()})
    return pd.DataFrame(rows).set_index(["GPU", "family"])


def goal_table(every: dict) -> pd.DataFrame:
    """The moduli study of every GPU recorded ({device: 12_moduli table}), a row per GPU and
    shape: ``precision='ozaki'`` and the book's 3xTF32, x cuBLAS SGEMM and their errors beside
    cuBLAS's, and the goal where the issue set one."""
    rows = []
    for device, df in every.items():
        ok = df[df.status == "ok"]
        for (M, N, K), g in ok.groupby(["M", "N", "K"], sort=False):
            g = g.set_index("kernel")
            rows.append({"GPU": device, "shape": f"{M}x{N}x{K}",
                         "ozaki, x cuBLAS": g.x_cublas.get("ozaki", np.nan),
                         "3xTF32, x cuBLAS": g.x_cublas.get("book_tf32x3", np.nan),
                         "goal": GOALS.get(M, np.nan) if M == N == K else np.nan,
                         "ozaki error": g.rel_error.get("ozaki", np.nan),
                         "3xTF32 error": g.rel_error.get("book_tf32x3", np.nan),
                         "cuBLAS error": g.rel_error.get("cublas", np.nan)})
    return pd.DataFrame(rows).set_index(["GPU", "shape"])


def plot_moduli(df: pd.DataFrame):
    """The number of moduli against the error (top) and the speed over cuBLAS SGEMM (bottom),
    one line per shape (its own marker, and shifted a little along x, so that equal values stay
    visible), beside each shape's 3xTF32 and cuBLAS SGEMM's own error in the same colour."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from ..harness.plots import STYLE, check_readable
    ok = df[(df.status == "ok") & df.kernel.str.startswith("ozaki_n")]
    shapes = list(dict.fromkeys(zip(ok.M, ok.N, ok.K)))
    with plt.rc_context(STYLE):
        fig, (err, speed) = plt.subplots(2, 1, figsize=(6.8, 8.4))
        for i, (M, N, K) in enumerate(shapes):
            g = ok[(ok.M == M) & (ok.N == N) & (ok.K == K)].sort_values("moduli")
            name, marker = f"{M}x{N}x{K}", "osD^v"[i % 5]
            x = g.moduli + 0.06 * (i - (len(shapes) - 1) / 2)
            err.plot(x, g.rel_error, "-", marker=marker, color=f"C{i}", label=name)
            speed.plot(x, g.x_cublas, "-", marker=marker, color=f"C{i}", label=name)
            for kernel, style, ax in (("cublas", ":", err), ("book_tf32x3", "--", speed)):
                row = df[(df.kernel == kernel) & (df.M == M) & (df.N == N) & (df.K == K)
                         & (df.status == "ok")]
                if len(row):
                    value = row.rel_error.iloc[0] if kernel == "cublas" else row.x_cublas.iloc[0]
                    ax.axhline(value, ls=style, color=f"C{i}", lw=1.2)
        err.set_yscale("log")
        err.set_ylabel("relative error (vs float64)", fontsize=11)
        speed.set_ylabel("x cuBLAS SGEMM (its time / this time)", fontsize=11)
        for ax, style, what in ((err, ":", "cuBLAS SGEMM's error"), (speed, "--", "3xTF32")):
            ax.set_xlabel("moduli (INT8 products)", fontsize=11)
            ax.set_xticks(sorted(ok.moduli.unique()))
            ax.tick_params(labelsize=11)
            handles, _ = ax.get_legend_handles_labels()
            handles.append(Line2D([], [], ls=style, color="0.35", lw=1.2,
                                  label=f"{what}, each size's colour"))
            ax.legend(handles=handles, fontsize=11, ncol=2, loc="upper left",
                      bbox_to_anchor=(0, -0.2))
        fig.tight_layout(h_pad=2.0)
        plt.close(fig)
    return check_readable(fig)


def plot_passes(df: pd.DataFrame):
    """Where a call's time goes: each pass's share of the call, one bar per shape (so that the
    small sizes show as well as the large), the call's time and cuBLAS SGEMM's written beside."""
    import matplotlib.pyplot as plt

    from ..harness.plots import STYLE, check_readable
    order = ["magnitudes", "residues", "products", "reconstruct"]
    shapes = sorted(dict.fromkeys(zip(df.M, df.N, df.K)), key=lambda s: s[0] * s[1] * s[2])
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.0, 2.6 + 0.6 * len(shapes)))
        for y, (M, N, K) in enumerate(shapes):
            g = df[(df.M == M) & (df.N == N) & (df.K == K)].set_index("pass").time_ms
            total, left = sum(g[name] for name in order), 0.0
            for i, name in enumerate(order):
                share = 100 * g[name] / total
                ax.barh(y, share, left=left, color=f"C{i}", label=name if y == 0 else None)
                left += share
            ax.annotate(f"{total:.2f} ms\ncuBLAS {g['cuBLAS SGEMM']:.2f}", (100, y), xytext=(5, 0),
                        textcoords="offset points", va="center", fontsize=11)
        ax.set_yticks(range(len(shapes)), [f"{M}x{N}x{K}" for M, N, K in shapes], fontsize=11)
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xticks(range(0, 101, 20))
        ax.set_xlabel(f"% of the passes' time, each timed alone; {df.device.iloc[0]}", fontsize=11)
        ax.tick_params(labelsize=11)
        ax.legend(fontsize=11, ncol=2, loc="lower left", bbox_to_anchor=(0, 1.02))
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m book.studies.ozaki_lab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag in ("moduli", "passes", "families", "ceiling"):
        parser.add_argument(f"--{flag}", action="store_true")
    args = parser.parse_args(argv)
    pd.set_option("display.width", 200)
    for flag, study, file in (("moduli", moduli, MODULI_FILE), ("passes", passes, PASSES_FILE),
                              ("families", families, FAMILIES_FILE),
                              ("ceiling", int8_ceiling, CEILING_FILE)):
        if getattr(args, flag):
            print(results.keep(study(), file).to_string(float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
