"""Reading CUDA C sources: includes, kernel signatures, and the GPU compiler's resource report.

Both backends start here (chapter 0 introduces the launch API that uses it):

* :func:`read_source` expands the book's own ``#include "..."`` files into one text, with
  ``#line`` markers so that compiler messages still name the original file and line. Both
  compilers see the same text, and a change to an included helper changes every cache key.
* :func:`kernel_signatures` finds each ``extern "C" __global__`` function and its parameters,
  so that arguments are checked the same way before every launch on either backend.
* :func:`ptxas_report` compiles the source with NVRTC for a GPU architecture and reads ptxas's
  report (registers, shared memory, stack frame, spills) -- no GPU needed. The answer (report or
  compile error) is kept on disk under :func:`cache_dir`, keyed by the text, options, target and
  NVRTC version, so that each build is made once however many processes ask.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

KERNEL_DIR = Path(__file__).resolve().parents[1] / "kernels"

# C type -> NumPy dtype of one element, and the number of such elements in the C type.
SCALAR_TYPES = {
    "float": np.float32, "double": np.float64,
    "int": np.int32, "unsigned": np.uint32, "unsigned int": np.uint32,
    "long long": np.int64, "long long int": np.int64,
    "unsigned long long": np.uint64, "unsigned long long int": np.uint64, "size_t": np.uint64,
    "short": np.int16, "unsigned short": np.uint16,
    "char": np.int8, "signed char": np.int8, "unsigned char": np.uint8, "bool": np.bool_,
    "__half": np.float16, "half": np.float16,
}
VECTOR_TYPES = {
    "float2": (np.float32, 2), "float4": (np.float32, 4), "double2": (np.float64, 2),
    "int2": (np.int32, 2), "int4": (np.int32, 4), "__half2": (np.float16, 2), "half2": (np.float16, 2),
}


class KernelSourceError(ValueError):
    """A kernel source that cannot be read, or a kernel name it does not define."""


@dataclass(frozen=True)
class Param:
    """One kernel parameter as declared: ``const float* __restrict__ A`` -> ctype 'const float*'."""

    name: str
    ctype: str          # as written, without __restrict__ (for messages)
    base: str           # 'float', 'float4', 'int', ...
    pointer: bool

    @property
    def dtype(self) -> np.dtype:
        base = VECTOR_TYPES[self.base][0] if self.base in VECTOR_TYPES else SCALAR_TYPES[self.base]
        return np.dtype(base)

    @property
    def alignment(self) -> int:
        """Bytes a pointer to this type must be aligned to (16 for float4)."""
        width = VECTOR_TYPES[self.base][1] if self.base in VECTOR_TYPES else 1
        return self.dtype.itemsize * width


def resolve(source: str | Path) -> Path:
    """A kernel file: a name in ``book/kernels/`` or any existing path."""
    path = Path(source)
    if not path.is_absolute() and not path.exists():
        path = KERNEL_DIR / path
    if not path.is_file():
        raise KernelSourceError(f"kernel source {source!r} not found (looked in {KERNEL_DIR})")
    return path.resolve()


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')


def read_source(path: Path, _seen: tuple[Path, ...] = ()) -> str:
    """The file's text with its local ``#include "x"`` files expanded in place."""
    if path in _seen:
        raise KernelSourceError(f"{path.name}: circular #include")
    out = [f'#line 1 "{path.name}"']
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        match = _INCLUDE.match(line)
        if match:
            inc = path.parent / match.group(1)
            if not inc.is_file():
                inc = KERNEL_DIR / match.group(1)
            if not inc.is_file():
                raise KernelSourceError(f"{path.name}:{lineno}: cannot find #include \"{match.group(1)}\"")
            out.append(read_source(inc, _seen + (path,)))
            out.append(f'#line {lineno + 1} "{path.name}"')
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def strip_comments(text: str) -> str:
    """Remove // and /* */ comments, keeping line breaks so that line numbers stay right."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


_KERNEL = re.compile(
    r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+'
    r'(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)')


def _parse_param(text: str, kernel: str) -> Param:
    words = text.replace("*", " * ").replace("__restrict__", " ").replace("__restrict", " ").split()
    if len(words) < 2:
        raise KernelSourceError(f"{kernel}: cannot read parameter {text.strip()!r}")
    name, words = words[-1], words[:-1]
    pointer = words.count("*")
    base = " ".join(w for w in words if w not in ("const", "volatile", "*"))
    if pointer > 1 or (base not in SCALAR_TYPES and base not in VECTOR_TYPES):
        raise KernelSourceError(f"{kernel}: parameter {text.strip()!r} has a type the launcher "
                                f"does not support")
    ctype = " ".join(w for w in words if w != "*") + ("*" if pointer else "")
    return Param(name=name, ctype=ctype, base=base, pointer=bool(pointer))


def kernel_signatures(text: str) -> dict[str, tuple[Param, ...]]:
    """Every ``extern "C" __global__ void name(...)`` in the text -> its parameters."""
    found = {}
    for match in _KERNEL.finditer(strip_comments(text)):
        name, params = match.group(1), match.group(2).strip()
        items = [] if params in ("", "void") else params.split(",")
        found[name] = tuple(_parse_param(p, name) for p in items)
    return found


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


FP16_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](cuda_fp16\.h(?:pp)?)[>"]', re.M)
"""``#include <cuda_fp16.h>``: NVRTC gets the CUDA headers' folder for it (header_options); the
emulator drops the line (cuda_emu.h provides the header's basics)."""


@functools.lru_cache(maxsize=1)
def cuda_include_dir() -> str | None:
    """A folder holding the CUDA toolkit's headers (cuda_fp16.h): CuPy's CUDA path, the pip package
    nvidia-cuda-runtime-cu12 (requirements.txt), $CUDA_PATH, or /usr/local/cuda; None if none has
    them."""
    import importlib.util
    folders = []
    try:
        import cupy
        folders.append(cupy.cuda.get_cuda_path())
    except Exception:  # CuPy missing or without a CUDA path
        pass
    spec = importlib.util.find_spec("nvidia.cuda_runtime") if importlib.util.find_spec("nvidia") else None
    if spec and spec.submodule_search_locations:
        folders += [str(Path(p).parent / "cuda_runtime") for p in spec.submodule_search_locations]
    folders += [os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for folder in folders:
        if folder and (Path(folder) / "include" / "cuda_fp16.h").is_file():
            return str(Path(folder) / "include")
    return None


def header_options(text: str) -> tuple[str, ...]:
    """The -I option NVRTC needs where ``text`` includes cuda_fp16.h (NVRTC searches no folder of
    its own), else none."""
    folder = cuda_include_dir() if FP16_INCLUDE.search(text) else None
    return (f"-I{folder}",) if folder else ()


def ptxas_report(text: str, filename: str, options: tuple[str, ...], arch: str = "sm_90") -> dict[str, dict]:
    """Compile with NVRTC for ``arch`` and return ptxas's resource report for every kernel.

    Works without a GPU: NVRTC is a library (the pip package nvidia-cuda-nvrtc-cu12 provides it
    for CuPy). Raises RuntimeError naming the cause where NVRTC cannot be loaded.
    """
    try:
        from cupy.cuda import nvrtc
        version = ".".join(map(str, nvrtc.getVersion()))
    except Exception as exc:  # CuPy missing, or NVRTC library missing
        raise RuntimeError(f"the GPU compiler (NVRTC through CuPy) is not available: {exc}") from exc
    flags = [f"-arch={arch}", "-Xptxas=-v", *options]
    key = hashlib.sha256("\0".join([text, filename, version, *flags]).encode()).hexdigest()[:32]
    stored = cache_dir("nvrtc") / f"{Path(filename).stem}-{key}.json"
    try:
        answer = json.loads(stored.read_text())
    except (OSError, ValueError):
        answer = _nvrtc_answer(nvrtc, text, filename, flags)
        with tempfile.NamedTemporaryFile("w", dir=stored.parent, delete=False) as tmp:
            json.dump(answer, tmp)
        os.replace(tmp.name, stored)  # atomic: another process reads all of it or none
    if "error" in answer:
        hint = ("\n(cuda_fp16.h is one of the CUDA toolkit's headers, and none was found: install "
                "nvidia-cuda-runtime-cu12 as requirements.txt does, or set CUDA_PATH to a CUDA "
                "toolkit)" if "cuda_fp16.h" in answer["error"] and cuda_include_dir() is None else "")
        raise KernelSourceError(f"{filename} does not compile (NVRTC):\n{answer['error']}{hint}")
    if not answer["report"]:  # seen with CUDA 13's NVRTC: it no longer passes ptxas -v output
        raise RuntimeError(f"NVRTC {version} returned no ptxas report")
    return answer["report"]


def _nvrtc_answer(nvrtc, text: str, filename: str, flags: list[str]) -> dict:
    """{"report": ptxas's report} or {"error": NVRTC's log}, from one NVRTC compile."""
    prog = nvrtc.createProgram(text, filename, [], [])
    try:
        nvrtc.compileProgram(prog, flags)
        return {"report": parse_ptxas_log(nvrtc.getProgramLog(prog))}
    except nvrtc.NVRTCError:
        return {"error": nvrtc.getProgramLog(prog)}
    finally:
        nvrtc.destroyProgram(prog)


def cache_dir(kind: str) -> Path:
    """Where the book keeps builds of one ``kind`` ("cpu": the emulator's libraries, "nvrtc":
    ptxas reports): ``$BOOK_CACHE_DIR/<kind>``, by default under ~/.cache/gpu-matmul-book."""
    root = os.environ.get("BOOK_CACHE_DIR") or Path.home() / ".cache" / "gpu-matmul-book"
    path = Path(root) / kind
    path.mkdir(parents=True, exist_ok=True)
    return path
