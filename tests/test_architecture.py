"""The shape holds: a module's folder is its layer, imports follow the layers, no cycles, no hidden
imports, private modules stay in their package, modules stay small, pages stay thin.

The layer of a module is the folder it sits in under ``relevancy/`` (``relevancy/io/readers.py``
is in ``io``); the modules loose at the top are ``base`` (``errors``, ``paths``, ``_sqlite``) or
the public API (``__init__``). :data:`ALLOWED` says what each
layer may import; a folder with no rule fails the test, so a new folder has to be given one.

Read from the source with ``ast``: nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "relevancy"
BELOW_SCORING = {"base", "core", "backends", "io", "analysis", "runs", "scoring"}
#: what each layer may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "core": {"base"},
    "backends": {"base", "core"},
    "io": {"base", "core"},
    "analysis": {"base", "core", "io"},
    "runs": {"base", "core", "io", "analysis"},
    "scoring": {"base", "core", "backends", "io", "analysis", "runs"},
    "report": {"base", "core", "io", "analysis", "runs"},
    "experiments": BELOW_SCORING,
    "cli": {*BELOW_SCORING, "report", "experiments", "api"},
    "dashboard": {*BELOW_SCORING, "report", "experiments", "api"},
    "testing": {"base", "core", "backends", "io"},
    "api": BELOW_SCORING,
    "pages": {*BELOW_SCORING, "report", "experiments", "dashboard", "api"},
}
BASE = {"errors", "paths", "_sqlite"}
MAX_LINES = 600
MAX_LOOSE = 8
PAGES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


def _module_name(path: Path) -> str:
    if path.parent == ROOT or path.parent.name == "pages":
        return f"pages.{path.stem}" if path.parent.name == "pages" else path.stem
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    """The layer of a module: its folder under relevancy/, or what a loose module is."""
    parts = module.split(".")
    if parts[0] != "relevancy":
        return "pages"
    if len(parts) == 1:
        return "api"
    if (PACKAGE / parts[1]).is_dir():
        return parts[1]
    if parts[1] in BASE:
        return "base"
    return "unknown"


MODULES = {_module_name(p): p for p in [*sorted(PACKAGE.rglob("*.py")), *PAGES]}


def _imports(path: Path, *, nested: bool, typing: bool = False) -> list[tuple[str, int]]:
    """Our own modules ``path`` imports: at module level, or (``nested``) inside functions;
    imports under ``if TYPE_CHECKING:`` only with ``typing``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside: set[int] = set()
    typing_only: set[int] = set()  # `if TYPE_CHECKING:` imports are for annotations only
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside |= {id(n) for n in ast.walk(node) if n is not node}
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {id(n) for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if (id(node) in inside) != nested or (id(node) in typing_only and not typing):
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            base = node.module
            # "from relevancy.dashboard.views import charts" imports the submodule
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
    assert "relevancy.scoring.metric" in GRAPH and "relevancy.dashboard.widgets.page" in GRAPH
    assert "pages.1_Dataset" in GRAPH and "app" in GRAPH
    assert GRAPH["relevancy.scoring.metric"]  # it imports the formula, the modes...


def test_every_folder_is_a_layer_with_a_rule():
    folders = sorted(
        p.name
        for p in PACKAGE.iterdir()
        if p.is_dir() and p.name != "__pycache__" and any(p.glob("*.py"))
    )
    assert [f for f in folders if f not in ALLOWED] == []
    assert [m for m in GRAPH if _layer(m) == "unknown"] == []


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_follow_the_layers(module):
    layer = _layer(module)
    wrong = [n for n in GRAPH[module] if _layer(n) != layer and _layer(n) not in ALLOWED[layer]]
    assert not wrong, f"{module} ({layer}) may not import {wrong}"


def test_dashboard_views_never_import_widgets():
    views = [m for m in GRAPH if m.startswith("relevancy.dashboard.views")]
    assert views
    wrong = {m: d for m in views if (d := [n for n in GRAPH[m] if ".widgets" in n])}
    assert not wrong


def test_only_tests_import_the_test_helpers():
    users = [m for m, deps in GRAPH.items() if not m.startswith("relevancy.testing")]
    assert not [m for m in users if any(d.startswith("relevancy.testing") for d in GRAPH[m])]


def _every_import(path: Path) -> set[str]:
    """Every module of ours ``path`` names: at module level, lazily, or for types only."""
    found = _imports(path, nested=False, typing=True) + _imports(path, nested=True, typing=True)
    return {name for name, _ in found}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles in ``graph``: each one once, as the path round it."""
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return cycles


def test_no_cycles():
    """No module reaches itself by imports, counting lazy imports and those for types only (a
    ``TYPE_CHECKING`` import still ties the two modules together)."""
    graph = {m: _every_import(p) - {m} for m, p in MODULES.items()}
    assert graph["relevancy.core.schema"]  # it imports the redaction
    assert [" -> ".join(c) for c in _cycles(graph)] == []


def test_the_cycle_check_sees_imports_for_types(tmp_path):
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("from relevancy.core import result\n", encoding="utf-8")
    second.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from relevancy.core.redact import redact\n",
        encoding="utf-8",
    )
    graph = {
        "relevancy.core.redact": _every_import(first),
        "relevancy.core.result": _every_import(second),
    }
    assert _cycles(graph) == [
        ["relevancy.core.redact", "relevancy.core.result", "relevancy.core.redact"]
    ]


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


#: imports of ``relevancy.dashboard`` from outside it: none (the HTML report and the charts it
#: draws live in ``relevancy/report``, which the CLI and the dashboard both use)
DASHBOARD_IMPORTS_TO_MOVE: set[str] = set()


def _dashboard_importers(modules: dict[str, Path]) -> set[str]:
    """Imports of ``relevancy.dashboard`` by modules outside it and the pages: at module level
    or inside functions, lazy or not (a lazy import is still a dependency)."""
    found = set()
    for module, path in modules.items():
        if module.startswith("relevancy.dashboard") or _layer(module) == "pages":
            continue
        for name, _ in _imports(path, nested=False) + _imports(path, nested=True):
            if name == "relevancy.dashboard" or name.startswith("relevancy.dashboard."):
                found.add(f"{module} imports {name}")
    return found


def test_nothing_outside_the_dashboard_imports_it():
    """The library (core to cli) never imports the dashboard; only the pages and the dashboard
    itself do (docs/ARCHITECTURE.md)."""
    assert _dashboard_importers(MODULES) == DASHBOARD_IMPORTS_TO_MOVE


def test_the_dashboard_import_check_can_fail(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f():\n    from relevancy.dashboard.views import charts  # lazy\n", encoding="utf-8"
    )
    report = MODULES["relevancy.report.html"]
    found = _dashboard_importers(
        {
            "relevancy.cli.probe": probe,
            "pages.probe": probe,
            "relevancy.report.html": report,
        }
    )
    assert found == {"relevancy.cli.probe imports relevancy.dashboard.views"}


def _streamlit_users() -> list[str]:
    users = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] == "streamlit" for n in names):
                users.append(module)
                break
    return users


def test_only_the_dashboard_widgets_and_pages_import_streamlit():
    users = _streamlit_users()
    assert "relevancy.dashboard.widgets.page" in users  # the check sees imports
    wrong = [
        m for m in users if _layer(m) != "pages" and not m.startswith("relevancy.dashboard.widgets")
    ]
    assert not wrong


def _private_import_offenders(paths: list[Path]) -> list[str]:
    """Modules named ``_x`` imported from outside the package that holds them."""
    offenders = []
    for path in paths:
        importer = _module_name(path) if path.is_relative_to(PACKAGE) else ""
        for name, line in _imports(path, nested=False) + _imports(path, nested=True):
            leaf = name.rsplit(".", 1)[-1]
            if not leaf.startswith("_") or leaf.startswith("__"):
                continue
            package = name.rsplit(".", 1)[0]
            if not (importer == package or importer.startswith(package + ".")):
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    return offenders


def test_private_modules_are_imported_only_inside_their_package():
    """The library, the pages and the scripts use public names (benches may time internals)."""
    paths = [*PACKAGE.rglob("*.py"), *PAGES, *(ROOT / "scripts").glob("*.py")]
    assert _private_import_offenders(paths) == []


def test_the_private_module_check_can_fail(tmp_path):
    probe = PACKAGE / "cli" / "score.py"  # a real file that imports nothing private
    assert _private_import_offenders([probe]) == []
    fake = ROOT / "bench" / "_architecture_probe.py"
    fake.write_text("from relevancy.backends._caching import CachedGenerator\n", encoding="utf-8")
    try:
        assert _private_import_offenders([fake]) == [
            "bench/_architecture_probe.py:1 imports relevancy.backends._caching"
        ]
    finally:
        fake.unlink()


@pytest.mark.parametrize(
    "path",
    [*sorted(PACKAGE.rglob("*.py")), *sorted((ROOT / "bench").glob("*.py"))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_modules_stay_small(path):
    """The library's modules, and the benches' (issue 47: a bench split by job too)."""
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it"


def test_few_modules_are_loose_at_the_top():
    loose = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_LOOSE, loose
    assert set(loose) <= {"__init__", "__main__", *BASE}, loose


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_pages_are_thin(page):
    lines = page.read_text(encoding="utf-8").count("\n")
    assert lines <= 200, f"{page.name} has {lines} lines: move logic into relevancy/dashboard"


def test_the_formatter_formats_everything():
    """No formatter pragma (``fmt:`` then ``skip`` or ``off``): code is laid out by ``ruff
    format`` alone (issue 36; a module that outgrows the line limit once formatted is split by
    job instead)."""
    pragmas = ("fmt: " + "skip", "fmt: " + "off")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in [
            *PACKAGE.rglob("*.py"),
            *PAGES,
            *(ROOT / "tests").rglob("*.py"),
            *(ROOT / "bench").rglob("*.py"),
            *(ROOT / "scripts").rglob("*.py"),
        ]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(pragma in line for pragma in pragmas)
    ]
    assert found == []
