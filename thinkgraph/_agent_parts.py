"""What `Agent.__init__` checks and converts: breakpoints, tools, a custom graph."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.graph import StateGraph

from thinkgraph.errors import ConfigError
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState
from thinkgraph.tools import Tool, from_langchain, tool
from thinkgraph.types import Breakpoints, StepLimits
from thinkgraph.viz.checks import check_graph

__all__ = ["REACT_NODES", "GraphBuilder", "as_breakpoints", "as_tool", "built_graph"]

GraphBuilder = Callable[[Deps], StateGraph[AgentState, Any, AgentState, AgentState]]
"""A function that builds an uncompiled graph from the agent's parts, like
`build_react_graph`; see `thinkgraph.graphs.parts`."""

REACT_NODES = frozenset(
    {"think", "approve", "act", "observe", "validate", "reset", "finalize", "ask_human"}
)


def as_breakpoints(
    value: Breakpoints | Mapping[str, Iterable[str]] | None, nodes: Iterable[str] = REACT_NODES
) -> Breakpoints:
    if value is None:
        return Breakpoints()
    if isinstance(value, Breakpoints):
        return value
    unknown = set(value) - {"before", "after"}
    if unknown:
        raise ConfigError(
            f"breakpoints takes the keys 'before' and 'after', not {sorted(unknown)}; "
            'e.g. breakpoints={"before": ["act"], "after": ["think"]}'
        )
    points = Breakpoints(before=tuple(value.get("before", ())), after=tuple(value.get("after", ())))
    nodes = set(nodes)
    for name in (*points.before, *points.after):
        if name not in nodes:
            raise ConfigError(
                f"breakpoint on unknown node {name!r}; the nodes are {', '.join(sorted(nodes))}"
            )
    return points


def as_tool(item: Tool | BaseTool | Callable[..., Any]) -> Tool:
    if isinstance(item, Tool):
        return item
    if isinstance(item, BaseTool):  # before `callable`: a LangChain tool is callable too
        return from_langchain(item)
    if callable(item):
        return tool(item)
    raise TypeError(
        f"tools must be Tool objects, typed functions or LangChain tools, got {type(item).__name__}"
    )


def built_graph(
    build: GraphBuilder, deps: Deps, limits: StepLimits
) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    graph = build(deps)
    if not isinstance(graph, StateGraph):
        raise ConfigError(
            f"build_graph returned a {type(graph).__name__}; return the uncompiled "
            "StateGraph (the agent compiles it with its store)"
        )
    check_graph(graph, limits=limits)
    return graph
