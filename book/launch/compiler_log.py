"""What the GPU compiler says about a source: ptxas's resource report, the hints beside its errors,
its warnings about the reader's own lines.

* :func:`ptxas_report` compiles the source with NVRTC for a GPU architecture and reads ptxas's
  report (registers, shared memory, stack frame, spills) -- no GPU needed. The answer (report or
  compile error) is kept on disk under :func:`~book.launch.cuda_source.cache_dir`, keyed by the
  text, options, target and NVRTC version, so that each build is made once however many
  processes ask.
* :func:`compile_hint` adds a line to NVRTC's errors where they have a known way around;
  :func:`compiler_warnings` keeps a compiler's warnings about the source's own files (both
  compilers: NVRTC's and the emulator's g++).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from .cuda_source import FP16_INCLUDE, KernelSourceError, cache_dir, cuda_include_dir, source_files

_PTXAS_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_PTXAS_NUMBERS = {
    "local_size_bytes": re.compile(r"(\d+) bytes stack frame"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
    "num_regs": re.compile(r"Used (\d+) registers"),
    "shared_size_bytes": re.compile(r"(\d+) bytes smem"),
}


def parse_ptxas_log(log: str) -> dict[str, dict]:
    """ptxas -v output -> {kernel: {num_regs, shared_size_bytes, local_size_bytes, spills, arch}}."""
    report: dict[str, dict] = {}
    current = None
    for line in log.splitlines():
        entry = _PTXAS_ENTRY.search(line)
        if entry:
            current = report.setdefault(entry.group(1), {"arch": entry.group(2)})
            continue
        if current is None:
            continue
        for key, pattern in _PTXAS_NUMBERS.items():
            m = pattern.search(line)
            if m:
                current[key] = int(m.group(1))
    for values in report.values():
        for key in _PTXAS_NUMBERS:
            values.setdefault(key, 0)
    return report


GPU_ONLY_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?:cooperative_groups(?:\.h|/\w+\.h)|'
                              r'cuda/[\w/]+)[>"]', re.M)
"""``#include <cooperative_groups.h>`` (or one of its parts), ``<cuda/std/limits>`` (libcu++):
the CUDA toolkit's headers hold them (CCCL's for libcu++), and NVRTC compiles them for a GPU;
the emulator has cooperative groups' block and warp groups and refuses libcu++, naming it."""


def header_options(text: str) -> tuple[str, ...]:
    """The -I option NVRTC needs where ``text`` includes one of the CUDA toolkit's headers it
    compiles (cuda_fp16.h, cuda_bf16.h, cuComplex.h, cooperative_groups.h: NVRTC searches no
    folder of its own), else none."""
    wanted = FP16_INCLUDE.search(text) or GPU_ONLY_INCLUDE.search(text)
    folder = cuda_include_dir() if wanted else None
    options = (f"-I{folder}",) if folder else ()
    cccl = cccl_include_dir() if GPU_ONLY_INCLUDE.search(text) else None
    return options + ((f"-I{cccl}",) if cccl and cccl != folder else ())


@functools.lru_cache(maxsize=1)
def cccl_include_dir() -> str | None:
    """A folder holding CCCL's nv/target, which cooperative_groups.h includes: beside the CUDA
    headers found (CUDA 13 keeps CCCL in include/cccl), in $CUDA_PATH or /usr/local/cuda; None if
    none has it (NVRTC then names the missing header)."""
    roots = [cuda_include_dir()] + [f"{r}/include" for r in (os.environ.get("CUDA_PATH"), "/usr/local/cuda") if r]
    for root in filter(None, roots):
        for folder in (Path(root) / "cccl", Path(root)):
            if (folder / "nv" / "target").is_file():
                return str(folder)
    return None


def ptxas_report(text: str, filename: str, options: tuple[str, ...], arch: str = "sm_90",
                 names: tuple[str, ...] = (), ptx_only: bool = False) -> dict[str, dict]:
    """Compile with NVRTC for ``arch`` and return ptxas's resource report for every kernel.

    ``ptx_only``: compile to PTX for the architecture's virtual one (compute_90), without ptxas
    -- the front end's errors, at a fraction of the cost (0.3 s for a 09_sgemm.cu build with -G,
    where ptxas takes 1.4 s more) -- and return {MODULE: {"shared_size_bytes": ...}}, the static
    shared memory the PTX declares for all its kernels together (a bound for each).

    Works without a GPU: NVRTC is a library (the pip package nvidia-cuda-nvrtc-cu12 provides it
    for CuPy). Raises RuntimeError naming the cause where NVRTC cannot be loaded. ``names``: the
    name expressions of kernels without C linkage (``k``, ``k<128, float>``), reported under
    those names instead of their mangled ones. Functions without __device__ are device functions,
    as in CuPy's compiles.
    """
    try:
        from cupy.cuda import nvrtc
        version = ".".join(map(str, nvrtc.getVersion()))
    except Exception as exc:  # CuPy missing, or NVRTC library missing
        raise RuntimeError(f"the GPU compiler (NVRTC through CuPy) is not available: {exc}") from exc
    flags = ([f"-arch=compute_{arch.removeprefix('sm_')}"] if ptx_only else [f"-arch={arch}", "-Xptxas=-v"])
    flags += ["--device-as-default-execution-space", *options]
    key = hashlib.sha256("\0".join([text, filename, version, *flags, "names:", *names]).encode()
                         ).hexdigest()[:32]
    stored = cache_dir("nvrtc") / f"{Path(filename).stem}-{key}.json"
    try:
        answer = json.loads(stored.read_text())
    except (OSError, ValueError):
        answer = _nvrtc_answer(nvrtc, text, filename, flags, names, ptx_only)
        with tempfile.NamedTemporaryFile("w", dir=stored.parent, delete=False) as tmp:
            json.dump(answer, tmp)
        os.replace(tmp.name, stored)  # atomic: another process reads all of it or none
    if "error" in answer:
        hint = ("\n(cuda_fp16.h is one of the CUDA toolkit's headers, and none was found: install "
                "nvidia-cuda-runtime-cu12 as requirements.txt does, or set CUDA_PATH to a CUDA "
                "toolkit)" if "cuda_fp16.h" in answer["error"] and cuda_include_dir() is None else "")
        raise KernelSourceError(f"{filename} does not compile (NVRTC):\n{answer['error']}{hint}"
                                f"{compile_hint(answer['error'])}")
    if not answer["report"]:  # seen with CUDA 13's NVRTC: it no longer passes ptxas -v output
        raise RuntimeError(f"NVRTC {version} returned no ptxas report")
    return answer["report"]


MODULE = "*"
"""The report's key for what a PTX-only compile says of the whole module (ptxas_report)."""
_PTX_SHARED = re.compile(r"^\s*\.shared\s+(?:\.align\s+\d+\s+)?\.[bsuf](8|16|32|64)\s+[^\s;\[]+"
                         r"(?:\[(\d+)\])?\s*;", re.M)


def ptx_shared_bytes(ptx: str) -> int:
    """The bytes of the static ``.shared`` variables a PTX module declares (not ``.extern``
    ones: dynamic shared memory)."""
    return sum(int(bits) // 8 * int(count or 1) for bits, count in _PTX_SHARED.findall(ptx))


def _nvrtc_answer(nvrtc, text: str, filename: str, flags: list[str], names=(),
                  ptx_only: bool = False) -> dict:
    """{"report": ptxas's report} or {"error": NVRTC's log}, from one NVRTC compile."""
    prog = nvrtc.createProgram(text, filename, [], [])
    try:
        for name in names:
            nvrtc.addNameExpression(prog, name)
        nvrtc.compileProgram(prog, flags)
        if ptx_only:
            ptx = nvrtc.getPTX(prog)
            ptx = ptx.decode(errors="replace") if isinstance(ptx, bytes) else ptx
            return {"report": {MODULE: {"shared_size_bytes": ptx_shared_bytes(ptx)}}}
        report = parse_ptxas_log(nvrtc.getProgramLog(prog))
        for name in names:
            lowered = nvrtc.getLoweredName(prog, name)
            if lowered in report:
                report[name] = report.pop(lowered)
        return {"report": report}
    except nvrtc.NVRTCError:
        return {"error": nvrtc.getProgramLog(prog)}
    finally:
        nvrtc.destroyProgram(prog)


_MISSING_HEADER = re.compile(r'(?:cannot|could not) open source file "([^"]+)"')
_WARNING = re.compile(r"^(?P<file>[^:(\n]+)(?::(?P<line>\d+):(?:\d+:)?|\((?P<nline>\d+)\):) "
                      r"warning(?: #[\w-]+)?: (?P<text>.*)$", re.M)


_HOST_API = re.compile(r'identifier "(cuda(?:Malloc\w*|Memcpy\w*|Free\w*|DeviceSynchronize|'
                       r'DeviceReset|GetLastError|EventCreate|StreamCreate|SetDevice)|main)" is undefined')


def compile_hint(log: str) -> str:
    """A line to add to NVRTC's compile errors where they have a known way around ("" if not)."""
    name = re.search(r"#pragma nv_mangled_name (.+)", log)
    if "__nv_name_map" in log and name:
        return (f"\n(The kernel's name as given to load_kernel, {name.group(1).strip()}, is NVRTC's "
                f"name expression: NVRTC reads it as C++ after the file, so each template argument "
                f"must be a type or a constant the file knows, in the template's order: float, not "
                f"float32; 256, not N.)")
    if "device-side kernel launch" in log:
        return ("\n(A kernel that launches a kernel (dynamic parallelism) needs relocatable device "
                "code and CUDA's device runtime (nvcc -rdc=true -lcudadevrt), which NVRTC as the "
                "book uses it, and the emulator, do not have: launch the second kernel from Python "
                "after the first, or do its work in the first.)")
    if _HOST_API.search(log):
        return ("\n(This file holds host code -- main, cudaMalloc, cudaMemcpy, a <<<grid, block>>> "
                "launch -- and load_kernel compiles kernels only, as NVRTC does: keep the "
                "__global__ functions and the __device__ code they call, and do the host's part from "
                "Python: to_device for cudaMalloc and cudaMemcpy, kernel(grid, block, args) for the "
                "<<<>>> launch, to_host to copy the result back.)")
    m = _MISSING_HEADER.search(log)
    if m:
        return (f"\n(NVRTC, the GPU compiler, finds no header {m.group(1)}: it has none of the C++ "
                f"standard library's headers. Drop the #include and use CUDA's built-ins (min, max, "
                f"sqrtf, printf...) or code of your own; the book replaces the C library's headers "
                f"(cstdio, cstdint, cmath, climits, cfloat...) and CUDA's runtime headers itself. A "
                f"header of your own: #include \"it.cuh\" with quotes, beside the .cu file.)")
    return ""


def compiler_warnings(log: str, text: str, compiler: str) -> list[str]:
    """The warnings of a compiler's ``log`` (g++'s ``f.cu:12:5: warning: ...``, NVRTC's
    ``f.cu(12): warning #549-D: ...``) about lines of the source's own files, as
    ``"f.cu:12: ... (compiler)"``; the emulator's headers' own are left out."""
    files, found = source_files(text), []
    for m in _WARNING.finditer(log):
        if m.group("file") in files:
            line = (f"{m.group('file')}:{m.group('line') or m.group('nline')}: "
                    f"{m.group('text')} ({compiler})")
            if line not in found:
                found.append(line)
    return found
