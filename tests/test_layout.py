"""The package's layout: no import cycle, between modules or between its parts; the library
(book.blas, ``book.sgemm``) on the launch API, the registry and what a call needs of the
harness, never on the chapters' studies, plots or tables."""
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
    assert "book.blas" in GRAPH["book"] and "book.blas.choice" in GRAPH["book.blas.call"]
    assert "book.blas" in GRAPH["book.studies.sgemm_lab"]
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
                                          ("registry", "models"), ("registry", "profile"),
                                          ("registry", "blas"), ("blas", "studies"),
                                          ("blas", "models"), ("blas", "profile"), ("blas", "ladder"),
                                          ("blas", "tune"), ("studies", "ladder")])
def test_the_parts_depend_one_way(lower, upper):
    assert f"book.{upper}" not in PARTS[f"book.{lower}"], f"book.{lower} imports book.{upper}"


LIBRARY = sorted(m for m in MODULES if m == "book.blas" or m.startswith("book.blas."))
LIBRARY_NEEDS = ("book.launch", "book.registry", "book.harness.check", "book.harness.device",
                 "book.harness.records", "book.harness.measure", "book.harness.progress")
"""All the library may reach below it: the launch API, the registry (with the check's tolerance it
reads), and of the harness the device report (the GPU's name and SMs), the results files as plain
rows (a tuning run's plans and rates: ``records``, not pandas) and the event timer a first call
times its candidates with (its module's sweeps import the progress bars' switch, which imports
tqdm only where a bar shows; the library makes no bar)."""
STUDIES_PLOTS_TABLES = ("book.studies", "book.harness.plots", "book.harness.tables",
                        "book.harness.notebook", "book.harness.sources", "book.harness.ceilings",
                        "book.models", "book.profile", "book.ladder", "book.landing", "book.tune")


def within(name: str, places) -> bool:
    return any(name == p or name.startswith(p + ".") for p in places)


def reached(start: str) -> dict[str, list[str]]:
    """Every book module ``start`` imports, directly or through others: the path to each."""
    paths, todo = {start: [start]}, [start]
    while todo:
        here = todo.pop()
        for nxt in sorted(GRAPH[here]):
            if nxt not in paths:
                paths[nxt] = paths[here] + [nxt]
                todo.append(nxt)
    return paths


def test_the_library_is_a_package_of_its_own():
    assert {"book.blas", "book.blas.call", "book.blas.plans", "book.blas.model",
            "book.blas.choice", "book.blas.tf32x3"} <= set(LIBRARY)


@pytest.mark.parametrize("module", LIBRARY)
def test_the_library_imports_no_study_plot_or_table(module):
    """book.sgemm's modules reach none of the chapters' studies, plots or tables, even through
    another module (imports inside functions count)."""
    bad = {t: p for t, p in reached(module).items() if within(t, STUDIES_PLOTS_TABLES)}
    assert not bad, "; ".join(" -> ".join(p) for p in bad.values())


@pytest.mark.parametrize("module", LIBRARY)
def test_the_library_stands_on_the_launch_api_the_registry_and_what_a_call_needs(module):
    bad = {t: p for t, p in reached(module).items() if not within(t, ("book.blas",) + LIBRARY_NEEDS)}
    assert not bad, "; ".join(" -> ".join(p) for p in bad.values())


def test_the_library_draws_nothing():
    """No module the library reaches imports matplotlib."""
    drawing = []
    for name in set().union(*(reached(m) for m in LIBRARY)):
        for node in ast.walk(ast.parse(MODULES[name].read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            drawing += [name for n in names if n.split(".")[0] == "matplotlib"]
    assert not drawing, sorted(set(drawing))


def test_the_checks_catch_a_study_imported_by_the_library():
    """The walker follows imports inside functions and through other modules."""
    saved = GRAPH["book.blas.plans"]
    GRAPH["book.blas.plans"] = saved | {"book.harness.measure", "book.studies.sgemm_report"}
    try:
        with pytest.raises(AssertionError, match="book.blas.plans -> book.studies.sgemm_report"):
            test_the_library_imports_no_study_plot_or_table("book.blas.call")
    finally:
        GRAPH["book.blas.plans"] = saved


def test_the_library_and_a_call_import_no_pandas():
    from conftest import ROOT
    """pandas' import costs a first call about 0.4 s (an H200 host): book.blas reads the results
    files as plain rows."""
    import subprocess
    import sys
    program = ("import sys, numpy as np, book\n"
               "c = book.sgemm(book.to_device(np.ones((5, 7), np.float32)), "
               "book.to_device(np.ones((7, 3), np.float32)))\n"
               "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pandas')[:3])")
    got = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip().splitlines()[-1] == "[]"
