"""The book's own FP32 SGEMM as a library: ``book.sgemm(A, B)`` for any shape, a plan per shape.

``sgemm(A, B, out=None, alpha=1, beta=0, precision='fp32')`` multiplies float32 matrices of any
M, N, K >= 1 -- contiguous, rows of wider arrays (leading dimensions), or the transpose of
either -- with chapter 8's cp.async kernel (``08_async.cu``; ``09_sgemm.cu`` adds its entries for
leading dimensions, split-K and stream-K) in a plan per shape (chapter 9): on the suite's shapes
the one a tuning run on this GPU found fastest; on any other shape, the fastest of the cost
model's best few (``ranked``), timed over the shape's first calls on this GPU, one candidate a
call after the first, and remembered (``settle``; kernels not compiled yet compile meanwhile in
a process of their own, and ``python -m book.blas.prebuild`` compiles them all ahead;
``tune(shapes)`` chooses at once; without a GPU, the model's best). A call seen before repeats its launches (``launch.replay``). ``precision='tf32x3'`` runs chapter 10's 3xTF32
kernel on Hopper's tensor cores at float32's accuracy. Below compute capability 8.0, chapter
8's warp-tile kernel runs.

Its modules, each on those before it:

* ``kernels`` -- the builds and launch functions of the kernels the plans run, their
  configurations (CONFIGS) and workspaces;
* ``operands`` -- how A, B and out lie in memory (rows, leading dimension, transposed);
* ``plans`` -- ``Plan``, ``Skinny``, ``Packed``: a way to compute a shape, launched like a
  registry entry; the candidates of a shape; plan ids;
* ``model`` -- the cost model (``model_seconds``, ``ranked``);
* ``choice`` -- which plan a call runs (``plan_for``): the tuning run's, what a first call on
  this GPU learned (``learn``, kept per GPU on disk), else the model's best;
* ``tf32x3`` -- ``precision='tf32x3'``;
* ``call`` -- ``sgemm`` itself;
* ``prebuild`` -- every build a call may run, compiled ahead (``python -m book.blas.prebuild``).

It uses the launch API (``book.launch``), the registry of kernels and, of the harness, only what
a call needs: the device report, the results files (a tuning run's plans and rates) and, on a
first call, the event timer. It imports nothing of the chapters' studies, plots or tables
(``tests/test_layout.py`` fails if it does): chapter 9's and 10's studies -- tuning, suites,
held-out runs, tables, figures, command lines -- are in ``book.studies``, on top of it.

(Named ``blas``, not ``sgemm``: ``book.sgemm`` is the function; a subpackage of the same name
would take its place in ``book`` as soon as anything imported it.)
"""
from .call import PRECISIONS, sgemm
from .choice import (FIRST_CALL, FIRST_CALL_SMALL, FIRST_PACKED, FIRST_STREAMK, SMALL_S,
                     first_call_plans, learn, learning, plan_for, settle, tune, use_plans)
from .kernels import (CONFIGS, FALLBACK, OUTER_ONE_GROUP, OUTER_ROWS, SKINNY_PR, SKINNY_SPLITS,
                      SKINNY_WARPS, STREAMK_CPU_BLOCKS)
from .model import (CANDIDATES_FILE, CHAIN_S, LAUNCH_S, LAYOUT_SPEED, LONE, OUTER_RATE, PACK_SLOW,
                    PLANS_FILE, STREAMK_STEP, WARP_BYTES_S, model_seconds, ranked)
from .operands import logical_operands, stored_operands
from .plans import (DEFAULT, LAYOUT_LABELS, LAYOUTS, SPLITS, STREAMK_CONFIGS, Packed, Plan, Skinny,
                    builds_for, candidates, in_layout, packed_plans, plan_by_id, sanitizer_plans,
                    skinny_plans)
from .tf32x3 import (TF32X3_AREG_MAX_N, TF32X3_DEFINES, TF32X3_MAX_SPLITS, TF32X3_MIN_KTILES,
                     tf32x3_splits)

__all__ = ["sgemm", "PRECISIONS",
           "Plan", "Skinny", "Packed", "DEFAULT", "FALLBACK", "CONFIGS", "STREAMK_CONFIGS",
           "LAYOUTS", "LAYOUT_LABELS", "SPLITS", "SKINNY_PR", "SKINNY_WARPS", "SKINNY_SPLITS",
           "OUTER_ROWS", "OUTER_ONE_GROUP", "STREAMK_CPU_BLOCKS",
           "candidates", "skinny_plans", "packed_plans", "in_layout", "builds_for", "plan_by_id",
           "sanitizer_plans", "stored_operands", "logical_operands",
           "model_seconds", "ranked", "LAUNCH_S", "LONE", "CHAIN_S", "STREAMK_STEP", "OUTER_RATE",
           "WARP_BYTES_S", "LAYOUT_SPEED", "PACK_SLOW", "PLANS_FILE", "CANDIDATES_FILE",
           "plan_for", "use_plans", "learn", "settle", "tune", "learning", "first_call_plans", "FIRST_CALL",
           "FIRST_CALL_SMALL", "SMALL_S", "FIRST_STREAMK", "FIRST_PACKED",
           "TF32X3_DEFINES", "TF32X3_MAX_SPLITS", "TF32X3_MIN_KTILES", "TF32X3_AREG_MAX_N",
           "tf32x3_splits"]
