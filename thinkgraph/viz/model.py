"""The graph model: one networkx `DiGraph` that every renderer and check reads.

`to_graph_model` reads a LangGraph graph — compiled or not, ours or a user's `StateGraph`
built with our nodes — into a plain `DiGraph`, so diagrams and static checks never depend
on LangGraph internals beyond this module.

Attributes, all plain values so the model is easy to test and to serialize:

- graph: ``name``, ``guards`` (the `StepLimits` as a dict, or None), ``approval_tools``
  (names of tools that need approval);
- node: ``kind`` (think, approve, act, observe, validate, reset, finalize, ask_human,
  start, end or custom), ``label``, ``breakpoint_before``, ``breakpoint_after``,
  ``approval`` (an approval gate), ``router`` (name of the function choosing its
  outgoing edges) and ``guarded`` (that router enforces the step guards);
- edge: ``conditional``, ``label`` (the NextAction or guard that takes it), ``keys`` (the
  router's return values mapped to it), ``router`` and ``guarded``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

import networkx as nx
from langgraph.constants import END, START

from thinkgraph.graphs import routing
from thinkgraph.types import StepLimits

__all__ = [
    "EDGE_LABELS",
    "END",
    "NODE_KINDS",
    "START",
    "approval_tools",
    "from_description",
    "graph_description",
    "guarded_router",
    "is_guarded_router",
    "layered_nodes",
    "to_graph_model",
]

NODE_KINDS: Final = (
    routing.THINK,
    routing.APPROVE,
    routing.ACT,
    routing.OBSERVE,
    routing.VALIDATE,
    routing.RESET,
    routing.FINALIZE,
    routing.ASK_HUMAN,
)
"""The kinds of node thinkgraph ships; any other node is of kind "custom"."""

EDGE_LABELS: Final[Mapping[tuple[str, str], str]] = {
    # route_think — see the order of checks in thinkgraph.graphs.routing
    ("think", "act"): "continue + calls",
    ("think", "approve"): "continue + calls needing approval",
    ("think", "validate"): "final_answer / validate ≥ min_steps",
    ("think", "reset"): "reset ≤ max_resets",
    ("think", "finalize"): "guard: max_steps, timeout, cost, tokens, failures",
    ("think", "ask_human"): "consecutive failures",
    ("think", "think"): "retry: no calls, parse error, answer < min_steps",
    # route_approved
    ("approve", "act"): "approved calls",
    ("approve", "observe"): "none to run (rejected / answered)",
    # route_after_observe
    ("observe", "think"): "next step",
    ("observe", "finalize"): "guard: timeout, cost, tokens, failures",
    ("observe", "ask_human"): "consecutive failures",
    # route_after_validate
    ("validate", "finalize"): "pass / guard",
    ("validate", "think"): "fail",
    ("validate", "reset"): "fail + reset ≤ max_resets",
    ("validate", "ask_human"): "consecutive failures",
    # route_after_human
    ("ask_human", "think"): "retry / guidance",
    ("ask_human", "finalize"): "abort / guard",
}
"""Edge labels keyed by (kind of the source node, the router's return value).

The key is what our router returns, not the node it is mapped to, so a user's graph that
maps ``{"finalize": "critic"}`` on validate still labels validate → critic "pass / guard".
"""

_GUARDED_ATTR: Final = "__thinkgraph_guarded_router__"
_OUR_ROUTERS: Final = frozenset(
    {"route_think", "route_after_observe", "route_after_validate", "route_after_human"}
)

F = TypeVar("F", bound=Callable[..., Any])


def guarded_router(fn: F) -> F:
    """Mark a router as enforcing the step guards, so cycles through it pass `check_graph`.

    A cycle in a graph must pass through a router that can leave it when `max_steps`, a
    budget or the failure limit trips; otherwise nothing but LangGraph's recursion limit
    stops it. Our routers are marked already; mark your own when it checks the guards.

    Example:
        >>> from thinkgraph.graphs.routing import guard_stop
        >>> @guarded_router
        ... def route_critic(state):
        ...     if guard_stop(state["counters"], state["limits"]):
        ...         return "finalize"
        ...     return "think"
    """
    target = getattr(fn, "__func__", fn)  # a bound method keeps its flag on the function
    setattr(target, _GUARDED_ATTR, True)
    return fn


def _unwrap(fn: Any) -> Any:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def is_guarded_router(fn: Any) -> bool:
    """Whether `fn` was marked with `guarded_router` (or is one of thinkgraph's routers)."""
    fn = _unwrap(fn)
    target = getattr(fn, "__func__", fn)
    if getattr(target, _GUARDED_ATTR, False):
        return True
    module = getattr(target, "__module__", "") or ""
    return module.startswith("thinkgraph.graphs") and _name(target) in _OUR_ROUTERS


def _name(fn: Any) -> str:
    return str(getattr(fn, "__name__", None) or type(fn).__name__)


def _func_of(runnable: Any) -> Any:
    """The user's function behind a LangGraph node or branch runnable."""
    fn = getattr(runnable, "func", None) or getattr(runnable, "afunc", None) or runnable
    return _unwrap(fn)


def _kind(name: str, spec: Any) -> str:
    metadata = getattr(spec, "metadata", None) or {}
    if isinstance(metadata.get("kind"), str):
        return str(metadata["kind"])
    fn = _func_of(getattr(spec, "runnable", None))
    module = getattr(fn, "__module__", "") or ""
    fn_name = _name(fn)
    # our node functions live in thinkgraph.nodes.<kind> under their own name; a node
    # renamed in a user's graph keeps its kind, a user's node named "think" does not get one
    if module == f"thinkgraph.nodes.{fn_name}" and fn_name in NODE_KINDS:
        return fn_name
    return name if name in NODE_KINDS and module.startswith("thinkgraph.") else "custom"


def _interrupts(compiled: Any, attr: str, names: Iterable[str]) -> set[str]:
    value = getattr(compiled, attr, None) or ()
    return set(names) if value == "*" else {str(v) for v in value}


def _label(source_kind: str, key: str, target: str) -> str | None:
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


def _from_builder(model: nx.DiGraph, builder: Any, before: set[str], after: set[str]) -> None:
    specs: Mapping[str, Any] = builder.nodes
    model.add_node(START, kind="start", label="start")
    for name, spec in specs.items():
        kind = _kind(name, spec)
        model.add_node(
            name,
            kind=kind,
            label=name,
            breakpoint_before=name in before,
            breakpoint_after=name in after,
            approval=kind == routing.APPROVE,
            router=None,
            guarded=False,
        )
    model.add_node(END, kind="end", label="end")
    order = {name: i for i, name in enumerate(model.nodes)}

    fixed = {(s, t) for s, t in builder.edges}
    fixed |= {(s, t) for starts, t in builder.waiting_edges for s in starts}
    plain: dict[str, Any] = {
        "conditional": False,
        "label": None,
        "keys": [],
        "router": None,
        "guarded": False,
    }
    for source in [START, *specs]:
        for s, t in sorted(fixed, key=lambda e: (order.get(e[0], 0), order.get(e[1], 0))):
            if s == source:
                _add_edge(model, s, t, **plain)
        source_kind = model.nodes[source]["kind"]
        for router_name, branch in builder.branches.get(source, {}).items():
            fn = _func_of(branch.path)
            guarded = is_guarded_router(fn)
            if source in specs:
                model.nodes[source].update(router=router_name, guarded=guarded)
            # no path map and no Literal return type: LangGraph may route anywhere
            ends = branch.ends or {n: n for n in [*specs, END]}
            if not branch.ends:
                model.nodes[source]["open_router"] = True
            for key, target in ends.items():
                _add_edge(
                    model,
                    source,
                    target,
                    conditional=True,
                    label=_label(source_kind, str(key), target),
                    keys=[str(key)],
                    router=router_name,
                    guarded=guarded,
                )
        spec = specs.get(source)
        destinations = getattr(spec, "ends", None) or ()
        # Command(goto=...) destinations declared on the node; a dict gives their labels
        labels = destinations if isinstance(destinations, dict) else {}
        guarded_node = is_guarded_router(_func_of(getattr(spec, "runnable", None)))
        for target in destinations:
            _add_edge(
                model,
                source,
                target,
                conditional=True,
                label=labels.get(target) or None,
                keys=[],
                router=None,
                guarded=guarded_node,
            )
        handler = getattr(spec, "error_handler_node", None)
        if handler:
            _add_edge(model, source, handler, **{**plain, "conditional": True, "label": "error"})


def _from_drawable(model: nx.DiGraph, drawable: Any) -> None:
    """A graph LangGraph can only describe through get_graph(), e.g. a prebuilt Pregel."""
    for node_id in drawable.nodes:
        kind = "start" if node_id == START else "end" if node_id == END else "custom"
        label = kind if kind in ("start", "end") else node_id
        flags = {"breakpoint_before": False, "breakpoint_after": False, "approval": False}
        model.add_node(node_id, kind=kind, label=label, router=None, guarded=False, **flags)
    for edge in drawable.edges:
        label = str(edge.data) if edge.data is not None else None
        conditional = bool(edge.conditional)
        _add_edge(model, edge.source, edge.target, conditional=conditional, label=label,
                  keys=[], router=None, guarded=False)  # fmt: skip


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
    model = nx.DiGraph(
        name=name,
        guards=limits.model_dump() if limits is not None else None,
        approval_tools=sorted(approval_tools),
    )
    builder = graph if hasattr(graph, "branches") else getattr(graph, "builder", None)
    if builder is not None and hasattr(builder, "branches"):
        names = list(builder.nodes)
        before = _interrupts(graph, "interrupt_before_nodes", names)
        before |= _points(breakpoints, "before")
        after = _interrupts(graph, "interrupt_after_nodes", names) | _points(breakpoints, "after")
        _from_builder(model, builder, before, after)
    elif hasattr(graph, "get_graph"):
        _from_drawable(model, graph.get_graph())
    else:
        raise TypeError(
            f"cannot draw a {type(graph).__name__}; pass a StateGraph or a compiled graph"
        )
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
