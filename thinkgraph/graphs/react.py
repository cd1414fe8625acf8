"""build_react_graph: the think / act / observe / validate / reset graph, uncompiled.

It is `react_graph(deps).build()`: our nodes and the route table (`thinkgraph.graphs.routes`),
checked when built (`thinkgraph.graphs.checks`).
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import StateGraph

from thinkgraph.graphs.build import react_graph
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState

__all__ = ["build_react_graph"]


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
