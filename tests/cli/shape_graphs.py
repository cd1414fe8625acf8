"""Three shapes of a graph with nodes and state of its own, for the acceptance tests.

Each has `mail`, a tool gated by a predicate (mail outside ours waits for a person), and is
importable by address for the CLI:

- `critic_loop`: validate's passed answer goes to a critic that scores it (`score`); its
  router sends a low score back to think, a high one to finalize;
- `planner`: a planner before think keeps a plan (`plan`, appended by a reducer) and runs
  again after every tool round;
- `router`: a triage node writes where the task goes (`route`); a router node reads it and
  sends a chat to a node that answers at once (through validate), anything else to think.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from thinkgraph import tool
from thinkgraph.graphs import react_graph
from thinkgraph.nodes import Deps, review_answer
from thinkgraph.state import AgentState, NoteStep, TaskStep, Verdict

CRITIC_LOOP = "tests.cli.shape_graphs:critic_loop"
PLANNER = "tests.cli.shape_graphs:planner"
ROUTER = "tests.cli.shape_graphs:router"
TOOLS_ADDRESS = "tests.cli.shape_graphs:TOOLS"


def _outside(args: dict[str, Any]) -> bool:
    return not str(args.get("to", "")).endswith("@ours.com")


@tool(requires_approval=_outside, side_effects=True)
def mail(to: str, body: str) -> str:
    """Send a mail."""
    return f"mailed {to}"


TOOLS = [mail]


# -- a critic loop that routes on a score ---------------------------------------------------


class ScoredState(AgentState, total=False):
    score: int


def critic(state: ScoredState) -> dict[str, Any]:
    answer = state.get("answer") or ""
    score = 10 * len(answer.split())
    verdict = Verdict(passed=score >= 20, reason="say more", validator="critic")
    return {**review_answer(state, verdict), "score": score}


def by_score(state: ScoredState) -> Literal["accept", "revise"]:
    return "accept" if state.get("score", 0) >= 20 else "revise"


def critic_loop(deps: Deps) -> Any:
    graph = react_graph(deps, state=ScoredState)
    graph.add_node("critic", critic)
    graph.set_route("validate", "passed", "critic")
    graph.add_routes("critic", by_score, {"accept": "finalize", "revise": "think"})
    return graph.build()


# -- a planner with a plan list --------------------------------------------------------------


class PlannedState(AgentState, total=False):
    plan: Annotated[list[str], operator.add]


def plan_next(state: PlannedState) -> dict[str, Any]:
    done = len(state.get("plan", []))
    return {"plan": [f"step {done + 1}"], "chain": [NoteStep(text=f"plan step {done + 1}")]}


def planner(deps: Deps) -> Any:
    graph = react_graph(deps, state=PlannedState)
    graph.add_node("plan", plan_next)
    graph.set_entry("plan")
    graph.add_edge("plan", "think")
    graph.set_route("observe", "next", "plan")
    return graph.build()


# -- a router node -----------------------------------------------------------------------------


class RoutedState(AgentState, total=False):
    route: str


def triage(state: RoutedState) -> dict[str, Any]:
    task = next(s.text for s in state["chain"] if isinstance(s, TaskStep))
    return {"route": "chat" if task.lower().startswith("hello") else "work"}


def by_route(state: RoutedState) -> Literal["chat", "work"]:
    return "chat" if state.get("route") == "chat" else "work"


def chat(state: RoutedState) -> dict[str, Any]:
    return {"candidate": "hello to you too", "chain": [NoteStep(text="answered at once")]}


def router(deps: Deps) -> Any:
    graph = react_graph(deps, state=RoutedState)
    graph.add_node("triage", triage)
    graph.add_node("chat", chat)
    graph.set_entry("triage")
    graph.add_routes("triage", by_route, {"chat": "chat", "work": "think"}, guards=False)
    graph.add_edge("chat", "validate")
    return graph.build()
