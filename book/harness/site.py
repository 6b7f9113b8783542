"""The HTML book's own copy of MathJax, so that its math renders offline (``make book`` runs
``python -m book.harness.site``).

Sphinx loads MathJax from a CDN by default; a reader who opens ``_build/html`` without a network
then sees raw ``\\(C = AB\\)``. The pinned pip package django-static-mathjax carries MathJax 3's
files; this copies the ones the book uses (TeX input, CHTML output and its fonts, the TeX
extensions it may load on demand) into ``_static/mathjax``, which ``_config.yml`` names as
``mathjax_path`` and which is not committed.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

PARTS = ["tex-chtml.js", "output/chtml/fonts", "input/tex/extensions", "ui", "a11y"]
TARGET = Path(__file__).resolve().parents[2] / "_static" / "mathjax"


def copy_mathjax(target: Path = TARGET) -> Path:
    """Copy MathJax's files from the installed package into ``target``; its path."""
    import mathjax  # django-static-mathjax, from requirements.txt
    es5 = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    for part in PARTS:
        src, dst = es5 / part, target / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copy2(src, dst)
    return target


if __name__ == "__main__":
    print(f"MathJax copied to {copy_mathjax(Path(sys.argv[1]) if len(sys.argv) > 1 else TARGET)}")
