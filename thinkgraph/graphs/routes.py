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

Every router of ours is a `Router`: callable with the state, and knowing its routes, whether
it keeps the guards and where its act tasks go. The graph's shape
(`thinkgraph.graphs.shape.read_graph`) reads them from LangGraph's own branches — for the
checks, the drawings, the overlay and the shape a run records — so a graph wired by hand
with our routers is labelled like one built from the table, with no guessing by name.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    "Router",
    "after_human",
    "after_observe",
    "after_think",
    "after_validate",
    "approval_tools",
    "approved_router",
    "guard_routes",
    "guarded_router",
    "is_guarded_router",
    "label_router",
    "route_approved",
    "route_think",
    "think_router",
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
    left = time_left(state)
    for call in calls:
        task = ActTask(call=call, step=step, time_left_s=left)
        if call.id in hits:
            task["cached"] = hits[call.id]
        sends.append(Send(act, task))
    return sends


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


# -- routers: callable, and knowing their routes ----------------------------------------------


class Router:
    """A router for ``add_conditional_edges`` that knows its routes.

    Called with the state, it returns the label of the route it takes; or, wired by hand
    (`thinkgraph.graphs.parts.think_router` and the other factories), our default node name
    that label leads to, which a path map may send elsewhere; or act tasks (`Send`), which go
    to `sends_to` whatever the path map says. Either way it knows its routes, so every edge
    it takes is labelled from them (`label_of`).

    Args:
        name: its name; LangGraph names the branch by it, and the checks and drawings too.
        decide: ``decide(state) -> label | list[Send]``.
        routes: its routes, in guard order; their targets are what it leads to: the graph's
            nodes (made from the table) or our default names (wired by hand).
        by_name: it returns the target of the label `decide` chose (wired by hand).
        guarded: it leaves a loop when a guard trips (`max_steps`, a budget, the failures).
        deps: the agent's parts it routes with.
        sends_to: the node its act tasks go to; None when it starts none.
    """

    def __init__(
        self,
        name: str,
        decide: Callable[..., Any],
        *,
        routes: Sequence[Route] = (),
        by_name: bool = False,
        guarded: bool = False,
        deps: Deps | None = None,
        sends_to: str | None = None,
    ) -> None:
        self.__name__ = self.__qualname__ = name
        self.routes: tuple[Route, ...] = tuple(routes)
        """Its routes, in guard order (targets as it leads to them, before any path map)."""
        self.guarded = guarded
        """It leaves a loop when a guard trips, so a cycle through it is stoppable."""
        self.deps = deps
        """The agent's parts it routes with (the checks read which tools need approval)."""
        self.sends_to = sends_to
        """The node its act tasks go to, or None."""
        self._decide = decide
        self._names = {r.label: r.target for r in self.routes} if by_name else None

    @property
    def by_name(self) -> bool:
        """Whether it returns our node names (wired by hand) rather than labels."""
        return self._names is not None

    def __call__(self, state: Mapping[str, Any], *args: Any, **kwargs: Any) -> Any:
        chosen = self._decide(state, *args, **kwargs)
        if self._names is None or not isinstance(chosen, str):
            return chosen
        return self._names[chosen]

    def label_of(self, key: str) -> str | None:
        """The label of the edge it takes when it returns `key`: the key itself when it
        returns labels, else every label that leads to the node `key` names."""
        if self._names is None:
            return key
        return " / ".join(r.label for r in self.routes if r.target == key) or None


def _target(routes: Sequence[Route], label: str) -> str:
    return next(r.target for r in routes if r.label == label)


def think_router(deps: Deps, routes: Sequence[Route], *, by_name: bool = False) -> Router:
    """The router after think over its `routes` (`REACT_ROUTES["think"]`, resolved).

    Its act tasks go to the target of "continue". Whether any tool can need a person is
    decided here once, not per cycle (`route_think`'s `gates`).
    """
    act = _target(routes, "continue")
    gates = bool(approval_tools(deps.tools, deps.approve))

    def decide(state: AgentState) -> str | list[Send]:
        return route_think(state, deps, act, gates=gates)

    return Router(
        "route_think", decide, routes=routes, by_name=by_name, guarded=True, deps=deps,
        sends_to=act,
    )  # fmt: skip


def approved_router(deps: Deps, routes: Sequence[Route], *, by_name: bool = False) -> Router:
    """The router after approve over its `routes`; its act tasks go to the target of "approved".

    It keeps no guard: approve only forwards the round think sent it, after the guards.
    """
    act = _target(routes, "approved")

    def decide(state: AgentState) -> str | list[Send]:
        return route_approved(state, deps, act)

    return Router("route_approved", decide, routes=routes, by_name=by_name, deps=deps, sends_to=act)


_LABEL_ROUTERS: Final[Mapping[str, tuple[str, LabelRouter]]] = {
    OBSERVE: ("route_after_observe", after_observe),
    VALIDATE: ("route_after_validate", after_validate),
    ASK_HUMAN: ("route_after_human", after_human),
}


def label_router(kind: str, routes: Sequence[Route], *, by_name: bool = False) -> Router:
    """The router after our node of `kind` (observe, validate, ask_human) over its `routes`.

    It reads only the state: the run's limits are stored in it.
    """
    name, decide = _LABEL_ROUTERS[kind]
    return Router(
        name, lambda state: decide(state, state["limits"]), routes=routes, by_name=by_name,
        guarded=True,
    )  # fmt: skip


def guarded_router(fn: Callable[..., Any]) -> Router:
    """A router of yours that enforces the step guards, for a graph wired by hand.

    A router given to `ReasoningGraph.add_routes` gets the guards by composition and needs
    no mark; this is for a `StateGraph` built by hand, whose cycles must pass a router that
    can leave them when `max_steps`, a budget or the failure limit trips. `fn` is left as
    it is; the router returned calls it, under its name, signature and annotations (a
    ``Literal`` return type still declares its targets to LangGraph).
    """
    if isinstance(fn, Router):
        marked = copy.copy(fn)
        marked.guarded = True
        return marked
    router = Router(getattr(fn, "__name__", type(fn).__name__), fn, guarded=True)
    functools.update_wrapper(router, fn)
    return router


def is_guarded_router(fn: Any) -> bool:
    """Whether `fn` is a router that enforces the step guards."""
    return isinstance(fn, Router) and fn.guarded
