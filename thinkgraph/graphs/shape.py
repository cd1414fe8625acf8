"""A graph's shape as data: its nodes with their kinds, its edges with their route labels.

`read_graph` reads a LangGraph graph — compiled or not, ours or a user's `StateGraph` — into
a plain networkx `DiGraph`. The build-time checks (`thinkgraph.graphs.checks`) and the
diagrams (`thinkgraph.viz`) both read this one shape, so a check and a drawing can never
disagree about where an edge goes or why it is taken.

Attributes, all plain values:

- node: ``kind`` (think, approve, act, observe, validate, reset, finalize, ask_human,
  start, end or custom), ``router`` (name of the function choosing its outgoing edges),
  ``guarded`` (that router enforces the step guards), ``open_router`` (a router that
  declares no targets);
- edge: ``conditional``, ``label`` (the route labels that take it, joined), ``keys`` (the
  router's return values mapped to it), ``router``, ``guarded`` and ``missing`` (a route to
  a node the graph does not have).

A router made from the route table (`thinkgraph.graphs.build`) returns labels: each key
*is* its label, so an edge re-targeted by a path map keeps it. A router on one of our nodes
that returns node names (wired by hand) is labelled from the table (`EDGE_LABELS`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

import networkx as nx
from langgraph.constants import END, START

from thinkgraph.graphs.routes import APPROVE, NODE_KINDS, REACT_ROUTES, Route

__all__ = [
    "EDGE_LABELS",
    "END",
    "KIND_ATTR",
    "ROUTES_ATTR",
    "START",
    "approval_tools",
    "guarded_router",
    "is_guarded_router",
    "read_graph",
    "routes_of",
]

KIND_ATTR: Final = "__thinkgraph_kind__"
"""Set on the function of each of our nodes: its kind, whatever the node is named."""
ROUTES_ATTR: Final = "__thinkgraph_routes__"
"""Set on a router made from the route table: its routes, targets resolved to node names."""
_GUARDED_ATTR: Final = "__thinkgraph_guarded_router__"
_NAME_ROUTERS: Final = frozenset(
    {"route_think", "route_approved", "route_after_observe", "route_after_validate",
     "route_after_human"}
)  # fmt: skip
"""Our routers that return node names (wired by hand), labelled from the table."""
_GUARDING: Final = _NAME_ROUTERS - {"route_approved"}


def _edge_labels() -> dict[tuple[str, str], str]:
    labels: dict[tuple[str, str], list[str]] = {}
    for kind, routes in REACT_ROUTES.items():
        for route in routes:
            labels.setdefault((kind, route.target), []).append(route.label)
    return {key: " / ".join(names) for key, names in labels.items()}


EDGE_LABELS: Final[Mapping[tuple[str, str], str]] = _edge_labels()
"""Edge labels keyed by (kind of the source node, the node name a router returns), made
from the route table, for graphs wired by hand with routers that return node names."""

F = TypeVar("F", bound=Callable[..., Any])


def guarded_router(fn: F) -> F:
    """Mark a router of yours as enforcing the step guards, for a graph wired by hand.

    A router given to `ReasoningGraph.add_routes` gets the guards by composition and needs
    no mark; this is for a `StateGraph` built by hand, whose cycles must pass a router that
    can leave them when `max_steps`, a budget or the failure limit trips.
    """
    target = getattr(fn, "__func__", fn)  # a bound method keeps its flag on the function
    setattr(target, _GUARDED_ATTR, True)
    return fn


def _unwrap(fn: Any) -> Any:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def _name(fn: Any) -> str:
    return str(getattr(fn, "__name__", None) or type(fn).__name__)


def _ours(fn: Any) -> bool:
    module = getattr(fn, "__module__", "") or ""
    return module.startswith("thinkgraph.graphs")


def is_guarded_router(fn: Any) -> bool:
    """Whether `fn` checks the guards: marked, made from the table with guards, or ours."""
    fn = getattr(_unwrap(fn), "__func__", _unwrap(fn))
    if getattr(fn, _GUARDED_ATTR, False):
        return True
    return _ours(fn) and _name(fn) in _GUARDING


def routes_of(fn: Any) -> tuple[Route, ...] | None:
    """The routes of a router made from the route table (targets are node names), or None."""
    routes = getattr(_unwrap(_func_of(fn)), ROUTES_ATTR, None)
    return tuple(routes) if routes is not None else None


def _func_of(runnable: Any) -> Any:
    """The user's function behind a LangGraph node or branch runnable."""
    fn = getattr(runnable, "func", None) or getattr(runnable, "afunc", None) or runnable
    return _unwrap(fn)


def _kind(name: str, spec: Any) -> str:
    metadata = getattr(spec, "metadata", None) or {}
    if isinstance(metadata.get("kind"), str):
        return str(metadata["kind"])
    fn = _func_of(getattr(spec, "runnable", None))
    kind = getattr(fn, KIND_ATTR, None)
    if isinstance(kind, str):
        return kind
    module = getattr(fn, "__module__", "") or ""
    fn_name = _name(fn)
    # our node functions live in thinkgraph.nodes.<kind> under their own name
    if module == f"thinkgraph.nodes.{fn_name}" and fn_name in NODE_KINDS:
        return fn_name
    return name if name in NODE_KINDS and module.startswith("thinkgraph.") else "custom"


def _label(source_kind: str, key: str, target: str, labelled: bool) -> str | None:
    if labelled:
        return key  # a router made from the table returns the label itself
    # a router wired by hand on one of our nodes returns our node names: label them
    label = EDGE_LABELS.get((source_kind, key))
    if label is not None:
        return label
    # a custom router's return value says why the edge is taken, when it is not the target
    return key if key != target else None


def _add_edge(model: nx.DiGraph, source: str, target: str, **attrs: Any) -> None:
    if not model.has_edge(source, target):
        model.add_edge(source, target, **attrs)
        return
    old = model.edges[source, target]
    # a fixed edge always fires, so it wins over a conditional one to the same node
    old["conditional"] = old["conditional"] and attrs["conditional"]
    old["guarded"] = old["guarded"] and attrs["guarded"]
    old["keys"] = [*old["keys"], *attrs["keys"]]
    labels = [x for x in (old["label"], attrs["label"]) if x]
    old["label"] = " / ".join(dict.fromkeys(labels)) or None


def _add_node(model: nx.DiGraph, name: str, kind: str) -> None:
    model.add_node(name, kind=kind, router=None, guarded=False)


_PLAIN: Final[dict[str, Any]] = {
    "conditional": False, "label": None, "keys": [], "router": None, "guarded": False,
}  # fmt: skip


def _from_builder(model: nx.DiGraph, builder: Any) -> None:
    specs: Mapping[str, Any] = builder.nodes
    _add_node(model, START, "start")
    for name, spec in specs.items():
        _add_node(model, name, _kind(name, spec))
    _add_node(model, END, "end")
    order = {name: i for i, name in enumerate(model.nodes)}

    def edge(source: str, target: str, **attrs: Any) -> None:
        if target not in model:
            # a route to a node the graph lacks: kept as data for the check to name
            model.graph.setdefault("missing", []).append((source, target, attrs["keys"]))
            return
        _add_edge(model, source, target, **attrs)

    fixed = {(s, t) for s, t in builder.edges}
    fixed |= {(s, t) for starts, t in builder.waiting_edges for s in starts}
    for source in [START, *specs]:
        for s, t in sorted(fixed, key=lambda e: (order.get(e[0], 0), order.get(e[1], 1 << 20))):
            if s == source:
                edge(s, t, **_PLAIN)
        source_kind = model.nodes[source]["kind"]
        for router_name, branch in builder.branches.get(source, {}).items():
            fn = _func_of(branch.path)
            guarded = is_guarded_router(fn)
            labelled = getattr(fn, ROUTES_ATTR, None) is not None
            if source in specs:
                model.nodes[source].update(router=router_name, guarded=guarded)
            # no path map and no Literal return type: LangGraph may route anywhere
            ends = branch.ends or {n: n for n in [*specs, END]}
            if not branch.ends:
                model.nodes[source]["open_router"] = True
            for key, target in ends.items():
                edge(source, target, conditional=True, keys=[str(key)], router=router_name,
                     guarded=guarded,
                     label=_label(source_kind, str(key), target, labelled))  # fmt: skip
        spec = specs.get(source)
        destinations = getattr(spec, "ends", None) or ()
        # Command(goto=...) destinations declared on the node; a dict gives their labels
        labels = destinations if isinstance(destinations, dict) else {}
        guarded_node = is_guarded_router(_func_of(getattr(spec, "runnable", None)))
        for target in destinations:
            edge(source, target, conditional=True, label=labels.get(target) or None, keys=[],
                 router=None, guarded=guarded_node)  # fmt: skip
        handler = getattr(spec, "error_handler_node", None)
        if handler:
            edge(source, handler, **{**_PLAIN, "conditional": True, "label": "error"})


def _from_drawable(model: nx.DiGraph, drawable: Any) -> None:
    """A graph LangGraph can only describe through get_graph(), e.g. a prebuilt Pregel."""
    for node_id in drawable.nodes:
        _add_node(model, node_id, "start" if node_id == START else "end" if node_id == END
                  else "custom")  # fmt: skip
    for item in drawable.edges:
        label = str(item.data) if item.data is not None else None
        _add_edge(model, item.source, item.target, conditional=bool(item.conditional),
                  label=label, keys=[], router=None, guarded=False)  # fmt: skip


def read_graph(graph: Any) -> nx.DiGraph:
    """Read a LangGraph graph into its shape: nodes by kind, edges with their labels.

    Args:
        graph: a `StateGraph`, a compiled graph, or anything with ``get_graph()``.

    Returns:
        A `DiGraph` whose nodes are in the graph's order: START, the nodes as added, END.
        Routes to nodes the graph lacks are listed in its ``missing`` graph attribute.

    Raises:
        TypeError: for anything that is not a graph.
    """
    model = nx.DiGraph()
    builder = graph if hasattr(graph, "branches") else getattr(graph, "builder", None)
    if builder is not None and hasattr(builder, "branches"):
        _from_builder(model, builder)
    elif hasattr(graph, "get_graph"):
        _from_drawable(model, graph.get_graph())
    else:
        raise TypeError(
            f"cannot read a {type(graph).__name__}; pass a StateGraph or a compiled graph"
        )
    return model


def approval_tools(tools: Iterable[Any], approve: Iterable[str] | str | None = None) -> list[str]:
    """Names of the tools whose calls wait for a person (a predicate counts: it may ask).

    Args:
        tools: the agent's tools.
        approve: the agent's ``approve`` setting: tool names, "side_effects" or None.
    """
    names = set() if approve is None or isinstance(approve, str) else set(approve)
    for item in tools:
        rule = getattr(item, "requires_approval", False)
        by_effects = approve == "side_effects" and getattr(item, "side_effects", False)
        if rule is True or callable(rule) or by_effects:
            names.add(str(item.name))
    return sorted(names)


def is_approval_gate(kind: str) -> bool:
    """Whether a node of this kind is the approval gate."""
    return kind == APPROVE
