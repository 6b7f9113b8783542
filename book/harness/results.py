"""Results files: one folder per GPU under results/, one CSV per chapter (chapter 0).

On a GPU a chapter measures and saves ``results/<gpu>/<chapter>.csv`` (every row names the
device and the date; ``device.json`` beside it holds the full device report). Without a GPU
the chapter loads what was recorded on a real GPU and says so.

:func:`saving` alone decides whether anything is written; the writers that consult it
(:func:`keep`, :func:`live_or_recorded`, :func:`save_figure`) are the only way a notebook saves.
``BOOK_RESULTS_DIR`` points the whole book at another results folder (the tests use one).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd

from .device import device_report, gpu_slug
from . import records
from .records import RESULTS
from ..launch.runtime import BACKEND

def saving() -> bool:
    """Whether live measurements are written to results/: on a GPU, unless BOOK_SAVE_RESULTS=0
    (set by ``make test``, so that re-executing the notebooks under nbval never rewrites the
    results that the stored notebooks show). Never under ``BOOK_ASSUME_CC``: a preview of an
    older GPU must not replace this GPU's results with what the older one would run."""
    return (BACKEND == "gpu" and os.environ.get("BOOK_SAVE_RESULTS", "1") != "0"
            and not os.environ.get("BOOK_ASSUME_CC", "").strip())


def results_dir(slug: str | None = None) -> Path:
    return RESULTS / (slug or gpu_slug())


def recorded_gpus() -> list[str]:
    """GPU folders holding results, the one saved last first (then by name)."""
    return records.recorded_gpus(RESULTS)


def _save(df: pd.DataFrame, chapter: str) -> Path:
    """Write a chapter's measurements for this GPU. Only the writers below call it, and only
    when :func:`saving` says so."""
    if not saving():
        raise RuntimeError("results are saved only on a GPU with saving on (see results.saving)")
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    report = dict(device_report())
    report["date"] = str(df["date"].iloc[0]) if "date" in df else ""
    report["saved"] = pd.Timestamp.now().isoformat(timespec="seconds")
    (folder / "device.json").write_text(json.dumps(report, indent=2) + "\n")
    path = folder / f"{chapter}.csv"
    df.to_csv(path, index=False, float_format="%.6g")
    return path


def short_name(device: str) -> str:
    """A GPU's name as a table's header or a sentence gives it: "NVIDIA H100 80GB HBM3" -> "H100",
    "NVIDIA GeForce RTX 4090" -> "GeForce RTX 4090" (the vendor, memory size and kind dropped)."""
    words = [w for w in device.removeprefix("NVIDIA ").replace("-", " ").split()
             if not re.fullmatch(r"\d+GB|HBM\d*e?|PCIe|SXM\d*|NVL", w, re.I)]
    return " ".join(words) or device


def folder_of(device: str) -> str:
    """The results folder of a GPU given by its name ("NVIDIA H200") or its folder itself."""
    return device if (RESULTS / device).is_dir() else gpu_slug(device)


def load_device(gpu: str) -> dict:
    """The device report recorded with a GPU's results."""
    return json.loads((RESULTS / gpu / "device.json").read_text())


def load(chapter: str, gpu: str | None = None) -> pd.DataFrame:
    """The recorded results of a chapter; ``df.attrs['source']`` says where they come from. For
    the REFERENCE_FILES, each % of cuBLAS at the reference size is over the GPU's one cuBLAS
    record (:func:`over_reference`).

    Without ``gpu``: the GPU named by ``BOOK_RESULTS_GPU``, else the GPU saved last that holds
    this chapter's file."""
    gpu = gpu or os.environ.get("BOOK_RESULTS_GPU") or next(
        (g for g in recorded_gpus() if (RESULTS / g / f"{chapter}.csv").exists()), None)
    path = RESULTS / str(gpu) / f"{chapter}.csv"
    if gpu is None or not path.exists():
        raise FileNotFoundError(f"no recorded results for {chapter} (looked in {RESULTS})")
    df = pd.read_csv(path)
    report = json.loads((path.parent / "device.json").read_text())
    df.attrs.update(source=f"recorded on {report['name']}, {df['date'].iloc[0]}", device=report)
    return over_reference(df) if chapter in REFERENCE_FILES else df


def load_every(chapter: str) -> dict[str, pd.DataFrame]:
    """The recorded results of a chapter for every GPU that holds them, by device name."""
    found = {}
    for gpu in recorded_gpus():
        try:
            df = load(chapter, gpu)
        except FileNotFoundError:
            continue
        found[df.attrs["device"]["name"]] = df
    return dict(sorted(found.items()))


def keep(df: pd.DataFrame, name: str, device: str | None = None,
         extra: pd.DataFrame | None = None) -> pd.DataFrame:
    """Stamp a table measured now with the device (this GPU, or ``device``, e.g. the host's CPU
    in chapter 1) and the date, and save it as results ``name`` where :func:`saving`; return it.
    ``extra``: this GPU's earlier rows, already stamped, kept after the new ones (chapter 11's
    alternatives that this run could not time)."""
    df["device"] = device or device_report()["name"]
    df["date"] = pd.Timestamp.today().date().isoformat()
    if extra is not None and len(extra):
        df = pd.concat([df, extra], ignore_index=True)
    if saving():
        _save(df, name)
    return df


def recorded_or_none(name: str, found: str, missing: str) -> pd.DataFrame | None:
    """The recorded results ``name``, announced by printing ``found`` (its ``{source}`` filled
    in); None, announced by printing ``missing``, where none were recorded."""
    try:
        df = load(name)
    except FileNotFoundError:
        print(missing)
        return None
    print(found.format(source=df.attrs["source"]))
    return df


def live_or_recorded(df: pd.DataFrame | None, chapter: str) -> pd.DataFrame:
    """On a GPU: save these live measurements and return them. Without one, or where the GPU
    could not measure them (``df`` None): the recorded ones. Either way, for the REFERENCE_FILES,
    each % of cuBLAS at the reference size divides by the GPU's one cuBLAS record."""
    if BACKEND == "gpu" and df is not None:
        if df.empty:  # nothing of it runs on this GPU (the chapter printed which and why)
            df.attrs.update(source=f"nothing measured on {device_report()['name']}",
                            device=device_report())
            return df
        if saving():
            _save(df, chapter)
        df.attrs.update(source=f"measured in this run on {device_report()['name']}, {df['date'].iloc[0]}",
                        device=device_report())
        return over_reference(df) if chapter in REFERENCE_FILES else df
    recorded = load(chapter)
    why = "No GPU here" if BACKEND != "gpu" else "Not measured on this GPU"
    print(f"{why}: the figures below use results {recorded.attrs['source']}.")
    return recorded


CEILINGS = "00_ceilings"
REFERENCE_FILES = {"02_naive", "03_coalescing", "04_tiling", "05_bank_conflicts", "06_coarsen",
                   "06_regtile", "07_kahan_speed", "08_steps", "08_tune", "10_tensor_cores"}
"""The chapters' sweeps of square sizes, whose n = 4096 rows are the ladder's records: there each
% of cuBLAS is over the GPU's one cuBLAS figure (:func:`over_reference`), on every page. Other
files (chapter 9's suite and held-out sets, chapter 10's call) compare each shape with the cuBLAS
of its own interleaved rounds, and their pages say so."""
REFERENCE_N = 4096
"""The size of the book's headline figures (the ladder's): there, every % of cuBLAS divides by
one cuBLAS figure per GPU, chapter 0's measurement (:func:`cublas_reference`)."""


def cublas_reference(device: str, n: int = REFERENCE_N) -> float | None:
    """Chapter 0's cuBLAS SGEMM GFLOP/s at n x n x n for ``device`` (a GPU's name or results
    folder), or None where it holds none: the one figure every % of cuBLAS at n divides by, in
    the ladder, the chapters' tables and their prose (a run's own cuBLAS moves by a few percent
    from run to run)."""
    try:
        c = load(CEILINGS, folder_of(device))
    except FileNotFoundError:
        return None
    row = c[(c.ceiling == "cublas_sgemm") & (c.n == n)]
    return float(row.value.iloc[0]) if len(row) else None


def over_reference(df: pd.DataFrame, n: int = REFERENCE_N) -> pd.DataFrame:
    """``df`` with 'pct_of_cublas' of its n x n x n rows taken over :func:`cublas_reference` of
    their device (where one is recorded): the number the ladder prints for the same kernel. Other
    sizes keep the cuBLAS timed in the same run; the results files keep what was measured."""
    needed = {"gflops", "pct_of_cublas", "M", "N", "K", "device"}
    if not needed <= set(df.columns):
        return df
    at = (df.M == n) & (df.N == n) & (df.K == n)
    if not at.any():
        return df
    out = df.copy()
    for device in out.loc[at, "device"].unique():
        ref = cublas_reference(device, n)
        if ref:
            rows = at & (out.device == device)
            out.loc[rows, "pct_of_cublas"] = 100.0 * out.loc[rows, "gflops"] / ref
    out.attrs = dict(df.attrs)
    return out


def save_figure(fig, name: str) -> None:
    """Keep a chapter's figure beside its results (on a GPU), e.g. for the README."""
    if saving():
        results_dir().mkdir(parents=True, exist_ok=True)
        fig.savefig(results_dir() / f"{name}.png", bbox_inches="tight")
