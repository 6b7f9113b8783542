"""The package's layout: no import cycle, between modules or between its parts."""
import ast
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"


def module_name(path: Path) -> str:
    parts = ("book",) + path.relative_to(BOOK).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in BOOK.rglob("*.py")}


def imports(name: str) -> set[str]:
    """The book modules ``name`` imports anywhere in its file (inside functions too)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in MODULES}
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            base = f"{base}.{node.module}" if node.level and node.module else base if node.level else node.module
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


def part(name: str) -> str:
    """The part of the book a module belongs to: its subpackage, or itself at the top level."""
    return ".".join(name.split(".")[:2])


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in ``graph`` as a path that comes back to its start, or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt, path + [nxt])):
                return found
        state[node] = "done"

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


GRAPH = {m: imports(m) for m in MODULES}


def test_the_walker_sees_imports():
    assert "book.launch.runtime" in GRAPH["book"]
    assert "book.harness.measure" in GRAPH["book.tune"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_module_imports_one_that_imports_it_back():
    assert cycle(GRAPH) is None, " -> ".join(cycle(GRAPH))


PARTS = {}
for _m, _targets in GRAPH.items():
    if _m != "book":  # the package's own __init__ only re-exports the launch API
        PARTS.setdefault(part(_m), set()).update(part(t) for t in _targets if part(t) != part(_m))


def test_no_part_imports_one_that_imports_it_back():
    assert cycle(PARTS) is None, " -> ".join(cycle(PARTS))


@pytest.mark.parametrize("lower, upper", [("launch", "harness"), ("harness", "registry"),
                                          ("registry", "models"), ("registry", "profile")])
def test_the_parts_depend_one_way(lower, upper):
    assert f"book.{upper}" not in PARTS[f"book.{lower}"], f"book.{lower} imports book.{upper}"
