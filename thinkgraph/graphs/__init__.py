"""Graphs: the prebuilt ReAct graph, the routers, and the parts to build your own.

`parts` holds the node and router factories for your own `StateGraph`; `build_react_graph`
returns ours, uncompiled. Both load on first use: the diagrams import `routing` from here,
and `build_react_graph` checks its graph with them.

Example:
    >>> from thinkgraph.graphs import build_react_graph, parts
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from thinkgraph.graphs import parts
    from thinkgraph.graphs.react import THINK_TARGETS, build_react_graph

__all__ = ["THINK_TARGETS", "build_react_graph", "parts"]

_WHERE = {
    "THINK_TARGETS": "thinkgraph.graphs.react",
    "build_react_graph": "thinkgraph.graphs.react",
}


def __getattr__(name: str) -> Any:
    if name == "parts":
        return importlib.import_module("thinkgraph.graphs.parts")
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'thinkgraph.graphs' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
