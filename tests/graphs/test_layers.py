"""graphs/ never imports drawing, a driver or a door; viz keeps the names it re-exports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "thinkgraph"
NEVER = ("thinkgraph.viz", "thinkgraph.views", "thinkgraph.cli", "thinkgraph.server",
         "thinkgraph.worker", "thinkgraph.agent", "thinkgraph.runs")  # fmt: skip


def imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


@pytest.mark.parametrize("path", sorted((ROOT / "graphs").glob("*.py")), ids=lambda p: p.name)
def test_a_graphs_module_imports_no_drawing_driver_or_door(path: Path) -> None:
    assert not {m for m in imported(path) if m.startswith(NEVER)}


def test_the_checks_live_in_graphs_and_viz_re_exports_them() -> None:
    from thinkgraph.graphs import check_graph, guarded_router
    from thinkgraph.viz import check_graph as drawn_check
    from thinkgraph.viz import guarded_router as drawn_mark

    assert drawn_check is check_graph and drawn_mark is guarded_router


def test_the_public_names_of_graphs_change_only_on_purpose() -> None:
    import thinkgraph.graphs

    assert sorted(thinkgraph.graphs.__all__) == [
        "REACT_ROUTES", "ReasoningGraph", "Route", "THINK_TARGETS", "build_react_graph",
        "check_graph", "guarded_router", "parts", "react_graph",
    ]  # fmt: skip
