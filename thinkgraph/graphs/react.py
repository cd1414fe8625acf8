"""build_react_graph: the think / act / observe / validate / reset graph, uncompiled."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from thinkgraph.graphs import parts, routing
from thinkgraph.graphs.routing import THINK_TARGETS, route_approved, route_think
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState
from thinkgraph.viz.checks import check_graph

__all__ = ["THINK_TARGETS", "add_react_nodes", "build_react_graph", "route_approved", "route_think"]


def build_react_graph(deps: Deps) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    """Build the thinkgraph ReAct graph, uncompiled so it can be extended.

    It is made of the parts in `thinkgraph.graphs.parts`; add your own nodes and edges
    before compiling, or build a graph of your own from the same parts.

    Args:
        deps: the model, policy, tools and validators the nodes use.

    Returns:
        A `StateGraph` over `AgentState`. Compile it with a checkpointer:
        ``build_react_graph(deps).compile(checkpointer=open_checkpointer(url))``, or
        give a function that builds it to ``Agent(..., build_graph=...)``.
    """
    graph: StateGraph[AgentState, Any, AgentState, AgentState] = StateGraph(AgentState)
    add_react_nodes(graph, deps)
    graph.add_edge(START, routing.THINK)
    # Cheap (a few dozen edges) and catches a broken edit of this function at build time.
    check_graph(graph)
    return graph


def add_react_nodes(graph: StateGraph[AgentState, Any, Any, Any], deps: Deps) -> None:
    """Add the ReAct nodes and every edge between them; the caller wires the entry to think.

    `build_react_graph` enters from START; `thinkgraph.graphs.server` enters from a node
    that turns the LangGraph server's ``{"task": ...}`` input into the start state.
    """
    graph.add_node(routing.THINK, parts.think_node(deps))
    graph.add_node(routing.APPROVE, parts.approve_node(deps))
    graph.add_node(routing.OBSERVE, parts.observe_node(deps))
    graph.add_node(routing.VALIDATE, parts.validate_node(deps))
    graph.add_node(routing.RESET, parts.reset_node(deps))
    graph.add_node(routing.FINALIZE, parts.finalize_node(deps))
    graph.add_node(routing.ASK_HUMAN, parts.ask_human_node(deps))
    graph.add_node(routing.ACT, parts.act_node(deps))

    graph.add_conditional_edges(routing.THINK, parts.think_router(deps), THINK_TARGETS)
    graph.add_conditional_edges(routing.APPROVE, parts.approved_router(deps), parts.APPROVE_TARGETS)
    graph.add_edge(routing.ACT, routing.OBSERVE)
    graph.add_conditional_edges(routing.OBSERVE, parts.observe_router(deps), parts.OBSERVE_TARGETS)
    graph.add_conditional_edges(
        routing.VALIDATE, parts.validate_router(deps), parts.VALIDATE_TARGETS
    )
    graph.add_edge(routing.RESET, routing.THINK)
    graph.add_conditional_edges(routing.ASK_HUMAN, parts.human_router(deps), parts.HUMAN_TARGETS)
    graph.add_edge(routing.FINALIZE, END)
