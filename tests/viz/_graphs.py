"""Small hand-built graphs from our nodes and routers, for the checks and the renderers."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import END, START, StateGraph

from thinkgraph import ScriptedModel
from thinkgraph.graphs import parts
from thinkgraph.nodes.deps import Deps
from thinkgraph.policies import ReActText
from thinkgraph.state import AgentState
from thinkgraph.tools import ToolRegistry

Graph = StateGraph[AgentState, Any, AgentState, AgentState]

DEPS = Deps(model=ScriptedModel([]), policy=ReActText(), tools=ToolRegistry([]))

THINK_KEYS = ["think", "act", "validate", "reset", "finalize"]


def custom(state: AgentState) -> dict[str, Any]:
    """A user's node: it writes nothing."""
    return {}


def with_critic(think_keys: list[str] | None = None) -> Graph:
    """think → act → observe → think, validate → critic → finalize, reset → think.

    validate's router returns "finalize", which this graph maps to the critic.
    """
    graph: Graph = StateGraph(AgentState)
    for name in ("think", "act", "observe", "validate", "reset", "finalize"):
        graph.add_node(name, getattr(parts, f"{name}_node")(DEPS))
    graph.add_node("critic", custom)
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", parts.think_router(DEPS), think_keys or THINK_KEYS)
    graph.add_edge("act", "observe")
    graph.add_edge("observe", "think")
    graph.add_conditional_edges(
        "validate", parts.validate_router(DEPS), {"finalize": "critic", "think": "think"}
    )
    graph.add_edge("critic", "finalize")
    graph.add_edge("reset", "think")
    graph.add_edge("finalize", END)
    return graph


def to_critic_or_end(state: AgentState) -> Literal["critic", "__end__"]:
    """A user's router that does not check the guards."""
    return "critic"


def critic_run() -> list[Any]:
    """A finished run through `with_critic`: a parse error, a round of two calls, an answer.

    validate has no validators, so it writes nothing; the critic notes its review.
    """
    from thinkgraph.state import (
        ErrorStep,
        FinalStep,
        HumanStep,
        LLMCallStep,
        ObservationStep,
        TaskStep,
        ThoughtStep,
        ToolCall,
        ToolCallStep,
        ToolResultStep,
    )
    from thinkgraph.types import NextAction

    calls = [ToolCall(name="add", args={"a": 1, "b": 2}), ToolCall(name="add", args={})]
    return [
        TaskStep(node="start", text="add things"),
        LLMCallStep(node="think", text="???"),
        ErrorStep(node="think", message="no Action line"),
        LLMCallStep(node="think", text="..."),
        ThoughtStep(node="think", text="add"),
        *[ToolCallStep(node="think", call=c) for c in calls],
        *[ToolResultStep(node="act", call_id=c.id, tool="add", ok=True) for c in calls],
        *[ObservationStep(node="observe", call_id=c.id, tool="add", text="3") for c in calls],
        LLMCallStep(node="think", text="Final Answer: 3"),
        ThoughtStep(node="think", next_action=NextAction.FINAL_ANSWER, answer="3"),
        HumanStep(node="critic", kind="review", text="looks right"),
        FinalStep(node="finalize", answer="3", stop_reason="final_answer"),
    ]
