"""Compile ahead of time what ``book.sgemm`` runs, so that no call waits for the compiler:
``python -m book.blas.prebuild`` (``make gpu-book``, the README's GPU commands and the Colab
cell run it).

Every build a call may need -- each plan of every kind (tile configurations, split-K, stream-K,
the skinny kernels, operands in every layout, rows that start on 16, 8 or 4 bytes, B padded),
``precision='tf32x3'``'s and ``precision='ozaki'``'s kernels -- is compiled by NVRTC into the
book's cubin cache (``~/.cache/gpu-matmul-book/cubin``), side by side, for this GPU or for the
compute capability given (``--arch 80``: NVRTC needs no GPU). A call then loads a cubin (a few
milliseconds) instead of compiling (seconds each). A kernel source edited since is another
build: it compiles at its first call, as before. ``--builds FILE`` compiles the builds listed
in a JSON file (what a call of a new shape hands to a process of its own: ``blas.choice``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from ..launch.runtime import BACKEND, build_marker, gpu_arch, gpu_module, mark_built, marked

SHAPES = [(4096, 4096, 4096), (1000, 1000, 1000), (4097, 4095, 4093), (3000, 2000, 1502),
          (512, 512, 65536), (16384, 16384, 256), (128, 16384, 4096), (16384, 128, 4096),
          (7, 9999, 4096), (24, 32000, 4096), (25, 2, 9581), (33, 17, 65), (1, 1, 1)]
"""Shapes whose candidates, in every layout, take every kind of build: large and small squares,
rows not a multiple of 4 floats, split-K (few tiles, long K), thin and skinny products."""


def fp32_builds() -> list:
    """The builds of every candidate plan of ``precision='fp32'`` (``plans.candidates``) over
    SHAPES, in every layout, with rows aligned to 16, 8 or 4 bytes, contiguous or not, and the
    skinny kernel for each of its widths (SKINNY_PR)."""
    from .kernels import SKINNY_PR, SKINNY_WARPS
    from .model import candidates
    from .plans import LAYOUTS, Plan
    found = []
    for M, N, K in SHAPES:
        for layout in LAYOUTS:
            for plan in candidates(M, N, K, layout=layout):
                for align in (4, 2, 1):
                    for contiguous in (True, False):
                        found += (plan.builds(align, contiguous) if isinstance(plan, Plan)
                                  else plan.builds())
    if any(plan.builds()[0][0] == "09_skinny.cu" for plan in candidates(1, 4096, 4096)):
        found += [("09_skinny.cu", {"PR": pr, "WARPS": SKINNY_WARPS}, ()) for pr in SKINNY_PR]
    return found


def tf32x3_builds() -> list:
    """``precision='tf32x3'``'s builds (compute capability 9.0): the split pass, rescale and the
    product, for step 3 and step 5 (AREG, and TRANS for thin M)."""
    from ..launch.wgmma import OPTIONS, SOURCE
    from .tf32x3 import TF32X3_DEFINES
    found = []
    for extra in ((), (("AREG", 1),), (("AREG", 1), ("TRANS", 1))):
        d = dict(TF32X3_DEFINES + extra)
        packing = {k: 1 for k in ("SCALED", "AREG", "TRANS") if d.get(k)}
        found += [(SOURCE, packing, OPTIONS), (SOURCE, d, OPTIONS)]
    return found


def ozaki_builds(cc: tuple[int, int]) -> list:
    """``precision='ozaki'``'s builds: 12_ozaki.cu with and without the guard, and on compute
    capability 9.0 the wgmma products."""
    from .ozaki import MIN_CC, SOURCE, WGMMA_SOURCE, WGMMA_STAGES
    if cc < MIN_CC:
        return []
    found = [(SOURCE, {}, ()), (SOURCE, {"GUARD": 1}, ())]
    if cc == (9, 0):
        found.append((WGMMA_SOURCE, {"STAGES": WGMMA_STAGES}, ("-arch=sm_90a",)))
    return found


def every_build(cc: tuple[int, int]) -> list:
    """Every build ``book.sgemm`` may run on compute capability ``cc``, each once."""
    from ..registry import device_cc
    saved = os.environ.get("BOOK_ASSUME_CC")
    os.environ["BOOK_ASSUME_CC"] = f"{cc[0]}.{cc[1]}"  # (the candidates of that GPU)
    try:
        if device_cc() != cc:
            raise ValueError(f"cannot list the builds of compute capability {cc[0]}.{cc[1]} "
                             f"on a device of {device_cc()[0]}.{device_cc()[1]}")
        found = fp32_builds() + (tf32x3_builds() if cc == (9, 0) else []) + ozaki_builds(cc)
    finally:
        if saved is None:
            os.environ.pop("BOOK_ASSUME_CC")
        else:
            os.environ["BOOK_ASSUME_CC"] = saved
    unique = {}
    for source, defines, options in found:
        unique.setdefault(json.dumps([str(source), dict(defines), list(options)], sort_keys=True),
                          (str(source), dict(defines), tuple(options)))
    return list(unique.values())


def prebuild(arch: str | None = None, builds=None, workers: int | None = None) -> dict:
    """Compile ``builds`` (default: :func:`every_build` of ``arch``) for ``arch`` ("90"; default:
    this GPU's) into the cubin cache, ``workers`` at once; returns how many were compiled, were
    there already and failed (each failure's first line), and the seconds it took."""
    arch = arch or gpu_arch()
    cc = (int(arch[:-1]), int(arch[-1]))
    builds = every_build(cc) if builds is None else builds
    marks = [build_marker(*b, arch=arch) for b in builds]
    todo = [(b, m) for b, m in zip(builds, marks) if not marked(m)]
    failed = []

    def one(job) -> None:
        build, marker = job
        try:
            mark_built(marker, gpu_module(*build).write_cubin(arch))
        except Exception as exc:  # noqa: BLE001 -- named in the summary; its call reports it
            failed.append(f"{build[0]}: {str(exc).splitlines()[0] if str(exc) else exc}")

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        list(pool.map(one, todo))
    return {"builds": len(builds), "compiled": len(todo) - len(failed),
            "already there": len(builds) - len(todo), "failed": failed,
            "seconds": time.perf_counter() - t0}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book.blas.prebuild", description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", help='compute capability as NVRTC writes it ("90", "80", "75"); '
                                       "default: this GPU's")
    parser.add_argument("--workers", type=int, help="compiles at once (default: the CPU cores)")
    parser.add_argument("--builds", help="a JSON file of [source, defines, options] to compile")
    parser.add_argument("--remove", action="store_true", help="remove the --builds file once read")
    args = parser.parse_args(argv)
    if args.arch is None and BACKEND != "gpu":
        parser.error("no GPU here: name the compute capability to build for, e.g. --arch 90")
    builds = None
    if args.builds:
        with open(args.builds) as f:
            builds = [(s, d, tuple(o)) for s, d, o in json.load(f)]
        if args.remove:
            os.unlink(args.builds)
    done = prebuild(args.arch, builds, args.workers)
    quiet = args.builds is not None
    if not quiet:
        print(f"{done['builds']} builds for sm_{args.arch or gpu_arch()}: {done['compiled']} "
              f"compiled, {done['already there']} already there, {len(done['failed'])} failed "
              f"({done['seconds']:.1f} s)")
        for line in done["failed"]:
            print("  failed:", line)
    return 1 if done["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
