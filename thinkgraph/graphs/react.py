"""build_react_graph: the think / act / observe / validate / reset graph, uncompiled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from thinkgraph.graphs import routing
from thinkgraph.nodes.act import ActTask, act
from thinkgraph.nodes.approve import approve
from thinkgraph.nodes.ask_human import ask_human
from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.finalize import finalize
from thinkgraph.nodes.observe import observe
from thinkgraph.nodes.reset import reset
from thinkgraph.nodes.think import think
from thinkgraph.nodes.validate import validate
from thinkgraph.state import AgentState, Counters, number_steps
from thinkgraph.tools.cache import find_cached
from thinkgraph.tools.registry import ToolRegistry
from thinkgraph.viz.checks import check_graph

__all__ = ["THINK_TARGETS", "build_react_graph", "route_approved", "route_think"]

THINK_TARGETS = [
    routing.THINK,
    routing.APPROVE,
    routing.ACT,
    routing.VALIDATE,
    routing.RESET,
    routing.FINALIZE,
    routing.ASK_HUMAN,
]
"""Every node the router after think can choose."""

Node = Callable[..., dict[str, Any]]


def _sends(
    state: AgentState, only: set[str] | None = None, tools: ToolRegistry | None = None
) -> list[Send]:
    step = (state.get("counters") or Counters()).steps
    calls = [c for c in state.get("pending_calls") or [] if only is None or c.id in only]
    # Cache hits are found here because an act task sees only its call, never the chain;
    # `cache_ttls` is empty unless a tool caches, so the usual round scans nothing.
    hits = find_cached(tools, state["chain"], calls) if tools and tools.cache_ttls else {}
    sends = []
    first = len(state["chain"])
    for offset, call in enumerate(calls):
        task = ActTask(call=call, step=step, number=first + offset)
        if call.id in hits:
            task["cached"] = hits[call.id]
        sends.append(Send(routing.ACT, task))
    return sends


def route_think(state: AgentState, tools: ToolRegistry | None = None) -> str | list[Send]:
    """`route` for the edge after think, with one act task (`Send`) per proposed call.

    With `tools`, a call a tool's cache can answer carries the cached result to act.
    """
    target = routing.route(state, state["limits"])
    return _sends(state, tools=tools) if target == routing.ACT else target


def route_approved(state: AgentState, tools: ToolRegistry | None = None) -> str | list[Send]:
    """After approval: one act task per call cleared to run; none left → observe."""
    sends = _sends(state, set(state.get("run_calls") or []), tools)
    return sends or routing.OBSERVE


def _with_tools(
    router: Callable[[AgentState, ToolRegistry | None], str | list[Send]], tools: ToolRegistry
) -> Callable[[AgentState], str | list[Send]]:
    def with_tools(state: AgentState) -> str | list[Send]:
        return router(state, tools)

    with_tools.__name__ = router.__name__  # LangGraph names the branch by it
    return with_tools


def _named(name: str, node: Node, deps: Deps) -> Node:
    # Every node records its name in the `node` channel, so a stored run says which node
    # ran last (for breakpoints and history) without scanning the chain.
    def run(state: AgentState) -> dict[str, Any]:
        update = node(state, deps=deps)
        number_steps(update.get("chain", ()), len(state["chain"]))
        # A value equal to the one stored is left out: the state is the same either way,
        # and each written channel costs a serialized row in the checkpoint's writes.
        changed = {
            key: value
            for key, value in update.items()
            if key == "chain" or key not in state or state[key] != value  # type: ignore[literal-required]
        }
        return {**changed, "node": name}

    run.__name__ = name
    return run


def _named_act(deps: Deps) -> Node:
    def run(task: ActTask, config: RunnableConfig) -> dict[str, Any]:
        update = act(task, config, deps=deps)
        if "number" in task:
            number_steps(update.get("chain", ()), task["number"])
        return {**update, "node": routing.ACT}

    run.__name__ = routing.ACT
    return run


def _limited(router: Callable[[AgentState, Any], str]) -> Callable[[AgentState], str]:
    def with_limits(state: AgentState) -> str:
        return str(router(state, state["limits"]))

    with_limits.__name__ = router.__name__
    return with_limits


def build_react_graph(deps: Deps) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    """Build the thinkgraph ReAct graph, uncompiled so it can be extended.

    Args:
        deps: the model, policy, tools and validators the nodes use.

    Returns:
        A `StateGraph` over `AgentState`. Compile it with a checkpointer:
        ``build_react_graph(deps).compile(checkpointer=open_checkpointer(url))``.
    """
    graph: StateGraph[AgentState, Any, AgentState, AgentState] = StateGraph(AgentState)
    for name, node in [
        (routing.THINK, think),
        (routing.APPROVE, approve),
        (routing.OBSERVE, observe),
        (routing.VALIDATE, validate),
        (routing.RESET, reset),
        (routing.FINALIZE, finalize),
        (routing.ASK_HUMAN, ask_human),
    ]:
        graph.add_node(name, _named(name, node, deps))
    graph.add_node(routing.ACT, _named_act(deps), input_schema=ActTask)

    graph.add_edge(START, routing.THINK)
    graph.add_conditional_edges(routing.THINK, _with_tools(route_think, deps.tools), THINK_TARGETS)
    graph.add_conditional_edges(
        routing.APPROVE, _with_tools(route_approved, deps.tools), [routing.ACT, routing.OBSERVE]
    )
    graph.add_edge(routing.ACT, routing.OBSERVE)
    graph.add_conditional_edges(
        routing.OBSERVE,
        _limited(routing.route_after_observe),
        [routing.THINK, routing.FINALIZE, routing.ASK_HUMAN],
    )
    graph.add_conditional_edges(
        routing.VALIDATE,
        _limited(routing.route_after_validate),
        [routing.THINK, routing.RESET, routing.FINALIZE, routing.ASK_HUMAN],
    )
    graph.add_edge(routing.RESET, routing.THINK)
    graph.add_conditional_edges(
        routing.ASK_HUMAN,
        _limited(routing.route_after_human),
        [routing.THINK, routing.FINALIZE],
    )
    graph.add_edge(routing.FINALIZE, END)
    # Cheap (a few dozen edges) and catches a broken edit of this function at build time.
    check_graph(graph)
    return graph
