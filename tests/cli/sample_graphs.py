"""Graphs of a user's for the CLI tests, importable by address from the repo root.

`build` is our nodes plus a user's "reflect" node between observe and think: after each
round of tool results it writes a note, so a run that went through it says so in its
chain, its history and its diagram. `other` builds our graph, to stand for another graph.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from thinkgraph.graphs import build_react_graph, parts, react_graph
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState, NoteStep, ObservationStep, Verdict

REFLECT = "tests.cli.sample_graphs:build"
OTHER = "tests.cli.sample_graphs:other"

Graph = StateGraph[AgentState, Any, AgentState, AgentState]


def reflect(state: AgentState) -> dict[str, Any]:
    """Note what the last round of tools returned."""
    seen = [s.text for s in state["chain"] if isinstance(s, ObservationStep)]
    note = f"reflected on {len(seen)} result(s); last: {seen[-1] if seen else 'none'}"
    return {"chain": [NoteStep(text=note)]}


def build(deps: Deps) -> Graph:
    """Our graph, with observe's way back to think going through "reflect"."""
    graph: Graph = StateGraph(AgentState)
    graph.add_node("think", parts.think_node(deps))
    graph.add_node("approve", parts.approve_node(deps))
    graph.add_node("act", parts.act_node(deps))
    graph.add_node("observe", parts.observe_node(deps))
    graph.add_node("reflect", parts.node("reflect", reflect))
    graph.add_node("validate", parts.validate_node(deps))
    graph.add_node("reset", parts.reset_node(deps))
    graph.add_node("ask_human", parts.ask_human_node(deps))
    graph.add_node("finalize", parts.finalize_node(deps))
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", parts.think_router(deps), parts.THINK_TARGETS)
    graph.add_conditional_edges("approve", parts.approved_router(deps), parts.APPROVE_TARGETS)
    graph.add_edge("act", "observe")
    graph.add_conditional_edges(
        "observe",
        parts.observe_router(deps),
        {"think": "reflect", "finalize": "finalize", "ask_human": "ask_human"},
    )
    graph.add_edge("reflect", "think")
    graph.add_conditional_edges("validate", parts.validate_router(deps), parts.VALIDATE_TARGETS)
    graph.add_edge("reset", "think")
    graph.add_conditional_edges("ask_human", parts.human_router(deps), parts.HUMAN_TARGETS)
    graph.add_edge("finalize", END)
    return graph


def other(deps: Deps) -> Graph:
    """Our own graph, under another address."""
    return build_react_graph(deps)


def needs_sent(answer: str, state: Any) -> Verdict:
    """A validator: the answer must say the mail went out (else the model is told why)."""
    ok = "emailed" in answer
    return Verdict(passed=ok, reason="" if ok else "say whether the mail went out")


def verdict_of(state: AgentState) -> str:
    """A router with a typo: it returns a label its node has no route for."""
    return "aproved"


def _judged(deps: Deps, router: Any) -> Graph:
    graph = react_graph(deps)
    graph.add_node("judge", lambda state: {"chain": [NoteStep(text="judged")]})
    graph.set_route("validate", "passed", "judge")
    graph.add_routes("judge", router, {"approved": "finalize", "rejected": "think"})
    return graph.build()


def judged(deps: Deps) -> Graph:
    """Ours, with a judge after validate whose router returns an undeclared label."""
    return _judged(deps, verdict_of)
