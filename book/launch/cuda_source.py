"""Reading CUDA C sources: includes, kernel signatures, the folders of headers and builds.

Both backends start here (chapter 0 introduces the launch API that uses it):

* :func:`read_source` expands the book's own ``#include "..."`` files into one text, with
  ``#line`` markers so that compiler messages still name the original file and line, and
  replaces the system headers the compilers lack (SYSTEM_HEADERS). Both compilers see the same
  text, and a change to an included helper changes every cache key.
* :func:`scan` finds each ``__global__`` function (extern "C" or not, templates too) and each
  ``__constant__`` / ``__device__`` variable; :func:`kernel_signatures` and :func:`signature`
  give a kernel's parameters, so that arguments are checked the same way before every launch
  on either backend.
* :mod:`book.launch.compiler_log` reads what NVRTC says of it (ptxas's report, errors, warnings).
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

KERNEL_DIR = Path(__file__).resolve().parents[1] / "kernels"

# C type -> NumPy dtype (Linux LP64, on the host as in CUDA: long is 64-bit). The integer types'
# other spellings (``long int``, ``unsigned short int``, ``signed``...) are read by _integer.
SCALAR_TYPES = {
    "float": np.float32, "double": np.float64, "bool": np.bool_,
    "__half": np.float16, "half": np.float16,
    "__nv_bfloat16": np.uint16, "nv_bfloat16": np.uint16,  # (NumPy has no bfloat16: its bits)
    "int": np.int32, "unsigned": np.uint32, "unsigned int": np.uint32,
    "long": np.int64, "unsigned long": np.uint64,
    "long long": np.int64, "long long int": np.int64,
    "unsigned long long": np.uint64, "unsigned long long int": np.uint64,
    "short": np.int16, "unsigned short": np.uint16,
    "char": np.int8, "signed char": np.int8, "unsigned char": np.uint8,
    "int8_t": np.int8, "int16_t": np.int16, "int32_t": np.int32, "int64_t": np.int64,
    "uint8_t": np.uint8, "uint16_t": np.uint16, "uint32_t": np.uint32, "uint64_t": np.uint64,
    "size_t": np.uint64, "ptrdiff_t": np.int64, "ssize_t": np.int64, "intptr_t": np.int64,
    "uintptr_t": np.uint64, "intmax_t": np.int64, "uintmax_t": np.uint64,
}
VECTOR_TYPES = {"__half2": (np.float16, 2), "half2": (np.float16, 2),
                "__nv_bfloat162": (np.uint16, 2), "nv_bfloat162": (np.uint16, 2)}
"""CUDA's vector types beyond the pattern char1 .. double4 (_VECTOR): element type and count."""
_VECTOR = re.compile(r"(u?)(char|short|int|long|longlong|float|double)([1-4])")
_VECTOR_ELEMENT = {"char": np.int8, "short": np.int16, "int": np.int32, "long": np.int64,
                   "longlong": np.int64, "float": np.float32, "double": np.float64}
_INT_WORDS = {"signed", "unsigned", "short", "long", "int", "char"}


def _integer(words: list[str]):
    """The NumPy type of a C integer type spelled with the keywords signed, unsigned, short,
    long, int and char in any order (``long unsigned int``), or None."""
    if not words or set(words) - _INT_WORDS or words.count("signed") + words.count("unsigned") > 1:
        return None
    unsigned, longs = "unsigned" in words, words.count("long")
    if "char" in words:
        size = 8 if len(words) == 1 + ("signed" in words or unsigned) else 0
    elif "short" in words:
        size = 16 if longs == 0 and words.count("short") == 1 else 0
    else:
        size = {0: 32, 1: 64, 2: 64}.get(longs, 0)
    if not size or words.count("int") > 1:
        return None
    return np.dtype(f"{'u' if unsigned else ''}int{size}").type


def type_info(base: str) -> tuple[str, np.dtype, int, int] | None:
    """(kind, element dtype, element count, alignment) of a C type that a kernel argument can
    have: kind "scalar" (float, int64_t, unsigned long...) or "vector" (float4, uint2, __half2);
    None for any other type. Vector alignments are CUDA's (vector_types.h): float2 8 bytes,
    float4 16, float3 4 (its element's)."""
    words = base.split()
    if base in SCALAR_TYPES or _integer(words):
        dtype = np.dtype(SCALAR_TYPES.get(base) or _integer(words))
        return "scalar", dtype, 1, dtype.itemsize
    if base in VECTOR_TYPES:
        dtype, count = np.dtype(VECTOR_TYPES[base][0]), VECTOR_TYPES[base][1]
        return "vector", dtype, count, dtype.itemsize * count
    m = _VECTOR.fullmatch(base)
    if m:
        dtype = np.dtype(_VECTOR_ELEMENT[m.group(2)])
        if m.group(1):
            dtype = np.dtype(f"u{dtype.name}")
        count = int(m.group(3))
        align = dtype.itemsize * {1: 1, 2: 2, 3: 1, 4: 4}[count]
        return "vector", dtype, count, min(align, 16)
    return None


class KernelSourceError(ValueError):
    """A kernel source that cannot be read, or a kernel name it does not define."""


@dataclass(frozen=True)
class Param:
    """One kernel parameter as declared: ``const float* __restrict__ A`` -> ctype 'const float*'.

    ``kind`` is what the parameter's type is (a pointer's: what it points to): "scalar",
    "vector" (float4...), "struct" (any other type, passed by value: its size is checked against
    the compiler's sizeof) or "void" (``void*``: any array). ``problem`` says why the launcher
    cannot pass it ("" where it can): loading that kernel raises KernelSourceError with it."""

    name: str
    ctype: str          # const (of what a pointer points to) + base + "*" (for messages)
    base: str           # 'float', 'float4', 'int64_t', 'Params', ...
    pointer: bool
    kind: str = "scalar"
    problem: str = ""

    @property
    def dtype(self) -> np.dtype:
        """The NumPy type of one element (a vector type's: of its components)."""
        info = type_info(self.base)
        return info[1] if info else np.dtype(np.uint8 if self.kind == "void" else np.void)

    @property
    def itemsize(self) -> int:
        """Bytes of one element (16 for float4, 12 for float3)."""
        info = type_info(self.base)
        return info[1].itemsize * info[2] if info else 1

    @property
    def alignment(self) -> int:
        """Bytes a pointer to this type must be aligned to (16 for float4, 4 for float3)."""
        info = type_info(self.base)
        return info[3] if info else 1


def resolve(source: str | Path) -> Path:
    """A kernel file: a name in ``book/kernels/`` or any existing path."""
    path = Path(source)
    if not path.is_absolute() and not path.exists():
        path = KERNEL_DIR / path
    if not path.is_file():
        raise KernelSourceError(f"kernel source {source!r} not found (looked in {KERNEL_DIR})")
    return path.resolve()


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')
_SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([\w./]+)[>"]\s*(?://.*|/\*.*\*/\s*)?$')

_INT_LIMITS = ("#define INT8_MIN (-128)\n#define INT8_MAX 127\n#define UINT8_MAX 255\n"
               "#define INT16_MIN (-32768)\n#define INT16_MAX 32767\n#define UINT16_MAX 65535\n"
               "#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"
               "#define UINT32_MAX 4294967295U\n#define INT64_MIN (-9223372036854775807L - 1)\n"
               "#define INT64_MAX 9223372036854775807L\n#define UINT64_MAX 18446744073709551615UL\n"
               "#define SIZE_MAX UINT64_MAX")
_STDINT = ("typedef signed char int8_t; typedef short int16_t; typedef int int32_t; "
           "typedef long int64_t;\ntypedef unsigned char uint8_t; typedef unsigned short uint16_t; "
           "typedef unsigned int uint32_t; typedef unsigned long uint64_t;\ntypedef long intptr_t; "
           "typedef unsigned long uintptr_t; typedef long intmax_t; typedef unsigned long uintmax_t;\n"
           "namespace std { using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t; "
           "using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t; using ::intptr_t; "
           "using ::uintptr_t; using ::size_t; using ::ptrdiff_t; }\n" + _INT_LIMITS)
_MATH = ("#define INFINITY __int_as_float(0x7f800000)\n#define NAN __int_as_float(0x7fffffff)\n"
         "#define HUGE_VALF INFINITY\n#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)\n"
         "#define M_E 2.7182818284590452354\n#define M_LOG2E 1.4426950408889634074\n"
         "#define M_LOG10E 0.43429448190325182765\n#define M_LN2 0.69314718055994530942\n"
         "#define M_LN10 2.30258509299404568402\n#define M_PI 3.14159265358979323846\n"
         "#define M_PI_2 1.57079632679489661923\n#define M_PI_4 0.78539816339744830962\n"
         "#define M_1_PI 0.31830988618379067154\n#define M_2_PI 0.63661977236758134308\n"
         "#define M_2_SQRTPI 1.12837916709551257390\n#define M_SQRT2 1.41421356237309504880\n"
         "#define M_SQRT1_2 0.70710678118654752440\nnamespace std { "
         + " ".join(f"using ::{f};" for f in (
             "abs fabs sqrt cbrt exp exp2 expm1 log log2 log10 log1p pow sin cos tan asin acos atan "
             "atan2 sinh cosh tanh erf erfc tgamma lgamma floor ceil round trunc rint lround fmod "
             "fmin fmax fma hypot copysign isnan isinf isfinite signbit min max").split()) + " }")
_FLOAT = ("#define FLT_MAX 3.402823466e+38F\n#define FLT_MIN 1.175494351e-38F\n"
          "#define FLT_TRUE_MIN 1.401298464e-45F\n#define FLT_EPSILON 1.192092896e-07F\n"
          "#define FLT_MANT_DIG 24\n#define FLT_DIG 6\n#define FLT_MAX_EXP 128\n"
          "#define FLT_MIN_EXP (-125)\n"
          "#define DBL_MAX 1.7976931348623158e+308\n#define DBL_MIN 2.2250738585072014e-308\n"
          "#define DBL_EPSILON 2.2204460492503131e-16\n#define DBL_MANT_DIG 53\n#define DBL_DIG 15")
_LIMITS = ("#define CHAR_BIT 8\n#define SCHAR_MIN (-128)\n#define SCHAR_MAX 127\n#define UCHAR_MAX 255\n"
           "#define CHAR_MIN SCHAR_MIN\n#define CHAR_MAX SCHAR_MAX\n#define SHRT_MIN (-32768)\n"
           "#define SHRT_MAX 32767\n#define USHRT_MAX 65535\n#define INT_MIN (-2147483647 - 1)\n"
           "#define INT_MAX 2147483647\n#define UINT_MAX 4294967295U\n"
           "#define LONG_MIN (-9223372036854775807L - 1)\n#define LONG_MAX 9223372036854775807L\n"
           "#define ULONG_MAX 18446744073709551615UL\n#define LLONG_MIN (-9223372036854775807LL - 1)\n"
           "#define LLONG_MAX 9223372036854775807LL\n#define ULLONG_MAX 18446744073709551615ULL")
_STDDEF = "namespace std { using ::size_t; using ::ptrdiff_t; }"
SYSTEM_HEADERS = {
    **dict.fromkeys(("cuda_runtime.h", "cuda.h", "cuda_runtime_api.h", "device_launch_parameters.h",
                     "device_functions.h", "vector_types.h"), None),
    **dict.fromkeys(("stdio.h", "cstdio", "stdlib.h", "cstdlib", "string.h", "cstring", "assert.h",
                     "cassert", "stdbool.h"), ""),
    "stdint.h": _STDINT, "cstdint": _STDINT, "math.h": _MATH, "cmath": _MATH,
    "float.h": _FLOAT, "cfloat": _FLOAT, "limits.h": _LIMITS, "climits": _LIMITS,
    "stddef.h": _STDDEF, "cstddef": _STDDEF,
}
"""Headers a learner's kernel includes that the book's compilers lack, and what replaces them.
None: CUDA's runtime headers, whose kernel-side contents (threadIdx, vector types, atomics...)
both compilers have built in: the line becomes a comment. A text: a C library header that
NVRTC (the GPU compiler, which has no C or C++ library headers) lacks but whose functions it has
built in (printf, sqrtf, memcpy, assert): NVRTC gets the text (typedefs and macros: int32_t,
INT_MAX, FLT_MAX, M_PI...), the emulator's C++ compiler the header itself."""


_PRELUDE = ["#ifdef __CUDACC_RTC__  // math.h's constants, which nvcc's own includes define"] + [
    line for m in re.finditer(r"^#define (\w+) (.*)$", _MATH, re.M)
    for line in (f"#ifndef {m.group(1)}", m.group(0), "#endif")] + ["#endif"]
"""What every source starts with: INFINITY, NAN, HUGE_VALF and math.h's M_ constants for NVRTC,
which has no math.h, where a kernel written for nvcc uses them without an include (nvcc's
cuda_runtime.h brings math.h in; the emulator's C++ library has them)."""


def _system_header(name: str, line: str, lineno: int, filename: str) -> list[str] | None:
    """The lines that replace ``#include <name>`` (see SYSTEM_HEADERS), or None to keep it."""
    if name == "cuComplex.h":
        text = _cucomplex()
        return None if text is None else [
            "#ifdef __CUDACC_RTC__", line.strip(), "#else  // (the emulator: the header's text, its "
            "vector types being cuda_emu.h's)", '#line 1 "cuComplex.h"', *text.splitlines(),
            "#endif", f'#line {lineno + 1} "{filename}"']
    if name not in SYSTEM_HEADERS:
        return None
    rtc = SYSTEM_HEADERS[name]
    if rtc is None:
        return [f"// {line.strip()}: dropped (the kernel compilers have CUDA's built-ins)"]
    return [f"// {line.strip()}: NVRTC has no C library headers; its built-ins and these lines",
            "#ifdef __CUDACC_RTC__", *rtc.splitlines(), "#else", line.strip(), "#endif",
            f'#line {lineno + 1} "{filename}"']


def read_source(path: Path, _seen: tuple[Path, ...] = (), files: list | None = None) -> str:
    """The file's text with its local ``#include "x"`` files expanded in place, and the system
    headers of SYSTEM_HEADERS replaced (``#line`` markers keep every line's number). ``files``
    gets the path of every file read."""
    if path in _seen:
        raise KernelSourceError(f"{path.name}: circular #include")
    if files is not None:
        files.append(path)
    out = ([] if _seen else _PRELUDE) + [f'#line 1 "{path.name}"']
    text = path.read_text(encoding="utf-8-sig")  # (a byte-order mark dropped)
    for lineno, line in enumerate(text.splitlines(), start=1):
        match = _INCLUDE.match(line)
        system = _SYSTEM_INCLUDE.match(line)
        replaced = system and _system_header(system.group(1), line, lineno, path.name)
        if replaced:
            out += replaced
        elif match:
            inc = path.parent / match.group(1)
            if not inc.is_file():
                inc = KERNEL_DIR / match.group(1)
            if not inc.is_file():
                raise KernelSourceError(f"{path.name}:{lineno}: cannot find #include \"{match.group(1)}\"")
            out.append(read_source(inc, _seen + (path,), files))
            out.append(f'#line {lineno + 1} "{path.name}"')
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def source_files(text: str) -> set[str]:
    """The names of the files whose lines ``text`` (from read_source) holds."""
    return set(re.findall(r'^#line \d+ "([^"]+)"', text, re.M))


def strip_comments(text: str) -> str:
    """Remove // and /* */ comments, keeping line breaks so that line numbers stay right."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)



_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w+)[ \t]*(\w*)[ \t]*(.*?)[ \t]*$")


@functools.lru_cache(maxsize=256)
def default_defines(text: str) -> dict[str, str]:
    """The macros that ``text`` (from read_source) gives a default: ``#ifndef X``, ``#define X
    value``, ``#endif``, inside no other conditional (include guards aside), X named nowhere
    before. A build with -DX=value is then the same build as one without it: load_kernel drops
    such defines, so that both share one compile and one cache entry (chapter 10's variants
    name their defaults, the tests and notebooks' loads of the same kernels do not)."""
    lines = strip_comments(text).splitlines()
    found: dict[str, str] = {}
    guards: list[bool] = []  # the open conditionals: an include guard or not
    before = ""              # the code before the current line
    for i, line in enumerate(lines):
        m = _DIRECTIVE.match(line)
        if m and m.group(1) in ("if", "ifdef", "ifndef"):
            name = m.group(2)
            nxt = _DIRECTIVE.match(lines[i + 1]) if i + 1 < len(lines) else None
            fresh = (m.group(1) == "ifndef" and nxt is not None and nxt.group(1) == "define"
                     and nxt.group(2) == name and not re.search(rf"\b{name}\b", before))
            end = _DIRECTIVE.match(lines[i + 2]) if i + 2 < len(lines) else None
            if fresh and nxt.group(3) and not any(not g for g in guards) and end \
                    and end.group(1) == "endif":
                found[name] = nxt.group(3)
            guards.append(bool(fresh and not nxt.group(3)))
        elif m and m.group(1) == "endif" and guards:
            guards.pop()
        before += line + "\n"
    return found

# ---- kernel signatures, and the variables set from Python -------------------------------------

_MASKED = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|'
                     r'^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', re.M | re.S)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([\w: ]+?)[ \t]*$", re.M)


def _mask(text: str) -> str:
    """Comments, literals and preprocessor lines blanked, line breaks kept, so that the braces
    and semicolons in them do not count ("C" kept, for extern "C")."""
    def blank(m: re.Match) -> str:  # the same length: positions stay those of ``text``
        s = m.group(0)
        if s[0] in "\"'":
            return s if s == '"C"' else s[0] + " " * (len(s) - 2) + s[0]
        return re.sub(r"[^\n]", " ", s)
    return _MASKED.sub(blank, text)


def _split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at each ``sep`` outside (), [], {} and <>."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{<"
        depth -= ch in ")]}>"
        if ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def _close(text: str, i: int) -> int:
    """The index of the bracket that closes the one at ``i`` (len(text) if none)."""
    pair = {"(": ")", "[": "]", "{": "}", "<": ">"}[text[i]]
    depth = 0
    for j in range(i, len(text)):
        depth += text[j] == text[i]
        depth -= text[j] == pair
        if depth == 0:
            return j
    return len(text)


def _drop_calls(text: str, names: tuple[str, ...]) -> str:
    """``text`` without ``name(...)`` for each of ``names`` (nested parentheses included)."""
    for m in reversed(list(re.finditer(r"\b(?:%s)\s*\(" % "|".join(names), text))):
        text = text[:m.start()] + " " + text[_close(text, m.end() - 1) + 1:]
    return text


_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "__grid_constant__",
               "register", "struct", "class", "union", "enum", "typename"}


def _parse_param(text: str, index: int, kernel: str, aliases: dict[str, str]) -> Param:
    """One parameter's declaration (``const float in[]``, ``long n``, ``Params p``) -> Param;
    ``aliases`` maps typedefs, #defines and template parameters to the types they name."""
    decl = _split_top(" ".join(text.split()), "=")[0].strip()  # a default value dropped
    dims = re.search(r"(\s*\[[^\[\]]*\])+$", decl)
    extents = re.findall(r"\[", dims.group(0)) if dims else []
    decl = decl[:dims.start()] if dims else decl
    tokens = re.findall(r"[A-Za-z_][\w:]*|\*|&", decl)
    words = [t for t in tokens if t not in _QUALIFIERS and t not in "*&"]
    name = f"arg{index}"  # (a parameter may have no name)
    if len(words) >= 2 and tokens[-1] == words[-1] and words[-1] not in _INT_WORDS | {"float",
                                                                                     "double", "bool"}:
        name, tokens = words[-1], tokens[:-1]
    for _ in range(8):  # typedefs of typedefs
        if not any(t in aliases for t in tokens):
            break
        tokens = [x for t in tokens for x in (re.findall(r"[A-Za-z_][\w:]*|\*|&", aliases[t])
                                              if t in aliases else [t])]
    words = [t for t in tokens if t not in _QUALIFIERS and t not in "*&"]
    words = [w[5:] if w.startswith("std::") else w.lstrip(":") for w in words]
    stars = tokens.count("*") + (1 if extents else 0)
    first_star = tokens.index("*") if "*" in tokens else len(tokens)
    const = "const" in tokens[:first_star]
    base = " ".join(words)
    info = type_info(base)
    kind = info[0] if info else "void" if base == "void" else "struct"
    ctype = ("const " if const else "") + base + ("*" if stars else "")
    where = f"{kernel}: parameter {index} '{' '.join(text.split())}'"
    problem = ""
    if "&" in tokens:
        problem = f"{where} is a reference; a kernel takes values and pointers"
    elif len(extents) > 1:
        problem = (f"{where} is an array of arrays, which the launcher does not pass: declare it "
                   f"{base}* and index it [row * cols + col]")
    elif stars > 1:
        problem = f"{where} is a pointer to pointers, which the launcher does not pass"
    elif not words or (kind == "void" and not stars):
        problem = f"{where} cannot be read"
    elif stars and kind == "struct":
        problem = (f"{where} points to {base}, a type whose arrays the launcher cannot check: "
                   f"pass arrays of float, double, integer, half, bfloat16 (as uint16 bits) or vector types "
                   f"(float4...), "
                   f"or void* for any array")
    return Param(name=name, ctype=ctype, base=base, pointer=bool(stars), kind=kind, problem=problem)


@dataclass(frozen=True)
class KernelDecl:
    """A ``__global__`` function as the source declares it."""

    name: str                  # how load_kernel names it: "k", or "ns::k" in a namespace
    qualified: str             # how C++ names it from the global namespace: "::k", "::ns::k"
    extern_c: bool             # C linkage: its name on the GPU is its own (else mangled)
    template: tuple[tuple[str, str, str | None], ...] | None  # (typename | value, name, default)
    param_texts: tuple[str, ...]
    line: int
    file: str

    def template_text(self) -> str:
        return "template <" + ", ".join(f"{k} {n}" + (f" = {d}" if d else "")
                                        for k, n, d in self.template) + ">"


@dataclass(frozen=True)
class Variable:
    """A ``__constant__`` or ``__device__`` variable at namespace scope."""

    name: str          # "coef", or "ns::coef" in a namespace
    base: str          # its element type as written ("float")
    const: bool
    line: int
    file: str
    constant: bool = False  # __constant__ (kernels only read it), not __device__


@dataclass
class Source:
    """What :func:`scan` finds in a source: its kernels, its variables and its type names."""

    kernels: dict[str, KernelDecl]
    variables: dict[str, Variable]
    aliases: dict[str, str]
    problems: dict[str, str]   # a kernel name -> why it cannot be loaded (e.g. overloaded)
    refusal: str | None = None  # why none of its kernels can be (a __constant__ write)


def _line_of(text: str, pos: int) -> tuple[int, str]:
    """(line, file) of ``pos`` in read_source's text, from its ``#line`` markers."""
    line, file = text.count("\n", 0, pos) + 1, "?"
    marker = None
    for marker in re.finditer(r'^#line (\d+) "([^"]+)"', text[:pos], re.M):
        pass
    if marker:
        line = int(marker.group(1)) + text.count("\n", marker.end() + 1, pos)
        file = marker.group(2)
    return line, file


def scan(text: str, defines: dict[str, str] | None = None) -> Source:
    """The kernels (templates included) and the namespace-scope ``__constant__`` / ``__device__``
    variables of a source, however they are laid out: inside ``extern "C" { ... }`` blocks and
    namespaces, after ``template <...>``, with ``__launch_bounds__((BM * BN) / 256, 1)``
    before or after ``void``, with device functions and structs between them."""
    masked = _mask(text)
    aliases = {k: v for k, v in _DEFINE.findall(strip_comments(text)) if type_info(v.strip())}
    aliases.update({k: str(v) for k, v in (defines or {}).items() if type_info(str(v).strip())})
    found = Source({}, {}, aliases, {})
    scopes: list[str] = []  # '"C"' for an extern "C" block, else a namespace's name
    start = depth = i = 0
    while i < len(masked):
        ch = masked[i]
        depth += ch in "(["
        depth -= ch in ")]"
        if depth or ch not in ";{}":
            i += 1
            continue
        chunk = masked[start:i]
        head = " ".join(chunk.split())
        if ch == "{" and head == 'extern "C"':
            scopes.append('"C"')
        elif ch == "{" and re.fullmatch(r"(?:inline )?namespace(?: [\w:]+)?", head):
            scopes.append(head.split()[-1] if head.split()[-1] != "namespace" else "")
        elif ch == "}":
            if scopes:
                scopes.pop()
        else:
            _declaration(text, masked, chunk, start, scopes, found)
            if ch == "{":
                i = _close(masked, i)
        start = i + 1
        i += 1
    found.refusal = _constant_write(text, masked, found)
    return found


_NOT_TYPES = {"return", "case", "else", "do", "sizeof", "throw", "delete", "new", "goto"}


def _shadowed(masked: str, name: str, at: int, functions) -> bool:
    """Whether ``name`` at ``at`` is, within the function around it, a parameter or a local
    declared before it (``float scale`` in the parameter list, ``float weights[4];``)."""
    for start, body, end in functions:
        if body <= at < end:
            head = masked[start:body]
            if re.search(rf"\b{re.escape(name)}\b", head[head.index("("):]):
                return True
            for d in re.finditer(rf"\b([A-Za-z_][\w:<>]*)[\s*&]+{re.escape(name)}\s*[\[=;,){{]",
                                 masked[body:at]):
                if d.group(1) not in _NOT_TYPES:
                    return True
    return False


_DECLARATOR = re.compile(r"\s*(?:(?:const|constexpr|static|volatile|unsigned|signed)\s+)*"
                         r"([A-Za-z_][\w:<>]*)[\s*&]+[A-Za-z_]\w*\s*(?:[=\[,(]|$)")


def _declares(statement: str) -> bool:
    """Whether a name after ``statement`` (the text before it since the last ``;``, ``{`` or
    ``}``) is declared there: ``float scale`` or ``int i = 0, scale`` (in a for's parentheses
    too), not ``x * scale`` in an expression."""
    word = re.search(r"\b([A-Za-z_][\w:<>]*)[\s*&]+$", statement)
    if word and word.group(1) not in _NOT_TYPES and not re.search(
            r"[-+*/%=<>!?:|^]\s*[\w:<>]+[\s*&]+$", statement):  # (not `y = x * scale`)
        return True
    inner = re.split(r"[(;{]", statement)[-1]
    first = _DECLARATOR.match(inner)
    return bool(statement.rstrip().endswith(",") and first and first.group(1) not in _NOT_TYPES)


_WRITE_AFTER = re.compile(r"\s*(?:[-+*/%&|^]?=(?!=)|<<=|>>=|\+\+|--)")


def _constant_write(text: str, masked: str, found: Source) -> str | None:
    """Why the source cannot run, if a function writes a ``__constant__`` variable
    (``coeffs[i] = x``, ``scale *= 2``, ``++c.n``): device code can only read constant memory.
    NVRTC refuses a scalar's store but compiles an element's with a warning (none with -G), and
    the launch then fails (an H200: "unspecified launch failure", which ends the process's CUDA
    context); the emulator would keep the store. Refused on both backends, with the line."""
    names = [v.name.split("::")[-1] for v in found.variables.values() if v.constant]
    if not names:
        return None
    alt = "|".join(map(re.escape, names))
    functions = [(h.start(), h.end(), _close(masked, h.end() - 1)) for h in re.finditer(
        r"\b(?:__global__|__device__)\b[^;{}]*?\([^;{}]*\)\s*(?:const\s*)?\{", masked)]
    heads = [(start, body) for start, body, _ in functions]  # (a default argument: `= 2.0f`)
    records = [(r.end() - 1, _close(masked, r.end() - 1)) for r in re.finditer(
        r"\b(?:struct|class|union)\b[^;{}()]*\{", masked)]  # (their members are their own)
    for m in re.finditer(rf"(?<![\w.>:])(?P<pre>\+\+|--)?\s*\b(?P<name>{alt})\b", masked):
        statement = masked[max(masked.rfind(";", 0, m.start()), masked.rfind("}", 0, m.start()),
                               masked.rfind("{", 0, m.start())) + 1:m.start()]
        if re.search(r"\b__constant__\b|\bextern\b", statement):
            continue  # its declaration
        if _shadowed(masked, m.group("name"), m.start(), functions) or \
                _declares(statement) or any(a <= m.start() < b for a, b in heads + records):
            continue  # a parameter, local or member of the same name (or its declaration)
        atomic = re.search(r"\batomic\w*\s*\(\s*&\s*$", masked[max(0, m.start() - 60):m.start()])
        end = m.end()
        while True:  # past its indexes and members: coeffs[i][j], c.n
            rest = re.match(r"\s*(?:\[|\.\s*[A-Za-z_]\w*)", masked[end:])
            if not rest:
                break
            end += rest.end()
            if masked[end - 1] == "[":
                end = _close(masked, end - 1) + 1
        if m.group("pre") or atomic or _WRITE_AFTER.match(masked, end):
            line, file = _line_of(text, m.start())
            shown = " ".join(text[m.start():end].split())
            if atomic:
                shown = f"{atomic.group(0).split('(')[0].strip()}(&{shown}, ...)"
            return (f"{shown} ({file}, line {line}) writes the __constant__ variable "
                    f"{m.group('name')}: kernels can only read constant memory (NVRTC compiles "
                    f"an element's store with a warning, and on a GPU the launch fails with "
                    f"'unspecified launch failure'). Fill it from the host with "
                    f"kernel.set_constant({m.group('name')!r}, values), or declare it __device__ "
                    f"if kernels write it")
    return None


def _declaration(text, masked, chunk, start, scopes, found: Source) -> None:
    """Records the kernel, the variables or the typedef that ``chunk`` declares."""
    words = re.findall(r"[\w:]+", chunk)
    if not words:
        return
    pos = start + len(chunk) - len(chunk.lstrip())
    namespaces = [s for s in scopes if s != '"C"']
    if "__global__" in words and re.match(r"\s*(?:extern\s+)?template\s*[^\s<]", chunk):
        return  # an explicit instantiation (template __global__ void k<float>(float*);): no new kernel
    if "__global__" in words:
        _kernel(chunk, _line_of(text, pos), scopes, found)
    elif words[0] == "typedef" and "(" not in chunk and len(words) >= 3:
        if type_info(words[-1]) is None:  # (int32_t stays int32_t in messages)
            found.aliases[words[-1]] = " ".join(chunk.split()[1:-1])
    elif words[0] == "enum" and len(words) >= 2 and "(" not in chunk:  # an int, or its given type
        name, _, underlying = chunk.partition(":")
        found.aliases[name.split()[-1]] = underlying.strip() or "int"
    elif words[0] == "using" and "=" in chunk and "(" not in chunk:
        if type_info(words[1]) is None:
            found.aliases[words[1]] = chunk.split("=", 1)[1].strip()
    elif ({"__constant__", "__device__", "__managed__"} & set(words) and "extern" not in words
          and "template" not in words and not any(w.split("::")[-1] == "operator" for w in words)):
        decls = _split_top(_drop_calls(chunk, ("__align__", "alignas", "__attribute__")))
        decls = [_split_top(d, "=")[0] for d in decls]
        if any("(" in re.sub(r"\[[^\]]*\]", "", d) for d in decls):
            return  # a function's declaration
        first = re.findall(r"[A-Za-z_][\w:]*|\*", decls[0].split("[")[0])
        names = [re.findall(r"[A-Za-z_]\w*", d.split("[")[0])[-1:] for d in decls]
        if not names[0] or len(first) < 2:
            return
        base_words = [w for w in first[:-1] if w not in _QUALIFIERS | {"__constant__", "__device__",
                                                                       "__managed__", "static"}]
        for n in names:
            if n:
                name = "::".join(namespaces + n)
                found.variables[name] = Variable(name, " ".join(base_words), "const" in first,
                                                 *_line_of(text, pos), "__constant__" in words)


def _kernel(chunk: str, where: tuple[int, str], scopes: list[str], found: Source) -> None:
    text = " ".join(chunk.split())
    template = None
    m = re.match(r"template\s*<", text)
    if m:
        close = _close(text, m.end() - 1)
        template = tuple(_template_param(p) for p in _split_top(text[m.end():close]) if p.strip())
        text = text[close + 1:]
    extern_c = '"C"' in scopes or bool(re.search(r'\bextern\s*"C"', text))
    text = _drop_calls(re.sub(r'\bextern\s*"C"', " ", text),
                       ("__launch_bounds__", "__maxnreg__", "__cluster_dims__", "__attribute__",
                        "__declspec")).rstrip()
    if not text.endswith(")"):
        return
    depth, open_ = 0, None
    for j in range(len(text) - 1, -1, -1):  # the parameter list's "("
        depth += text[j] == ")"
        depth -= text[j] == "("
        if depth == 0:
            open_ = j
            break
    head = re.findall(r"[A-Za-z_][\w:]*", text[:open_])
    if not head or head[-1] == "__global__":
        return
    params = text[open_ + 1:-1].strip()
    namespaces = [s for s in scopes if s != '"C"' and s]
    name = head[-1].lstrip(":")
    qualified = "::" + "::".join(namespaces + [name])
    if not extern_c:
        name = "::".join(namespaces + [name])
    decl = KernelDecl(name, qualified, extern_c, template,
                      tuple(() if params in ("", "void") else _split_top(params)), *where)
    earlier = found.kernels.get(name)
    if earlier and not extern_c and (earlier.template != template or [
            p.ctype for p in signature(found, earlier)] != [p.ctype for p in signature(found, decl)]):
        found.problems[name] = (f"{name} is overloaded ({earlier.file}:{earlier.line} and "
                                f"{decl.file}:{decl.line}): the launcher needs one kernel of each "
                                f"name; give each its own name, or an extern \"C\" wrapper")
    found.kernels[name] = decl


def _template_param(text: str) -> tuple[str, str, str | None]:
    """``typename T = float`` -> ("typename", "T", "float"); ``int BM`` -> ("int", "BM", None)."""
    decl, *default = _split_top(" ".join(text.split()), "=")
    words = decl.split()
    kind = "typename" if words[0] in ("typename", "class") else " ".join(words[:-1])
    return kind, words[-1], default[0].strip() if default else None


def kernel_signatures(text: str, defines: dict[str, str] | None = None) -> dict[str, tuple[Param, ...]]:
    """Every kernel that is no template -> its parameters (extern "C" or not, in an
    ``extern "C" { }`` block or a namespace: see :func:`scan`)."""
    found = scan(text, defines)
    return {name: signature(found, decl) for name, decl in found.kernels.items()
            if decl.template is None}


def signature(found: Source, decl: KernelDecl,
              arguments: dict[str, str] | None = None) -> tuple[Param, ...]:
    """A kernel's parameters, with a template's ``arguments`` ({parameter: argument}) in place."""
    aliases = {**found.aliases, **(arguments or {})}
    return tuple(_parse_param(p, i, decl.name, aliases) for i, p in enumerate(decl.param_texts, 1))


def template_arguments(decl: KernelDecl, expression: str) -> dict[str, str]:
    """``k<128, float>`` -> {"BM": "128", "T": "float"} for ``template <int BM, typename T>``;
    KernelSourceError where the arguments do not fit the template."""
    m = re.fullmatch(r"\s*[\w:]+\s*<(.*)>\s*", expression, re.S)
    given = [a.strip() for a in _split_top(m.group(1))] if m and m.group(1).strip() else []
    least = sum(d is None for _, _, d in decl.template)
    if not least <= len(given) <= len(decl.template):
        count = f"{least} to {len(decl.template)}" if least < len(decl.template) else str(least)
        raise KernelSourceError(
            f"{expression!r}: {decl.name} is {decl.template_text()} ({decl.file}, line "
            f"{decl.line}): give {count} template argument{'s' * (count != '1')}, as in "
            f"load_kernel(src, \"{example(decl)}\")")
    return {n: (given[i] if i < len(given) else d) for i, (_, n, d) in enumerate(decl.template)}


def example(decl: KernelDecl) -> str:
    """A name expression that instantiates the template ``decl``: ``k<128, float>``."""
    return decl.name + "<" + ", ".join(d or ("float" if k == "typename" else "128")
                                       for k, _, d in decl.template) + ">"


FP16_INCLUDE = re.compile(
    r'^[ \t]*#[ \t]*include[ \t]*[<"]((?:cuda_fp16|cuda_bf16|cuComplex)\.h(?:pp)?)[>"]', re.M)
"""``#include <cuda_fp16.h>``, ``<cuda_bf16.h>`` or ``<cuComplex.h>``: NVRTC gets the CUDA
headers' folder for it (header_options); the emulator drops the line (cuda_emu.h provides the
fp16 headers' types) or reads the header's text (:func:`_cucomplex`)."""


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


@functools.lru_cache(maxsize=1)
def _cucomplex() -> str | None:
    """The CUDA toolkit's cuComplex.h (cuFloatComplex, cuCmulf...) without its #include of
    vector_types.h, for the emulator, whose float2 and double2 are cuda_emu.h's; None where no
    toolkit headers are found (the include then fails as any missing header does)."""
    folder = cuda_include_dir()
    path = Path(folder) / "cuComplex.h" if folder else None
    if path is None or not path.is_file():
        return None
    return re.sub(r'^[ \t]*#[ \t]*include[ \t]*"vector_types\.h"[^\n]*', "// (vector_types.h: cuda_emu.h's)",
                  path.read_text(), flags=re.M)


def cache_dir(kind: str) -> Path:
    """Where the book keeps builds of one ``kind`` ("cpu": the emulator's libraries, "nvrtc":
    ptxas reports): ``$BOOK_CACHE_DIR/<kind>``, by default under ~/.cache/gpu-matmul-book."""
    root = os.environ.get("BOOK_CACHE_DIR") or Path.home() / ".cache" / "gpu-matmul-book"
    path = Path(root) / kind
    path.mkdir(parents=True, exist_ok=True)
    return path
