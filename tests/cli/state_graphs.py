"""Graphs with state of their own, for the CLI tests, importable by address from the repo root.

`planned`: a planner appends to its plan (a reducer), a critic scores it, and the critic's
router reads the score to go round again or on to think. `sloppy` returns a key its state
does not declare; `endless` loops planner → critic forever, never passing think.

`scored` and `doubled`: planner → critic → think, the critic weighing the plan 10 or 20
points a step and keeping a session token made of its weight. Runs of the two take the
same steps and leave other own state: what `diff` and `replay` compare node by node.
`tallied(weight)` makes a builder of ours with a node between observe and think that
tallies the observations, `weight` points each.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from thinkgraph import tool
from thinkgraph.graphs import react_graph
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState, ObservationStep

PLANNED = "tests.cli.state_graphs:planned"
SLOPPY = "tests.cli.state_graphs:sloppy"
ENDLESS = "tests.cli.state_graphs:endless"
SCORED = "tests.cli.state_graphs:scored"
DOUBLED = "tests.cli.state_graphs:doubled"
TOKEN = "tok-hunter22"
"""What the critic's session token starts with: never shown by a view."""
ANSWER = "Thought: done\nFinal Answer: 42"


class PlanState(AgentState, total=False):
    plan: Annotated[list[str], operator.add]
    score: int


class ScoredState(PlanState, total=False):
    session_token: str


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


def _weighed(deps: Deps, weight: int) -> Any:
    def critic(state: ScoredState) -> dict[str, Any]:
        score = len(state.get("plan", [])) * weight
        return {"score": score, "session_token": f"{TOKEN}-{weight}"}

    graph = react_graph(deps, state=ScoredState)
    graph.add_node("planner", planner)
    graph.add_node("critic", critic)
    graph.set_entry("planner")
    graph.add_edge("planner", "critic")
    graph.add_edge("critic", "think")
    return graph.build()


def scored(deps: Deps) -> Any:
    return _weighed(deps, 10)


def doubled(deps: Deps) -> Any:
    return _weighed(deps, 20)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class TallyState(AgentState, total=False):
    tally: int


def tallied(weight: int) -> Any:
    """Ours, with observe's way back to think through a node that tallies the observations."""

    def tally(state: TallyState) -> dict[str, Any]:
        seen = sum(isinstance(s, ObservationStep) for s in state["chain"])
        return {"tally": seen * weight}

    def build(deps: Deps) -> Any:
        graph = react_graph(deps, state=TallyState)
        graph.add_node("tally", tally)
        graph.set_route("observe", "next", "tally")
        graph.add_edge("tally", "think")
        return graph.build()

    return build


def adding(b: int) -> list[str]:
    """A script that adds 2 and `b`, then answers."""
    call = f'Thought: add\nAction: add\nAction Input: {{"a": 2, "b": {b}}}'
    return [call, ANSWER]
