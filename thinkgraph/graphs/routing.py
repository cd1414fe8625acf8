"""Routing: the edges into act, and our routers under their first names.

The routes themselves — each node's labels, their targets and their guard order — live in
the route table, `thinkgraph.graphs.routes`. Here:

- `route_think` and `route_approved`, the edges into act: they start one act task (`Send`)
  per call, and with the agent's parts (`Deps`) they check the gate once more from the
  tools themselves, so a state that claims nothing needs approval, or that a call was
  cleared (written by hand, e.g. with `update_state`), still cannot send a gated call to
  act without a person's recorded decision;
- `route`, `route_after_observe`, `route_after_validate` and `route_after_human`: the
  table's routers returning our default node names instead of labels, for graphs wired by
  hand with a list of targets (the way a graph was built before the table).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from langgraph.types import Send

from thinkgraph.graphs import routes
from thinkgraph.graphs.routes import (
    ACT,
    APPROVE,
    ASK_HUMAN,
    FINALIZE,
    OBSERVE,
    RESET,
    THINK,
    VALIDATE,
    default_target,
)
from thinkgraph.guards import budget_stop, failure_target, guard_stop
from thinkgraph.nodes.act import ActTask, time_left
from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.gate import waiting_calls
from thinkgraph.state import AgentState, Counters
from thinkgraph.tools.cache import find_cached
from thinkgraph.types import StepLimits

__all__ = [
    "ACT",
    "APPROVE",
    "ASK_HUMAN",
    "FINALIZE",
    "OBSERVE",
    "RESET",
    "THINK",
    "THINK_TARGETS",
    "VALIDATE",
    "budget_stop",
    "failure_target",
    "guard_stop",
    "route",
    "route_after_human",
    "route_after_observe",
    "route_after_validate",
    "route_approved",
    "route_think",
]

ThinkTarget = Literal["think", "approve", "act", "validate", "reset", "finalize", "ask_human"]

THINK_TARGETS: Final = [THINK, APPROVE, ACT, VALIDATE, RESET, FINALIZE, ASK_HUMAN]
"""Every node the router after think can choose."""


def _counters(state: Mapping[str, Any]) -> Counters:
    counters = state.get("counters")
    return counters if isinstance(counters, Counters) else Counters()


def route(state: Mapping[str, Any], limits: StepLimits) -> ThinkTarget:
    """The node after think, by our default names (`routes.after_think` gives the label).

    Args:
        state: The run's state after think wrote its decision.
        limits: The run's limits (stored in the state as ``state["limits"]``).
    """
    return default_target(THINK, routes.after_think(state, limits))  # type: ignore[return-value]


def route_after_observe(
    state: Mapping[str, Any], limits: StepLimits
) -> Literal["think", "finalize", "ask_human"]:
    """After a tool round, by our default names: think, unless a guard stops the run."""
    return default_target(OBSERVE, routes.after_observe(state, limits))  # type: ignore[return-value]


def route_after_validate(
    state: Mapping[str, Any], limits: StepLimits
) -> Literal["think", "reset", "finalize", "ask_human"]:
    """After validation, by our default names: finalize a passed answer; else revise or stop."""
    return default_target(VALIDATE, routes.after_validate(state, limits))  # type: ignore[return-value]


def route_after_human(state: Mapping[str, Any], limits: StepLimits) -> Literal["think", "finalize"]:
    """After ask_human, by our default names: abort or a guard finalizes, else think."""
    return default_target(ASK_HUMAN, routes.after_human(state, limits))  # type: ignore[return-value]


# -- the edges into act ---------------------------------------------------------------------


def route_think(state: AgentState, deps: Deps | None = None) -> str | list[Send]:
    """`route` for the edge after think, with one act task (`Send`) per proposed call.

    With `deps`, a call a tool's cache can answer carries the cached result to act, and
    calls are sent to approve instead whenever one of them needs a person's decision that
    is not recorded, whatever the state says.
    """
    target = route(state, state["limits"])
    if target != ACT:
        return target
    if deps is not None and waiting_calls(state, deps):
        return APPROVE
    return _sends(state, None, deps)


def route_approved(state: AgentState, deps: Deps | None = None) -> str | list[Send]:
    """After approval: one act task per call cleared to run; none left → observe.

    With `deps`, a call marked cleared that needs a decision with none recorded is not
    sent: it never runs, and observe tells the model it did not run.
    """
    cleared = set(state.get("run_calls") or [])
    if deps is not None:
        cleared -= set(waiting_calls(state, deps, cleared))
    return _sends(state, cleared, deps) or OBSERVE


def _sends(
    state: AgentState, only: set[str] | None, deps: Deps | None, act: str = ACT
) -> list[Send]:
    """One act task per call (all pending calls, or those in `only`), sent to node `act`."""
    step = _counters(state).steps
    calls = [c for c in state.get("pending_calls") or [] if only is None or c.id in only]
    tools = deps.tools if deps is not None else None
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
        sends.append(Send(act, task))
    return sends
