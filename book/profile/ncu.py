"""Hardware counters from Nsight Compute (``ncu``), read for the book's own launches (chapter 3).

:func:`profile` runs ``ncu`` on a child Python process that launches the given kernels once each
(``python -m book.profile.ncu '<json>'``) and returns one row per launch with the requested metrics.
:func:`counters` is what a notebook calls: it profiles on a GPU host that has ``ncu`` and saves
the counters with the chapter's results; elsewhere it returns the counters recorded on a GPU, or
None (with the reason printed) when there are none.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd

from ..launch.runtime import BACKEND

GLOBAL_SECTORS = {
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "load_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "load_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "store_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "store_sectors",
}
"""L1 global-memory requests (warp instructions) and 32-byte sectors, loads and stores."""

MEMORY_BYTES = {
    "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum": "l1_load_bytes",
    "lts__t_sectors_srcunit_tex_op_read.sum": "l2_read_sectors",
    "dram__bytes_read.sum": "dram_read_bytes",
}
"""Bytes the threads' loads asked L1 for, sectors L1 read from L2, bytes read from DRAM."""

BANK_CONFLICTS = {
    "smsp__sass_inst_executed_op_shared_ld.sum": "shared_load_instructions",
    "smsp__sass_inst_executed_op_shared_st.sum": "shared_store_instructions",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared_load_wavefronts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "shared_store_wavefronts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared_load_bank_conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared_store_bank_conflicts",
}
"""Shared-memory instructions, wavefronts and bank conflicts -- the modern names of nvprof's
``shared_ld_bank_conflict`` / ``shared_st_bank_conflict`` events used by source 001."""


CP_ASYNC_CONFLICTS = {
    "smsp__sass_inst_executed_op_ldgsts.sum": "cp_async_instructions",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum": "cp_async_wavefronts",
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum": "cp_async_bank_conflicts",
}
"""The shared-memory side of cp.async (LDGSTS): its writes are not shared store instructions, so
BANK_CONFLICTS does not see them (chapter 8)."""

MEMORY_TRAFFIC = {
    "dram__bytes_read.sum": "dram_read_bytes",
    "dram__bytes_write.sum": "dram_write_bytes",
    "lts__t_sectors_srcunit_tex_op_read.sum": "l2_read_sectors",
}
"""DRAM bytes read and written, and 32-byte sectors L1 read from L2 (chapter 11's roofline)."""

STALLS = {f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio": r for r in (
    "selected", "not_selected", "dispatch_stall", "short_scoreboard", "long_scoreboard", "wait",
    "barrier", "mio_throttle", "math_pipe_throttle", "lg_throttle", "no_instruction",
    "branch_resolving")}
STALLS["smsp__issue_active.avg.per_cycle_active"] = "issue_active"
"""Why warps were not issuing: per issued instruction, the average number of warps in each state
(``selected`` is the issuing warp itself), and the share of cycles each scheduler issued."""

CUBLAS = "cublas"
"""Plan entry that launches cuBLAS SGEMM (CuPy's matmul) instead of one of the book's kernels."""


class NcuError(RuntimeError):
    """ncu is missing, not permitted to read counters, or its output could not be read."""


def ncu_path() -> str | None:
    return shutil.which("ncu") or next(
        (p for p in ("/usr/local/cuda/bin/ncu",) if os.path.exists(p)), None)


SGEMM_CALL = "book_sgemm"
"""The id that profiles one whole ``book.sgemm`` call (:func:`profile_call`)."""


def profile(launches: list[tuple[str, tuple[int, int, int]]], metrics: dict[str, str],
            timeout: int = 900, kernels: str = "regex:^matmul|gemm") -> pd.DataFrame:
    """Profile each (kernel id or CUBLAS, (M, N, K)) launch once -- a kernel id names a registered
    kernel or a ``book.sgemm`` plan; one row per launch, metrics renamed, with the name of the GPU
    function that ran (``function``)."""
    ncu = ncu_path()
    if BACKEND != "gpu" or ncu is None:
        raise NcuError("ncu needs a GPU and Nsight Compute's `ncu` on the PATH")
    plan = json.dumps([[k, list(size)] for k, size in launches])
    cmd = [ncu, "--metrics", ",".join(metrics), "--csv", "--print-units", "base",
           "--kernel-name", kernels, sys.executable, "-m", "book.profile.ncu", plan]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, BOOK_BACKEND="gpu"))
    text = proc.stdout + proc.stderr
    if "ERR_NVGPUCTRPERM" in text:
        raise NcuError("ncu is not permitted to read the GPU's performance counters "
                       "(ERR_NVGPUCTRPERM); see NVIDIA's note on that error")
    csv = "\n".join(line for line in proc.stdout.splitlines() if line.startswith('"'))
    if proc.returncode != 0 or not csv:
        last = [line for line in text.splitlines() if line.strip() and not line.startswith('"')]
        raise NcuError(f"ncu failed (exit {proc.returncode}): {last[-1] if last else 'no output'}")
    raw = pd.read_csv(io.StringIO(csv), thousands=",")
    table = raw.pivot_table(index="ID", columns="Metric Name", values="Metric Value",
                            aggfunc="first").sort_index()
    if [k for k, _ in launches] == [SGEMM_CALL]:  # one call, all its kernels: their sum
        names = " + ".join(dict.fromkeys(raw.groupby("ID")["Kernel Name"].first()))
        table = table.rename(columns=metrics)[list(metrics.values())].astype(float).sum().to_frame().T
        table.insert(0, "function", [names])
        table.insert(0, "kernel", [SGEMM_CALL])
        for i, axis in enumerate("MNK"):
            table.insert(1 + i, axis, [launches[0][1][i]])
        return table
    if len(table) != len(launches):
        raise NcuError(f"ncu profiled {len(table)} kernels for {len(launches)} launches")
    table = table.rename(columns=metrics)[list(metrics.values())].astype(float)
    table.insert(0, "function", raw.groupby("ID")["Kernel Name"].first().sort_index().values)
    table.insert(0, "kernel", [k for k, _ in launches])
    for i, axis in enumerate("MNK"):
        table.insert(1 + i, axis, [size[i] for _, size in launches])
    return table.reset_index(drop=True)


def profile_call(M: int, N: int, K: int, metrics: dict[str, str]) -> pd.DataFrame:
    """One ``book.sgemm`` call profiled whole: the counters of every kernel its plan launches
    (split-K's reduction, stream-K's tiles, shares and fix-up) summed into one row, the
    functions named in ``function``."""
    return profile([(SGEMM_CALL, (M, N, K))], metrics,
                   kernels="regex:^matmul|gemm|splitk|streamk")


def counters(launches, metrics: dict[str, str], name: str) -> pd.DataFrame | None:
    """Counters for these launches: measured now (GPU with ncu; saved as results ``name``),
    else recorded on a GPU, else None. Prints where they come from."""
    from ..harness import results
    if BACKEND == "gpu":
        try:
            calls = [(k, size) for k, size in launches if k == SGEMM_CALL]
            rest = [(k, size) for k, size in launches if k != SGEMM_CALL]
            df = pd.concat([profile(rest, metrics)] + [profile_call(*size, metrics)
                                                      for _, size in calls], ignore_index=True)
            df = results.keep(df, name)
        except NcuError as exc:
            print(f"No hardware counters: {exc}")
            return None
        print(f"Counters measured with ncu on {df.device.iloc[0]} in this run, {df.date.iloc[0]}.")
        return df
    return results.recorded_or_none(
        name, "No GPU here: hardware counters {source} (ncu).",
        "No GPU here and no recorded counters: the model is shown alone.")


def _run(plan: list) -> None:
    """Child process: launch every planned kernel once on random inputs (made once per size, on
    the GPU: ncu counts the kernels, and the inputs only need to be real data)."""
    from ..harness.check import device_inputs
    from . import find
    from ..launch.runtime import synchronize, xp
    inputs = {}
    for kernel_id, (M, N, K) in plan:
        if (M, N, K) not in inputs:
            inputs[M, N, K] = device_inputs(M, N, K, seed=0)
        A, B = inputs[M, N, K]
        C = xp.full((M, N), np.nan, dtype=np.float32)
        if kernel_id == CUBLAS:
            xp.matmul(A, B, out=C)
        elif kernel_id == SGEMM_CALL:
            from ..blas import sgemm
            sgemm(A, B, out=C)
        else:
            find(kernel_id).launch(A, B, C, M, N, K)
        synchronize()


if __name__ == "__main__":
    _run(json.loads(sys.argv[1]))
