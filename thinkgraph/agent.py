"""Agent: the one-class way to build, run, pause, resume and draw a thinkgraph agent.

A facade: it assembles the parts (model, tools, policy, store, graph) and hands each call
to the run driver (`thinkgraph.runs.driver`, async, written once) or the reader of runs
(`thinkgraph.runs.reader`). Every sync method is made from its async one in one place
(`thinkgraph._sync`), so a script, a thread and a notebook cell behave alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal, overload

from langchain_core.callbacks import Callbacks
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from thinkgraph._agent_parts import REACT_NODES, GraphBuilder, as_breakpoints, as_tool, built_graph
from thinkgraph._sync import sync_iterator, sync_method
from thinkgraph.graphs.react import build_react_graph
from thinkgraph.llm import as_chat_model
from thinkgraph.llm.base import ChatModel
from thinkgraph.nodes.deps import Deps, Validator
from thinkgraph.policies.base import Policy
from thinkgraph.policies.context import ContextPolicy
from thinkgraph.result import RunResult
from thinkgraph.runs.driver import Driver, fresh_thread_id
from thinkgraph.runs.events import RunEvent, asteps_of, outcome
from thinkgraph.runs.reader import CheckpointInfo, RunReader
from thinkgraph.state import BaseStep
from thinkgraph.storage import DEFAULT_STORE, close_checkpointer, open_checkpointer
from thinkgraph.storage.lease import athread_lease, thread_lease
from thinkgraph.storage.threads import RunSummary
from thinkgraph.tools import Tool, ToolRegistry
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
        >>> agent = Agent(
        ...     model=ScriptedModel([
        ...         'Thought: add them\\nAction: add\\nAction Input: {"a": 2, "b": 40}',
        ...         "Thought: done\\nFinal Answer: 42",
        ...     ]),
        ...     tools=[add],
        ...     store="memory://",
        ... )
        >>> agent.run("What is 2 + 40?", thread_id="t1").answer
        '42'

    Your own graph: pass ``build_graph=build`` where ``build(deps)`` returns an
    uncompiled `StateGraph` made with `thinkgraph.graphs.parts` (and nodes of yours). It is
    checked with `check_graph` here, and runs, pauses, streams and draws like ours.

    Tracing (see `thinkgraph.tracing`): ``callbacks``, ``tags``, ``metadata`` and
    ``run_name`` go into the config of every graph call this agent makes (run, resume, fork
    and their streaming forms), so LangChain handlers (LangSmith, Langfuse) see the run,
    its nodes, and each model and tool call as child runs. They are set per agent, not per
    call; make an agent per request for per-request handlers. OpenTelemetry spans need no
    argument: they go to the configured tracer provider.

    Every method that takes a thread id raises `ThreadIdError` for one with a control
    character or over 256 characters (`thinkgraph.types.check_thread_id`).
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
        callbacks: Callbacks = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        run_name: str | None = None,
    ) -> None:
        from thinkgraph.policies import ReActText

        self.limits = limits or StepLimits()
        self.deps = Deps(
            model=as_chat_model(model),
            policy=policy or ReActText(),
            tools=ToolRegistry([as_tool(t) for t in tools]),
            validators=tuple(validators),
            approve=approve if approve in (None, "side_effects") else frozenset(approve),  # type: ignore[arg-type]
            max_observation_chars=max_observation_chars,
            context=context,
            confidence_threshold=confidence_threshold,
        )
        # A user's graph is built and checked now, so a broken one fails where it is given
        # (ours is checked by build_react_graph, on first use).
        self._builder = (
            None if build_graph is None else built_graph(build_graph, self.deps, self.limits)
        )
        names = REACT_NODES if self._builder is None else self._builder.nodes
        self.breakpoints = as_breakpoints(breakpoints, names)
        self._store = store
        self._driver: Driver | None = None
        self._description: dict[str, Any] | None = None
        # LangChain tracing for every graph call of this agent (run, resume, fork, events).
        traced = {"callbacks": callbacks, "tags": list(tags), "metadata": dict(metadata or {})}
        self._traced: RunnableConfig = {k: v for k, v in traced.items() if v}  # type: ignore[assignment]
        if run_name:
            self._traced["run_name"] = run_name

    # -- set-up ---------------------------------------------------------------------------

    @property
    def driver(self) -> Driver:
        """What runs this agent's graph: the store opened, the graph compiled, on first use."""
        if self._driver is None:
            store = self._store
            saver = open_checkpointer(store) if isinstance(store, str) else store
            graph = (self._builder or build_react_graph(self.deps)).compile(checkpointer=saver)
            self._driver = Driver(
                graph,
                self.deps,
                limits=self.limits,
                breakpoints=self.breakpoints,
                traced=self._traced,
                describe=self._described,
            )
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
            close_checkpointer(self._driver.store)
        self._driver = None

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lease(self, thread_id: str, *, nested: bool = True) -> AbstractContextManager[None]:
        """Hold `thread_id` so that no other process, thread or task advances it.

        `run`, `resume` and `fork` (and their streaming forms) take it themselves; hold it
        yourself to read a run and act on what you read with nothing moving in between.
        This agent's calls inside the block go through (see `thread_lease`).

        Raises:
            ThreadBusyError: someone else is advancing the thread; nothing was changed.
        """
        return thread_lease(self.driver.store, check_thread_id(thread_id), nested=nested)

    def alease(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """`lease` for async code (``async with agent.alease(t): ...``)."""
        return athread_lease(self.driver.store, check_thread_id(thread_id))

    def _config(self, thread_id: str) -> RunnableConfig:
        return self.driver.config(thread_id)

    def _start(self, task: str) -> dict[str, Any]:
        return self.driver.start_state(task)

    def _described(self) -> dict[str, Any] | None:
        """A custom graph's diagram model as data, stored with each of its runs (once)."""
        if self._builder is None:
            return None  # the prebuilt graph: any Agent draws it
        if self._description is None:
            from thinkgraph.viz import graph_description, to_graph_model

            self._description = graph_description(to_graph_model(self.graph))
        return self._description

    # -- running: each a fold over, or a view of, the driver's events ----------------------

    async def arun(self, task: str, thread_id: str | None = None) -> RunResult:
        """Run a task until it finishes or pauses.

        Many runs of one agent can go at once (``asyncio.gather``): they wait on the model
        and on tools side by side. Cancelling the task (or Ctrl-C in `run`) stops the run
        after its last checkpoint; `resume` continues it from there.

        Args:
            task: what the agent should do.
            thread_id: the run's id in the store; a new one is made when omitted.

        Raises:
            ThreadExistsError: the thread already holds a run (resume it, or use a new id).
            ThreadBusyError: another process is advancing the thread (see `lease`).
        """
        return await outcome(self.driver.start(task, thread_id or fresh_thread_id(), nodes=False))

    async def aevents(self, task: str, thread_id: str) -> AsyncIterator[RunEvent]:
        """Run a task, yielding typed events as it goes; see `thinkgraph.runs.events`.

        First a `RunStart`, then a `NodeStart` as each node begins and a `StepEvent` per
        step as it is written, and last a `RunEnd` with the `RunResult`. Leaving the loop
        early stops the run at a checkpoint. Raises (when iterated) what `run` raises.
        """
        async for event in self.driver.start(task, thread_id):
            yield event

    def astream(self, task: str, thread_id: str) -> AsyncIterator[BaseStep]:
        """Run a task, yielding each chain step as soon as its node's checkpoint is written.

        Steps carry their numbers in the stored chain. Read the outcome afterwards with
        `result(thread_id)`, or use `events` to get it at the end of the stream. Raises
        (when iterated) what `run` raises.
        """
        return asteps_of(self.aevents(task, thread_id))

    async def aresume(self, thread_id: str, decisions: Any = None) -> RunResult:
        """Continue a run: after a crash, at a breakpoint, or with the answer it waits for.

        Args:
            thread_id: the run to continue.
            decisions: the answer to a pause. For approvals, a mapping of every waiting
                call id to `Approve()`, `Edit(args=...)`, `Reject(reason=...)` or
                `Respond(text=...)`. For an ask_human pause, "retry", "abort" or guidance
                text. Leave it out to continue a run whose process died or that stopped at
                a breakpoint.

        Raises:
            ThreadNotFoundError: no run is stored under this thread id.
            NotPausedError: `decisions` was given but the run does not wait for an answer.
            ResumeValueError: the decisions do not fit what the run waits for; the run is
                left exactly as it was.
            ThreadBusyError: another process is advancing the thread right now.
        """
        return await outcome(self.driver.resume(thread_id, decisions, nodes=False))

    async def aresume_events(
        self, thread_id: str, decisions: Any = None
    ) -> AsyncIterator[RunEvent]:
        """`aresume`, yielding the events of `aevents` for the steps it adds.

        A finished run yields only its `RunStart` and `RunEnd`. Raises (when iterated)
        what `resume` raises.
        """
        async for event in self.driver.resume(thread_id, decisions):
            yield event

    def astream_resume(self, thread_id: str, decisions: Any = None) -> AsyncIterator[BaseStep]:
        """`aresume`, yielding each new chain step as soon as its checkpoint is written."""
        return asteps_of(self.aresume_events(thread_id, decisions))

    async def acheck_resume(self, thread_id: str, decisions: Any = None) -> str:
        """Check that `resume(thread_id, decisions)` would be accepted, without running it.

        For handing the resume to a worker (`thinkgraph.worker.RunQueue`) or a server task:
        bad decisions are refused here, where they are given, not later in a log.

        Returns:
            The id of the checkpoint the decisions answer (the run's latest).

        Raises:
            What `resume` raises for the same arguments; the run is not touched.
        """
        return await self.driver.check_resume(thread_id, decisions)

    async def afork(
        self,
        thread_id: str,
        checkpoint_id: str,
        *,
        edit: Mapping[int, Mapping[str, Any]] | None = None,
        new_thread_id: str | None = None,
    ) -> RunResult:
        """Start a new thread from any checkpoint of a run and run it on.

        The original thread is not touched. The new chain is the chain at that checkpoint,
        with `edit` applied, and a `human` step recording the fork. An edit maps a step
        number to its new value, and changes only what a person may change (see
        `thinkgraph.runs.forks`): an observation's text (``{5: {"text": "empty"}}``), the
        answer of a thought not yet validated (``{7: {"answer": "42"}}``), or the args of
        a tool call that has neither run nor a person's decision (``{3: {"args": {...}}}``).

        Raises:
            ThreadNotFoundError: no such thread or no such checkpoint in it.
            ResumeValueError: `edit` is not ``{step_number: {field: value}}``, names a step
                that does not exist, or changes what a person may not change.
            ThreadBusyError: another process is advancing `new_thread_id`.
        """
        events = self.driver.fork(
            thread_id, checkpoint_id, edit=edit, new_thread_id=new_thread_id, nodes=False
        )
        return await outcome(events)

    run = sync_method(arun)
    events = sync_iterator(aevents)
    stream = sync_iterator(astream)
    resume = sync_method(aresume)
    resume_events = sync_iterator(aresume_events)
    stream_resume = sync_iterator(astream_resume)
    check_resume = sync_method(acheck_resume)
    fork = sync_method(afork)

    # -- reading (the reader: each call reads the run once) --------------------------------

    async def aresult(self, thread_id: str) -> RunResult:
        """The current result of a run, read from the store.

        Raises:
            ThreadNotFoundError: no run is stored under this thread id.
        """
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
        """The runs in this agent's store, the most recently updated first (see `RunReader`).

        Raises:
            StorageError: the store cannot be read.
        """
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

        Args:
            fmt: "mermaid", "ascii", "dot", "svg" or "png" (svg and png need Graphviz).
            thread_id: a run to overlay: visited nodes and edges with counts, and where
                it paused and for what, or where it stopped and why.

        Raises:
            ValueError: an unknown format.
            GraphvizNotFoundError: svg or png without Graphviz's `dot` installed.
            ThreadNotFoundError: no run is stored under `thread_id`.
        """
        from thinkgraph.viz.render import draw_run

        run = None
        if thread_id is not None:
            snapshot = self.reader.snapshot(thread_id)
            run = (snapshot, self.reader.result_of(thread_id, snapshot))  # one read
        return draw_run(
            self.graph, self.deps, fmt, limits=self.limits, breakpoints=self.breakpoints, run=run
        )
