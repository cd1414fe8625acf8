"""Agent: the one-class way to build, run, pause, resume and draw a thinkgraph agent.

A facade over the run driver and the reader of runs (`thinkgraph.runs`); every sync method
is made from its async one in one place (`thinkgraph._sync`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal, overload

from langchain_core.callbacks import Callbacks
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from thinkgraph._sync import sync_iterator, sync_method
from thinkgraph.graphs.address import graph_metadata, graph_source
from thinkgraph.graphs.breakpoints import as_breakpoints
from thinkgraph.graphs.build import GraphBuilder
from thinkgraph.graphs.builder import built_graph
from thinkgraph.llm.base import ChatModel
from thinkgraph.nodes.deps import Validator, agent_deps
from thinkgraph.policies.base import Policy
from thinkgraph.policies.context import ContextPolicy
from thinkgraph.result import RunResult, RunSummary
from thinkgraph.runs.driver import Driver, fresh_thread_id, open_driver
from thinkgraph.runs.events import RunEvent, asteps_of, outcome
from thinkgraph.runs.reader import CheckpointInfo, RunReader
from thinkgraph.runs.replay import areplay_agent as replay_of_agent
from thinkgraph.state import BaseStep
from thinkgraph.storage import DEFAULT_STORE, Retention, close_checkpointer
from thinkgraph.storage.answers import Answer
from thinkgraph.tools import Tool
from thinkgraph.tracing import traced_config
from thinkgraph.types import Breakpoints, RunStatus, StepLimits, check_thread_id

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["Agent", "GraphBuilder", "RunResult"]


class Agent:
    """An LLM agent as an explicit, checkpointed state machine.

    Example:
        >>> from thinkgraph import Agent, ScriptedModel, tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> replies = ['Thought: add\\nAction: add\\nAction Input: {"a": 2, "b": 40}',
        ...            "Thought: done\\nFinal Answer: 42"]
        >>> agent = Agent(ScriptedModel(replies), [add], store="memory://")
        >>> agent.run("What is 2 + 40?", thread_id="t1").answer
        '42'

    Your own graph: pass ``build_graph=build`` where ``build(deps)`` returns an
    uncompiled `StateGraph` made with `thinkgraph.graphs.parts` (and nodes of yours). It is
    checked with `check_graph` here, and runs, pauses, streams and draws like ours. Or pass
    ``graph="module:function"``. Its address (``agent.graph_address``) goes with every run
    (`thinkgraph.graphs.address`): the CLI continues the run on it from any process.

    Tracing (`thinkgraph.tracing`): ``callbacks``, ``tags``, ``metadata`` and ``run_name``
    go into every graph call of this agent, so LangChain handlers see the run, its nodes,
    and each model and tool call; OpenTelemetry spans go to the configured provider.

    Runs are driven by `thinkgraph.runs.Driver` (its methods document each error); every
    method taking a thread id raises `ThreadIdError` for one that cannot name a run.
    """

    def __init__(
        self,
        model: str | ChatModel | BaseChatModel,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        limits: StepLimits | None = None,
        store: str | BaseCheckpointSaver[Any] = DEFAULT_STORE,
        policy: Policy | None = None,
        validators: Sequence[Validator] = (),
        approve: Iterable[str] | Literal["side_effects"] | None = None,
        breakpoints: Breakpoints | Mapping[str, Iterable[str]] | None = None,
        max_observation_chars: int = 4000,
        context: ContextPolicy | None = None,
        confidence_threshold: float | None = None,
        build_graph: GraphBuilder | None = None,
        graph: str | None = None,
        callbacks: Callbacks = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        run_name: str | None = None,
        retention: Retention | None = None,
    ) -> None:
        self.limits = limits or StepLimits()
        settings = (max_observation_chars, context, confidence_threshold)
        self.deps = agent_deps(model, tools, policy, validators, approve, *settings)
        build_graph, self.graph_address = graph_source(build_graph, graph)
        self._build = build_graph
        metadata = graph_metadata(metadata, self.graph_address)
        # A user's graph is built and checked now, so a broken one fails where it is given
        # (ours is checked by build_react_graph, on first use); errors name its address.
        built = build_graph and built_graph(build_graph, self.deps, self.limits, self.graph_address)
        self._builder = built
        # The agent's breakpoints, and those its graph declares (`add_breakpoint`).
        self.breakpoints = as_breakpoints(breakpoints, built or None)
        self._store, self._retention = store, retention  # retention: prune runs as they end
        self._driver: Driver | None = None
        # LangChain tracing for every graph call of this agent (run, resume, fork, events).
        self._traced = traced_config(callbacks, tags, metadata, run_name)

    # -- set-up ---------------------------------------------------------------------------

    @property
    def driver(self) -> Driver:
        """What runs this agent's graph: the store opened, the graph compiled, on first use."""
        if self._driver is None:
            parts = (self.deps, self._store, self.limits, self.breakpoints, self._traced)
            self._driver = open_driver(self._builder, *parts, self._retention)
        return self._driver

    @property
    def graph(self) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The compiled LangGraph graph, with the checkpointer (opened on first use)."""
        return self.driver.graph

    @property
    def reader(self) -> RunReader:
        """What reads this agent's runs from its store; the reading methods use it."""
        return self.driver.reader

    @property
    def store_url(self) -> str | None:
        """The URL of the store this agent was given, or None when given a saver object."""
        return self._store if isinstance(self._store, str) else None

    def close(self) -> None:
        """Close the store this agent opened (a store passed in is left open)."""
        if self._driver is not None and isinstance(self._store, str):
            close_checkpointer(self._driver.saver)
        self._driver = None

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lease(self, thread_id: str, *, nested: bool = True) -> AbstractContextManager[None]:
        """Hold `thread_id` so that no other process, thread or task advances it.

        Hold it to read a run and act on what you read with nothing moving in between; this
        agent's calls inside go through. `ThreadBusyError` if someone else advances it.
        """
        return self.driver.store.lease(check_thread_id(thread_id), nested=nested)

    def alease(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """`lease` for async code (``async with agent.alease(t): ...``)."""
        return self.driver.store.alease(check_thread_id(thread_id))

    def _config(self, thread_id: str) -> RunnableConfig:
        return self.driver.config(thread_id)

    def _start(self, task: str) -> dict[str, Any]:
        return self.driver.start_state(task)

    # -- running: each a fold over, or a view of, the driver's events ----------------------

    async def arun(self, task: str, thread_id: str | None = None) -> RunResult:
        """Run a task until it finishes or pauses, on `thread_id` (a new one if omitted).

        Many runs can go at once (``asyncio.gather``). Cancelling it (Ctrl-C in `run`) stops
        the run at its last checkpoint; `resume` continues it. Raises what `Driver.start`
        raises (`ThreadExistsError`, `ThreadBusyError`).
        """
        return await outcome(self.driver.start(task, thread_id or fresh_thread_id(), detail=False))

    async def aevents(self, task: str, thread_id: str) -> AsyncIterator[RunEvent]:
        """Run a task, yielding typed events (see `Driver.start`); raises what `run` does."""
        async for event in self.driver.start(task, thread_id):
            yield event

    def astream(self, task: str, thread_id: str) -> AsyncIterator[BaseStep]:
        """Run a task, yielding each chain step (numbered as stored) once it is written."""
        return asteps_of(self.aevents(task, thread_id))

    async def aresume(
        self, thread_id: str, decisions: Any = None, *, answer: Answer | None = None
    ) -> RunResult:
        """Continue a run: after a crash, at a breakpoint, or with the answer it waits for.

        `decisions`: for approvals, every waiting call id mapped to `Approve()`,
        `Edit(args=...)`, `Reject(reason=...)` or `Respond(text=...)`; for an ask_human
        pause, "retry", "abort" or guidance text; None to continue a run otherwise.
        `answer`: their claim of the pause, made before (`Driver.claim_answer`). Raises
        what `Driver.resume` raises; a refused answer leaves the run as it was.
        """
        return await outcome(self.driver.resume(thread_id, decisions, detail=False, answer=answer))

    async def aresume_events(
        self, thread_id: str, decisions: Any = None, *, answer: Answer | None = None
    ) -> AsyncIterator[RunEvent]:
        """`aresume`, yielding the events of `aevents` for the steps it adds."""
        async for event in self.driver.resume(thread_id, decisions, answer=answer):
            yield event

    def astream_resume(self, thread_id: str, decisions: Any = None) -> AsyncIterator[BaseStep]:
        """`aresume`, yielding each new chain step as soon as its checkpoint is written."""
        return asteps_of(self.aresume_events(thread_id, decisions))

    async def acheck_resume(
        self, thread_id: str, decisions: Any = None, *, at: str | None = None
    ) -> str:
        """Check that `resume(thread_id, decisions)` would be accepted, without running it.

        For handing the resume to a worker or a server task: a bad answer is refused where
        it is given. Returns the id of the checkpoint it answers; raises what `resume` would.
        """
        return await self.driver.check_resume(thread_id, decisions, at=at)

    async def afork(
        self,
        thread_id: str,
        checkpoint_id: str,
        *,
        edit: Mapping[int, Mapping[str, Any]] | None = None,
        state: Mapping[str, Any] | None = None,
        new_thread_id: str | None = None,
    ) -> RunResult:
        """Start a new thread from any checkpoint of a run, `edit`ed, and run it on.

        The original thread is not touched. An edit maps a step number to what a person
        may change (``{5: {"text": "the file is empty"}}``); `state` sets keys of the
        graph's own state (``{"score": 20}``). See `Driver.fork` for both and the errors.
        """
        events = self.driver.fork(thread_id, checkpoint_id, edit=edit, state=state,
                                  new_thread_id=new_thread_id, detail=False)  # fmt: skip
        return await outcome(events)

    areplay = replay_of_agent  # `Agent.replay` (its options: `thinkgraph.runs.replay.areplay`)
    run = sync_method(arun)
    replay = sync_method(areplay)
    events = sync_iterator(aevents)
    stream = sync_iterator(astream)
    resume = sync_method(aresume)
    resume_events = sync_iterator(aresume_events)
    stream_resume = sync_iterator(astream_resume)
    check_resume = sync_method(acheck_resume)
    fork = sync_method(afork)

    # -- reading (the reader: each call reads the run once) --------------------------------

    async def aresult(self, thread_id: str) -> RunResult:
        """The current result of a run, read from the store (`ThreadNotFoundError` if none)."""
        return await self.reader.aresult(thread_id)

    async def achain(self, thread_id: str) -> list[BaseStep]:
        """Every step of a run, in order."""
        return (await self.reader.aresult(thread_id)).chain

    async def acheckpoint_id(self, thread_id: str) -> str | None:
        """The id of a run's latest checkpoint, or None when the thread holds no run."""
        return await self.reader.acheckpoint_id(thread_id)

    result = sync_method(aresult)
    chain = sync_method(achain)
    checkpoint_id = sync_method(acheckpoint_id)

    def runs(self, status: RunStatus | None = None, limit: int | None = None) -> list[RunSummary]:
        """The runs in this agent's store, newest first (`StorageError` if it cannot be read)."""
        return self.reader.runs(status, limit)

    def history(self, thread_id: str) -> list[CheckpointInfo]:
        """The checkpoints of a run, oldest first: one per node that completed."""
        return self.reader.history(thread_id)

    @overload
    def draw(self, fmt: Literal["png"], thread_id: str | None = None) -> bytes: ...
    @overload
    def draw(
        self,
        fmt: Literal["mermaid", "ascii", "dot", "svg"] = "mermaid",
        thread_id: str | None = None,
    ) -> str: ...
    @overload
    def draw(self, fmt: str, thread_id: str | None = None) -> str | bytes: ...
    def draw(self, fmt: str = "mermaid", thread_id: str | None = None) -> str | bytes:
        """The graph as a diagram; with `thread_id`, marked with the path that run took.

        `fmt` is "mermaid", "ascii", "dot", "svg" or "png" (the last two need Graphviz).
        The overlay shows visited nodes and edges with counts, and where the run paused and
        for what, or where it stopped and why. Raises `ValueError` for an unknown format.
        """
        from thinkgraph.viz.render import draw_run

        run = None if thread_id is None else self.reader.overlay(thread_id)
        return draw_run(
            self.graph, self.deps, fmt, limits=self.limits, breakpoints=self.breakpoints, run=run
        )
