"""What `Agent.__init__` checks and assembles: its parts, breakpoints, tools, a custom graph,
its tracing config."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.callbacks import Callbacks
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from thinkgraph.errors import ConfigError
from thinkgraph.graphs.build import GraphBuilder
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
    "open_driver",
    "replay_drivers",
    "traced_config",
]

REACT_NODES = frozenset(
    {"think", "approve", "act", "observe", "validate", "reset", "finalize", "ask_human"}
)


def as_breakpoints(
    value: Breakpoints | Mapping[str, Iterable[str]] | None, nodes: Iterable[str] = REACT_NODES
) -> Breakpoints:
    if value is None:
        return Breakpoints()
    if isinstance(value, Breakpoints):
        return value
    unknown = set(value) - {"before", "after"}
    if unknown:
        raise ConfigError(
            f"breakpoints takes the keys 'before' and 'after', not {sorted(unknown)}; "
            'e.g. breakpoints={"before": ["act"], "after": ["think"]}'
        )
    points = Breakpoints(before=tuple(value.get("before", ())), after=tuple(value.get("after", ())))
    nodes = set(nodes)
    for name in (*points.before, *points.after):
        if name not in nodes:
            raise ConfigError(
                f"breakpoint on unknown node {name!r}; the nodes are {', '.join(sorted(nodes))}"
            )
    return points


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
    build: GraphBuilder, deps: Deps, limits: StepLimits
) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    graph = build(deps)
    if not isinstance(graph, StateGraph):
        raise ConfigError(
            f"build_graph returned a {type(graph).__name__}; return the uncompiled "
            "StateGraph (the agent compiles it with its store)"
        )
    check_graph(graph, limits=limits)
    return graph


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
        builder = build and built_graph(build, deps, limits)
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
