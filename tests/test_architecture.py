"""The layering holds: imports only point down, no cycles, no hidden imports, thin pages.

Layers, bottom up (a module may import its own layer and the ones below):

0. base: errors, redaction, results, the formula, text splitting, the prompt, the cache;
1. backends: ``relevancy.backends``;
2. core: the metric, modes, explanations, I/O, store, comparison, judge, factory, CLI;
3. ``relevancy.dashboard`` (Streamlit) and ``relevancy.testing`` (test helpers);
4. the pages: ``app.py`` and ``pages/*.py``.

Read from the source with ``ast``: nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASE = {
    "relevancy._errors",
    "relevancy._redact",
    "relevancy._sync",
    "relevancy._result",
    "relevancy._stats",
    "relevancy._formula",
    "relevancy._text",
    "relevancy._prompt",
    "relevancy._cache",
}
PAGES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


def _module_name(path: Path) -> str:
    if path.parent == ROOT or path.parent.name == "pages":
        return f"pages.{path.stem}" if path.parent.name == "pages" else path.stem
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int:
    if module in BASE:
        return 0
    if module.startswith("relevancy.backends"):
        return 1
    if module.startswith(("relevancy.dashboard", "relevancy.testing")):
        return 3
    if module.startswith("relevancy"):
        return 2
    return 4


MODULES = {_module_name(p): p for p in [*sorted((ROOT / "relevancy").rglob("*.py")), *PAGES]}


def _imports(path: Path, *, nested: bool) -> list[tuple[str, int]]:
    """Our own modules ``path`` imports: at module level, or (``nested``) inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside |= {id(n) for n in ast.walk(node) if n is not node}
    found = []
    for node in ast.walk(tree):
        if (id(node) in inside) != nested:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            base = node.module
            # "from relevancy.dashboard import charts" imports the submodule
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names
            ]
        for name in names:
            if name.startswith("relevancy"):
                while name not in MODULES and "." in name:
                    name = name.rsplit(".", 1)[0]
                found.append((name, node.lineno))
    return found


GRAPH = {m: sorted({n for n, _ in _imports(p, nested=False) if n != m}) for m, p in MODULES.items()}


def test_the_graph_covers_every_module():
    assert "relevancy._metric" in GRAPH and "relevancy.dashboard.page" in GRAPH
    assert "pages.1_Dataset" in GRAPH and "app" in GRAPH
    assert GRAPH["relevancy._metric"]  # it imports the formula, the modes...


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_point_down(module):
    upward = [n for n in GRAPH[module] if _layer(n) > _layer(module)]
    assert not upward, f"{module} (layer {_layer(module)}) imports up: {upward}"


def test_only_tests_import_the_test_helpers():
    users = [m for m, deps in GRAPH.items() if not m.startswith("relevancy.testing")]
    assert not [m for m in users if any(d.startswith("relevancy.testing") for d in GRAPH[m])]


def test_no_cycles():
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in GRAPH.get(node, []):
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep) :] + [dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)


def test_no_hidden_imports_of_our_own_modules():
    """Imports inside functions hide edges; only a lazy optional import may (marked ``lazy``)."""
    hidden = []
    for path in MODULES.values():
        lines = path.read_text(encoding="utf-8").splitlines()
        for name, line in _imports(path, nested=True):
            context = " ".join(lines[max(0, line - 2) : line])
            if "lazy" not in context:
                hidden.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not hidden, hidden


def test_the_library_never_imports_streamlit():
    offenders = []
    for module, path in MODULES.items():
        if _layer(module) >= 3:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] == "streamlit" for n in names):
                offenders.append(module)
    assert not offenders


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_pages_are_thin(page):
    lines = page.read_text(encoding="utf-8").count("\n")
    assert lines <= 200, f"{page.name} has {lines} lines: move logic into relevancy/dashboard"
    private = [n for n in GRAPH[_module_name(page)] if n.split(".")[-1].startswith("_")]
    assert not private, f"{page.name} imports private modules {private}"
