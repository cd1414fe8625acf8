"""What `Agent.__init__` checks and assembles: its parts, breakpoints, tools, a custom graph,
its tracing config."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.callbacks import Callbacks
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from thinkgraph.errors import ConfigError, GraphConfigError, ThinkgraphError, first_line
from thinkgraph.graphs.build import GraphBuilder, declared_breakpoints
from thinkgraph.graphs.checks import check_graph
from thinkgraph.graphs.react import build_react_graph
from thinkgraph.llm import as_chat_model
from thinkgraph.llm.base import ChatModel
from thinkgraph.nodes.deps import Deps, Validator
from thinkgraph.policies import ReActText
from thinkgraph.policies.base import Policy
from thinkgraph.policies.context import ContextPolicy
from thinkgraph.runs import replay as replaying
from thinkgraph.runs.driver import Driver
from thinkgraph.state import AgentState
from thinkgraph.storage import Retention, open_checkpointer
from thinkgraph.tools import Tool, ToolRegistry, from_langchain, tool
from thinkgraph.types import Breakpoints, StepLimits

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from thinkgraph.agent import Agent

__all__ = [
    "REACT_NODES",
    "GraphBuilder",
    "agent_deps",
    "areplay",
    "as_breakpoints",
    "as_tool",
    "built_graph",
    "description_of",
    "joined_breakpoints",
    "open_driver",
    "replay_drivers",
    "traced_config",
]

REACT_NODES = frozenset(
    {"think", "approve", "act", "observe", "validate", "reset", "finalize", "ask_human"}
)


def as_breakpoints(
    value: Breakpoints | Mapping[str, Iterable[str]] | None, graph: StateGraph[Any] | None = None
) -> Breakpoints:
    """An agent's breakpoints, checked against the nodes of `graph` (None: ours), joined
    with those `graph` declares (`ReasoningGraph.add_breakpoint`)."""
    declared = declared_breakpoints(graph) if graph is not None else Breakpoints()
    if value is None:
        return declared
    if isinstance(value, Breakpoints):
        return joined_breakpoints(value, declared)
    unknown = set(value) - {"before", "after"}
    if unknown:
        raise ConfigError(
            f"breakpoints takes the keys 'before' and 'after', not {sorted(unknown)}; "
            'e.g. breakpoints={"before": ["act"], "after": ["think"]}'
        )
    points = Breakpoints(before=tuple(value.get("before", ())), after=tuple(value.get("after", ())))
    nodes = set(graph.nodes) if graph is not None else REACT_NODES
    for name in (*points.before, *points.after):
        if name not in nodes:
            raise ConfigError(
                f"breakpoint on unknown node {name!r}; the nodes are {', '.join(sorted(nodes))}"
            )
    return joined_breakpoints(points, declared)


def joined_breakpoints(first: Breakpoints, second: Breakpoints) -> Breakpoints:
    """Both sets of breakpoints, each node once, in order."""
    return Breakpoints(
        before=tuple(dict.fromkeys((*first.before, *second.before))),
        after=tuple(dict.fromkeys((*first.after, *second.after))),
    )


def as_tool(item: Tool | BaseTool | Callable[..., Any]) -> Tool:
    if isinstance(item, Tool):
        return item
    if isinstance(item, BaseTool):  # before `callable`: a LangChain tool is callable too
        return from_langchain(item)
    if callable(item):
        return tool(item)
    raise TypeError(
        f"tools must be Tool objects, typed functions or LangChain tools, got {type(item).__name__}"
    )


def built_graph(
    build: GraphBuilder, deps: Deps, limits: StepLimits, name: str | None = None
) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    """The graph `build` makes of `deps`, checked (`check_graph`).

    A builder is called with one argument, the agent's `Deps`, and returns an uncompiled
    `StateGraph`. One that cannot be is refused here, where every graph an agent runs on
    is built (the CLI's `--graph` included), before anything runs or is stored.

    Args:
        build: the builder.
        deps: the agent's parts, passed to it.
        limits: the agent's limits, for the checks of the graph.
        name: how errors name the builder (its address; default: its name).

    Raises:
        GraphConfigError: in one line naming the builder: it is not a Python function
            (a builtin such as ``os.system`` is never called), its signature does not take
            one argument, it raised, or it returned something else than a `StateGraph`.
            A `ThinkgraphError` the builder raised (a check of the graph it built) is
            raised as it is.
    """
    shown = repr(name or getattr(build, "__qualname__", None) or type(build).__name__)
    problem = _builder_problem(build)
    if problem is not None:
        raise GraphConfigError(f"graph builder {shown} {problem}; {_BUILDER}")
    try:
        graph = build(deps)
    except ThinkgraphError:
        raise  # already one line, about the graph it built
    except Exception as exc:
        raise GraphConfigError(
            f"graph builder {shown} raised {first_line(exc)}; fix the builder ({_BUILDER})"
        ) from exc
    if not isinstance(graph, StateGraph):
        if inspect.iscoroutine(graph):
            graph.close()  # an async builder: never awaited, and not warned about either
        raise GraphConfigError(
            f"graph builder {shown} returned {_a_kind(graph)}; return the uncompiled "
            "StateGraph (the agent compiles it with its store)"
        )
    check_graph(graph, limits=limits)
    return graph


_BUILDER = (
    "a builder is a function that takes the agent's Deps and returns an uncompiled StateGraph"
)


def _builder_problem(build: Any) -> str | None:
    """What keeps `build` from being called as a builder; None when nothing does.

    Checked before it is called, so a builtin named by mistake (``os:system``, whose one
    parameter would take the Deps) never runs: a builder must be Python code, a function,
    a method or an object whose class defines `__call__` (through `functools.partial` and
    decorators that set `__wrapped__`, as `functools.wraps` and `lru_cache` do), and its
    signature must take exactly the one argument it is called with.
    """
    target = build
    for _ in range(100):  # a chain of wrappers, never a cycle of them
        if isinstance(target, functools.partial):
            target = target.func
        elif hasattr(target, "__wrapped__") and not inspect.isfunction(target):
            target = target.__wrapped__
        else:
            break
    if not _is_python(target):
        return f"is {_a_kind(target)}, not a Python function"
    try:
        signature = inspect.signature(build)
    except (TypeError, ValueError):
        return "has no signature to check"
    try:
        signature.bind(object())
    except TypeError:
        return f"takes {signature}, but is called with one argument, the agent's Deps"
    return None


def _is_python(target: Any) -> bool:
    if inspect.isfunction(target):
        return True
    if inspect.ismethod(target):
        return inspect.isfunction(target.__func__)
    # An object whose class defines `__call__` in Python (looked up on the class, as a call is).
    call = inspect.getattr_static(type(target), "__call__", None)
    return not isinstance(target, type) and inspect.isfunction(call)


def _a_kind(value: Any) -> str:
    if value is None:
        return "None"
    if inspect.isbuiltin(value):
        return "a built-in function"
    kind = "class" if isinstance(value, type) else type(value).__name__
    return f"{'an' if kind[0].lower() in 'aeiou' else 'a'} {kind}"


def agent_deps(
    model: str | ChatModel | BaseChatModel,
    tools: Iterable[Tool | Callable[..., Any]],
    policy: Policy | None,
    validators: Sequence[Validator],
    approve: Iterable[str] | Literal["side_effects"] | None,
    max_observation_chars: int,
    context: ContextPolicy | None,
    confidence_threshold: float | None,
) -> Deps:
    """The parts an agent's nodes share, from `Agent`'s arguments of the same names."""
    return Deps(
        model=as_chat_model(model),
        policy=policy or ReActText(),
        tools=ToolRegistry([as_tool(t) for t in tools]),
        validators=tuple(validators),
        approve=approve if approve in (None, "side_effects") else frozenset(approve),  # type: ignore[arg-type]
        max_observation_chars=max_observation_chars,
        context=context,
        confidence_threshold=confidence_threshold,
    )


def traced_config(
    callbacks: Callbacks,
    tags: Sequence[str],
    metadata: Mapping[str, Any] | None,
    run_name: str | None,
) -> RunnableConfig:
    """The LangChain tracing config every graph call of an agent carries (only what is set)."""
    traced: RunnableConfig = {}
    if callbacks:
        traced["callbacks"] = callbacks
    if tags:
        traced["tags"] = list(tags)
    if metadata:
        traced["metadata"] = dict(metadata)
    if run_name:
        traced["run_name"] = run_name
    return traced


def description_of(graph: CompiledStateGraph[Any, Any, Any, Any]) -> dict[str, Any]:
    """A custom graph's diagram model as data, stored with each of its runs."""
    # Drawing is loaded only for a custom graph, and only when one of its runs starts.
    from thinkgraph.viz import graph_description, to_graph_model

    return graph_description(to_graph_model(graph))


def open_driver(
    builder: StateGraph[AgentState, Any, AgentState, AgentState] | None,
    deps: Deps,
    store: str | BaseCheckpointSaver[Any],
    limits: StepLimits,
    breakpoints: Breakpoints,
    traced: RunnableConfig,
    retention: Retention | None = None,
) -> Driver:
    """The run driver of an agent: its store opened, its graph (ours when `builder` is None)
    compiled with it, and the agent's limits, breakpoints and tracing config."""
    saver = open_checkpointer(store) if isinstance(store, str) else store
    graph = (builder or build_react_graph(deps)).compile(checkpointer=saver)
    # A custom graph's description is stored with its runs (computed once, on the first);
    # ours is not: any Agent draws it.
    describe = functools.cache(lambda: description_of(graph)) if builder is not None else None
    return Driver(
        graph,
        deps,
        limits=limits,
        breakpoints=breakpoints,
        traced=traced,
        describe=describe,
        retention=retention,
    )


def replay_drivers(agent: Agent) -> Callable[[ChatModel], Driver]:
    """What makes a replay's driver (`thinkgraph.runs.replay`) for `agent`: its graph,
    built again with its parts but the replay's model, on its store (its driver's saver),
    with its limits, breakpoints and tracing config.

    For a replay of the agent's own runs (`Agent.replay`) and of a recorded fixture
    (`thinkgraph.testing.regress`).
    """
    driver, limits, breakpoints = agent.driver, agent.limits, agent.breakpoints
    build, traced = agent._build, agent._traced

    def make(model: ChatModel) -> Driver:
        deps = dataclasses.replace(driver.deps, model=model)
        builder = build and built_graph(build, deps, limits, name=agent.graph_address)
        return open_driver(builder, deps, driver.saver, limits, breakpoints, traced)

    return make


async def areplay(agent: Agent, thread_id: str, /, **options: Any) -> replaying.ReplayReport:
    """Replay a stored run on this agent's graph, policy and tools, from its record.

    Into a new thread (``replay-<thread_id>``), compared with its source, calling no model
    and running no tool; this agent's model only past a divergence, when asked. Options
    (`new_thread_id`, `strict`, `live_from_divergence`, `max_calls`) and errors:
    `thinkgraph.runs.replay.areplay`.
    """
    model = agent.deps.model
    make = replay_drivers(agent)
    return await replaying.areplay(agent.driver, make, thread_id, live_model=model, **options)
