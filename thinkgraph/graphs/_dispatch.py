"""The routers that start act: one LangGraph task (`Send`) per tool call.

They take the state and, optionally, the tool registry (to serve calls a tool's cache can
answer). `thinkgraph.graphs.nodes.route_think(deps)` binds the registry for a graph;
used bare in ``add_conditional_edges`` they run without the cache.
"""

from __future__ import annotations

from typing import Final

from langgraph.types import Send

from thinkgraph.graphs import routing
from thinkgraph.nodes.act import ActTask, time_left
from thinkgraph.state import AgentState, Counters
from thinkgraph.tools.cache import find_cached
from thinkgraph.tools.registry import ToolRegistry

__all__ = ["THINK_TARGETS", "route_approved", "route_think"]

THINK_TARGETS: Final = [
    routing.THINK,
    routing.APPROVE,
    routing.ACT,
    routing.VALIDATE,
    routing.RESET,
    routing.FINALIZE,
    routing.ASK_HUMAN,
]
"""Every node the router after think can choose."""


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
    left = time_left(state)
    for offset, call in enumerate(calls):
        task = ActTask(call=call, step=step, number=first + offset, time_left_s=left)
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
