"""build_react_graph: the think / act / observe / validate / reset graph, uncompiled.

It is `react_graph(deps).build()`: our nodes and the route table (`thinkgraph.graphs.routes`),
checked when built (`thinkgraph.graphs.checks`).
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, StateGraph

from thinkgraph.graphs import parts, routing
from thinkgraph.graphs.build import react_graph
from thinkgraph.graphs.routing import THINK_TARGETS, route_approved, route_think
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState

__all__ = ["THINK_TARGETS", "add_react_nodes", "build_react_graph", "route_approved", "route_think"]


def build_react_graph(deps: Deps) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    """Build the thinkgraph ReAct graph, uncompiled so it can be extended.

    It is ``react_graph(deps).build()``; to change it by route label or node name, start
    from `react_graph` instead. You may still add nodes and edges to the result before
    compiling it.

    Args:
        deps: the model, policy, tools and validators the nodes use.

    Returns:
        A `StateGraph` over `AgentState`. Compile it with a checkpointer:
        ``build_react_graph(deps).compile(checkpointer=open_checkpointer(url))``, or
        give a function that builds it to ``Agent(..., build_graph=...)``.
    """
    return react_graph(deps).build()


def add_react_nodes(graph: StateGraph[AgentState, Any, Any, Any], deps: Deps) -> None:
    """Add the ReAct nodes and every edge between them, wired by hand with our routers that
    return node names; the caller wires the entry to think. Kept for graphs written
    against it: `react_graph` gives the same graph with its route table.
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
