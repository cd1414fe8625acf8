"""Build-time checks: a graph that cannot work is refused when it is built, never mid-run.

`check_graph` raises `GraphConfigError` with one line per problem, naming the node and the
fix, when:

- a route goes to a node the graph does not have;
- a router declares no targets (LangGraph could send the run anywhere);
- a node is unreachable from START, or cannot reach END;
- a cycle has no edge chosen by a guarded router, so `max_steps`, the budgets and the
  failure limit cannot stop it (only LangGraph's recursion limit would);
- a think node has no route for a `NextAction` value, or for the guards;

and the wiring rules our nodes rely on:

- a router of ours sends act tasks to a node that is not our act node (wired by hand, our
  act renamed);
- act's results reach observe (an act node leads to an observe node);
- an answer is final only through validate (think's "validate" route reaches a validate
  node before finalize);
- a tool that needs approval has a route through approve;
- ``failure_policy="ask_human"`` has an ask_human node to ask at.

`ReasoningGraph.build` (and so `build_react_graph`) and `Agent(...)` run it; run it on a
graph you wire by hand before compiling it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import networkx as nx

from thinkgraph.errors import GraphConfigError
from thinkgraph.graphs import routes
from thinkgraph.graphs.routes import approval_tools
from thinkgraph.graphs.shape import END, START, read_graph, router_of
from thinkgraph.types import NextAction, StepLimits

__all__ = ["check_graph"]

NEXT_ACTION_ROUTES: Final[dict[NextAction, tuple[str, ...]]] = {
    NextAction.CONTINUE: (routes.ACT, routes.APPROVE),
    NextAction.VALIDATE: (routes.VALIDATE,),
    NextAction.FINAL_ANSWER: (routes.VALIDATE,),
    NextAction.RESET: (routes.RESET,),
}
"""Which node names route_think returns (wired by hand) for each NextAction."""


def _kind(model: nx.DiGraph, node: str) -> str:
    return str(model.nodes[node]["kind"])


def _of_kind(model: nx.DiGraph, kind: str) -> list[str]:
    return [n for n, k in model.nodes(data="kind") if k == kind]


def _keys_to(model: nx.DiGraph, node: str) -> dict[str, str]:
    """A node's router's return values (labels, or names by hand) and where each goes."""
    return {key: t for _, t, keys in model.out_edges(node, data="keys") for key in keys}


def _missing(model: nx.DiGraph) -> list[str]:
    problems = []
    for source, target, keys in model.graph.get("missing", ()):
        what = f"the route {keys[0]!r} of node {source!r}" if keys else f"the edge {source!r}"
        problems.append(
            f"{what} goes to {target!r}, which is not a node of the graph; add the node "
            f"{target!r} or send the route to one that is"
        )
    return problems


def _open_routers(model: nx.DiGraph) -> list[str]:
    return [
        f"the router {data['router']!r} on node {node!r} declares no targets; pass them "
        f"as a list to add_conditional_edges({node!r}, {data['router']}, [...]) or annotate "
        "its return type with Literal[...]"
        for node, data in model.nodes(data=True)
        if data.get("open_router")
    ]


def _unreachable(model: nx.DiGraph) -> list[str]:
    reached = nx.descendants(model, START) | {START}
    problems = [
        f"node {node!r} is unreachable from START; add an edge to it "
        f"(e.g. graph.add_edge('think', {node!r})) or remove it"
        for node in model.nodes
        if node not in reached and node != END
    ]
    if END not in reached:
        problems.append("END is unreachable from START; add an edge to END (e.g. from 'finalize')")
    return problems


def _dead_ends(model: nx.DiGraph) -> list[str]:
    finishing = nx.ancestors(model, END) | {END}
    reached = nx.descendants(model, START)  # an unreachable node is reported as such
    finals = _of_kind(model, routes.FINALIZE)
    target = finals[0] if finals else "END"
    return [
        f"node {node!r} cannot reach END; add an edge from {node!r} to {target!r}, or give "
        f"it a router whose targets include {target!r}"
        for node in model.nodes
        if node not in finishing and node in reached
    ]


def _unguarded_cycle(model: nx.DiGraph) -> list[str]:
    # A cycle is stoppable when one of its edges is chosen by a guarded router: that router
    # leaves the loop when a guard trips. Drop those edges; any cycle left is unstoppable.
    loose = nx.DiGraph()
    loose.add_nodes_from(model.nodes)
    loose.add_edges_from((s, t) for s, t, guarded in model.edges(data="guarded") if not guarded)
    try:
        cycle = nx.find_cycle(loose)
    except nx.NetworkXNoCycle:
        return []
    nodes = [s for s, _ in cycle]
    path = " -> ".join([*nodes, nodes[0]])
    return [
        f"cycle {path} passes through no guarded router, so max_steps cannot stop it; give "
        f"{nodes[0]!r} its routes with graph.add_routes({nodes[0]!r}, router, {{...}}), which "
        "adds the guards, or mark a router you wire by hand @guarded_router"
    ]


def _think_routes(model: nx.DiGraph, limits: StepLimits | None) -> list[str]:
    problems = []
    for node in _of_kind(model, routes.THINK):
        router = model.nodes[node].get("router")
        if router is None:
            problems.append(
                f"node {node!r} is a think node without a router, so NextAction has no "
                f"route; give it its routes from the table (react_graph) or "
                f"graph.add_conditional_edges({node!r}, parts.think_router(deps), THINK_TARGETS)"
            )
            continue
        if not model.nodes[node].get("by_name"):
            continue  # made from the table (every label has its route), or a user's router
        keys = _keys_to(model, node)
        for action, targets in NEXT_ACTION_ROUTES.items():
            if not set(keys) & set(targets):
                problems.append(
                    f"node {node!r} has no route for NextAction.{action.name}; add "
                    f"{targets[0]!r} to the targets of {router} on {node!r}"
                )
        problems.extend(
            f"node {node!r} has no route to {key!r}, which the guards use; add {key!r} to "
            f"the targets of {router} on {node!r}"
            for key in (routes.THINK, routes.FINALIZE)
            if key not in keys
        )
    return problems


def _asks_a_human(model: nx.DiGraph, limits: StepLimits | None) -> list[str]:
    if limits is None or limits.failure_policy != "ask_human":
        return []
    problems = []
    for node in _of_kind(model, routes.THINK):
        target = _keys_to(model, node).get("failures", _keys_to(model, node).get(routes.ASK_HUMAN))
        if target is None or _kind(model, target) != routes.ASK_HUMAN:
            problems.append(
                f"node {node!r} has no route to 'ask_human', which failure_policy='ask_human' "
                f"needs; add an ask_human node (react_graph has one) or use failure_policy='abort'"
            )
    return problems


def _act_tasks_reach_act(model: nx.DiGraph) -> list[str]:
    # A Send bypasses the path map: a router's act tasks go to the node it names, by name.
    acts = _of_kind(model, routes.ACT)
    problems = []
    for node, data in model.nodes(data=True):
        sends_to = data.get("sends_to")
        if sends_to is None or sends_to in acts or not acts:
            continue
        problems.append(
            f"node {acts[0]!r} is our act node, but {data['router']} on {node!r} sends act "
            f"tasks to {sends_to!r}; build the graph with react_graph(deps, "
            f"names={{'act': {acts[0]!r}}}) or name the node {sends_to!r}"
        )
    return problems


def _act_reaches_observe(model: nx.DiGraph) -> list[str]:
    problems = []
    for node in _of_kind(model, routes.ACT):
        nexts = [t for t in model.successors(node) if _kind(model, t) == routes.OBSERVE]
        if not nexts:
            observers = _of_kind(model, routes.OBSERVE)
            fix = (
                f"add graph.add_edge({node!r}, {observers[0]!r})"
                if observers
                else "add an observe node (parts.observe_node) and an edge to it"
            )
            problems.append(f"act node {node!r} does not lead to observe; {fix}")
    return problems


def _validated(model: nx.DiGraph) -> list[str]:
    problems = []
    stops = set(_of_kind(model, routes.THINK)) | set(_of_kind(model, routes.FINALIZE)) | {END}
    for node in _of_kind(model, routes.THINK):
        target = _keys_to(model, node).get(routes.VALIDATE)
        if target is None or _kind(model, target) == routes.VALIDATE:
            continue
        validators = _of_kind(model, routes.VALIDATE)
        # a node of the user's may stand between think and validate, never finalize
        inner = model.subgraph([n for n in model.nodes if n not in stops or n == target])
        if target not in stops and any(nx.has_path(inner, target, v) for v in validators):
            continue
        problems.append(
            f"node {node!r} sends a candidate answer ('validate') to {target!r}, but an answer "
            "is final only through validate; add parts.validate_node(deps) and route "
            f"'validate' to it"
        )
    return problems


def _gated(model: nx.DiGraph, gated: Iterable[str]) -> list[str]:
    tools = list(gated)
    if not tools:
        return []
    problems = []
    for node in _of_kind(model, routes.THINK):
        target = _keys_to(model, node).get(routes.APPROVE)
        if target is not None and _kind(model, target) == routes.APPROVE:
            continue
        problems.append(
            f"tool {tools[0]!r} needs approval, but node {node!r} has no route through an "
            "approve node; add parts.approve_node(deps) as 'approve' (react_graph has it) "
            "or drop the tool's requires_approval"
        )
    return problems


def _deps_of(graph: Any) -> Any:
    builder = graph if hasattr(graph, "branches") else getattr(graph, "builder", None)
    for branches in getattr(builder, "branches", {}).values():
        for branch in branches.values():
            router = router_of(branch.path)
            if router is not None and router.deps is not None:
                return router.deps
    return None


def check_graph(graph: Any, *, limits: StepLimits | None = None, deps: Any = None) -> nx.DiGraph:
    """Check that a graph can run: routes, reachability, guards and the wiring rules.

    Args:
        graph: a `StateGraph` (compiled or not), or a shape from `read_graph`.
        limits: the run's guards; with ``failure_policy="ask_human"`` think must be able to
            route to ask_human.
        deps: the agent's parts, to know which tools need approval; when None, they are
            read from our routers in the graph (made with the agent's parts).

    Returns:
        The graph's shape (`thinkgraph.graphs.shape.read_graph`).

    Raises:
        GraphConfigError: one line per problem, each naming the node and the fix.

    Example:
        >>> check_graph(build_react_graph(deps))  # doctest: +SKIP
    """
    model = graph if isinstance(graph, nx.DiGraph) else read_graph(graph)
    deps = deps if deps is not None or isinstance(graph, nx.DiGraph) else _deps_of(graph)
    gated = approval_tools(deps.tools, deps.approve) if deps is not None else []
    problems = _missing(model) or [
        *_act_tasks_reach_act(model),
        *_open_routers(model),
        *_unreachable(model),
        *_dead_ends(model),
        *_unguarded_cycle(model),
        *_think_routes(model, limits),
        *_asks_a_human(model, limits),
        *_act_reaches_observe(model),
        *_validated(model),
        *_gated(model, gated),
    ]
    if len(problems) == 1:
        raise GraphConfigError(problems[0])
    if problems:
        listed = "\n".join(f"- {p}" for p in problems)
        raise GraphConfigError(f"{len(problems)} problems in the graph:\n{listed}")
    return model
