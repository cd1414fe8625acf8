"""A graph's shape as data: its nodes with their kinds, its edges with their route labels.

`read_graph` reads a LangGraph graph — compiled or not, ours or a user's `StateGraph` — into
a plain networkx `DiGraph`. The build-time checks (`thinkgraph.graphs.checks`) and the
diagrams (`thinkgraph.viz`) both read this one shape, and a run records it, so a check and
a drawing can never disagree about where an edge goes or why it is taken.

It reads what LangGraph holds: each node's runnable in ``builder.nodes`` (a `parts.Node`
knows its kind) and each branch's router and path map in ``builder.branches`` (a `Router`
knows its routes, whether it keeps the guards and where its act tasks go). Nothing is
guessed from a function's name or module: a node of yours is "custom", and a router of
yours is labelled by what it returns.

Attributes, all plain values:

- node: ``kind`` (think, approve, act, observe, validate, reset, finalize, ask_human,
  start, end or custom), ``router`` (name of the router choosing its outgoing edges),
  ``guarded`` (that router enforces the step guards), ``open_router`` (a router that
  declares no targets), ``sends_to`` (the node its act tasks go to) and ``by_name`` (a
  router of ours that returns our node names: wired by hand);
- edge: ``conditional``, ``label`` (the route labels that take it, joined), ``keys`` (the
  router's return values mapped to it), ``router``, ``guarded`` and ``missing`` (a route to
  a node the graph does not have).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

import networkx as nx
from langgraph.constants import END, START

from thinkgraph.graphs.parts import Node
from thinkgraph.graphs.routes import Router, is_guarded_router

__all__ = ["END", "START", "read_graph", "router_of"]


def _func_of(runnable: Any) -> Any:
    """The callable behind a LangGraph node or branch runnable."""
    fn = getattr(runnable, "func", None) or getattr(runnable, "afunc", None) or runnable
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def router_of(runnable: Any) -> Router | None:
    """The `Router` behind a branch's runnable (``builder.branches[node][name].path``)."""
    fn = _func_of(runnable)
    return fn if isinstance(fn, Router) else None


def _kind(spec: Any) -> str:
    runnable = getattr(spec, "runnable", None)
    return runnable.kind if isinstance(runnable, Node) else "custom"


def _label(router: Router | None, key: str, target: str) -> str | None:
    if router is not None and router.routes:
        return router.label_of(key)
    # a router that knows no routes: what it returns says why, when it is not the target
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
        _add_node(model, name, _kind(spec))
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
        for router_name, branch in builder.branches.get(source, {}).items():
            router = router_of(branch.path)
            guarded = router is not None and router.guarded
            if source in specs:
                model.nodes[source].update(router=router_name, guarded=guarded)
                if router is not None and router.sends_to is not None:
                    model.nodes[source]["sends_to"] = router.sends_to
                if router is not None and router.by_name:
                    model.nodes[source]["by_name"] = True
            # no path map and no Literal return type: LangGraph may route anywhere
            ends = branch.ends or {n: n for n in [*specs, END]}
            if not branch.ends:
                model.nodes[source]["open_router"] = True
            for key, target in ends.items():
                edge(source, target, conditional=True, keys=[str(key)], router=router_name,
                     guarded=guarded, label=_label(router, str(key), target))  # fmt: skip
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
