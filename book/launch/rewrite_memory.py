"""The emulator's rewrites for global memory (the checks live in ``include/cuda_emu/memory.h``):

* every ``p[i]`` where ``p`` is a pointer or array parameter of a ``__global__`` or
  ``__device__`` function, a local pointer or a ``__device__``/``__constant__`` array becomes
  ``p[global_index(p, line, "p[i]", (i), access)]``: an index before the start or past the end
  of the array argument ``p`` points into is an error that names the expression and its line
  (``access`` says whether it is read, written or both: in check mode, shared memory reached
  through ``p`` is checked for races);
* every cast to a pointer type -- ``reinterpret_cast<T*>(x)``, ``static_cast<T*>(x)``, a
  C-style ``(T*)x`` -- becomes ``checked_cast<T*, kind>("T", line, x)``, which checks the
  alignment a GPU needs for T (a type alias or a template parameter included: the check is
  C++'s ``alignof``, not a list of names);
* inline PTX (an ``asm`` statement with an instruction in it) that the preprocessor keeps on the
  CPU -- that is, outside ``#ifdef __CUDA_ARCH__`` -- is refused at compile time with its line
  named, instead of an x86 assembler's error.

Every rewrite keeps the text's line breaks, so that compiler messages and ``__LINE__`` still
name the learner's lines. The scans run on a copy of the text whose comments and string
literals are blanked (same length), so that nothing inside them is rewritten.
"""
from __future__ import annotations

import re

KEYWORDS_BEFORE_EXPR = {"return", "case", "else", "do", "sizeof", "throw", "co_return",
                         "co_yield", "delete", "new", "typeid", "alignof", "decltype"}


def blank(text: str) -> str:
    """``text`` with comments and the contents of string and character literals replaced by
    spaces (line breaks kept): positions in it are positions in ``text``."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = ["\n" if ch == "\n" else " " for ch in text[i:j]]
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and (text[i - 1].isalnum())):  # 1'000 digit
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out[i + 1:min(j, n)] = " " * (min(j, n) - i - 1)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _match(blanked: str, i: int, open_: str, close: str) -> int:
    """Index just past the bracket that closes the one at ``i`` (or -1)."""
    depth = 0
    for j in range(i, len(blanked)):
        ch = blanked[j]
        if ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each (start, end, replacement) made; at one position, closing insertions
    (those that start with ")") go before opening ones."""
    out, last = [], 0
    for start, end, new in sorted(edits, key=lambda e: (e[0], not e[2].startswith(")"), e[1])):
        if start < last:
            continue  # (overlaps one already made)
        out += [text[last:start], new]
        last = end
    return "".join(out + [text[last:]])


# ---- functions and their pointer parameters ---------------------------------------------------

_QUALIFIER = re.compile(r"\b(?:__global__|__device__)\b")
_SKIP_CALLS = {"__launch_bounds__", "__align__", "__attribute__", "alignas", "__declspec",
               "decltype", "__maxnreg__", "__cluster_dims__"}
_IDENT = re.compile(r"[A-Za-z_]\w*")
_LOCAL_POINTER = re.compile(r"(?<![\w:.>])(?:(?:const|volatile)\s+)*[A-Za-z_][\w:]*\s*\*+\s*"
                            r"(?:(?:__restrict__|__restrict|const)\s*)*([A-Za-z_]\w*)\s*=(?!=)")
"""A local pointer (``const float* row = in + b * n;``): indexed through global_index too, so
that ``row[-1]`` is checked against the array ``row`` points into."""
_LOCAL_AUTO = re.compile(r"(?<![\w:.>])(?:const\s+)?auto\s+([A-Za-z_]\w*)\s*=(?!=)")
"""``auto row = in + b * n;``: a pointer, maybe (its index is checked where it is one)."""
_GLOBAL_ARRAY = re.compile(r"\b(?:__device__|__constant__)\b[^;(){}=]*?\b([A-Za-z_]\w*)\s*\[")
"""A ``__device__`` or ``__constant__`` array (``__device__ float table[64];``): its indexes are
checked against its extent (global_index on an array)."""


def _functions(blanked: str, maybe: bool = False):
    """(start of body, end of body, pointer parameter names) of every __global__ or __device__
    function defined in the text; ``maybe``: with every name that may be a pointer (any
    parameter, an ``auto`` local), for checks that are no-ops on other types."""
    seen = set()
    for m in _QUALIFIER.finditer(blanked):
        i = m.end()
        while i < len(blanked):
            ch = blanked[i]
            if ch in ";{=":
                break
            if ch == "(":
                word = re.search(r"(\w+)\s*$", blanked[:i])
                close = _match(blanked, i, "(", ")")
                if close < 0:
                    break
                if word and word.group(1) in _SKIP_CALLS:
                    i = close
                    continue
                after = re.match(r"\s*(?:const\s*)?(?:noexcept\s*)?\{", blanked[close:])
                if word and after and i not in seen:
                    seen.add(i)
                    body = close + after.end() - 1
                    end = _match(blanked, body, "{", "}")
                    if end > 0:
                        locals_ = set(_LOCAL_POINTER.findall(blanked[body:end]))
                        if maybe:
                            locals_ |= set(_LOCAL_AUTO.findall(blanked[body:end]))
                        yield body, end, (_pointer_params(blanked[i + 1:close - 1], maybe) |
                                          locals_)
                break
            i += 1


def split_top(text: str, opens: str = "([<", closes: str = ")]>") -> list[str]:
    """``text`` split at the commas outside brackets (those of ``opens``/``closes``)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in opens
        depth -= ch in closes
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def _pointer_params(params: str, maybe: bool = False) -> set[str]:
    """The parameters declared as pointers or arrays; ``maybe``: every named one, whatever its
    type says (an alias, ``typedef const float* cfloat_p``, or a template's ``T``)."""
    names = set()
    for p in split_top(params):
        p = p.split("=")[0]
        if "(" in p or not (maybe or "*" in p or "[" in p):
            continue
        p = re.sub(r"\[[^\]]*\]\s*$", "", p.strip())
        word = re.search(r"[\w*&>]\s*\b([A-Za-z_]\w*)\s*$", p)
        if word and word.group(1) not in ("const", "volatile", "__restrict__", "__restrict"):
            names.add(word.group(1))
    return names


# ---- p[i] -> p[global_index(p, line, "p[i]", (i), access)] ------------------------------------

def _literal(text: str) -> str:
    return '"' + " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"') + '"'


_DECLARATION = re.compile(r"\s*(?:(?:const|static|volatile|constexpr|register)\s+)*"
                         r"[A-Za-z_][\w:]*(?:\s*<[^;<>]*>)?[\s*&]+[A-Za-z_]\w*\s*[\[=;,]")


def _declared_after_comma(blanked: str, at: int) -> bool:
    """Whether the name at ``at`` follows a comma of a declaration statement at its top level
    (``float a[2], b[4];``): a declarator, not an expression."""
    j = at - 1
    while j >= 0 and blanked[j].isspace():
        j -= 1
    if j < 0 or blanked[j] != ",":
        return False
    depth, k = 0, j
    while k > 0:
        k -= 1
        ch = blanked[k]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                break  # an opening bracket around the comma: a call's or an initializer's
            depth -= 1
        elif ch == ";" and depth == 0:
            break
    if blanked[k] in "([" :
        return False
    return bool(_DECLARATION.match(blanked, k + 1))


def _index_body(text: str, blanked: str, names: set[str]) -> str:
    """The body ``text`` with every ``name[i]`` of a pointer parameter checked."""
    if not names:
        return text
    pattern = re.compile(r"(?<![\w.])(?<!->)(?<!::)\b(" + "|".join(map(re.escape, names)) +
                         r")\s*\[(?!\[)")
    asserts = [(a.end() - 1, _match(blanked, a.end() - 1, "(", ")"))
               for a in re.finditer(r"\bassert\s*\(", blanked)]
    out, last = [], 0
    for m in pattern.finditer(blanked):
        if m.start() < last or any(lo < m.start() < hi for lo, hi in asserts):
            continue  # inside an index already rewritten (the recursion does it), or an assert's
            # condition (its text is the message: assert(x[i] >= 0) must read as written)
        before = re.search(r"([A-Za-z_]\w*)\s*$", blanked[:m.start()])
        if before and before.group(1) not in KEYWORDS_BEFORE_EXPR or _declared_after_comma(
                blanked, m.start()):
            continue  # a declaration (float p[4], or float a[2], p[4]) that shadows the name
        open_ = m.end() - 1
        close = _match(blanked, open_, "[", "]")
        if close < 0:
            continue
        inner = _index_body(text[open_ + 1:close - 1], blanked[open_ + 1:close - 1], names)
        name = m.group(1)
        shown = _literal(f"{name}[{blanked[open_ + 1:close - 1]}]")
        out.append(text[last:open_ + 1])
        kind = _access_kind(blanked, m.start(), close)
        out.append(f"::cuda_emu::global_index({name}, __LINE__, {shown}, ({inner}), {kind})]")
        last = close
    out.append(text[last:])
    return "".join(out)


def binary_amp(blanked: str, amp: int) -> bool:
    """Whether the ``&`` at ``amp`` is binary (``a & b``, ``a && b``) rather than an address-of."""
    if blanked[amp - 1:amp] == "&" or blanked[amp + 1:amp + 2] == "&":
        return True
    left = re.search(r"(\w+|\S)\s*$", blanked[:amp])
    return bool(left) and (left.group(1)[-1] in ")]" or left.group(1)[-1].isalnum() or
                           left.group(1)[-1] == "_") and left.group(1) not in KEYWORDS_BEFORE_EXPR


_COMPOUND = re.compile(r"\s*(?:[-+*/%&|^]|<<|>>)=")
_LOAD_CALL = re.compile(r"\b__ld(?:g|cg|ca|cs|lu|cv)\s*\(\s*$")
"""The load intrinsics, whose argument ``&x[i]`` is read: ``__ldg(&x[i])`` is ``x[i]``."""


def _access_kind(blanked: str, start: int, close: int) -> int:
    """How ``p[i]`` (from ``start`` to just past its ``]`` at ``close``) is used, for check mode's
    tracking of shared memory reached through a pointer (memory.h's ``Access``): 1 a read, 2 a
    write (``p[i] = x``), 3 both (``p[i] += x``, ``++p[i]``), 0 not tracked (its address taken,
    a member or a further index: what it reaches is not known here), 4 its address taken
    (``&p[i]``: one past the end is a legal address, ``&x[n]`` as a loop's end; but
    ``__ldg(&p[i])`` is a read)."""
    after, before = blanked[close:close + 4].lstrip(), blanked[:start].rstrip()
    if after[:1] in (".", "[") or after.startswith("->"):
        return 0
    if before.endswith("&") and not before.endswith("&&"):
        if binary_amp(blanked, len(before) - 1):
            return 0
        # __ldg(&x[i]) reads x[i] (its end is no legal read); any other &x[i] is an address
        return 1 if _LOAD_CALL.search(before[:-1]) and after.startswith(")") else 4
    if after.startswith(("++", "--")) or before.endswith(("++", "--")) or \
            _COMPOUND.match(blanked, close):
        return 3
    if after[:1] == "=" and after[1:2] != "=":
        return 3 if _reads_itself(blanked, start, close) else 2
    return 1


def _reads_itself(blanked: str, start: int, close: int) -> bool:
    """Whether the assignment to ``blanked[start:close]`` (``c[i] = c[i] + v``, spelled out)
    reads the same element on its right side: a read-modify-write, as ``c[i] += v`` is."""
    eq = blanked.index("=", close)
    rhs = re.sub(r"\s+", "", blanked[eq + 1:_update_end(blanked, eq + 1)])
    target = re.sub(r"\s+", "", blanked[start:close])
    return re.search(r"(?<![\w.>])" + re.escape(target), rhs) is not None


def _check_indexes(text: str) -> str:
    blanked = blank(text)
    arrays = set(_GLOBAL_ARRAY.findall(blanked))
    out, last = [], 0
    for body, end, names in sorted(_functions(blanked, maybe=True)):
        names = names | arrays
        if body < last:
            continue  # (a function inside another's body: a lambda's qualifiers, say)
        out.append(text[last:body])
        out.append(_index_body(text[body:end], blanked[body:end], names))
        last = end
    out.append(text[last:])
    return "".join(out)


# ---- casts to pointers -------------------------------------------------------------------------

_TYPE = r"(?P<type>(?:(?:const|volatile|unsigned|signed|struct|long|short)\s+)*[A-Za-z_]\w*" \
        r"(?:\s*::\s*[A-Za-z_]\w*)*(?:\s+(?:const|volatile))*)\s*(?P<stars>\*+)"
_NAMED_CAST = re.compile(r"\b(?P<kind>reinterpret_cast|static_cast)\s*<\s*" + _TYPE +
                         r"\s*>\s*\(")
_C_CAST = re.compile(r"\(\s*" + _TYPE + r"\s*\)")
_NO_CHECK = re.compile(r"^(?:(?:const|volatile|unsigned|signed)\s+)*(?:void|char)$")


def _display(match: re.Match) -> str:
    """The cast's type for messages, without const or volatile: "float4" for const float4*."""
    words = [w for w in match.group("type").split() if w not in ("const", "volatile")]
    return " ".join(words) + match.group("stars")[:-1]


def _operand_end(blanked: str, i: int) -> int:
    """Where the operand of a C-style cast that starts at ``i`` ends (a unary expression:
    prefix operators, a name, literal or parenthesized expression, then postfix operators),
    or -1 where none starts there."""
    n = len(blanked)
    while i < n and blanked[i].isspace():
        i += 1
    while True:  # prefix operators (and nested casts, handled as parenthesized primaries)
        if blanked.startswith(("++", "--"), i):
            i += 2
        elif i < n and blanked[i] in "&*-+!~" and not blanked.startswith("&&", i):
            i += 1
        else:
            break
        while i < n and blanked[i].isspace():
            i += 1
    if i >= n:
        return -1
    if blanked[i] == "(":
        close = _match(blanked, i, "(", ")")
        if close < 0:
            return -1
        if _C_CAST.fullmatch(blanked[i:close]):  # a nested cast: its own operand follows
            return _operand_end(blanked, close)
        i = close
    else:
        m = re.compile(r"(?:::\s*)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*|\d[\w.]*").match(blanked, i)
        if not m:
            return -1
        i = m.end()
    while True:  # postfix operators
        j = i
        while j < n and blanked[j].isspace():
            j += 1
        if j < n and blanked[j] in "[(":
            close = _match(blanked, j, blanked[j], "]" if blanked[j] == "[" else ")")
            if close < 0:
                return i
            i = close
        elif blanked.startswith(("->", "."), j) and not blanked.startswith("->*", j):
            m = _IDENT.match(blanked, j + (2 if blanked[j] == "-" else 1))
            if not m:
                return i
            i = m.end()
        elif blanked.startswith(("++", "--"), j):
            i = j + 2
        else:
            return i


def _check_casts(text: str) -> str:
    text = _NAMED_CAST.sub(lambda m: m.group(0) if _NO_CHECK.match(" ".join(m.group("type").split()))
                           else f'::cuda_emu::checked_cast<{m.group("type")}{m.group("stars")}, '
                                f'{0 if m.group("kind") == "reinterpret_cast" else 1}>'
                                f'("{_display(m)}", __LINE__, ', text)
    return _cast_elements(_c_casts(text))


_CHECKED_CAST = re.compile(r'::cuda_emu::checked_cast<[^;]*?, (\d)>(\()"([^"]*)", __LINE__, ')


def _cast_elements(text: str) -> str:
    """A cast indexed at once -- ``reinterpret_cast<float4*>(&x[i])[0]``, the SGEMM articles'
    FETCH_FLOAT4 -- with its element checked as ``p[i]`` is: the whole float4 inside the array
    (a read of x[n - 2 .. n + 1] once ran silently in the padding after the array)."""
    blanked = blank(text)
    edits = []
    for m in _CHECKED_CAST.finditer(blanked):
        start, end = m.start(), _match(blanked, m.start(2), "(", ")")
        if end < 0 or (edits and start < edits[-1][1]):
            continue
        while True:  # ((float4*)p)[0]: the parentheses around the cast
            before, after = blanked[:start].rstrip(), blanked[end:].lstrip()
            if not (before.endswith("(") and after.startswith(")")) or \
                    _match(blanked, len(before) - 1, "(", ")") != len(blanked) - len(after) + 1:
                break
            start, end = len(before) - 1, len(blanked) - len(after) + 1
        open_ = len(blanked) - len(blanked[end:].lstrip())
        if blanked[open_:open_ + 1] != "[" or blanked[open_ + 1:open_ + 2] == "[":
            continue
        close = _match(blanked, open_, "[", "]")
        if close < 0:
            continue
        how = ("reinterpret_cast", "static_cast", "cast")[int(m.group(1))]
        shown = _literal(f"the {how} to {text[m.start(3):m.end(3)]}* indexed "
                         f"[{blanked[open_ + 1:close - 1]}]")
        edits.append((start, close, f"::cuda_emu::cast_element({text[start:end]}, __LINE__, {shown}, "
                                    f"({text[open_ + 1:close - 1]}), {_access_kind(blanked, start, close)})"))
    return _apply(text, edits)


def _c_casts(text: str) -> str:
    blanked = blank(text)
    out, last = [], 0
    for m in _C_CAST.finditer(blanked):
        if m.start() < last or _NO_CHECK.match(" ".join(m.group("type").split())):
            continue
        before = re.search(r"([A-Za-z_]\w*|[)\]>])\s*$", blanked[:m.start()])
        if before and before.group(1) not in KEYWORDS_BEFORE_EXPR - {"sizeof", "alignof",
                                                                        "decltype", "typeid"}:
            continue  # a parameter list (f(float*)) or sizeof(T*), not a cast
        end = _operand_end(blanked, m.end())
        if end < 0:
            continue
        operand = _c_casts(text[m.end():end])
        out.append(text[last:m.start()])
        out.append(f'(::cuda_emu::checked_cast<{m.group("type")}{m.group("stars")}, 2>'
                   f'("{_display(m)}", __LINE__, {operand}))')
        last = end
    out.append(text[last:])
    return "".join(out)


# ---- check mode: updates of __device__ variables --------------------------------------------

_DEVICE_SCALAR = re.compile(
    r"(?:^|(?<=[;}]))\s*(?:static\s+)?__device__\s+(?:volatile\s+)?(?!const\b)"
    r"(?:(?:unsigned|signed|long|short|int|char|float|double|bool|size_t|u?int(?:8|16|32|64)_t)\s+)+"
    r"(\w+)\s*(?:=[^;{}()]*|\{[^;{}]*\})?;", re.M)
"""A scalar ``__device__`` variable at file scope (``__device__ int counter;``, ``= 0`` or ``{0}``
allowed; not const, not an array)."""
_UPDATE_OPS = r"(?:\+\+|--|[-+*/%&|^]=|<<=|>>=)"


def _update_end(blanked: str, i: int) -> int:
    """Where the expression that starts at ``i`` (an assignment's right side) ends: at ``;`` or
    ``,`` at its depth, or the bracket that closes an enclosing one."""
    depth = 0
    for j in range(i, len(blanked)):
        ch = blanked[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return j
            depth -= 1
        elif depth == 0 and ch in ";,":
            return j
    return len(blanked)


ELEMENT_REFERENCE = re.compile(r"(?<![\w.>])(?:const\s+)?(?:volatile\s+)?(?:unsigned\s+|signed\s+)?"
                               r"[A-Za-z_][\w:]*\s*&\s*(?P<name>[A-Za-z_]\w*)\s*=\s*"
                               r"(?P<array>[A-Za-z_]\w*)\s*\[")
"""A reference bound to an element, ``float& total = totals[b]`` (``name``, ``array``): of an
array argument here (device_updates), of a __shared__ array in rewrite.py."""


def device_updates(text: str) -> str:
    """Check mode: each read-modify-write (``count++``, ``--count``, ``count += x``,
    ``count = count + 1``) of a scalar ``__device__`` variable as
    ``(::cuda_emu::note_device_update(&count, "count", line), count++)``, and of an element of an
    array argument reached without an index -- a reference to one (``float& total =
    totals[b]; total += v``) or a member through a pointer (``st->sum += v``) -- as
    ``(::cuda_emu::note_update(&total, ...), total += v)``: two threads of one launch updating it
    with no barrier between them lose an update on a GPU (memory.h names them). Line breaks kept."""
    blanked = blank(text)
    scalars = set(_DEVICE_SCALAR.findall(blanked))
    pointers = set().union(*(names for _, _, names in _functions(blanked)))
    references = {name for name, array in ELEMENT_REFERENCE.findall(blanked) if array in pointers}
    targets = [re.escape(n) for n in sorted(scalars | references)]
    if pointers:
        targets.append(r"(?:" + "|".join(map(re.escape, sorted(pointers))) + r")\s*->\s*[A-Za-z_]\w*")
    edits = _reference_parameter_updates(text, blanked)
    taken = [(a, b) for a, b, _ in edits]
    if targets:
        edits += [e for e in _update_edits(text, blanked, "|".join(targets), scalars)
                  if not any(a <= e[0] < b for a, b in taken)]
    return _apply(text, edits)


def _update_edits(text: str, blanked: str, alt: str, scalars=frozenset(), lo: int = 0,
                  hi: int | None = None) -> list[tuple[int, int, str]]:
    """The edits of device_updates for each read-modify-write of what ``alt`` matches in
    ``blanked[lo:hi]``: note_device_update for a scalar ``__device__`` variable (``scalars``),
    note_update for anything else."""
    found = re.compile(rf"(?<![\w.>])(?:(?P<pre>\+\+|--)\s*(?P<a>{alt})\b|(?P<b>{alt})\b\s*"
                       rf"(?P<op>{_UPDATE_OPS}|=(?!=)))")
    edits = []
    for m in found.finditer(blanked, lo, len(blanked) if hi is None else hi):
        target = m.group("a") or m.group("b")
        flat = re.sub(r"\s+", "", target)
        rhs = re.sub(r"\s+", "", blanked[m.end():_update_end(blanked, m.end())])
        if m.group("op") == "=" and not re.search(rf"(?<![\w.>]){re.escape(flat)}(?![\w])", rhs):
            continue  # (count = count + 1 updates; count = 0 does not)
        end = m.end() if m.group("pre") or m.group("op") in ("++", "--") else \
            _update_end(blanked, m.end())
        if target in scalars:
            note = f'(::cuda_emu::note_device_update(&{target}, "{target}", __LINE__), '
        else:
            note = (f"(::cuda_emu::note_update(reinterpret_cast<std::uintptr_t>(&({target})), "
                    f"sizeof({target}), {_literal(target)}, __LINE__), ")
        edits.append((m.start(), end, note + text[m.start():end] + ")"))
    return edits


_ARITHMETIC_REFERENCE = re.compile(
    r"^\s*(?:volatile\s+)?(?:(?:unsigned|signed|long|short|int|char|float|double|bool|size_t|"
    r"u?int(?:8|16|32|64)_t)\s*)+&\s*([A-Za-z_]\w*)\s*$")
"""A __device__ function's parameter ``int& c`` (not const): what the function updates through
it is an element of the caller's, maybe shared by other threads."""


def _reference_parameter_updates(text: str, blanked: str) -> list[tuple[int, int, str]]:
    """Edits that check each read-modify-write (``c++``, ``c += v``, ``c = c + 1``) of an
    arithmetic reference parameter inside its __device__ function, as device_updates checks a
    reference to an element (``bump(count[0])`` of ``__device__ void bump(int& c) { c = c + 1; }``
    by many threads: note_update names a lost update in an array argument, a race in shared
    memory)."""
    edits = []
    for head in re.finditer(r"\b__device__\b[^;{}]*?\(([^;{}]*)\)\s*(?:const\s*)?\{", blanked):
        names = [m.group(1) for m in map(_ARITHMETIC_REFERENCE.match, split_top(head.group(1))) if m]
        if not names:
            continue
        body, end = head.end() - 1, _match(blanked, head.end() - 1, "{", "}")
        edits += _update_edits(text, blanked, "|".join(map(re.escape, names)), lo=body,
                               hi=end if end > 0 else None)
    return edits


# ---- *p -> *::cuda_emu::deref(p, line, "*p", access) ----------------------------------------

_UNARY_BEFORE = re.compile(r"(?:[=()\[{,;:?!~+\-*/%&|^<>]|\breturn)\s*$")
_POSTFIX = re.compile(r"\s*(?:\+\+|--|\[|\.|->|\()")


def _derefs_body(text: str, blanked: str, names: set[str]) -> str:
    """The body ``text`` with each ``*p`` and ``*(p + i)`` of a pointer parameter or local pointer
    (``names``) checked as ``p[i]`` is (global_index): bounds with the line, and in check mode
    races in shared memory and lost updates. Left as written: a declarator (``float *a, *b;``),
    ``*p++`` and ``*p[i]`` (the operator binds to the postfix expression), ``&*p``, casts."""
    if not names:
        return text
    alt = "|".join(map(re.escape, sorted(names)))
    edits = []
    for m in re.finditer(r"\*(?![=*])\s*(?:(?P<name>\b(?:" + alt + r")\b)|(?P<group>\())", blanked):
        before = blanked[max(0, m.start() - 400):m.start()]  # (what precedes the *, near it)
        if not _UNARY_BEFORE.search(before) or before.rstrip().endswith(("&&", "->")) or \
                (before.rstrip().endswith("&") and not before.rstrip().endswith("&&")):
            continue
        if before.rstrip().endswith(")") and not re.search(
                r"\b(?:if|while|for|switch)\s*\([^;{}]*\)\s*$", before):
            continue  # ((float) *p: a cast; (a) * b: a product)
        if m.group("name"):
            end = m.end()
            if _POSTFIX.match(blanked, end) or _declared_after_comma(blanked, m.start() + 1):
                continue
        else:
            end = _match(blanked, m.end() - 1, "(", ")")
            inner = blanked[m.end():end - 1].strip()
            if end < 0 or _POSTFIX.match(blanked, end) or inner.endswith("*") or \
                    not re.match(r"(?:" + alt + r")\b", inner):
                continue  # (a cast, a call's result, something not one of the pointers)
        operand = text[m.start() + 1:end].strip()
        kind = _access_kind(blanked, m.start(), end)
        shown = _literal("*" + " ".join(blanked[m.start() + 1:end].split()))
        edits.append((m.start(), end,
                      f"(*::cuda_emu::deref({operand}, __LINE__, {shown}, {kind}))"))
    return _apply(text, edits)


def derefs(text: str) -> str:
    """``_derefs_body`` over every __global__ and __device__ function's body."""
    blanked = blank(text)
    edits = []
    for body, end, names in sorted(_functions(blanked)):
        if edits and body < edits[-1][1]:
            continue
        edits.append((body, end, _derefs_body(text[body:end], blanked[body:end], names)))
    return _apply(text, edits)


# ---- inline PTX ---------------------------------------------------------------------------------

_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:(?:volatile|__volatile__|__volatile|goto)\s*)*\(")
_PTX_REFUSED = ('static_assert(false, "inline PTX (an asm statement) runs only on a GPU, and '
                'the CPU emulator compiles what the preprocessor keeps without __CUDA_ARCH__: put '
                'the asm under #ifdef __CUDA_ARCH__ with a C++ version of what it computes in the '
                '#else branch, or run the kernel on a GPU"); ')


def _refuse_ptx(text: str) -> str:
    blanked = blank(text)
    out, last = [], 0
    for m in _ASM.finditer(blanked):
        template = re.match(r'\s*"((?:[^"\\]|\\.)*)"', text[m.end():])
        if template and not template.group(1).strip():
            continue  # asm("" ::: "memory"): a compiler barrier, legal C++ on the CPU too
        out.append(text[last:m.start()])
        out.append(_PTX_REFUSED)
        last = m.start()
    out.append(text[last:])
    return "".join(out)


def rewrite(text: str) -> str:
    """``text`` with global-memory indexes and pointer casts checked and inline PTX outside
    ``#ifdef __CUDA_ARCH__`` refused; its line breaks kept."""
    return _refuse_ptx(_check_casts(_check_indexes(text)))
