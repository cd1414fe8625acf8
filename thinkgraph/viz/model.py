"""The graph model: one networkx `DiGraph` that every renderer reads.

`to_graph_model` is the graph's shape (`thinkgraph.graphs.shape.read_graph`, which the
build-time checks read too) with what a drawing adds: guards, approval gates and
breakpoints. Edge labels come from the routes each router knows, so a route re-targeted by
its label, or by a path map of a graph wired by hand, keeps its label here.

Attributes, all plain values so the model is easy to test and to serialize:

- graph: ``name``, ``guards`` (the `StepLimits` as a dict, or None), ``approval_tools``
  (names of tools that need approval);
- node: ``kind`` (think, approve, act, observe, validate, reset, finalize, ask_human,
  start, end or custom), ``label``, ``breakpoint_before``, ``breakpoint_after``,
  ``approval`` (an approval gate), ``router`` (name of the router choosing its outgoing
  edges), ``guarded`` (that router enforces the step guards), and where they apply
  ``sends_to`` and ``by_name`` (see `thinkgraph.graphs.shape`);
- edge: ``conditional``, ``label`` (the route labels that take it), ``keys`` (the
  router's return values mapped to it), ``router`` and ``guarded``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import networkx as nx

from thinkgraph.graphs.routes import APPROVE, NODE_KINDS
from thinkgraph.graphs.shape import END, START, read_graph
from thinkgraph.types import StepLimits

__all__ = [
    "END",
    "NODE_KINDS",
    "START",
    "from_description",
    "graph_description",
    "layered_nodes",
    "to_graph_model",
]


def _interrupts(compiled: Any, attr: str, names: Iterable[str]) -> set[str]:
    value = getattr(compiled, attr, None) or ()
    return set(names) if value == "*" else {str(v) for v in value}


def _points(breakpoints: Any, when: str) -> set[str]:
    if breakpoints is None:
        return set()
    value = breakpoints.get(when, ()) if isinstance(breakpoints, Mapping) else None
    return {str(n) for n in (value if value is not None else getattr(breakpoints, when, ()))}


def to_graph_model(
    graph: Any,
    *,
    limits: StepLimits | None = None,
    breakpoints: Any = None,
    approval_tools: Iterable[str] = (),
    name: str = "thinkgraph",
) -> nx.DiGraph:
    """Read a LangGraph graph into a networkx model with labels, guards and breakpoints.

    Args:
        graph: a compiled graph (``build_react_graph(deps).compile()``), an uncompiled
            `StateGraph` built with our nodes and routers, or anything with ``get_graph()``.
        limits: the run's guards, recorded as the ``guards`` graph attribute.
        breakpoints: breakpoints given at run time rather than at compile time: a
            `Breakpoints` or a mapping ``{"before": [...], "after": [...]}``.
        approval_tools: names of tools that need a person's approval before they run.
        name: the diagram's title.

    Returns:
        A `DiGraph` whose nodes are in the graph's order: START, the nodes as added, END.

    Example:
        >>> model = to_graph_model(build_react_graph(deps))  # doctest: +SKIP
        >>> model.edges["think", "act"]["label"]  # doctest: +SKIP
        'continue + calls'
    """
    model = read_graph(graph)
    model.graph.update(
        name=name,
        guards=limits.model_dump() if limits is not None else None,
        approval_tools=sorted(approval_tools),
    )
    model.graph.pop("missing", None)  # the check names those; a drawing shows what exists
    builder = graph if hasattr(graph, "branches") else getattr(graph, "builder", None)
    names = list(getattr(builder, "nodes", None) or ())
    before = _interrupts(graph, "interrupt_before_nodes", names) | _points(breakpoints, "before")
    after = _interrupts(graph, "interrupt_after_nodes", names) | _points(breakpoints, "after")
    for node, attrs in model.nodes(data=True):
        kind = attrs["kind"]
        attrs["label"] = kind if kind in ("start", "end") else node
        attrs["breakpoint_before"] = node in before
        attrs["breakpoint_after"] = node in after
        attrs["approval"] = kind == APPROVE
    return model


def layered_nodes(model: nx.DiGraph) -> list[str]:
    """The nodes by distance from START, then in the graph's order; unreachable ones last.

    A stable reading order for text renderings: what runs first comes first.
    """
    order = {node: i for i, node in enumerate(model.nodes)}
    depth: dict[str, int] = (
        dict(nx.single_source_shortest_path_length(model, START)) if START in model else {}
    )
    if END in depth:
        depth[END] = max(depth.values()) + 1  # END reads best at the very bottom
    far = len(order) + 1
    return sorted(model.nodes, key=lambda n: (depth.get(n, far), order[n]))


def graph_description(model: nx.DiGraph) -> dict[str, Any]:
    """A diagram model as plain data (networkx node-link), to store with a run.

    The run-time parts (guards, breakpoints, approval tools) are left out: they are
    stored with the run themselves and applied again by `from_description`.
    """
    data: dict[str, Any] = nx.node_link_data(model, edges="edges")
    data["graph"] = {"name": model.graph.get("name", "thinkgraph")}
    return data


def from_description(
    data: dict[str, Any],
    *,
    limits: StepLimits | None = None,
    breakpoints: Any = None,
    approval_tools: Iterable[str] = (),
) -> nx.DiGraph:
    """The diagram model of a stored `graph_description`, with a run's own settings."""
    model: nx.DiGraph = nx.node_link_graph(data, directed=True, edges="edges")
    model.graph["guards"] = limits.model_dump() if limits is not None else None
    model.graph["approval_tools"] = sorted(approval_tools)
    before, after = _points(breakpoints, "before"), _points(breakpoints, "after")
    for name, attrs in model.nodes(data=True):
        attrs["breakpoint_before"] = bool(attrs.get("breakpoint_before")) or name in before
        attrs["breakpoint_after"] = bool(attrs.get("breakpoint_after")) or name in after
    return model
