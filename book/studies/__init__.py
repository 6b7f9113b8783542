"""The chapters' studies of the book's SGEMM, on top of the library (``book.blas``): what
chapters 9 and 10 measure, tabulate and draw, and their command lines.

* ``sgemm_lab`` -- chapter 9: the tuning run, the suite beside cuBLAS, three held-out sets, the
  four layouts, the host time of a call, block timelines, waves
  (``python -m book.studies.sgemm_lab --tune | --suite | --heldout | --fresh | --third |
  --layouts | --timeline``);
* ``sgemm_report`` -- chapter 9's tables and figures from every GPU's recorded runs;
* ``tf32_models`` -- chapter 10's NumPy models (TF32 rounding, the 3xTF32 split, mma fragments,
  the 128-byte swizzle) and its pictures of them;
* ``tf32_lab`` -- chapter 10's measurements, and ``precision='tf32x3'``'s runs
  (``python -m book.studies.tf32_lab --magnitudes | --suite | --heldout | --parts | --power``);
* ``tf32_report`` -- chapter 10's tables, summaries and figure from the recorded runs.

The library imports none of these.
"""
