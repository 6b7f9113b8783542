"""The emulator's rewrites of a CUDA C source before the C++ compiler sees it (after
``rewrite_memory``'s, for global memory; ``book/launch/emulator.py`` compiles the result with
``include/cuda_emu.h``), for shared memory (``include/cuda_emu/shared.h`` says what each type
does):

* ``__shared__ T a[N][M];`` into a ``shared_array`` (indices checked; its elements are T&),
  ``__shared__ T x;`` into a ``shared_scalar`` where it is volatile or in check mode, and
  ``extern __shared__ T d[];`` into a ``dynamic_array`` over the launch's bytes;
* the uses of those names that C++ would read otherwise than CUDA: ``sizeof`` (the GPU's size),
  ``auto x = <init naming one>;`` (a copy of the value, not a proxy), one of them or an element
  of one passed to a function (the C++ object itself, so that templates deduce as on a GPU);
* ``volatile T*`` variables and parameters into ``volatile_ptr``, whose accesses let the
  block's other threads run first (warp-synchronous code, spin-waits);
* a kernel's ``__launch_bounds__(most, ...)`` into a check, at its body's start, of the
  launch's threads a block against ``most`` (a GPU refuses more).

Every rewrite keeps the text's line breaks, so that compiler messages and ``__LINE__`` name the
learner's lines. The scans of the last two kinds run on a copy of the text whose comments and
string literals are blanked (``rewrite_memory.blank``), so that nothing inside them is rewritten.
"""
from __future__ import annotations

import os
import re

from . import cuda_source, rewrite_memory
from .rewrite_memory import _apply, blank

_ALIGN = r"(?:(?:__align__|alignas)\s*\((?:[^()]|\([^()]*\))*\)\s*)"
_EXTERN_SHARED = re.compile(
    r"(?:^|(?<=[{;}]))(?P<indent>[ \t]*)extern\s+__shared__\s+" + _ALIGN + r"?"
    r"(?P<type>[A-Za-z_][\w ]*?)\s+" + _ALIGN + r"?(?P<name>\w+)\s*\[\s*\]\s*;", re.M)

_SHARED_DECL = re.compile(
    r"(?:^|(?<=[{;}]))(?P<indent>[ \t]*)(?P<quals>(?:(?:static|volatile)\s+)*)__shared__\s+"
    r"(?P<rest>" + _ALIGN + r"?(?:[^;{}()]|\([^;{}()]*\))*);", re.M)
"""A static __shared__ declaration, whatever its form: at a line's start or after {, } or ; on
it, with static or volatile, one or several declarators (``float As[16][16], Bs[16][16];``),
over several lines."""
_DECLARATOR = re.compile(r"^\s*(\w+)\s*((?:\[[^\]\[]+\]\s*)*)$")


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and parentheses."""
    return rewrite_memory.split_top(text, "[(", "])")


def _checked_shared(match: re.Match, check: bool, names: set[str],
                    scalars: set[str] | None = None) -> str:
    """Each array of a static __shared__ declaration as a shared_array; each scalar as a plain
    static thread_local, or a shared_scalar where it is volatile or in check mode; volatile
    where declared so. A form it cannot read is left as it was (the __shared__ macro then makes
    it static thread_local). The names rewritten go into ``names``."""
    indent, rest = match.group("indent"), match.group("rest")
    rest = re.sub(_ALIGN, "", rest)
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
        if not sizes and not (check or volatile):
            out.append(f"static thread_local {ctype} {name};")
            continue
        names.add(name)
        if not sizes:
            if scalars is not None:
                scalars.add(name)
            out.append(f'static thread_local ::cuda_emu::shared_scalar<{volatile}{ctype}> {name}'
                       f'{{"{name}", "{ctype}"}};')
            continue
        args = ", ".join(f"({' '.join(x.split())})" for x in sizes)
        declared = ctype + "".join(f"[{' '.join(x.split())}]" for x in sizes)
        out.append(f'static thread_local ::cuda_emu::shared_array<{volatile}{ctype}, {args}> {name}'
                   f'{{"{name}", "{declared}"}};')
    return indent + " ".join(out) + "\n" * match.group(0).count("\n")


def _dynamic_shared(match: re.Match, names: set[str]) -> str:
    """``extern __shared__ T name[];`` as a dynamic_array<T> (a constant: it holds its name)."""
    ctype, name = " ".join(match.group("type").split()), match.group("name")
    names.add(name)
    return (f'{match.group("indent")}static constexpr ::cuda_emu::dynamic_array<{ctype}> {name}'
            f'{{"{name}", "{ctype}"}};' + "\n" * match.group(0).count("\n"))


# ---- edits at positions of the text ------------------------------------------------------------

def _close(blanked: str, i: int) -> int:
    """Index just past the bracket that closes the one at ``i`` (any of ( [ {), or -1."""
    depth = 0
    for j in range(i, len(blanked)):
        if blanked[j] in "([{":
            depth += 1
        elif blanked[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


def _enclosing(blanked: str) -> list[int]:
    """For each position, where the innermost bracket open there starts (-1: none)."""
    stack, out = [], [-1] * (len(blanked) + 1)
    for i, ch in enumerate(blanked):
        if ch in ")]}" and stack:
            stack.pop()
        out[i] = stack[-1] if stack else -1
        if ch in "([{":
            stack.append(i)
    return out


_NOT_CALLS = {"if", "while", "for", "switch", "return", "sizeof", "decltype", "alignof", "typeid",
              "catch", "static_assert", "case", "else", "do", "throw", "new", "delete", "alignas",
              "__launch_bounds__", "__align__", "__attribute__", "defined", "noexcept"}


def _is_call(blanked: str, open_: int) -> bool:
    """Whether the parenthesis at ``open_`` opens a call's (or a function's) parameters (not
    those of a call the rewrites wrote themselves, ``::cuda_emu::global_index(``)."""
    before = re.search(r"(\w+|[)\]>])\s*$", blanked[:open_])
    return (bool(before) and before.group(1) not in _NOT_CALLS and
            not re.search(r"\bcuda_emu\s*::\s*\w+\s*(?:<[^<>;{}]*>)?\s*$", blanked[:open_]))


# ---- volatile pointers ---------------------------------------------------------------------------

_VOLATILE_PTR = re.compile(
    r"(?<![\w:])(?P<type>(?:(?:const|volatile|unsigned|signed|long|short|struct)\s+)*"
    r"[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*(?:\s*<[^<>;{}()]*>)?(?:\s+(?:const|volatile))*)"
    r"\s*\*(?!\s*[*&=])")
_CAST_BEFORE = re.compile(r"(?:::\s*cuda_emu\s*::\s*)?\b\w+_cast\s*<\s*$")
_CAST_AFTER = re.compile(r"\s*(?:,\s*\d+\s*)?>\s*\(")
_PARAMETER = re.compile(r"\s*(?:const\s+)?(?:__restrict__\s+|__restrict\s+)?(?P<name>[A-Za-z_]\w*)"
                        r"\s*(?=[,)=\[])")
_BODY = re.compile(r"\s*(?:(?:const|noexcept|mutable|override|final)\b\s*)*(?:->[^{;]*)?\{")


def _volatile_pointers(text: str) -> str:
    """Each ``volatile T*`` as a volatile_ptr: a cast to one is wrapped in as_volatile_ptr; a
    parameter of a function defined here keeps its type under another name, and the body starts
    with the volatile_ptr of that name (so that a template parameter T of ``volatile T*`` is
    still deduced); any other (a variable, a member, a return type) changes its type."""
    blanked = blank(text)
    edits, inside = [], None
    for m in _VOLATILE_PTR.finditer(blanked):
        words = m.group("type").split()
        if "volatile" not in words:
            continue
        target = " ".join(w for w in words if w != "volatile")
        cast = _CAST_BEFORE.search(blanked, 0, m.start())
        after = _CAST_AFTER.match(blanked, m.end())
        if cast and after:
            close = _close(blanked, after.end() - 1)
            if close > 0:
                edits += [(cast.start(), cast.start(), "::cuda_emu::as_volatile_ptr("),
                          (close, close, ")")]
            continue
        inside = inside or _enclosing(blanked)
        open_, param = inside[m.start()], _PARAMETER.match(blanked, m.end())
        if param and open_ >= 0 and blanked[open_] == "(" and _is_call(blanked, open_):
            close = _close(blanked, open_)
            body = _BODY.match(blanked, close) if close > 0 else None
            if body:
                name = param.group("name")
                edits += [(param.start("name"), param.end("name"), f"cuda_emu_volatile_{name}"),
                          (body.end(), body.end(), f" auto {name} = ::cuda_emu::as_volatile_ptr("
                                                   f"cuda_emu_volatile_{name});")]
                continue
            if blanked[close:].lstrip()[:1] in (";", ","):
                continue  # a declaration's parameter: the definition keeps the same type
        space = " " if blanked[m.end():m.end() + 1].isidentifier() else ""
        edits.append((m.start(), m.end(), f"::cuda_emu::volatile_ptr<{target}>{space}"))
    return _apply(text, edits)


# ---- uses of the rewritten names -----------------------------------------------------------------

_AUTO = re.compile(r"\bauto\s*(?P<ref>&?)\s*(?P<name>[A-Za-z_]\w*)\s*=(?!=)")
_DECLARATOR_NEXT = re.compile(r"\s*&?\s*[A-Za-z_]\w*\s*=(?!=)")


def _initializers(blanked: str, start: int):
    """(start, end) of the initializer from ``start`` to the end of its declarator, and of the
    next declarators' (``auto a = x, b = y;``)."""
    i, depth, n = start, 0, len(blanked)
    while i < n:
        ch = blanked[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and ch == ";":
            break
        elif depth == 0 and ch == ",":
            nxt = _DECLARATOR_NEXT.match(blanked, i + 1)
            if nxt:
                yield start, i
                start = i = nxt.end()
                continue
        i += 1
    yield start, i


_WORD = re.compile(r"\w+")
_POSTFIX = re.compile(r"\s*(?:(\[)|(?:\.|->)\s*\w+)")


def _operand_end(blanked: str, i: int, members: bool = True) -> int:
    """Where an operand that starts with a name at ``i`` ends: the name, then any [index] (and
    .member or ->member where ``members``)."""
    i = _WORD.match(blanked, i).end()
    while True:
        m = _POSTFIX.match(blanked, i)
        if not m or not (m.group(1) or members):
            return i
        end = _close(blanked, m.start(1)) if m.group(1) else m.end()
        if end < 0:
            return i
        i = end


_ATOMIC_ADDRESS = re.compile(r"\batomic[A-Z]\w*\s*\(\s*(?P<amp>&)\s*")
"""``atomicAdd(&`` -- of a __shared__ element or scalar, the ``&x`` becomes
``atomic_address(x)`` (shared_uses.h): the address, checked as an atomic access in check mode."""


def _last_index(blanked: str, start: int, end: int) -> int:
    """The ``[`` of the last index of the operand ``blanked[start:end]`` (``s[i][j]``: j's)."""
    i, last = start, -1
    while i < end:
        if blanked[i] == "[":
            last, i = i, _close(blanked, i)
        else:
            i += 1
    return last


def _uses(text: str, names: set[str]) -> str:
    """The uses of the rewritten ``names`` that C++ would read otherwise than CUDA: ``sizeof``
    (as sizeof of gpu_t), ``auto`` (value_of, ``auto&``: ref_of), and a variable or an element
    (``s``, ``s[i][j]``) passed to a function (arg_of), the address of one taken for an atomic
    (atomic_address) or otherwise (address_of: ``&s[64]``, the end, is legal)."""
    if not names:
        return text
    blanked = blank(text)
    mentions = re.compile(r"(?<![\w.>])(?<!::)\b(?:" + "|".join(map(re.escape, sorted(names))) +
                          r")\b")
    edits = []
    for m in re.finditer(r"\bsizeof\b\s*(?!\.\.\.)", blanked):
        at = m.end()
        if blanked.startswith("(", at):
            close = _close(blanked, at)
            if close > 0 and mentions.search(blanked, at + 1, close - 1):
                edits += [(at + 1, at + 1, "::cuda_emu::gpu_t<decltype("),
                          (close - 1, close - 1, ")>")]
        elif mentions.match(blanked, at):
            end = _operand_end(blanked, at)
            edits += [(at, at, "(::cuda_emu::gpu_t<decltype("), (end, end, ")>)")]
    for m in _AUTO.finditer(blanked):
        wrap = "::cuda_emu::ref_of(" if m.group("ref") else "::cuda_emu::value_of("
        for start, end in _initializers(blanked, m.end()):
            while start < end and blanked[start].isspace():
                start += 1
            while end > start and blanked[end - 1].isspace():
                end -= 1
            if start < end and mentions.search(blanked, start, end):
                edits += [(start, start, wrap), (end, end, ")")]
    atomic = set()
    for m in _ATOMIC_ADDRESS.finditer(blanked):
        if mentions.match(blanked, m.end()):
            end = _operand_end(blanked, m.end(), members=False)
            if blanked[end:].lstrip()[:1] in (",", ")"):
                atomic.add(m.start("amp"))
                edits += [(m.start("amp"), m.start("amp") + 1, "::cuda_emu::atomic_address("),
                          (end, end, ")")]
    for m in mentions.finditer(blanked):  # &s[i]: address_of, where &s[N] (its end) is legal
        amp = len(blanked[:m.start()].rstrip()) - 1
        if amp < 0 or amp in atomic or blanked[amp] != "&" or rewrite_memory.binary_amp(blanked, amp):
            continue
        end = _operand_end(blanked, m.start(), members=False)
        after = blanked[end:].lstrip()
        if blanked[end - 1:end] != "]" or after[:1] in (".", "[", "(") or after.startswith("->"):
            continue
        last = _last_index(blanked, m.end(), end)
        edits += [(amp, amp + 1, "::cuda_emu::address_of("), (last, last + 1, ", ::cuda_emu::Index("),
                  (end - 1, end, "))")]
    inside = _enclosing(blanked)
    for m in mentions.finditer(blanked):
        before = blanked[:m.start()].rstrip()
        end = _operand_end(blanked, m.start(), members=False)
        if not before or before[-1] not in "(," or blanked[end:].lstrip()[:1] not in (")", ","):
            continue
        open_ = len(before) - 1 if before[-1] == "(" else inside[m.start()]
        if open_ >= 0 and blanked[open_] == "(" and _is_call(blanked, open_):
            edits += [(m.start(), m.start(), "::cuda_emu::arg_of("), (end, end, ")")]
    return _apply(text, edits)


_CUDA_HEADERS = re.compile(
    r"^\s*#\s*include\s*[<\"]((?:cuda_fp8|mma|cuda_pipeline|"
    r"cuda_awbarrier|curand_kernel|curand|cuda/[\w/]+|cub/[\w/.]+|thrust/[\w/.]+|"
    r"cooperative_groups/(?!reduce\.h)[\w/.]+)(?:\.h|\.hpp|\.cuh)?)[>\"]", re.M)
_GROUPS_INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*[<"]cooperative_groups(?:\.h|/reduce\.h)[>"])', re.M)
"""cooperative_groups.h and its reduce.h: cuda_emu.h has their block and warp groups (groups.h)."""


def unsupported_header(text: str) -> str | None:
    """The first CUDA library header ``text`` includes that the emulator does not provide."""
    m = _CUDA_HEADERS.search(text)
    return m.group(1) if m else None


def checking() -> bool:
    """Whether the emulator's check mode is on (``BOOK_EMU_CHECK=1``): shared-memory races,
    reads of unwritten shared memory and out-of-bounds indices of __shared__ arrays."""
    return os.environ.get("BOOK_EMU_CHECK", "0") == "1"


_LAUNCH_BOUNDS = re.compile(r"\b__launch_bounds__\s*\(")


def _launch_bounds(text: str) -> str:
    """Each kernel with ``__launch_bounds__(most, ...)``: a check of the launch's threads a block
    against ``most`` at the start of its body (``cuda_emu::launch_bounds``; on the same line, so
    the kernel's lines keep their numbers, and naming the line of ``__launch_bounds__`` as the
    source has it), where a GPU refuses the launch."""
    blanked = blank(text)
    edits = []
    for m in _LAUNCH_BOUNDS.finditer(blanked):
        close = _close(blanked, m.end() - 1)
        if close < 0:
            continue
        most = _split_top(text[m.end():close - 1])[0].strip()
        depth = 0
        for i in range(close, len(blanked)):
            ch = blanked[i]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif depth == 0 and ch == ";":
                break  # a declaration without a body
            elif depth == 0 and ch == "{":  # (__LINE__ is the brace's: its #line-mapped line)
                back = blanked.count("\n", m.start(), i)
                edits.append((i + 1, i + 1, f" ::cuda_emu::launch_bounds(__LINE__ - {back}, "
                                            f"(long long)({most}));"))
                break
    return _apply(text, edits)


def _shared_references(text: str, names: set[str]) -> str:
    """``float& mine = s[t];`` of a __shared__ element as ``decltype(auto) mine = s[t];``: the
    element's proxy (a T& where it is untracked), so that its accesses are checked for races as
    ``s[t]``'s are (they once went unseen); ``mine`` joins ``names``."""
    if not names:
        return text
    blanked = blank(text)
    edits = []
    for m in rewrite_memory.ELEMENT_REFERENCE.finditer(blanked):
        if m.group("array") not in names:
            continue
        end = _operand_end(blanked, m.start("array"), members=False)
        if blanked[end:].lstrip()[:1] != ";":
            continue  # (an element's member, or an expression: left as written)
        edits.append((m.start(), m.start("name"), "decltype(auto) "))
        names.add(m.group("name"))
    return _apply(text, edits)


def emulate_source(text: str, check: bool | None = None) -> str:
    """``text`` as the emulator compiles it (``check``: for the check mode; by default as
    ``BOOK_EMU_CHECK`` says): global memory's rewrites (``rewrite_memory``), then shared
    memory's and volatile pointers' (above); ``#include <cuda_fp16.h>`` dropped (cuda_emu.h
    has its __half)."""
    check = checking() if check is None else check
    text = cuda_source.FP16_INCLUDE.sub(r"// \1: cuda_emu.h's __half", text)
    text = _GROUPS_INCLUDE.sub(r"// \1: cuda_emu.h's cooperative groups", text)
    text = rewrite_memory.rewrite(text)  # global memory: indexes and casts (before the rest)
    text = rewrite_memory.derefs(text)  # *p, *(p + i): checked as p[0]
    if check:
        text = rewrite_memory.device_updates(text)
    names: set[str] = set()
    scalars: set[str] = set()
    text = _SHARED_DECL.sub(lambda m: _checked_shared(m, check, names, scalars), text)
    text = _EXTERN_SHARED.sub(lambda m: _dynamic_shared(m, names), text)
    text = _volatile_pointers(_shared_references(text, names))
    text = _uses(text, names)
    if check:
        text = _scalar_lines(text, scalars)
    return _launch_bounds(text)


_WRAPPED = re.compile(r"(?:::cuda_emu::\w+(?:<[^<>()]*>)?|\b(?:sizeof|alignof|decltype))\s*\(\s*$")


def _scalar_lines(text: str, scalars: set[str]) -> str:
    """Check mode: each ``count`` of a __shared__ scalar read or written in an expression, from
    its declaration to the end of the block that declares it, as
    ``::cuda_emu::at_line(count, __LINE__)``, so that a race on it names its line, as an
    element's does (at_line leaves a variable that shadows it as it is). Left alone: a
    declaration of the name (``bool last = ...``, ``float* total``: so is ``x * total``, which
    then names no line), its address (``&count``), a member or call of it, what _uses wrapped
    already (an argument, ``auto``, ``sizeof``)."""
    if not scalars:
        return text
    blanked = blank(text)
    inside, edits = _enclosing(blanked), []
    for decl in re.finditer(r"::cuda_emu::shared_scalar<[^;{}]*?>\s+(\w+)\s*\{", blanked):
        name = decl.group(1)
        if name not in scalars:
            continue
        start = _close(blanked, decl.end() - 1)  # past its {"name", "type"}
        block = inside[decl.start()]  # (the block that declares it; -1: the file)
        end = _close(blanked, block) if block >= 0 else len(blanked)
        mention = re.compile(r"(?<![\w.>&\[])(?<!::)\b" + re.escape(name) + r"\b")
        for m in mention.finditer(blanked, start, end):
            after = blanked[m.end():].lstrip()[:2]
            if after[:1] in ("{", ".", "(", "[") or after in ("->", "::"):
                continue
            before = blanked[max(0, m.start() - 80):m.start()]
            word = re.search(r"([A-Za-z_]\w*)[\s*&]*$", before)  # (float* total: a declaration)
            if _WRAPPED.search(before) or re.search(r"(?<!&)&\s*$", before) or (
                    word and word.group(1) not in rewrite_memory.KEYWORDS_BEFORE_EXPR) or \
                    rewrite_memory._declared_after_comma(blanked, m.start()):
                continue  # (a declaration: a type's name before it, or a comma of one)
            # (switch takes no class, whose conversion to int& is a template: the value)
            switch = re.search(r"\bswitch\s*\(\s*$", before) and after[:1] == ")"
            edits += [(m.start(), m.start(), "::cuda_emu::value_of(::cuda_emu::at_line("
                       if switch else "::cuda_emu::at_line("),
                      (m.end(), m.end(), ", __LINE__))" if switch else ", __LINE__)")]
    return _apply(text, edits)
