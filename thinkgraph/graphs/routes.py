"""The route table: where each node goes next, declared once with its label and guard order.

A route is a word, not a node name. Each router returns the *label* of the route it takes
— the reason: "continue", "validate", "passed", "failed", "max_steps" — and the table says
where each label goes. `add_conditional_edges` gets the table as its path map, the static
check reads it, the diagram labels its edges with it and the run overlay counts along it.
A user re-targets one of our routes by its label (``graph.set_route("validate", "passed",
"critic")``) and the edge keeps its label; renaming a node changes the table's targets,
never the routers.

Guard order after think (the first that applies wins):

1. ``validate``: an acceptable candidate answer (FINAL_ANSWER or VALIDATE at or after
   `min_steps`) is validated, even at `max_steps` or over budget: a finished answer is kept;
2. the guards (`thinkgraph.guards`): ``failures`` (ask a person), ``abort``, ``budget``,
   ``max_steps``;
3. ``min_steps``: a final answer before `min_steps` goes back to think (think nudges);
4. ``approve`` / ``continue``: proposed calls go to act, through approve when a call needs a
   person's decision;
5. ``reset``: RESET while resets are left (else ``retry``);
6. ``retry``: anything else (an unparsable reply, a thought without calls) thinks again.

The label routers (`after_think`, `after_observe`, `after_validate`, `after_human`) decide
by the state alone and are pure, so every boundary is unit-testable without a graph. The
edges into act are here too: `route_think` and `route_approved` start one act task (`Send`)
per call, and check the gate once more from the tools themselves, so a state that claims
nothing needs approval, or that a call was cleared (written by hand, e.g. with
`update_state`), still cannot send a gated call to act without a person's recorded decision.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from langgraph.types import Send

from thinkgraph.guards import (
    ABORT,
    BUDGET,
    FAILURES,
    MAX_STEPS,
    GuardLabel,
    guard_label,
    guard_stop,
)
from thinkgraph.nodes.act import ActTask, time_left
from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.gate import waiting_calls
from thinkgraph.state import AgentState, Counters
from thinkgraph.tools.cache import find_cached
from thinkgraph.types import NextAction, StepLimits

__all__ = [
    "ACT",
    "APPROVE",
    "ASK_HUMAN",
    "FINALIZE",
    "NODE_KINDS",
    "OBSERVE",
    "REACT_ROUTES",
    "RESET",
    "THINK",
    "VALIDATE",
    "LabelRouter",
    "Route",
    "after_human",
    "after_observe",
    "after_think",
    "after_validate",
    "default_target",
    "guard_routes",
    "route_approved",
    "route_think",
]

# -- our nodes' kinds (and their default names) ----------------------------------------------

THINK: Final = "think"
APPROVE: Final = "approve"
ACT: Final = "act"
OBSERVE: Final = "observe"
VALIDATE: Final = "validate"
RESET: Final = "reset"
FINALIZE: Final = "finalize"
ASK_HUMAN: Final = "ask_human"

NODE_KINDS: Final = (THINK, APPROVE, ACT, OBSERVE, VALIDATE, RESET, FINALIZE, ASK_HUMAN)
"""The kinds of node thinkgraph ships; any other node is of kind "custom"."""

LabelRouter: TypeAlias = Callable[[Mapping[str, Any], StepLimits], str]
"""A pure router: the state and the run's limits in, the label of the route out."""


@dataclass(frozen=True, slots=True)
class Route:
    """One outgoing route of a node: the label its router returns and the node it reaches."""

    label: str
    """The reason the route is taken; the router's return value and the diagram's label."""
    target: str
    """The node it goes to (in `REACT_ROUTES`, the kind of one of our nodes)."""
    guard: bool = False
    """Taken when a guard trips: it leaves a loop, so a cycle through it is stoppable."""
    fallback: str | None = None
    """Another label whose target this route takes when its own target is not in the graph
    (RESET thinks again when there is no reset node)."""
    optional: bool = False
    """Left out when its target is not in the graph; a build-time rule says when it is
    needed (approve: a gated tool; ask_human: ``failure_policy="ask_human"``)."""


def guard_routes(
    *, finalize: str = FINALIZE, ask_human: str = ASK_HUMAN, steps: bool = True
) -> tuple[Route, ...]:
    """The guard routes every node gets by composition, in guard order.

    Args:
        finalize: the node a tripped guard stops the run at.
        ask_human: the node consecutive failures ask a person at.
        steps: whether `max_steps` stops here (not after a tool round).
    """
    routes = [
        Route(FAILURES, ask_human, guard=True, fallback=ABORT, optional=True),
        Route(ABORT, finalize, guard=True),
        Route(BUDGET, finalize, guard=True),
    ]
    if steps:
        routes.append(Route(MAX_STEPS, finalize, guard=True))
    return tuple(routes)


# -- the routers of our nodes ----------------------------------------------------------------

ThinkLabel = Literal["validate", GuardLabel, "min_steps", "approve", "continue", "reset", "retry"]


def _counters(state: Mapping[str, Any]) -> Counters:
    counters = state.get("counters")
    return counters if isinstance(counters, Counters) else Counters()


def _is_candidate(action: object) -> bool:
    # `==`, not `is`: a state read back from some stores holds the plain string
    return action == NextAction.FINAL_ANSWER or action == NextAction.VALIDATE


def after_think(state: Mapping[str, Any], limits: StepLimits) -> ThinkLabel:
    """The route after think; see the module docstring for the order of checks."""
    counters = _counters(state)
    action = state.get("next_action", NextAction.CONTINUE)
    candidate = _is_candidate(action)
    if candidate and state.get("candidate") is not None and counters.steps >= limits.min_steps:
        return "validate"
    guard = guard_label(counters, limits)
    if guard is not None:
        return guard
    if candidate:
        return "min_steps"
    if action == NextAction.CONTINUE and state.get("pending_calls"):
        return "approve" if state.get("needs_approval") else "continue"
    if action == NextAction.RESET and counters.resets < limits.max_resets:
        return "reset"
    return "retry"


def after_observe(state: Mapping[str, Any], limits: StepLimits) -> GuardLabel | Literal["next"]:
    """After a tool round: think next, unless failures or a budget stop the run.

    `max_steps` needs no check here: think sends calls to act only while a think step is
    left, so the think that reads these observations is always within the limit.
    """
    return guard_label(_counters(state), limits, steps=False) or "next"


def after_validate(
    state: Mapping[str, Any], limits: StepLimits
) -> Literal["passed", "reset", "failed"] | GuardLabel:
    """After validation: a passed answer is final; else the guards, reset or revise."""
    if state.get("answer") is not None:
        return "passed"
    counters = _counters(state)
    guard = guard_label(counters, limits)
    if guard is not None:
        return guard
    if state.get("next_action") == NextAction.RESET and counters.resets < limits.max_resets:
        return "reset"
    return "failed"


def after_human(
    state: Mapping[str, Any], limits: StepLimits
) -> Literal["aborted", "retry"] | GuardLabel:
    """After ask_human: abort finalizes, a tripped guard stops, anything else thinks again.

    Failures do not ask again here: the person just answered them.
    """
    run = state.get("run")
    if run is not None and run.stop_reason == "aborted":
        return "aborted"
    stop = guard_stop(_counters(state), limits)
    if stop is None:
        return "retry"
    if stop == "consecutive_failures":
        return ABORT
    return MAX_STEPS if stop == "max_steps" else BUDGET


# -- the table of our graph ------------------------------------------------------------------

REACT_ROUTES: Final[Mapping[str, tuple[Route, ...]]] = {
    THINK: (
        Route("validate", VALIDATE),
        *guard_routes(),
        Route("min_steps", THINK),
        Route("approve", APPROVE, optional=True),
        Route("continue", ACT),
        Route("reset", RESET, fallback="retry"),
        Route("retry", THINK),
    ),
    APPROVE: (Route("approved", ACT), Route("none_left", OBSERVE)),
    OBSERVE: (*guard_routes(steps=False), Route("next", THINK)),
    VALIDATE: (
        Route("passed", FINALIZE),
        *guard_routes(),
        Route("reset", RESET, fallback="failed"),
        Route("failed", THINK),
    ),
    ASK_HUMAN: (Route("aborted", FINALIZE), *guard_routes()[1:], Route("retry", THINK)),
}
"""Our nodes' routes by kind, in guard order; targets are kinds (our default names).

act always goes to observe and reset to think (plain edges); finalize ends the run.
"""

_DEFAULT: Final[Mapping[str, Mapping[str, str]]] = {
    kind: {route.label: route.target for route in routes} for kind, routes in REACT_ROUTES.items()
}


def default_target(kind: str, label: str) -> str:
    """Where a label of one of our routers goes in our own graph (its default target)."""
    return _DEFAULT[kind][label]


# -- the edges into act ----------------------------------------------------------------------


def route_think(
    state: AgentState, deps: Deps, act: str = ACT, *, gates: bool = True
) -> str | list[Send]:
    """The route after think: its label (`after_think`), or one act task per proposed call.

    A round of calls goes to approve instead ("approve") whenever one of them needs a
    person's decision that is not recorded, whatever the state says. A call a tool's cache
    can answer carries the cached result to act.

    Args:
        state: the run's state after think wrote its decision.
        deps: the agent's parts (its tools and approval rules).
        act: the node the act tasks are sent to.
        gates: whether any tool can need a person (`approval_tools`); when none can, the
            tools are not asked again each round (a call the state marks still goes to
            approve by its label).
    """
    label = after_think(state, state["limits"])
    if label != "continue":
        return label
    if gates and waiting_calls(state, deps):
        return "approve"
    return _sends(state, None, deps, act)


def route_approved(state: AgentState, deps: Deps, act: str = ACT) -> str | list[Send]:
    """After approval: one act task per call cleared to run; none left: "none_left".

    A call marked cleared that needs a decision with none recorded is not sent: it never
    runs, and observe tells the model it did not run.
    """
    cleared = set(state.get("run_calls") or [])
    cleared -= set(waiting_calls(state, deps, cleared))
    return _sends(state, cleared, deps, act) or "none_left"


def _sends(state: AgentState, only: set[str] | None, deps: Deps, act: str) -> list[Send]:
    """One act task per call (all pending calls, or those in `only`), sent to node `act`."""
    step = _counters(state).steps
    calls = [c for c in state.get("pending_calls") or [] if only is None or c.id in only]
    tools = deps.tools
    # Cache hits are found here because an act task sees only its call, never the chain;
    # `cache_ttls` is empty unless a tool caches, so the usual round scans nothing.
    hits = find_cached(tools, state["chain"], calls) if tools.cache_ttls else {}
    sends = []
    first = len(state["chain"])
    left = time_left(state)
    for offset, call in enumerate(calls):
        task = ActTask(call=call, step=step, number=first + offset, time_left_s=left)
        if call.id in hits:
            task["cached"] = hits[call.id]
        sends.append(Send(act, task))
    return sends
