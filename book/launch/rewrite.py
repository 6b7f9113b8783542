"""The emulator's rewrites of a CUDA C source before the C++ compiler sees it: ``__shared__``
declarations into cuda_emu.h's checked arrays, ``extern __shared__`` into the launch's dynamic
buffer, casts to vector pointers into checked casts (``book/launch/emulator.py`` compiles the
result with ``include/cuda_emu.h``)."""
from __future__ import annotations

import os
import re

from . import cuda_source, rewrite_memory

_EXTERN_SHARED = re.compile(
    r"^(\s*)extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?([A-Za-z_][\w ]*?)\s+(\w+)\s*\[\s*\]\s*;",
    re.M)


_SHARED_DECL = re.compile(
    r"(?:^|(?<=[{;]))(?P<indent>[ \t]*)(?P<quals>(?:(?:static|volatile)\s+)*)__shared__\s+"
    r"(?P<rest>(?:__align__\s*\(\s*\d+\s*\)\s*)?[^;{}()]*);", re.M)
"""A static __shared__ declaration, whatever its form: at a line's start or after { or ; on
it, with static or volatile, one or several declarators (``float As[16][16], Bs[16][16];``)."""
_DECLARATOR = re.compile(r"^\s*(\w+)\s*((?:\[[^\]\[]+\]\s*)*)$")


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def _checked_shared(match: re.Match) -> str:
    """Each array of a static __shared__ declaration as cuda_emu.h's shared_array (its indices
    checked; in check mode its accesses too); each scalar as a plain static thread_local; both
    volatile where declared so (a loop that waits on one reads it each time). A form
    it cannot read is left as it was (the __shared__ macro then makes it static thread_local)."""
    indent, rest = match.group("indent"), match.group("rest")
    rest = re.sub(r"__align__\s*\(\s*\d+\s*\)\s*", "", rest)
    volatile = "volatile " if re.search(r"\bvolatile\b", match.group("quals") + rest) else ""
    rest = re.sub(r"\bvolatile\b\s*", "", rest).strip()
    pieces = _split_top(rest)
    head = re.match(r"^([A-Za-z_][\w ]*?)\s+(\w+\s*(?:\[[^\]\[]+\]\s*)*)$", pieces[0].strip())
    if not head:
        return match.group(0)
    ctype, declarators = head.group(1), [head.group(2)] + pieces[1:]
    out = []
    for text in declarators:
        d = _DECLARATOR.match(text)
        if not d:
            return match.group(0)
        name, dims = d.groups()
        sizes = re.findall(r"\[([^\]]+)\]", dims)
        if not sizes:
            out.append(f"static thread_local {volatile}{ctype} {name};")
            continue
        args = ", ".join(f"({x})" for x in sizes)
        declared = ctype + "".join(f"[{x.strip()}]" for x in sizes)
        out.append(f'static thread_local ::cuda_emu::shared_array<{volatile}{ctype}, {args}> {name}'
                   f'{{"{name}", "{declared}"}};')
    return indent + " ".join(out)


_CUDA_HEADERS = re.compile(
    r"^\s*#\s*include\s*[<\"]((?:cuda_bf16|cuda_fp8|mma|cooperative_groups|cuda_pipeline|"
    r"cuda_awbarrier|curand_kernel|curand|cuda/[\w/]+|cub/[\w/.]+|thrust/[\w/.]+|"
    r"cooperative_groups/[\w/.]+)(?:\.h|\.hpp|\.cuh)?)[>\"]", re.M)


def unsupported_header(text: str) -> str | None:
    """The first CUDA library header ``text`` includes that the emulator does not provide."""
    m = _CUDA_HEADERS.search(text)
    return m.group(1) if m else None


def checking() -> bool:
    """Whether the emulator's check mode is on (``BOOK_EMU_CHECK=1``): shared-memory races,
    reads of unwritten shared memory and out-of-bounds indices of __shared__ arrays."""
    return os.environ.get("BOOK_EMU_CHECK", "0") == "1"


def emulate_source(text: str) -> str:
    """Rewrite every static ``__shared__`` array into cuda_emu.h's shared_array (its indices are
    checked; in check mode its accesses too), ``extern __shared__ T name[];`` to read the
    launch's dynamic shared buffer, and casts to vector pointers (``reinterpret_cast<float4*>``)
    into cuda_emu.h's vector_cast, which checks their alignment as the GPU does; drop
    ``#include <cuda_fp16.h>`` (cuda_emu.h has its __half)."""
    text = cuda_source.FP16_INCLUDE.sub(r"// \1: cuda_emu.h's __half", text)
    text = rewrite_memory.rewrite(text)  # global memory: indexes and casts (before __shared__'s)
    text = _SHARED_DECL.sub(_checked_shared, text)
    return _EXTERN_SHARED.sub(
        r"\1#define \3 (reinterpret_cast<\2*>(::cuda_emu::dynamic_smem))", text)
