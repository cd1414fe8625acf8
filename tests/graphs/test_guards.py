"""The guards, in their one home: which limit stops a run, by label and by stop reason."""

from __future__ import annotations

import ast
from pathlib import Path

from thinkgraph import guards
from thinkgraph.state import Counters
from thinkgraph.types import StepLimits

ROOT = Path(__file__).resolve().parents[2] / "thinkgraph"


def test_guard_labels_follow_the_guard_order() -> None:
    limits = StepLimits(max_steps=3, max_consecutive_failures=2, timeout_s=10)
    tripped = Counters(steps=3, consecutive_failures=2, elapsed_s=10)
    assert guards.guard_label(tripped, limits) == "abort"
    ask = limits.model_copy(update={"failure_policy": "ask_human"})
    assert guards.guard_label(tripped, ask) == "failures"
    assert guards.guard_label(Counters(steps=3, elapsed_s=10), limits) == "budget"
    assert guards.guard_label(Counters(steps=3), limits) == "max_steps"
    assert guards.guard_label(Counters(steps=3), limits, steps=False) is None
    assert guards.guard_label(Counters(steps=2), limits) is None


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_guards_is_core_and_finalize_does_not_know_the_wiring() -> None:
    package = {m for m in _imports(ROOT / "guards.py") if m.startswith("thinkgraph")}
    assert package <= {"thinkgraph.state", "thinkgraph.types"}
    assert not any(
        m.startswith("thinkgraph.graphs") for m in _imports(ROOT / "nodes" / "finalize.py")
    )
