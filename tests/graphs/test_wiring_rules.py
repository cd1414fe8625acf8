"""What issue 19 reported of custom graphs, as specifications: each is refused when the
graph is built, with one line naming the fix, or works — never a stall or a crash mid-run."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.errors import GraphConfigError
from thinkgraph.graphs import parts
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState

Graph = StateGraph[AgentState, Any, AgentState, AgentState]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(requires_approval=True)
def send_email(to: str) -> str:
    """Send an e-mail."""
    return f"sent to {to}"


REPLIES = [
    'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 40}',
    "Thought: done\nFinal Answer: 42",
]


def by_hand(deps: Deps, *, act: str = "act", validate: bool = True) -> Graph:
    """Our loop wired by hand with the factories, the way a user wrote it before the table."""
    graph: Graph = StateGraph(AgentState)
    for name in ("think", "observe", "reset", "finalize"):
        graph.add_node(name, getattr(parts, f"{name}_node")(deps))
    graph.add_node(act, parts.act_node(deps))
    if validate:
        graph.add_node("validate", parts.validate_node(deps))
    graph.add_edge(START, "think")
    targets = {"think": "think", "act": act, "reset": "reset", "finalize": "finalize"}
    targets["validate"] = "validate" if validate else "finalize"
    graph.add_conditional_edges("think", parts.think_router(deps), targets)
    graph.add_edge(act, "observe")
    graph.add_conditional_edges("observe", parts.observe_router(deps), ["think", "finalize"])
    if validate:
        graph.add_conditional_edges(
            "validate", parts.validate_router(deps), ["think", "reset", "finalize"]
        )
    graph.add_edge("reset", "think")
    graph.add_edge("finalize", END)
    return graph


def one_line(info: pytest.ExceptionInfo[GraphConfigError]) -> str:
    text = str(info.value)
    assert "\n" not in text
    return text


def test_our_act_node_named_execute_by_hand_is_refused_when_the_agent_is_made() -> None:
    with pytest.raises(GraphConfigError) as info:
        Agent(ScriptedModel(REPLIES), [add], store="memory://",
              build_graph=lambda deps: by_hand(deps, act="execute"))  # fmt: skip
    text = one_line(info)
    assert "'execute'" in text and "names={'act': 'execute'}" in text


def test_leaving_validate_out_is_refused_when_the_agent_is_made() -> None:
    with pytest.raises(GraphConfigError) as info:
        Agent(ScriptedModel(REPLIES), [add], store="memory://",
              build_graph=lambda deps: by_hand(deps, validate=False))  # fmt: skip
    text = one_line(info)
    assert "final only through validate" in text and "'finalize'" in text


def test_a_gated_tool_in_a_graph_without_approve_is_refused_when_the_agent_is_made() -> None:
    with pytest.raises(GraphConfigError) as info:
        Agent(ScriptedModel(REPLIES), [add, send_email], store="memory://", build_graph=by_hand)
    text = one_line(info)
    assert "'send_email' needs approval" in text and "approve" in text


def test_the_same_graph_without_a_gated_tool_runs_to_its_answer() -> None:
    agent = Agent(ScriptedModel(REPLIES), [add], store="memory://", build_graph=by_hand)
    assert agent.run("2 + 40?", thread_id="ok").answer == "42"


def test_act_that_does_not_lead_to_observe_is_refused_naming_the_edge() -> None:
    def skips_observe(deps: Deps) -> Graph:
        graph = by_hand(deps)
        graph.edges.discard(("act", "observe"))
        graph.add_edge("act", "think")
        return graph

    with pytest.raises(GraphConfigError) as info:
        Agent(ScriptedModel(REPLIES), [add], store="memory://", build_graph=skips_observe)
    # observe, left without an edge in, is named too: one line per problem
    assert (
        "- act node 'act' does not lead to observe; add graph.add_edge('act', 'observe')"
        in str(info.value).splitlines()
    )
