"""build_react_graph: the think / act / observe / validate / reset graph, uncompiled."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from thinkgraph.graphs import nodes, routing
from thinkgraph.graphs.routing import THINK_TARGETS, route_approved, route_think
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState
from thinkgraph.viz.checks import check_graph

__all__ = ["THINK_TARGETS", "build_react_graph", "route_approved", "route_think"]


def build_react_graph(deps: Deps) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    """Build the thinkgraph ReAct graph, uncompiled so it can be extended.

    It is made of the parts in `thinkgraph.graphs.nodes`; add your own nodes and edges
    before compiling, or build a graph of your own from the same parts.

    Args:
        deps: the model, policy, tools and validators the nodes use.

    Returns:
        A `StateGraph` over `AgentState`. Compile it with a checkpointer:
        ``build_react_graph(deps).compile(checkpointer=open_checkpointer(url))``, or
        give a function that builds it to ``Agent(..., build_graph=...)``.
    """
    graph: StateGraph[AgentState, Any, AgentState, AgentState] = StateGraph(AgentState)
    for make in (
        nodes.think,
        nodes.approve,
        nodes.observe,
        nodes.validate,
        nodes.reset,
        nodes.finalize,
        nodes.ask_human,
    ):
        graph.add_node(make.__name__, make(deps))
    graph.add_node(routing.ACT, nodes.act(deps))

    graph.add_edge(START, routing.THINK)
    graph.add_conditional_edges(routing.THINK, nodes.route_think(deps), THINK_TARGETS)
    graph.add_conditional_edges(routing.APPROVE, nodes.route_approved(deps), nodes.APPROVE_TARGETS)
    graph.add_edge(routing.ACT, routing.OBSERVE)
    graph.add_conditional_edges(
        routing.OBSERVE, nodes.route_after_observe(deps), nodes.OBSERVE_TARGETS
    )
    graph.add_conditional_edges(
        routing.VALIDATE, nodes.route_after_validate(deps), nodes.VALIDATE_TARGETS
    )
    graph.add_edge(routing.RESET, routing.THINK)
    graph.add_conditional_edges(
        routing.ASK_HUMAN, nodes.route_after_human(deps), nodes.HUMAN_TARGETS
    )
    graph.add_edge(routing.FINALIZE, END)
    # Cheap (a few dozen edges) and catches a broken edit of this function at build time.
    check_graph(graph)
    return graph
