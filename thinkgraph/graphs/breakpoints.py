"""Breakpoints as a graph takes them: checked against its nodes, and those it declares.

An agent's breakpoints (``Agent(breakpoints=...)``, ``--breakpoint``) are checked against
the nodes of its graph; a graph built by `ReasoningGraph` may declare its own
(`add_breakpoint`), which every agent on it joins to its own.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.graph import StateGraph

from thinkgraph.errors import ConfigError
from thinkgraph.types import Breakpoints

__all__ = [
    "REACT_NODES",
    "as_breakpoints",
    "declare_breakpoints",
    "declared_breakpoints",
    "joined_breakpoints",
]

_DECLARED: weakref.WeakKeyDictionary[Any, Breakpoints] = weakref.WeakKeyDictionary()
"""The breakpoints each built graph declares (`ReasoningGraph.add_breakpoint`)."""


def declare_breakpoints(graph: StateGraph[Any], points: Breakpoints) -> None:
    """Record that every run of `graph` pauses at `points`."""
    _DECLARED[graph] = points


def declared_breakpoints(graph: Any) -> Breakpoints:
    """The breakpoints `graph` (built by `ReasoningGraph.build`) declares; none for others."""
    builder = getattr(graph, "builder", graph)  # a compiled graph keeps its StateGraph
    try:
        return _DECLARED.get(builder) or Breakpoints()
    except TypeError:  # not weakly referenceable: not one of ours
        return Breakpoints()


REACT_NODES = frozenset(
    {"think", "approve", "act", "observe", "validate", "reset", "finalize", "ask_human"}
)


def as_breakpoints(
    value: Breakpoints | Mapping[str, Iterable[str]] | None, graph: StateGraph[Any] | None = None
) -> Breakpoints:
    """An agent's breakpoints, checked against the nodes of `graph` (None: ours), joined
    with those `graph` declares (`ReasoningGraph.add_breakpoint`)."""
    declared = declared_breakpoints(graph) if graph is not None else Breakpoints()
    if value is None:
        return declared
    if isinstance(value, Breakpoints):
        return joined_breakpoints(value, declared)
    unknown = set(value) - {"before", "after"}
    if unknown:
        raise ConfigError(
            f"breakpoints takes the keys 'before' and 'after', not {sorted(unknown)}; "
            'e.g. breakpoints={"before": ["act"], "after": ["think"]}'
        )
    points = Breakpoints(before=tuple(value.get("before", ())), after=tuple(value.get("after", ())))
    nodes = set(graph.nodes) if graph is not None else REACT_NODES
    for name in (*points.before, *points.after):
        if name not in nodes:
            raise ConfigError(
                f"breakpoint on unknown node {name!r}; the nodes are {', '.join(sorted(nodes))}"
            )
    return joined_breakpoints(points, declared)


def joined_breakpoints(first: Breakpoints, second: Breakpoints) -> Breakpoints:
    """Both sets of breakpoints, each node once, in order."""
    return Breakpoints(
        before=tuple(dict.fromkeys((*first.before, *second.before))),
        after=tuple(dict.fromkeys((*first.after, *second.after))),
    )
