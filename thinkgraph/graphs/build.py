"""ReasoningGraph: build a graph from nodes and the route table, checked when it is built.

`react_graph(deps)` is our graph as a `ReasoningGraph`: our nodes (renamed if you like) and
their routes from the table (`thinkgraph.graphs.routes.REACT_ROUTES`). Change it by label
and by name, then `build()` it into the uncompiled `StateGraph` that `Agent(...,
build_graph=...)` compiles:

- re-target one of our routes by its label: ``graph.set_route("validate", "passed",
  "critic")`` — the edge keeps its label "passed" in every diagram;
- add a node of yours (``add_node``) with plain edges (``add_edge``) or routes of its own
  (``add_routes``), which get the guards — failures, budgets, `max_steps` — by
  composition: no guard to import or re-check;
- rename our nodes: ``react_graph(deps, names={"think": "plan", "act": "execute"})``;
  the routers follow the table, steps and history carry the names you chose.

`build()` resolves the table once (labels to node names, the act node the calls are sent
to, which guard routes each node has), so the routers do no lookup per cycle, and runs the
static checks (`thinkgraph.graphs.checks`): a graph that cannot work is refused with one
line naming the fix, never discovered mid-run.

Example:
    >>> from thinkgraph.graphs import react_graph
    >>> def build(deps):
    ...     graph = react_graph(deps)
    ...     graph.add_node("critic", critic)            # critic(state, *, deps) -> update
    ...     graph.set_route("validate", "passed", "critic")
    ...     graph.add_routes("critic", route_critic, {"approved": "finalize", "rejected": "think"})
    ...     return graph.build()
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import (
    Any,
    Final,
    Literal,
    TypeAlias,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

from langchain_core.runnables import Runnable
from langgraph.constants import END, START
from langgraph.graph import StateGraph
from typing_extensions import is_typeddict

from thinkgraph.errors import GraphConfigError, RouteLabelError
from thinkgraph.graphs import parts
from thinkgraph.graphs.breakpoints import declare_breakpoints
from thinkgraph.graphs.checks import check_graph
from thinkgraph.graphs.routes import (
    ACT,
    APPROVE,
    ASK_HUMAN,
    FINALIZE,
    NODE_KINDS,
    OBSERVE,
    REACT_ROUTES,
    RESET,
    THINK,
    VALIDATE,
    Route,
    Router,
    approved_router,
    guard_routes,
    label_router,
    think_router,
)
from thinkgraph.guards import guard_label
from thinkgraph.nodes.deps import Deps, Validator
from thinkgraph.state import AGENT_KEYS, AgentState, Counters, is_own_key
from thinkgraph.types import Breakpoints

__all__ = ["GraphBuilder", "ReasoningGraph", "react_graph"]

GraphBuilder: TypeAlias = Callable[[Deps], StateGraph[AgentState, Any, AgentState, AgentState]]
"""A function that builds an uncompiled graph from the agent's parts, like
`build_react_graph`: what ``Agent(build_graph=...)`` takes and a graph address names."""
Graph: TypeAlias = StateGraph[AgentState, Any, Any, AgentState]
RouterFactory: TypeAlias = Callable[[Deps, tuple[Route, ...]], Router]
"""Makes a node's router from the agent's parts and its routes, targets resolved to the
graph's node names."""

_FACTORIES: Final[Mapping[str, Callable[..., parts.Node]]] = {
    THINK: parts.think_node,
    APPROVE: parts.approve_node,
    OBSERVE: parts.observe_node,
    VALIDATE: parts.validate_node,
    RESET: parts.reset_node,
    FINALIZE: parts.finalize_node,
    ASK_HUMAN: parts.ask_human_node,
    ACT: parts.act_node,
}
"""Our nodes in the order our graph adds them (the diagrams list them in this order)."""


def _labelled(kind: str) -> RouterFactory:
    def make(deps: Deps, routes: tuple[Route, ...]) -> Router:
        return label_router(kind, routes)

    return make


_ROUTERS: Final[Mapping[str, RouterFactory]] = {
    THINK: think_router,
    APPROVE: approved_router,
    OBSERVE: _labelled(OBSERVE),
    VALIDATE: _labelled(VALIDATE),
    ASK_HUMAN: _labelled(ASK_HUMAN),
}


def _with_guards(
    router: Callable[[Mapping[str, Any]], str], stops: frozenset[str]
) -> Callable[[Mapping[str, Any]], str]:
    """A user's router with the guards composed in: a guard can end a loop, never start one.

    The user's router decides first; a route that already stops the run is taken as it
    is, any other yields to a tripped guard.
    """

    def route(state: Mapping[str, Any]) -> str:
        label = router(state)
        if label in stops:
            return label
        counters = state.get("counters")
        if not isinstance(counters, Counters):
            return label
        return guard_label(counters, state["limits"]) or label

    return route


def _router_name(router: Callable[..., Any]) -> str:
    return str(getattr(router, "__qualname__", None) or type(router).__name__)


def _check_labels(source: str, router: Callable[..., Any], labels: set[str]) -> None:
    """Refuse, when the graph is built, a router whose ``Literal[...]`` return annotation
    names a label the routes of `source` do not map (a typo that would end a run)."""
    try:
        returned = inspect.signature(router, eval_str=True).return_annotation
    except (TypeError, ValueError, NameError):
        return  # no annotation to read (or one that cannot be resolved): checked at run time
    if get_origin(returned) is not Literal:
        return
    missing = [a for a in get_args(returned) if a not in labels]
    if missing:
        raise GraphConfigError(
            f"router {_router_name(router)} of node {source!r} can return {missing[0]!r}, "
            f"which has no route; its routes are {', '.join(map(repr, sorted(labels)))}"
        )


def _declared(
    source: str, router: Callable[[AgentState], str], labels: set[str]
) -> Callable[[Mapping[str, Any]], str]:
    """`router`, refusing a label it was not given a route for: one line naming the
    router, the label and the declared ones (the run stays at its last checkpoint)."""

    def route(state: Mapping[str, Any]) -> str:
        label = router(state)  # type: ignore[arg-type]
        if label not in labels:
            raise RouteLabelError(
                f"router {_router_name(router)} of node {source!r} returned {label!r}, which "
                f"has no route; its routes are {', '.join(map(repr, sorted(labels)))}; fix "
                "the router or add the route, then resume the run"
            )
        return label

    return route


def _takes_deps(fn: Callable[..., Any]) -> bool:
    try:
        return "deps" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


@dataclasses.dataclass
class _Routes:
    routes: list[Route]
    make: RouterFactory


class ReasoningGraph:
    """A graph's nodes and its route table; `build()` makes the checked `StateGraph`.

    Start from ours with `react_graph(deps)`, or from an empty one and add our nodes and
    yours. Every method returns the graph, so calls chain.

    Args:
        deps: the model, policy, tools and validators the nodes use.
        entry: the node a run starts at.
        state: the graph's state: `AgentState`, or a TypedDict of yours that extends it
            with keys of your own (``Annotated[type, reducer]`` where you want one). Your
            nodes return them like ours; a key the state does not declare is an error.
    """

    def __init__(
        self, deps: Deps, *, entry: str = THINK, state: type[AgentState] = AgentState
    ) -> None:
        self.deps = deps
        self.entry = entry
        self.state = checked_state(state)
        self._ours: set[str] = set()
        """Our nodes as `react_graph` made them (rebuilt when the graph adds validators)."""
        self._validators: list[Validator] = []
        self._breakpoints: dict[str, list[str]] = {"before": [], "after": []}
        self._nodes: dict[str, tuple[Any, str]] = {}
        self._edges: list[tuple[str, str]] = []
        self._table: dict[str, _Routes] = {}

    # -- nodes and edges ------------------------------------------------------------------

    def add_node(
        self, name: str, node: Any, *, kind: str = "custom", as_is: bool = False
    ) -> ReasoningGraph:
        """Add a node: a function ``fn(state)`` or ``fn(state, *, deps)``, or a `parts` node.

        A function is made a thinkgraph node (`parts.node`): its steps are stamped with
        `name` and numbered, and it gets the agent's parts when it takes ``deps``. With
        ``as_is=True`` it is given to LangGraph unchanged (its own input type, say).
        """
        if name in self._nodes:
            raise GraphConfigError(f"node {name!r} is already in the graph; pick another name")
        if not isinstance(node, Runnable) and not as_is:
            node = parts.node(name, node, self.deps if _takes_deps(node) else None, kind=kind)
        self._nodes[name] = (node, node.kind if isinstance(node, parts.Node) else kind)
        return self

    def remove_node(self, name: str) -> ReasoningGraph:
        """Take a node out with its edges and routes; routes to it must then go elsewhere."""
        self._nodes.pop(name, None)
        self._ours.discard(name)
        self._table.pop(name, None)
        self._edges = [(s, t) for s, t in self._edges if name not in (s, t)]
        return self

    def add_edge(self, source: str, target: str) -> ReasoningGraph:
        """Always go from `source` to `target` (a node with no routes of its own)."""
        self._edges.append((source, target))
        return self

    def set_entry(self, name: str) -> ReasoningGraph:
        """Start runs at `name` (e.g. a planner of yours before think)."""
        self.entry = name
        return self

    def add_validator(self, validator: Validator) -> ReasoningGraph:
        """Put answers through `validator` too, ``(answer, state) -> Verdict``, beside the
        agent's: the graph's validate node runs both (no need to touch `Deps`)."""
        self._validators.append(validator)
        return self

    def add_breakpoint(self, when: Literal["before", "after"], node: str) -> ReasoningGraph:
        """Pause every run of the graph before or after `node`, beside the agent's
        breakpoints (a run stores them, so it keeps them when resumed or forked)."""
        if when not in ("before", "after"):
            raise GraphConfigError(f"add_breakpoint takes 'before' or 'after', not {when!r}")
        self._breakpoints[when].append(node)
        return self

    # -- routes ---------------------------------------------------------------------------

    def add_routes(
        self,
        source: str,
        router: Callable[[AgentState], str],
        routes: Mapping[str, str] | Iterable[Route],
        *,
        guards: bool = True,
    ) -> ReasoningGraph:
        """Give `source` routes of its own: `router` returns a label, `routes` maps each to a node.

        Args:
            source: the node the routes leave.
            router: ``router(state) -> label``; the label is the diagram's edge label.
            routes: ``{label: target}`` (or `Route` records), in the order you read them.
            guards: add the guard routes (failures → ask_human, abort/budget/max_steps →
                finalize) after yours: a tripped guard stops the run unless your route
                already does. False for a node that never loops back.
        """
        own = [r if isinstance(r, Route) else Route(*r) for r in _items(routes)]
        labels = {r.label for r in own}
        _check_labels(source, router, labels)
        if guards:
            names = self._names_by_kind()
            extra = guard_routes(
                finalize=names.get(FINALIZE, FINALIZE), ask_human=names.get(ASK_HUMAN, ASK_HUMAN)
            )
            own += [r for r in extra if r.label not in labels]

        declared = _declared(source, router, labels)
        name = getattr(router, "__name__", "route")

        def make(deps: Deps, routes: tuple[Route, ...]) -> Router:
            decide = declared
            if guards:
                stops = frozenset(
                    r.label for r in routes if r.label in labels and self._stops(r.target)
                )
                decide = _with_guards(declared, stops)
            return Router(name, decide, routes=routes, guarded=guards, deps=deps)

        self._table[source] = _Routes(own, make)
        return self

    def set_route(self, source: str, label: str, target: str) -> ReasoningGraph:
        """Send the route `label` of node `source` to `target`; it keeps its label."""
        entry = self._table.get(source)
        found = entry is not None and any(r.label == label for r in entry.routes)
        if entry is None or not found:
            known = ", ".join(repr(r.label) for r in entry.routes) if entry else "none"
            raise GraphConfigError(
                f"node {source!r} has no route {label!r}; its routes are {known}"
            )
        entry.routes = [
            dataclasses.replace(r, target=target, fallback=None, optional=False)
            if r.label == label
            else r
            for r in entry.routes
        ]
        return self

    def routes(self, source: str) -> tuple[Route, ...]:
        """The routes of `source`, in guard order, as declared (targets as given)."""
        entry = self._table.get(source)
        return tuple(entry.routes) if entry is not None else ()

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes' names, in the order they were added."""
        return tuple(self._nodes)

    # -- building -------------------------------------------------------------------------

    def _names_by_kind(self) -> dict[str, str]:
        names: dict[str, str] = {}
        for name, (_, kind) in self._nodes.items():
            names.setdefault(kind, name)
        return names

    def _stops(self, target: str) -> bool:
        return target == END or (target in self._nodes and self._nodes[target][1] == FINALIZE)

    def _path(self, source: str, routes: list[Route]) -> dict[str, str]:
        known = {r.label: r for r in routes}
        path: dict[str, str] = {}
        for route in routes:
            step, seen = route, {route.label}
            # a missing target takes its fallback's (RESET with no reset node thinks again)
            while step.target not in self._nodes and step.target != END and step.fallback:
                step = known[step.fallback]
                if step.label in seen:
                    break
                seen.add(step.label)
            if step.target in self._nodes or step.target == END or not route.optional:
                path[route.label] = step.target  # a target still missing is named by the check
        return path

    def build(self, *, input_schema: Any = None) -> Graph:
        """The uncompiled `StateGraph`, checked: compile it with a checkpointer, or return it
        from the function you give ``Agent(..., build_graph=...)``.

        Args:
            input_schema: the graph's input, when it is not `AgentState` (the LangGraph
                server's ``{"task": ...}``, see `thinkgraph.graphs.server`).

        Raises:
            GraphConfigError: a graph that cannot work, one line per problem naming the fix.
        """
        sources = [s for s, _ in self._edges] + list(self._table) + [self.entry]
        for source in sources:
            if source not in self._nodes:
                raise GraphConfigError(
                    f"{source!r} has an edge, routes or the entry but is not a node of the "
                    f"graph; add it first with graph.add_node({source!r}, ...)"
                )
        graph: Graph = (
            StateGraph(self.state)
            if input_schema is None
            else StateGraph(self.state, input_schema=input_schema)
        )
        deps = self.deps
        if self._validators:
            deps = dataclasses.replace(deps, validators=(*deps.validators, *self._validators))
        for name, (node, kind) in self._nodes.items():
            if kind == VALIDATE and deps is not self.deps and name in self._ours:
                node = parts.validate_node(deps, name=name)  # with the graph's validators
            graph.add_node(name, node)
        for name in (*self._breakpoints["before"], *self._breakpoints["after"]):
            if name not in self._nodes:
                raise GraphConfigError(
                    f"breakpoint on {name!r}, which is not a node of the graph; the nodes "
                    f"are {', '.join(self._nodes)}"
                )
        graph.add_edge(START, self.entry)
        for source, target in self._edges:
            graph.add_edge(source, target)
        for source, entry in self._table.items():
            path = self._path(source, entry.routes)
            self._check_into_act(source, path)
            resolved = tuple(
                dataclasses.replace(r, target=path[r.label])
                for r in entry.routes
                if r.label in path
            )
            ends: dict[Hashable, str] = {label: target for label, target in path.items()}
            graph.add_conditional_edges(source, entry.make(self.deps, resolved), ends)
        check_graph(graph, deps=deps)
        points = Breakpoints(
            before=tuple(self._breakpoints["before"]), after=tuple(self._breakpoints["after"])
        )
        declare_breakpoints(graph, points)
        return graph

    def _check_into_act(self, source: str, path: Mapping[str, str]) -> None:
        kind = self._nodes[source][1] if source in self._nodes else "custom"
        label = {THINK: "continue", APPROVE: "approved"}.get(kind)
        if label is None or label not in path:
            return
        target = path[label]
        if target in self._nodes and self._nodes[target][1] != ACT:
            raise GraphConfigError(
                f"the route {label!r} of node {source!r} goes to {target!r}, but it carries "
                f"tool calls, one act task each; send it to an act node (parts.act_node)"
            )


def _items(routes: Mapping[str, str] | Iterable[Route]) -> Iterable[Any]:
    return routes.items() if isinstance(routes, Mapping) else routes


def checked_state(state: Any) -> type[AgentState]:
    """`state` when a graph can run on it: `AgentState`, or a TypedDict that extends it.

    Raises:
        GraphConfigError: it is not a TypedDict, or lacks keys of `AgentState`.
    """
    keys = getattr(state, "__annotations__", None) if is_typeddict(state) else None
    missing = sorted(AGENT_KEYS - set(keys)) if keys is not None else []
    if keys is None or missing:
        name = getattr(state, "__name__", repr(state))
        lacks = f" (it lacks {', '.join(missing)})" if missing else ""
        raise GraphConfigError(
            f"state={name} is not a state a graph of ours runs on{lacks}; extend ours: "
            f"class {name}(AgentState): your_key: str"
        )
    try:
        get_type_hints(state, include_extras=True)
    except Exception as exc:  # what LangGraph would raise, as a traceback, when it reads them
        raise GraphConfigError(
            f"the keys of state={state.__name__} cannot be read ({type(exc).__name__}: "
            f"{exc}); define the types they name at the top level of its module"
        ) from None
    odd = [k for k in keys if k not in AGENT_KEYS and not is_own_key(k)]
    if odd:
        raise GraphConfigError(
            f"state key {odd[0]!r} of {state.__name__} looks like a LangGraph channel "
            f"(it starts with '__' or holds ':'); name it without them"
        )
    return cast(type[AgentState], state)


def react_graph(
    deps: Deps,
    *,
    names: Mapping[str, str] | None = None,
    state: type[AgentState] = AgentState,
) -> ReasoningGraph:
    """Our graph — think, approve, act, observe, validate, reset, finalize, ask_human — with
    its route table, ready to change by label and to `build()`.

    Args:
        deps: the model, policy, tools and validators the nodes use.
        names: new names for our nodes by kind, e.g. ``{"think": "plan", "act": "execute"}``.
        state: the graph's state, `AgentState` or a TypedDict of yours extending it
            (see `ReasoningGraph`).

    Raises:
        GraphConfigError: `names` names a kind we do not have, or gives two nodes one name.
    """
    chosen = dict(names or {})
    unknown = sorted(set(chosen) - set(NODE_KINDS))
    if unknown:
        raise GraphConfigError(
            f"names takes our node kinds ({', '.join(NODE_KINDS)}), not {unknown[0]!r}; "
            f"e.g. names={{'act': 'execute'}}"
        )
    name = {kind: chosen.get(kind, kind) for kind in NODE_KINDS}
    if len(set(name.values())) != len(name):
        raise GraphConfigError(f"two of our nodes would share a name in names={chosen}; rename one")
    graph = ReasoningGraph(deps, entry=name[THINK], state=state)
    for kind, factory in _FACTORIES.items():
        graph.add_node(name[kind], factory(deps, name=name[kind]), kind=kind)
        graph._ours.add(name[kind])
    for kind, routes in REACT_ROUTES.items():
        graph._table[name[kind]] = _Routes(
            [dataclasses.replace(r, target=name.get(r.target, r.target)) for r in routes],
            _ROUTERS[kind],
        )
    graph.add_edge(name[ACT], name[OBSERVE])
    graph.add_edge(name[RESET], name[THINK])
    graph.add_edge(name[FINALIZE], END)
    return graph
