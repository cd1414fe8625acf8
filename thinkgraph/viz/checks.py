"""Static checks on a graph, run when it is built: a graph that cannot work never runs.

`check_graph` raises `GraphConfigError` naming the node and the fix when:

- a router declares no targets (LangGraph could send the run anywhere);
- a node is unreachable from START;
- a node cannot reach END (the run could never finish through it);
- a cycle has no edge chosen by a guarded router, so `max_steps`, the budgets and the
  failure limit cannot stop it (only LangGraph's recursion limit would);
- a think node has no route for a `NextAction` value, or for the guards' finalize.

`build_react_graph` calls it; call it on your own graphs before compiling them.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from thinkgraph.errors import GraphConfigError
from thinkgraph.graphs import routing
from thinkgraph.types import NextAction, StepLimits
from thinkgraph.viz.model import END, START, guarded_router, is_guarded_router, to_graph_model

__all__ = ["check_graph", "guarded_router", "is_guarded_router"]

NEXT_ACTION_ROUTES: dict[NextAction, tuple[str, ...]] = {
    NextAction.CONTINUE: (routing.ACT, routing.APPROVE),
    NextAction.VALIDATE: (routing.VALIDATE,),
    NextAction.FINAL_ANSWER: (routing.VALIDATE,),
    NextAction.RESET: (routing.RESET,),
}
"""Which return values of route_think carry each NextAction (any one of them will do)."""


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
    problems = []
    for node in model.nodes:
        if node not in reached and node != END:
            problems.append(
                f"node {node!r} is unreachable from START; add an edge to it "
                f"(e.g. graph.add_edge('think', {node!r})) or remove it"
            )
    if END not in reached:
        problems.append("END is unreachable from START; add an edge to END (e.g. from 'finalize')")
    return problems


def _dead_ends(model: nx.DiGraph) -> list[str]:
    finishing = nx.ancestors(model, END) | {END}
    reached = nx.descendants(model, START)  # an unreachable node is reported as such
    target = routing.FINALIZE if routing.FINALIZE in model else "END"
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
        f"cycle {path} passes through no guarded router, so max_steps cannot stop it; route "
        f"one of its edges out of {nodes[0]!r} with a router that checks the guards "
        "(route_think, or your own marked @guarded_router)"
    ]


def _think_routes(model: nx.DiGraph, limits: StepLimits | None) -> list[str]:
    problems = []
    for node, data in model.nodes(data=True):
        if data["kind"] != routing.THINK:
            continue
        router = data.get("router")
        if router is None:
            problems.append(
                f"node {node!r} is a think node without a router, so NextAction has no "
                f"route; use graph.add_conditional_edges({node!r}, route_think, THINK_TARGETS)"
            )
            continue
        if router != "route_think":
            continue  # a user's router on think decides its own routes
        keys = {k for _, _, ks in model.out_edges(node, data="keys") for k in ks}
        for action, targets in NEXT_ACTION_ROUTES.items():
            if not keys & set(targets):
                problems.append(
                    f"node {node!r} has no route for NextAction.{action.name}; add "
                    f"{targets[0]!r} to the targets of route_think on {node!r}"
                )
        needed = [routing.THINK, routing.FINALIZE]
        if limits is not None and limits.failure_policy == "ask_human":
            needed.append(routing.ASK_HUMAN)
        problems.extend(
            f"node {node!r} has no route to {key!r}, which the guards use; add {key!r} to "
            f"the targets of route_think on {node!r}"
            for key in needed
            if key not in keys
        )
    return problems


def check_graph(graph: Any, *, limits: StepLimits | None = None) -> nx.DiGraph:
    """Check that a graph can run: reachable, finishing, guarded, every NextAction routed.

    Args:
        graph: a `StateGraph` (compiled or not) or a model from `to_graph_model`.
        limits: the run's guards; with ``failure_policy="ask_human"`` think must also be
            able to route to ask_human.

    Returns:
        The graph model, so a caller that goes on to draw does not build it twice.

    Raises:
        GraphConfigError: one line per problem, each naming the node and the fix.

    Example:
        >>> check_graph(build_react_graph(deps))  # doctest: +SKIP
    """
    model = graph if isinstance(graph, nx.DiGraph) else to_graph_model(graph, limits=limits)
    problems = [
        *_open_routers(model),
        *_unreachable(model),
        *_dead_ends(model),
        *_unguarded_cycle(model),
        *_think_routes(model, limits),
    ]
    if len(problems) == 1:
        raise GraphConfigError(problems[0])
    if problems:
        listed = "\n".join(f"- {p}" for p in problems)
        raise GraphConfigError(f"{len(problems)} problems in the graph:\n{listed}")
    return model
