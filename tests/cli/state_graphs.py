"""Graphs with state of their own, for the CLI tests, importable by address from the repo root.

`planned`: a planner appends to its plan (a reducer), a critic scores it, and the critic's
router reads the score to go round again or on to think. `sloppy` returns a key its state
does not declare; `endless` loops planner → critic forever, never passing think.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from thinkgraph.graphs import react_graph
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState

PLANNED = "tests.cli.state_graphs:planned"
SLOPPY = "tests.cli.state_graphs:sloppy"
ENDLESS = "tests.cli.state_graphs:endless"


class PlanState(AgentState, total=False):
    plan: Annotated[list[str], operator.add]
    score: int


def planner(state: PlanState) -> dict[str, Any]:
    return {"plan": [f"step {len(state.get('plan', [])) + 1}"]}


def critic(state: PlanState) -> dict[str, Any]:
    return {"score": len(state.get("plan", [])) * 10}


def enough(state: PlanState) -> Literal["again", "go"]:
    return "go" if state.get("score", 0) >= 20 else "again"


def never(state: PlanState) -> Literal["again", "go"]:
    return "again"


def _graph(deps: Deps, router: Any) -> Any:
    graph = react_graph(deps, state=PlanState)
    graph.add_node("planner", planner)
    graph.add_node("critic", critic)
    graph.set_entry("planner")
    graph.add_edge("planner", "critic")
    graph.add_routes("critic", router, {"again": "planner", "go": "think"})
    return graph


def planned(deps: Deps) -> Any:
    return _graph(deps, enough).build()


def endless(deps: Deps) -> Any:
    return _graph(deps, never).build()


def sloppy(deps: Deps) -> Any:
    def noter(state: PlanState) -> dict[str, Any]:
        return {"plan": ["x"], "route": "debate"}

    graph = react_graph(deps, state=PlanState)
    graph.add_node("noter", noter)
    graph.set_entry("noter")
    graph.add_edge("noter", "think")
    return graph.build()
