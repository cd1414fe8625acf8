"""The layers of docs/architecture.md hold: no import cycles, few hidden imports, a small facade.

Every import of the package is counted, those inside functions too (an import hidden in a
function to dodge a cycle is still a cycle); imports under ``if TYPE_CHECKING:`` are not,
since they never run. The import-linter contracts in pyproject.toml are run as well, so a
wrong-way arrow fails the suite, not only `make lint`.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "thinkgraph"
ROOT = PACKAGE.parent

MAX_IMPORTS_IN_FUNCTIONS = 10
"""Imports of the package inside functions, outside cli/ (lazy optional extras, mostly)."""

MAX_AGENT_LINES = 300


@dataclass(frozen=True, slots=True)
class Import:
    source: str
    target: str
    in_function: bool
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports_of(path: Path, known: set[str]) -> list[Import]:
    module = _module_name(path)
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def target_of(name: str) -> str | None:
        # `from thinkgraph.graphs import parts` imports thinkgraph.graphs.parts.
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for orelse in child.orelse:
                    visit(orelse, in_function)
                continue
            inside = in_function or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(module, is_package, child)
                names = [f"{base}.{alias.name}" for alias in child.names] or [base]
            for name in names:
                if not name.startswith("thinkgraph"):
                    continue
                target = target_of(name)
                if target and target != module:
                    found.append(Import(module, target, in_function, child.lineno))
            visit(child, inside)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def _all_imports() -> list[Import]:
    files = sorted(PACKAGE.rglob("*.py"))
    known = {_module_name(f) for f in files}
    return [imp for f in files for imp in _imports_of(f, known)]


def _part(module: str) -> str:
    """A module's part: its subpackage (thinkgraph.graphs) or the module itself (state)."""
    return ".".join(module.split(".")[:2])


def _cycles(edges: list[tuple[str, str]]) -> list[list[str]]:
    graph = nx.DiGraph()
    graph.add_edges_from((a, b) for a, b in edges if a != b)
    return [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]


def test_no_module_imports_itself_back_through_others() -> None:
    cycles = _cycles([(i.source, i.target) for i in _all_imports()])
    assert cycles == [], f"module import cycles: {cycles}"


def test_no_part_of_the_package_imports_itself_back_through_others() -> None:
    # A package's __init__ importing its own modules is not a cycle between parts.
    edges = [(_part(i.source), _part(i.target)) for i in _all_imports()]
    cycles = _cycles(edges)
    assert cycles == [], f"package import cycles: {cycles}"


def test_few_imports_of_the_package_hide_inside_functions() -> None:
    hidden = sorted(
        {
            f"{i.source}:{i.line}"  # one import statement, however many names it takes
            for i in _all_imports()
            if i.in_function and not i.source.startswith("thinkgraph.cli")
        }
    )
    assert len(hidden) <= MAX_IMPORTS_IN_FUNCTIONS, "\n".join(hidden)


def test_the_agent_facade_stays_small() -> None:
    lines = len((PACKAGE / "agent.py").read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_AGENT_LINES, f"agent.py has {lines} lines"


def test_the_counter_sees_an_import_hidden_in_a_function(tmp_path: Path) -> None:
    """The counter itself: a function-level import is found, a TYPE_CHECKING one is not."""
    source = tmp_path / "thinkgraph" / "m.py"
    source.parent.mkdir()
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from thinkgraph import a\n"
        "def f():\n    from thinkgraph.b import c\n",
        encoding="utf-8",
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = _imports_of(source, {"thinkgraph", "thinkgraph.a", "thinkgraph.b"})
    finally:
        ROOT = saved
    assert [(i.target, i.in_function) for i in found] == [("thinkgraph.b", True)]
    assert _cycles([("x", "y"), ("y", "x"), ("y", "z")]) == [["x", "y"]]


def test_the_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run(
        [str(lint), "--config", str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout, out.stdout[-4000:]
