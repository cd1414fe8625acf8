"""Code changed since a run was recorded, for the replay tests: a router that skips a tool,
a policy whose calls carry other arguments, importable by address from the repo root."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from thinkgraph.graphs import guarded_router, parts
from thinkgraph.nodes.deps import Deps
from thinkgraph.policies import ReActText
from thinkgraph.policies.base import Decision
from thinkgraph.state import AgentState

SKIP_CALCULATOR = "tests.replay.graphs:skip_calculator"

Graph = StateGraph[AgentState, Any, AgentState, AgentState]


def skip_calculator(deps: Deps) -> Graph:
    """Our graph, but the router after think sends a calculator call back to think."""
    standard = parts.think_router(deps)

    @guarded_router
    def route_think(state: AgentState) -> Any:
        target = standard(state)  # the guards first: a budget still ends the run
        calls = state.get("pending_calls") or []
        skipped = calls and all(call.name == "calculator" for call in calls)
        if skipped and target not in ("finalize", "ask_human"):
            return "think"
        return target

    graph: Graph = StateGraph(AgentState)
    graph.add_node("think", parts.think_node(deps))
    graph.add_node("approve", parts.approve_node(deps))
    graph.add_node("act", parts.act_node(deps))
    graph.add_node("observe", parts.observe_node(deps))
    graph.add_node("validate", parts.validate_node(deps))
    graph.add_node("reset", parts.reset_node(deps))
    graph.add_node("ask_human", parts.ask_human_node(deps))
    graph.add_node("finalize", parts.finalize_node(deps))
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", route_think, parts.THINK_TARGETS)
    graph.add_conditional_edges("approve", parts.approved_router(deps), parts.APPROVE_TARGETS)
    graph.add_edge("act", "observe")
    graph.add_conditional_edges(
        "observe", parts.observe_router(deps), ["think", "finalize", "ask_human"]
    )
    graph.add_conditional_edges("validate", parts.validate_router(deps), parts.VALIDATE_TARGETS)
    graph.add_edge("reset", "think")
    graph.add_conditional_edges("ask_human", parts.human_router(deps), parts.HUMAN_TARGETS)
    graph.add_edge("finalize", END)
    return graph


class Parenthesized(ReActText):
    """A policy changed in code: calculator expressions are sent in parentheses."""

    def parse(self, text: str) -> Decision:
        decision = super().parse(text)
        calls = [
            call.model_copy(update={"args": {"expression": f"({call.args['expression']})"}})
            if call.name == "calculator" and call.args
            else call
            for call in decision.tool_calls
        ]
        return decision.model_copy(update={"tool_calls": calls})
