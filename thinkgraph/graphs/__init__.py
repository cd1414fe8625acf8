"""Graphs: the route table, the wiring and its build-time checks, and our ReAct graph.

- `react_graph(deps)` is our graph as a `ReasoningGraph`: change it by route label
  (``set_route``), add nodes of yours with routes of their own (``add_routes``, guards
  included), rename our nodes (``names={"act": "execute"}``), then ``build()`` it;
- `build_react_graph(deps)` is ``react_graph(deps).build()``: the uncompiled `StateGraph`;
- `Route` and `REACT_ROUTES`: the route table (`thinkgraph.graphs.routes`);
- `check_graph`: the static checks, run by ``build()`` and by `Agent`;
- `parts`: our nodes and routers one by one, for a `StateGraph` wired by hand.

Example:
    >>> from thinkgraph.graphs import react_graph
    >>> graph = react_graph(deps, names={"act": "execute"}).build()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from thinkgraph._lazy import lazy_names

if TYPE_CHECKING:
    from thinkgraph.graphs import parts
    from thinkgraph.graphs.build import ReasoningGraph, react_graph
    from thinkgraph.graphs.checks import check_graph
    from thinkgraph.graphs.parts import THINK_TARGETS
    from thinkgraph.graphs.react import build_react_graph
    from thinkgraph.graphs.routes import REACT_ROUTES, Route, guarded_router

__all__ = [
    "REACT_ROUTES",
    "THINK_TARGETS",
    "ReasoningGraph",
    "Route",
    "build_react_graph",
    "check_graph",
    "guarded_router",
    "parts",
    "react_graph",
]

# Loaded on first use: the CLI reads a run's graph address (`thinkgraph.graphs.address`)
# before it builds any graph, and building pulls in LangGraph.
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        __name__: ["parts"],
        "thinkgraph.graphs.parts": ["THINK_TARGETS"],
        "thinkgraph.graphs.build": ["ReasoningGraph", "react_graph"],
        "thinkgraph.graphs.checks": ["check_graph"],
        "thinkgraph.graphs.react": ["build_react_graph"],
        "thinkgraph.graphs.routes": ["REACT_ROUTES", "Route", "guarded_router"],
    },
)
