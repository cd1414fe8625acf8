"""Our nodes and routers as parts for your own `StateGraph`: node and router factories.

(The node bodies themselves live in `thinkgraph.nodes`; these factories bind them to the
agent's parts and make them LangGraph nodes and routers.)

Every factory here takes the agent's `Deps` and returns what LangGraph takes: a node for
``add_node`` or a router for ``add_conditional_edges``. The easy way to a graph of your own
is `thinkgraph.graphs.react_graph`: our nodes from these factories and their routes from
the route table, changed by label and by name, with the guards and the checks built in.

Wiring a `StateGraph` by hand with these factories still works: the routers here return
our node names ("think", "finalize", …); send a route elsewhere with a path map, e.g.
``{"finalize": "critic", "think": "think"}``. Each knows the routes its names stand for, so
the edge keeps its labels ("passed / abort / budget / max_steps") in every diagram, and
each node knows its kind, whatever you name it. Wired by hand, the act node must be named
"act" (think_router and approved_router send act tasks to that name); a graph that names
it otherwise is refused when it is checked, naming ``react_graph(deps, names=...)``.
Give ``build(deps) -> StateGraph`` to ``Agent(model, tools, build_graph=build)``: your
graph is checked when the agent is made and gets checkpoints, approvals, breakpoints,
streaming, history and diagrams like ours.

Example (by hand):
    >>> from langgraph.graph import END, START, StateGraph
    >>> from thinkgraph.graphs import parts
    >>> from thinkgraph.state import AgentState
    >>> def build(deps):
    ...     graph = StateGraph(AgentState)
    ...     for name in ("think", "act", "observe", "validate", "reset", "finalize"):
    ...         graph.add_node(name, getattr(parts, f"{name}_node")(deps))
    ...     graph.add_edge(START, "think")
    ...     graph.add_conditional_edges("think", parts.think_router(deps), parts.THINK_TARGETS)
    ...     graph.add_edge("act", "observe")
    ...     graph.add_conditional_edges("observe", parts.observe_router(deps),
    ...                                 ["think", "finalize"])
    ...     graph.add_conditional_edges("validate", parts.validate_router(deps),
    ...                                 ["think", "reset", "finalize"])
    ...     graph.add_edge("reset", "think")
    ...     graph.add_edge("finalize", END)
    ...     return graph
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol

from langchain_core.runnables import RunnableConfig

from thinkgraph import tracing
from thinkgraph._langgraph import DualNode
from thinkgraph.errors import GraphConfigError, StateKeyError
from thinkgraph.graphs import routes
from thinkgraph.graphs.routes import (
    ACT,
    APPROVE,
    ASK_HUMAN,
    FINALIZE,
    OBSERVE,
    REACT_ROUTES,
    RESET,
    THINK,
    VALIDATE,
    Router,
)
from thinkgraph.llm.call import count_usage
from thinkgraph.nodes.act import ActTask
from thinkgraph.nodes.act import act as _act
from thinkgraph.nodes.approve import approve as _approve
from thinkgraph.nodes.ask_human import ask_human as _ask_human
from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.finalize import finalize as _finalize
from thinkgraph.nodes.model import counted_update
from thinkgraph.nodes.observe import observe as _observe
from thinkgraph.nodes.reset import reset as _reset
from thinkgraph.nodes.think import think as _think
from thinkgraph.nodes.validate import validate as _validate
from thinkgraph.state import (
    AGENT_KEYS,
    AgentState,
    Counters,
    declared_keys,
    running_node,
)
from thinkgraph.values import storable

__all__ = [
    "APPROVE_TARGETS",
    "HUMAN_TARGETS",
    "OBSERVE_TARGETS",
    "THINK_TARGETS",
    "VALIDATE_TARGETS",
    "Node",
    "Router",
    "act_node",
    "approve_node",
    "approved_router",
    "ask_human_node",
    "count_usage",
    "finalize_node",
    "human_router",
    "node",
    "observe_node",
    "observe_router",
    "reset_node",
    "think_node",
    "think_router",
    "validate_node",
    "validate_router",
]

# `count_usage(counters, reply, elapsed_s)` is here for nodes of yours that call the model:
# their calls then count in the budgets and in the turn a ScriptedModel replies by.


class Node(DualNode):
    """A graph node of ours for ``add_node``: the state (or an act task) in, the channels it
    changes out. Async inside; LangGraph runs it from ``ainvoke`` and ``invoke`` alike.

    Its `kind` says which of our nodes it is, whatever the graph names it: the checks and
    the drawings read it from the graph (`thinkgraph.graphs.shape.read_graph`).
    """

    def __init__(self, name: str, afunc: Callable[..., Awaitable[Any]], kind: str) -> None:
        super().__init__(name, afunc)
        self.kind = kind
        """Which of our nodes it is ("think", "act", …), or "custom" for one of yours."""


THINK_TARGETS: Final = [THINK, APPROVE, ACT, VALIDATE, RESET, FINALIZE, ASK_HUMAN]
"""Where route_think goes (approve only with a tool that needs approval, ask_human only with
``failure_policy="ask_human"``)."""
APPROVE_TARGETS: Final = [ACT, OBSERVE]
"""Where route_approved goes: act for the cleared calls, observe when none is left."""
OBSERVE_TARGETS: Final = [THINK, FINALIZE, ASK_HUMAN]
"""Where route_after_observe goes (ask_human only with ``failure_policy="ask_human"``)."""
VALIDATE_TARGETS: Final = [THINK, RESET, FINALIZE, ASK_HUMAN]
"""Where route_after_validate goes."""
HUMAN_TARGETS: Final = [THINK, FINALIZE]
"""Where route_after_human goes."""


# -- nodes ------------------------------------------------------------------------------


def _check_takes(name: str, fn: Callable[..., Any], with_deps: bool) -> None:
    """Refuse, when the graph is built, a node function that cannot be called as it will be:
    with the state, and with ``deps=`` by keyword when the node is given deps."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # a builtin or C callable: nothing to read; it is called as documented
    try:
        if with_deps:
            signature.bind(None, deps=None)
        else:
            signature.bind(None)
    except TypeError as exc:
        label = getattr(fn, "__qualname__", None) or type(fn).__name__
        how = "(state, *, deps)" if with_deps else "(state)"
        raise GraphConfigError(
            f"node {name!r}: {label}{signature} cannot be called as {how} ({exc}); "
            f"declare it as def {label.rsplit('.', 1)[-1]}{how}"
        ) from None


def node(
    name: str,
    fn: Callable[..., Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None],
    deps: Deps | None = None,
    *,
    kind: str = "custom",
) -> Node:
    """Make `fn` a thinkgraph node named `name`; every node of ours is made this way.

    The node records its name in the ``node`` channel (breakpoints, history and fork read
    it) and leaves out channels it did not change. The steps `fn` makes name the node they
    were made in, and the chain's reducer numbers them (see `thinkgraph.state`).

    The node is async: run the graph with ``ainvoke``/``astream`` (or through `Agent`,
    whose sync methods do that). An ``async def`` `fn` is awaited; a plain function runs
    in a worker thread, so one that blocks on I/O never holds up the other runs.

    Args:
        name: the node's name in the graph.
        fn: ``fn(state, deps=deps) -> update`` when `deps` is given, else ``fn(state)``;
            the update may add steps under ``"chain"``.
        deps: the agent's parts, passed to `fn`; None for a node that needs none.
        kind: which of our nodes it is ("think", "act", …), or "custom" for one of yours;
            the checks and the diagrams know a node by its kind, whatever its name.

    Example:
        >>> async def critic(state, *, deps):
        ...     return {"chain": [HumanStep(kind="review", text="ok")]}
        >>> graph.add_node("critic", node("critic", critic, deps))  # doctest: +SKIP
    """
    _check_takes(name, fn, deps is not None)
    call: Callable[[AgentState], Any] = fn if deps is None else functools.partial(fn, deps=deps)
    is_async = inspect.iscoroutinefunction(fn)

    async def run(state: AgentState) -> dict[str, Any]:
        with tracing.span(f"thinkgraph.node {name}", {"thinkgraph.node": name}):
            out = await call(state) if is_async else await asyncio.to_thread(call, state)
        # The engine counts the model calls a node returns, so a node cannot miscount.
        update = counted_update(state.get("counters") or Counters(), dict(out or {}))
        _check_keys(name, update)
        # A value equal to the one stored is left out: the state is the same either way,
        # and each written channel costs a serialized row in the checkpoint's writes. (Not
        # for the graph's own keys: a reducer of theirs may append an equal value.)
        changed = {
            key: value
            for key, value in update.items()
            if key == "chain" or key not in AGENT_KEYS or key not in state or state[key] != value  # type: ignore[literal-required]
        }
        # The name the graph gave the node, which a user may have chosen over ours.
        return {**changed, "node": running_node() or name}

    return _as_node(name, run, kind)


def _check_keys(name: str, update: dict[str, Any]) -> None:
    """Refuse an update with a key the running graph's state does not declare (LangGraph
    would drop it unseen), and make the values of the graph's own keys storable."""
    declared = declared_keys()
    if declared is None:  # not run by the driver (a bare compiled graph): LangGraph's rules
        return
    for key in update:
        if key not in declared:
            own = sorted(declared - AGENT_KEYS)
            mine = f"its own keys: {', '.join(own)}" if own else "no keys of its own"
            raise StateKeyError(
                f"node {name!r} returned {key!r}, which the graph's state does not declare "
                f"({mine}; with AgentState's); declare it in a state class of yours, "
                f"class MyState(AgentState): {key}: ..., built with state=MyState"
            )
    for key in update.keys() - AGENT_KEYS:
        update[key] = storable(update[key])


def _as_node(name: str, run: Callable[..., Awaitable[dict[str, Any]]], kind: str) -> Node:
    run.__name__ = run.__qualname__ = name
    return Node(name, run, kind)


class NodeFactory(Protocol):
    """Makes one of our nodes for the agent's `deps`, under the name the graph gives it."""

    def __call__(self, deps: Deps, *, name: str = ...) -> Node: ...


def _factory(kind: str, body: Callable[..., Any], summary: str) -> NodeFactory:
    def make(deps: Deps, *, name: str = kind) -> Node:
        return node(name, body, deps, kind=kind)

    make.__name__ = make.__qualname__ = f"{kind}_node"
    make.__doc__ = f"The {kind} node: {summary}.\n\nNamed `{kind}` unless `name` says otherwise."
    return make


think_node = _factory(THINK, _think, "call the model, record its decision")
approve_node = _factory(APPROVE, _approve, "one pause for every call that needs a person")
observe_node = _factory(OBSERVE, _observe, "fold the tool results into observations")
validate_node = _factory(VALIDATE, _validate, "run the validators on the candidate answer")
reset_node = _factory(RESET, _reset, "start the reasoning over, keeping a short lesson")
finalize_node = _factory(FINALIZE, _finalize, "record the answer and why the run stopped")
ask_human_node = _factory(ASK_HUMAN, _ask_human, "pause for a person after failures")


def act_node(deps: Deps, *, name: str = ACT) -> Node:
    """The act node: run one tool call (LangGraph runs one act task per call).

    LangGraph reads its input (`ActTask`) from the signature. Named other than "act", wire
    it through the route table (``react_graph(deps, names={"act": name})``): the router
    after think sends the act tasks to the node its "continue" route names.
    """

    async def run(task: ActTask, config: RunnableConfig) -> dict[str, Any]:
        with tracing.span(f"thinkgraph.node {name}", {"thinkgraph.node": name}):
            update = await _act(task, config, deps=deps)
        return {**update, "node": running_node() or name}

    return _as_node(name, run, ACT)


# -- routers ----------------------------------------------------------------------------
# Wired by hand, our routers return our node names (a path map may send them elsewhere) and
# know the routes those names stand for, so the diagrams label each edge by its route.


def think_router(deps: Deps) -> Router:
    """After think: validate, finalize (a guard), approve or act (one task per call), …

    Targets: `THINK_TARGETS`. Calls a tool's cache can answer are served from it. Its act
    tasks go to the node named "act".
    """
    return routes.think_router(deps, REACT_ROUTES[THINK], by_name=True)


def approved_router(deps: Deps) -> Router:
    """After approve: one act task per call cleared to run; none left → observe.

    Targets: `APPROVE_TARGETS`.
    """
    return routes.approved_router(deps, REACT_ROUTES[APPROVE], by_name=True)


def observe_router(deps: Deps | None = None) -> Router:
    """After observe: think, unless failures or a budget stop the run.

    Targets: `OBSERVE_TARGETS`. `deps` is accepted so every factory is called alike; this
    router reads only the state (the run's limits are stored in it).
    """
    return routes.label_router(OBSERVE, REACT_ROUTES[OBSERVE], by_name=True)


def validate_router(deps: Deps | None = None) -> Router:
    """After validate: finalize a passed answer; else think, reset or stop.

    Targets: `VALIDATE_TARGETS`. Reads only the state, like `observe_router`.
    """
    return routes.label_router(VALIDATE, REACT_ROUTES[VALIDATE], by_name=True)


def human_router(deps: Deps | None = None) -> Router:
    """After ask_human: finalize on abort or a guard, else think.

    Targets: `HUMAN_TARGETS`. Reads only the state, like `observe_router`.
    """
    return routes.label_router(ASK_HUMAN, REACT_ROUTES[ASK_HUMAN], by_name=True)
