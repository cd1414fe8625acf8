"""build_react_graph: the think / act / observe / validate / reset graph, uncompiled.

It is `react_graph(deps).build()`: our nodes and the route table (`thinkgraph.graphs.routes`),
checked when built (`thinkgraph.graphs.checks`).
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, StateGraph

from thinkgraph.graphs import parts
from thinkgraph.graphs.build import react_graph
from thinkgraph.graphs.routes import (
    ACT,
    APPROVE,
    ASK_HUMAN,
    FINALIZE,
    OBSERVE,
    RESET,
    THINK,
    VALIDATE,
)
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState

__all__ = ["add_react_nodes", "build_react_graph"]


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
    graph.add_node(THINK, parts.think_node(deps))
    graph.add_node(APPROVE, parts.approve_node(deps))
    graph.add_node(OBSERVE, parts.observe_node(deps))
    graph.add_node(VALIDATE, parts.validate_node(deps))
    graph.add_node(RESET, parts.reset_node(deps))
    graph.add_node(FINALIZE, parts.finalize_node(deps))
    graph.add_node(ASK_HUMAN, parts.ask_human_node(deps))
    graph.add_node(ACT, parts.act_node(deps))

    graph.add_conditional_edges(THINK, parts.think_router(deps), parts.THINK_TARGETS)
    graph.add_conditional_edges(APPROVE, parts.approved_router(deps), parts.APPROVE_TARGETS)
    graph.add_edge(ACT, OBSERVE)
    graph.add_conditional_edges(OBSERVE, parts.observe_router(deps), parts.OBSERVE_TARGETS)
    graph.add_conditional_edges(VALIDATE, parts.validate_router(deps), parts.VALIDATE_TARGETS)
    graph.add_edge(RESET, THINK)
    graph.add_conditional_edges(ASK_HUMAN, parts.human_router(deps), parts.HUMAN_TARGETS)
    graph.add_edge(FINALIZE, END)
