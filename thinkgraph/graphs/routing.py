"""Routing: pure functions from state to the next node's name.

Guards are enforced here, by routing, not by prompt text and not by a loop. Each router is
a pure function of the state and the limits, so every guard is unit-testable at its exact
boundary without building a graph.

Order of the checks after think (the first that applies wins):

1. an acceptable candidate answer (FINAL_ANSWER or VALIDATE at or after `min_steps`)
   goes to validate, even at `max_steps` or over budget: a finished answer is kept;
2. too many consecutive failures go to ask_human or finalize (abort);
3. a spent budget (timeout, cost, tokens) or `max_steps` goes to finalize;
4. a final answer before `min_steps` goes back to think (think adds the nudge);
5. proposed tool calls go to act, through approve when a call needs a person's decision;
6. RESET goes to reset while resets are left, else back to think (think says why);
7. anything else (an unparsable reply, a thought without calls) goes back to think.

`route` decides by the state alone. `route_think` and `route_approved` are the edges the
graph uses into act: they start one act task (`Send`) per call, and with the agent's parts
(`Deps`) they check the gate once more from the tools themselves, so a state that claims
nothing needs approval, or that a call was cleared (written by hand, e.g. with
`update_state`), still cannot send a gated call to act without a person's recorded
decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from langgraph.types import Send

from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.gate import waiting_calls
from thinkgraph.state import AgentState, Counters
from thinkgraph.types import NextAction, StepLimits, StopReason

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

THINK: Final = "think"
APPROVE: Final = "approve"
ACT: Final = "act"
OBSERVE: Final = "observe"
VALIDATE: Final = "validate"
RESET: Final = "reset"
FINALIZE: Final = "finalize"
ASK_HUMAN: Final = "ask_human"

ThinkTarget = Literal["think", "approve", "act", "validate", "reset", "finalize", "ask_human"]

THINK_TARGETS: Final = [THINK, APPROVE, ACT, VALIDATE, RESET, FINALIZE, ASK_HUMAN]
"""Every node the router after think can choose."""


def _counters(state: Mapping[str, Any]) -> Counters:
    counters = state.get("counters")
    return counters if isinstance(counters, Counters) else Counters()


def budget_stop(counters: Counters, limits: StepLimits) -> StopReason | None:
    """The budget guard that has tripped, if any: timeout, cost or tokens."""
    if limits.timeout_s is not None and counters.elapsed_s >= limits.timeout_s:
        return "timeout"
    if limits.max_cost_usd is not None and counters.cost_usd >= limits.max_cost_usd:
        return "max_cost"
    if limits.max_tokens is not None and counters.tokens >= limits.max_tokens:
        return "max_tokens"
    return None


def guard_stop(counters: Counters, limits: StepLimits) -> StopReason | None:
    """The guard that stops the run, if any: failures (abort), budgets, then max_steps.

    finalize calls this too, to record why it was reached; keeping one function for both
    means the recorded stop reason can never disagree with the route that was taken.
    """
    if (
        counters.consecutive_failures >= limits.max_consecutive_failures
        and limits.failure_policy == "abort"
    ):
        return "consecutive_failures"
    budget = budget_stop(counters, limits)
    if budget is not None:
        return budget
    if counters.steps >= limits.max_steps:
        return "max_steps"
    return None


def failure_target(
    counters: Counters, limits: StepLimits
) -> Literal["ask_human", "finalize"] | None:
    """ask_human or finalize when consecutive failures reached the limit, else None."""
    if counters.consecutive_failures < limits.max_consecutive_failures:
        return None
    return "ask_human" if limits.failure_policy == "ask_human" else "finalize"


def _is_candidate(action: NextAction) -> bool:
    return action in (NextAction.FINAL_ANSWER, NextAction.VALIDATE)


def route(state: Mapping[str, Any], limits: StepLimits) -> ThinkTarget:
    """Choose the node after think. See the module docstring for the order of checks.

    Args:
        state: The run's state after think wrote its decision.
        limits: The run's limits (stored in the state as ``state["limits"]``).

    Returns:
        The name of the next node.
    """
    counters = _counters(state)
    action = state.get("next_action", NextAction.CONTINUE)
    has_candidate = state.get("candidate") is not None
    if _is_candidate(action) and has_candidate and counters.steps >= limits.min_steps:
        return VALIDATE
    failed = failure_target(counters, limits)
    if failed is not None:
        return failed
    if guard_stop(counters, limits) is not None:
        return FINALIZE
    if _is_candidate(action):
        return THINK
    calls = state.get("pending_calls") or []
    if action == NextAction.CONTINUE and calls:
        return APPROVE if state.get("needs_approval") else ACT
    if action == NextAction.RESET and counters.resets < limits.max_resets:
        return RESET
    return THINK


def route_after_observe(
    state: Mapping[str, Any], limits: StepLimits
) -> Literal["think", "finalize", "ask_human"]:
    """After a tool round: back to think unless failures or a budget stop the run.

    `max_steps` needs no check here: route() sends calls to act only while a think step is
    left, so the think that reads these observations is always within the limit.
    """
    counters = _counters(state)
    failed = failure_target(counters, limits)
    if failed is not None:
        return failed
    if budget_stop(counters, limits) is not None:
        return FINALIZE
    return THINK


def route_after_validate(
    state: Mapping[str, Any], limits: StepLimits
) -> Literal["think", "reset", "finalize", "ask_human"]:
    """After validation: finalize a passed answer; otherwise revise, reset or stop."""
    if state.get("answer") is not None:
        return FINALIZE
    counters = _counters(state)
    failed = failure_target(counters, limits)
    if failed is not None:
        return failed
    if guard_stop(counters, limits) is not None:
        return FINALIZE
    if state.get("next_action") == NextAction.RESET and counters.resets < limits.max_resets:
        return RESET
    return THINK


def route_after_human(state: Mapping[str, Any], limits: StepLimits) -> Literal["think", "finalize"]:
    """After ask_human: abort finalizes, anything else thinks again."""
    run = state.get("run")
    if run is not None and run.stop_reason == "aborted":
        return FINALIZE
    if guard_stop(_counters(state), limits) is not None:
        return FINALIZE
    return THINK


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
    if deps is not None and _unapproved(state, deps, None):
        return APPROVE
    return _sends(state, None, deps)


def route_approved(state: AgentState, deps: Deps | None = None) -> str | list[Send]:
    """After approval: one act task per call cleared to run; none left → observe.

    With `deps`, a call marked cleared that needs a decision with none recorded is not
    sent: it never runs, and observe tells the model it did not run.
    """
    cleared = set(state.get("run_calls") or [])
    if deps is not None:
        cleared -= set(_unapproved(state, deps, cleared))
    return _sends(state, cleared, deps) or OBSERVE


def _unapproved(state: AgentState, deps: Deps, only: set[str] | None) -> list[str]:
    return waiting_calls(state, deps, only)


def _sends(state: AgentState, only: set[str] | None, deps: Deps | None) -> list[Send]:
    from thinkgraph.nodes.act import ActTask, time_left
    from thinkgraph.tools.cache import find_cached

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
        sends.append(Send(ACT, task))
    return sends
