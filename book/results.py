"""Results files: one folder per GPU under results/, one CSV per chapter (chapter 0).

On a GPU a chapter measures and saves ``results/<gpu>/<chapter>.csv`` (every row names the
device and the date; ``device.json`` beside it holds the full device report). Without a GPU
the chapter loads what was recorded on a real GPU and says so.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from .device import device_report, gpu_slug
from .runtime import BACKEND

RESULTS = Path(__file__).resolve().parents[1] / "results"


def saving() -> bool:
    """Whether live measurements are written to results/: on a GPU, unless BOOK_SAVE_RESULTS=0
    (set by ``make test``, so that re-executing the notebooks under nbval never rewrites the
    results that the stored notebooks show)."""
    return BACKEND == "gpu" and os.environ.get("BOOK_SAVE_RESULTS", "1") != "0"


def results_dir(slug: str | None = None) -> Path:
    return RESULTS / (slug or gpu_slug())


def recorded_gpus() -> list[str]:
    """GPU folders holding results, newest device report first."""
    found = [p for p in RESULTS.glob("*/device.json")]
    found.sort(key=lambda p: json.loads(p.read_text()).get("date", ""), reverse=True)
    return [p.parent.name for p in found]


def save(df: pd.DataFrame, chapter: str) -> Path:
    """Write a chapter's measurements for this GPU (only on a GPU)."""
    if BACKEND != "gpu":
        raise RuntimeError("only measurements from a GPU are saved as results")
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    report = dict(device_report())
    report["date"] = str(df["date"].iloc[0]) if "date" in df else ""
    (folder / "device.json").write_text(json.dumps(report, indent=2) + "\n")
    path = folder / f"{chapter}.csv"
    df.to_csv(path, index=False, float_format="%.6g")
    return path


def load_device(gpu: str) -> dict:
    """The device report recorded with a GPU's results."""
    return json.loads((RESULTS / gpu / "device.json").read_text())


def load(chapter: str, gpu: str | None = None) -> pd.DataFrame:
    """The recorded results of a chapter; ``df.attrs['source']`` says where they come from."""
    gpu = gpu or os.environ.get("BOOK_RESULTS_GPU") or next(iter(recorded_gpus()), None)
    path = RESULTS / str(gpu) / f"{chapter}.csv"
    if gpu is None or not path.exists():
        raise FileNotFoundError(f"no recorded results for {chapter} (looked in {RESULTS})")
    df = pd.read_csv(path)
    report = json.loads((path.parent / "device.json").read_text())
    df.attrs.update(source=f"recorded on {report['name']}, {df['date'].iloc[0]}", device=report)
    return df


def keep(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """Stamp a table measured now on this GPU with the device and the date, and save it as results
    ``name`` (unless saving is off); return it."""
    df["device"] = device_report()["name"]
    df["date"] = pd.Timestamp.today().date().isoformat()
    if saving():
        save(df, name)
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


def live_or_recorded(df: pd.DataFrame, chapter: str) -> pd.DataFrame:
    """On a GPU: save these live measurements and return them. Without one: the recorded ones."""
    if BACKEND == "gpu":
        if saving():
            save(df, chapter)
        df.attrs.update(source=f"measured now on {device_report()['name']}, {df['date'].iloc[0]}",
                        device=device_report())
        return df
    recorded = load(chapter)
    print(f"No GPU here: the figures below use results {recorded.attrs['source']}.")
    return recorded


def save_figure(fig, name: str) -> None:
    """Keep a chapter's figure beside its results (on a GPU), e.g. for the README."""
    if saving():
        results_dir().mkdir(parents=True, exist_ok=True)
        fig.savefig(results_dir() / f"{name}.png", bbox_inches="tight")
