"""build_react_graph: the think / act / observe / validate / reset graph, uncompiled."""

from __future__ import annotations

from functools import partial
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from thinkgraph.graphs import routing
from thinkgraph.nodes.act import ActTask, act
from thinkgraph.nodes.ask_human import ask_human
from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.finalize import finalize
from thinkgraph.nodes.observe import observe
from thinkgraph.nodes.reset import reset
from thinkgraph.nodes.think import think
from thinkgraph.nodes.validate import validate
from thinkgraph.state import AgentState, Counters

__all__ = ["THINK_TARGETS", "build_react_graph", "route_think"]

THINK_TARGETS = [
    routing.THINK,
    routing.ACT,
    routing.VALIDATE,
    routing.RESET,
    routing.FINALIZE,
    routing.ASK_HUMAN,
]
"""Every node the router after think can choose."""


def route_think(state: AgentState) -> str | list[Send]:
    """`route` for the edge after think, with one act task (`Send`) per proposed call."""
    target = routing.route(state, state["limits"])
    if target != routing.ACT:
        return target
    step = (state.get("counters") or Counters()).steps
    return [Send(routing.ACT, ActTask(call=call, step=step)) for call in state["pending_calls"]]


def _bind(node: Any, deps: Deps) -> Any:
    bound = partial(node, deps=deps)
    bound.__name__ = node.__name__  # type: ignore[attr-defined]  # LangGraph names by it
    return bound


def build_react_graph(deps: Deps) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    """Build the thinkgraph ReAct graph, uncompiled so it can be extended.

    Args:
        deps: the model, policy, tools and validators the nodes use.

    Returns:
        A `StateGraph` over `AgentState`. Compile it with a checkpointer:
        ``build_react_graph(deps).compile(checkpointer=open_checkpointer(url))``.
    """
    graph: StateGraph[AgentState, Any, AgentState, AgentState] = StateGraph(AgentState)
    graph.add_node(routing.THINK, _bind(think, deps))
    graph.add_node(routing.ACT, _bind(act, deps), input_schema=ActTask)
    graph.add_node(routing.OBSERVE, _bind(observe, deps))
    graph.add_node(routing.VALIDATE, _bind(validate, deps))
    graph.add_node(routing.RESET, _bind(reset, deps))
    graph.add_node(routing.FINALIZE, _bind(finalize, deps))
    graph.add_node(routing.ASK_HUMAN, _bind(ask_human, deps))

    graph.add_edge(START, routing.THINK)
    graph.add_conditional_edges(routing.THINK, route_think, THINK_TARGETS)
    graph.add_edge(routing.ACT, routing.OBSERVE)
    graph.add_conditional_edges(
        routing.OBSERVE,
        _limited(routing.route_after_observe),
        [routing.THINK, routing.FINALIZE, routing.ASK_HUMAN],
    )
    graph.add_conditional_edges(
        routing.VALIDATE,
        _limited(routing.route_after_validate),
        [routing.THINK, routing.RESET, routing.FINALIZE, routing.ASK_HUMAN],
    )
    graph.add_edge(routing.RESET, routing.THINK)
    graph.add_conditional_edges(
        routing.ASK_HUMAN,
        _limited(routing.route_after_human),
        [routing.THINK, routing.FINALIZE],
    )
    graph.add_edge(routing.FINALIZE, END)
    return graph


def _limited(router: Any) -> Any:
    def with_limits(state: AgentState) -> str:
        return str(router(state, state["limits"]))

    with_limits.__name__ = router.__name__
    return with_limits
