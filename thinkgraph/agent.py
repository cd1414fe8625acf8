"""Agent: the one-class way to build, run, pause, resume and draw a thinkgraph agent."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal, overload

from langchain_core.callbacks import Callbacks
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateSnapshot

from thinkgraph import tracing
from thinkgraph._agent_parts import (
    REACT_NODES,
    GraphBuilder,
    as_breakpoints,
    as_tool,
    built_graph,
)
from thinkgraph._sync import iterate_sync, run_sync
from thinkgraph.errors import (
    NotPausedError,
    ResumeValueError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from thinkgraph.forks import edited_state, fork_edits
from thinkgraph.graphs.address import graph_metadata, graph_source
from thinkgraph.graphs.react import build_react_graph
from thinkgraph.hitl import Pending, check_approvals
from thinkgraph.llm import as_chat_model
from thinkgraph.llm.base import ChatModel
from thinkgraph.nodes.ask_human import parse_human_answer
from thinkgraph.nodes.deps import Deps, Validator
from thinkgraph.policies.base import Policy
from thinkgraph.policies.context import ContextPolicy
from thinkgraph.reader import RunReader
from thinkgraph.result import RunResult
from thinkgraph.snapshots import (
    CheckpointInfo,
    pending_of,
    status_of,
)
from thinkgraph.state import BaseStep, Counters, HumanStep, RunInfo, TaskStep, start_state
from thinkgraph.storage import DEFAULT_STORE, close_checkpointer, open_checkpointer
from thinkgraph.storage.extras import KeepsPausedRuns, KnowsThreads
from thinkgraph.storage.lease import athread_lease, thread_lease
from thinkgraph.storage.threads import RunSummary
from thinkgraph.streaming import (
    RunEnd,
    RunEvent,
    RunStart,
    StepEvent,
    asteps_of,
    graph_events,
    steps_of,
)
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
    checked with `check_graph` here, and runs, pauses, streams and draws like ours. Or pass
    ``graph="module:function"``. Its address (``agent.graph_address``) goes with every run
    (`thinkgraph.graphs.address`): the CLI continues the run on it from any process.

    Tracing (see `thinkgraph.tracing`): ``callbacks``, ``tags``, ``metadata`` and
    ``run_name`` go into the config of every graph call this agent makes (run, resume, fork
    and their streaming forms), so LangChain handlers (LangSmith, Langfuse) see the run,
    its nodes, and each model and tool call as child runs. They are set per agent, not per
    call; make an agent per request for per-request handlers. OpenTelemetry spans need no
    argument: they go to the configured tracer provider.
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
        build_graph, self.graph_address = graph_source(build_graph, graph)
        metadata = graph_metadata(metadata, self.graph_address)
        # A user's graph is built and checked now, so a broken one fails where it is given
        # (ours is checked by build_react_graph, on first use).
        self._builder = (
            None if build_graph is None else built_graph(build_graph, self.deps, self.limits)
        )
        names = REACT_NODES if self._builder is None else self._builder.nodes
        self.breakpoints = as_breakpoints(breakpoints, names)
        self._store = store
        self._saver: BaseCheckpointSaver[Any] | None = (
            store if isinstance(store, BaseCheckpointSaver) else None
        )
        self._owns_saver = False
        self._compiled: CompiledStateGraph[Any, Any, Any, Any] | None = None
        self._description: dict[str, Any] | None = None
        self._reader = RunReader(self)
        # LangChain tracing for every graph call of this agent (run, resume, fork, events).
        self._traced: RunnableConfig = {}
        if callbacks:
            self._traced["callbacks"] = callbacks
        if tags:
            self._traced["tags"] = list(tags)
        if metadata:
            self._traced["metadata"] = dict(metadata)
        if run_name:
            self._traced["run_name"] = run_name

    # -- set-up ---------------------------------------------------------------------------

    @property
    def graph(self) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The compiled LangGraph graph, with the checkpointer (opened on first use)."""
        if self._compiled is None:
            if self._saver is None:
                assert isinstance(self._store, str)
                self._saver = open_checkpointer(self._store)
                self._owns_saver = True
            builder = self._builder or build_react_graph(self.deps)
            self._compiled = builder.compile(checkpointer=self._saver)
        return self._compiled

    def close(self) -> None:
        """Close the store this agent opened (a store passed in is left open)."""
        if self._owns_saver and self._saver is not None:
            close_checkpointer(self._saver)
        self._saver = None if self._owns_saver else self._saver
        self._compiled = None

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
        return thread_lease(self._opened(), check_thread_id(thread_id), nested=nested)

    def alease(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """`lease` for async code (``async with agent.alease(t): ...``)."""
        return athread_lease(self._opened(), check_thread_id(thread_id))

    def _opened(self) -> BaseCheckpointSaver[Any]:
        """The store, opened (with the graph compiled) on first use."""
        _ = self.graph
        assert self._saver is not None
        return self._saver

    def _config(self, thread_id: str, limits: StepLimits | None = None) -> RunnableConfig:
        # Every read and run of a thread passes here (and every lease through `alease`
        # or a check of its own), so a thread id that cannot name a run stops here.
        check_thread_id(thread_id)
        # Each think step takes at most five super-steps before the next think (approve,
        # act, observe, validate, reset, ask_human); the router stops the run, not this.
        limit = 6 * (limits or self.limits).max_steps + 25
        return {**self._traced, "configurable": {"thread_id": thread_id}, "recursion_limit": limit}

    async def _refuse_existing(self, thread_id: str, config: RunnableConfig) -> None:
        # Any checkpoint means the thread holds a run, even one killed before its first
        # node; asking the saver for the latest checkpoint does not rebuild the chain, and
        # a store that knows its threads answers from its index alone.
        saver = self._opened()
        if isinstance(saver, KnowsThreads):
            exists = await saver.ahas_thread(thread_id)
        else:
            exists = await saver.aget_tuple(config) is not None
        if exists:
            raise ThreadExistsError(
                f"thread {thread_id!r} already holds a run; continue it with "
                f"resume({thread_id!r}) or start this task on a new thread id"
            )

    async def _invoke(self, graph_input: Any, config: RunnableConfig, points: Breakpoints) -> Any:
        return await self.graph.ainvoke(
            graph_input,
            config,
            durability="sync",
            interrupt_before=list(points.before) or None,
            interrupt_after=list(points.after) or None,
        )

    async def _finish(self, thread_id: str, config: RunnableConfig, output: Any) -> RunResult:
        """The result of a run that just stopped, from the values `ainvoke` returned.

        Reading the stored state again would rebuild the whole chain; the values in hand
        are the same. Only a stop that the output cannot explain (a breakpoint) is read
        back from the store.
        """
        if not isinstance(output, dict):
            return await self._kept(thread_id, await self.aresult(thread_id))
        interrupts = tuple(output.get("__interrupt__") or ())
        if not interrupts and not isinstance(output.get("run"), RunInfo):
            return await self._kept(thread_id, await self.aresult(thread_id))
        values = {k: v for k, v in output.items() if k != "__interrupt__"}
        snapshot = StateSnapshot(values, (), config, None, None, None, (), interrupts)
        return await self._kept(thread_id, self._reader.result_of(thread_id, snapshot))

    async def _kept(self, thread_id: str, result: RunResult) -> RunResult:
        """Store a paused run's chain whole at its pause, so a resume replays nothing.

        The chain is a `DeltaChannel`: loading it replays every write since its last
        snapshot, which for a long run is most of a resume's time. A store that can keep
        a snapshot at the paused checkpoint (`KeepsPausedRuns`) is given the chain in hand.
        """
        saver = self._opened()
        if result.status != "paused" or not isinstance(saver, KeepsPausedRuns):
            return result
        latest = await self._reader.latest_tuple(thread_id)
        if latest is not None:
            await asyncio.to_thread(saver.keep_for_resume, latest.config, {"chain": result.chain})
        await asyncio.to_thread(saver.settle)
        return result

    # -- running --------------------------------------------------------------------------
    # The async methods are the core; each sync one runs its async twin to completion (see
    # `thinkgraph._sync`), so they behave alike from a script, a thread or a notebook.

    async def arun(self, task: str, thread_id: str | None = None) -> RunResult:
        """Run a task until it finishes or pauses, without blocking the event loop.

        Many runs of one agent can go at once (``asyncio.gather``): they wait on the model
        and on tools side by side. Cancelling the task stops the run after its last
        checkpoint; `resume` continues it from there.

        Args:
            task: what the agent should do.
            thread_id: the run's id in the store; a new one is made when omitted.

        Raises:
            ThreadExistsError: the thread already holds a run (resume it, or use a new id).
            ThreadBusyError: another process is advancing the thread (see `lease`).
            ThreadIdError: the id has a control character or is over 256 characters
                (`thinkgraph.types.check_thread_id`); so does every method taking one.
        """
        thread_id = thread_id or uuid.uuid4().hex[:12]
        config = self._config(thread_id)
        async with athread_lease(self._opened(), thread_id):
            await self._refuse_existing(thread_id, config)
            with tracing.run_span(thread_id) as span:
                output = await self._invoke(self._start(task), config, self.breakpoints)
                result = await self._finish(thread_id, config, output)
                tracing.end_run(span, result)
            return result

    def run(self, task: str, thread_id: str | None = None) -> RunResult:
        """`arun` from sync code: run a task until it finishes or pauses.

        Works inside a running event loop too (a notebook cell). Ctrl-C stops the run
        after its last checkpoint; `resume` continues it from there.

        Raises:
            ThreadExistsError: the thread already holds a run (resume it, or use a new id).
            ThreadBusyError: another process is advancing the thread (see `lease`).
        """
        return run_sync(lambda: self.arun(task, thread_id))

    async def aevents(self, task: str, thread_id: str) -> AsyncIterator[RunEvent]:
        """Run a task, yielding typed events as it goes; see `thinkgraph.streaming`.

        First a `RunStart`, then a `NodeStart` as each node begins and a `StepEvent` per
        step as it is written, and last a `RunEnd` with the `RunResult`. `thinkgraph run`
        shows its live progress from these.

        Raises:
            ThreadExistsError: the thread already holds a run (raised when iterated).
        """
        config = self._config(thread_id)
        async with athread_lease(self._opened(), thread_id, nested=False):
            await self._refuse_existing(thread_id, config)
            start = self._start(task)
            counters = start["counters"]
            yield RunStart(thread_id, self.limits, counters)
            with tracing.run_span(thread_id) as span:
                for step in start["chain"]:
                    yield StepEvent(thread_id, "start", step, counters)
                async for event in graph_events(
                    self.graph,
                    start,
                    config,
                    thread_id=thread_id,
                    first_number=len(start["chain"]),
                    counters=counters,
                    breakpoints=self.breakpoints,
                ):
                    yield event
                result = await self._kept(thread_id, await self.aresult(thread_id))
                tracing.end_run(span, result)
            yield RunEnd(result)

    def events(self, task: str, thread_id: str) -> Iterator[RunEvent]:
        """`aevents` from sync code; leaving the loop early stops the run at a checkpoint."""
        return iterate_sync(lambda: self.aevents(task, thread_id))

    def stream(self, task: str, thread_id: str) -> Iterator[BaseStep]:
        """Run a task, yielding each chain step as soon as its node's checkpoint is written.

        Steps carry their numbers in the stored chain. Read the outcome afterwards with
        `result(thread_id)`, or use `events` to get it at the end of the stream.

        Raises:
            ThreadExistsError: the thread already holds a run (raised when iterated).
        """
        return steps_of(self.events(task, thread_id))

    def astream(self, task: str, thread_id: str) -> AsyncIterator[BaseStep]:
        """`stream` as an async iterator.

        Example:
            >>> async for step in agent.astream("What is 2 + 40?", "t1"):  # doctest: +SKIP
            ...     print(step.number, step.type)
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
            ThreadBusyError: another process is advancing the thread right now; the run is
                left as that process leaves it (see `lease`).
        """
        async with self.alease(thread_id):
            _, todo = await self._resume_input(thread_id, decisions)
            if todo is None:
                return await self.aresult(thread_id)
            graph_input, config, points = todo
            with tracing.run_span(thread_id, resumed=True) as span:
                output = await self._invoke(graph_input, config, points)
                result = await self._finish(thread_id, config, output)
                tracing.end_run(span, result)
            return result

    def resume(self, thread_id: str, decisions: Any = None) -> RunResult:
        """`aresume` from sync code; see it for the arguments and errors."""
        return run_sync(lambda: self.aresume(thread_id, decisions))

    async def aresume_events(
        self, thread_id: str, decisions: Any = None
    ) -> AsyncIterator[RunEvent]:
        """`aresume`, yielding the typed events of `aevents` for the steps it adds.

        A finished run yields only its `RunStart` and `RunEnd`. Raises (when iterated)
        what `resume` raises.
        """
        check_thread_id(thread_id)
        async with athread_lease(self._opened(), thread_id, nested=False):
            latest, todo = await self._resume_input(thread_id, decisions)
            limits = latest.values.get("limits")
            counters = latest.values.get("counters") or Counters()
            yield RunStart(thread_id, limits or self.limits, counters, resumed=True)
            if todo is None:
                yield RunEnd(await self.aresult(thread_id))
                return
            graph_input, config, points = todo
            with tracing.run_span(thread_id, resumed=True) as span:
                # `latest` left the chain out: the stream reads it only if a step of a
                # user's node comes unnumbered.
                async for event in graph_events(
                    self.graph,
                    graph_input,
                    config,
                    thread_id=thread_id,
                    first_number=None,
                    counters=counters,
                    breakpoints=points,
                ):
                    yield event
                result = await self._kept(thread_id, await self.aresult(thread_id))
                tracing.end_run(span, result)
            yield RunEnd(result)

    def resume_events(self, thread_id: str, decisions: Any = None) -> Iterator[RunEvent]:
        """`aresume_events` from sync code."""
        return iterate_sync(lambda: self.aresume_events(thread_id, decisions))

    def stream_resume(self, thread_id: str, decisions: Any = None) -> Iterator[BaseStep]:
        """`resume`, yielding each new chain step as soon as its node's checkpoint is written.

        Raises (when iterated) what `resume` raises.
        """
        return steps_of(self.resume_events(thread_id, decisions))

    def astream_resume(self, thread_id: str, decisions: Any = None) -> AsyncIterator[BaseStep]:
        """`stream_resume` as an async iterator."""
        return asteps_of(self.aresume_events(thread_id, decisions))

    def check_resume(self, thread_id: str, decisions: Any = None) -> str:
        """Check that `resume(thread_id, decisions)` would be accepted, without running it.

        For handing the resume to a worker (`thinkgraph.worker.RunQueue`): bad decisions
        are refused here, where they are given, not later in a worker's log.

        Returns:
            The id of the checkpoint the decisions answer (the run's latest).

        Raises:
            What `resume` raises for the same arguments; the run is not touched.
        """
        latest, _ = run_sync(lambda: self._resume_input(thread_id, decisions))
        return str(latest.config["configurable"]["checkpoint_id"])

    @property
    def store_url(self) -> str | None:
        """The URL of the store this agent was given, or None when given a saver object."""
        return self._store if isinstance(self._store, str) else None

    async def _resume_input(
        self, thread_id: str, decisions: Any
    ) -> tuple[StateSnapshot, tuple[Any, RunnableConfig, Breakpoints] | None]:
        """The latest checkpoint, and what continues it: (input, config, breakpoints).

        None instead when the run has finished. `decisions` are checked first.
        """
        snapshot = await self._reader.latest(thread_id)
        limits = snapshot.values.get("limits")
        config = self._config(thread_id, limits if isinstance(limits, StepLimits) else None)
        points = snapshot.values.get("breakpoints")
        points = points if isinstance(points, Breakpoints) else Breakpoints()
        interrupts = list(snapshot.interrupts)
        if decisions is not None and not interrupts:
            raise NotPausedError(
                f"thread {thread_id!r} is not waiting for an answer (status "
                f"{status_of(snapshot)}); continue it with resume({thread_id!r})"
            )
        if interrupts:
            if decisions is None:
                raise ResumeValueError(
                    f"thread {thread_id!r} waits for a person: "
                    f"{', '.join(sorted({p.kind for p in pending_of(snapshot)}))}; "
                    "pass decisions=..."
                )
            answers = {i.id: self._checked_answer(i.value, decisions) for i in interrupts}
            return snapshot, (Command(resume=answers), config, points)
        if not isinstance(snapshot.values.get("run"), RunInfo):
            # Not finished: continue from the last checkpoint. `next` alone is not the
            # test: a run killed right after a node's writes were saved has no `next` yet
            # still has work left.
            return snapshot, (None, config, points)
        return snapshot, None

    def _described(self) -> dict[str, Any] | None:
        """A custom graph's diagram model as data, stored with each of its runs (once)."""
        if self._builder is None:
            return None  # the prebuilt graph: any Agent draws it
        if self._description is None:
            from thinkgraph.viz import graph_description, to_graph_model

            self._description = graph_description(to_graph_model(self.graph))
        return self._description

    def _checked_answer(self, waiting: Any, decisions: Any) -> Any:
        # The graph checks the answer again (whoever resumes it); checking here refuses a
        # bad one before any of the run is loaded, and before a worker is asked.
        if isinstance(waiting, dict) and waiting.get("kind") == "approval":
            requests = [Pending.model_validate(r) for r in waiting.get("requests", [])]
            return check_approvals(requests, decisions, self.deps.tools)
        parse_human_answer(decisions)  # refuse a bad answer before the run moves on
        return decisions

    def _start(self, task: str) -> dict[str, Any]:
        return start_state(task, self.limits, self.breakpoints, self._described())

    # -- time travel ----------------------------------------------------------------------

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
        `thinkgraph.forks`): an observation's text (``{5: {"text": "the file is empty"}}``),
        the answer of a thought not yet validated (``{7: {"answer": "42"}}``), or the
        args of a tool call that has neither run nor a person's decision (``{3: {"args":
        {"path": "b.txt"}}}``): the call runs with them, approved again if they need it.

        Raises:
            ThreadNotFoundError: no such thread or no such checkpoint in it.
            ResumeValueError: `edit` is not ``{step_number: {field: value}}``, names a step
                that does not exist, or changes what a person may not change.
            ThreadBusyError: another process is advancing `new_thread_id`.
            ThreadIdError: either thread id breaks the rule of `check_thread_id`.
        """
        edits = fork_edits(edit)
        if new_thread_id:  # as `arun`: an empty id asks for a new one
            check_thread_id(new_thread_id)
        source = self._config(thread_id)
        source["configurable"]["checkpoint_id"] = checkpoint_id
        snapshot = await self.graph.aget_state(source)
        if not snapshot.values:
            raise ThreadNotFoundError(
                f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}; list them with "
                f"history({thread_id!r}) or `thinkgraph history {thread_id}`"
            )
        values = dict(snapshot.values)
        if not isinstance(values.get("limits"), StepLimits):
            # The run's first checkpoint holds only its input, not yet applied: start
            # again from the run's task, with its limits and breakpoints (fixed for its
            # life), as the run itself started.
            run = (await self.graph.aget_state(self._config(thread_id))).values
            task = next((s for s in run.get("chain", ()) if isinstance(s, TaskStep)), None)
            values = self._start(task.text if task is not None else "")
            values["limits"] = run.get("limits") or self.limits
            values["breakpoints"] = run.get("breakpoints") or self.breakpoints
        values = edited_state(values, edits, self.deps)
        note = f"forked from {thread_id}@{checkpoint_id}"
        if edits:
            note += f"; edited steps {', '.join(map(str, sorted(edits)))}"
        values["chain"] = [*values["chain"], HumanStep(node="fork", kind="fork", text=note)]
        new_id = new_thread_id or uuid.uuid4().hex[:12]
        target = self._config(new_id)
        as_node = str(values.get("node") or "start")
        points = values.get("breakpoints")
        # The source is only read; the new thread is the one advanced.
        async with athread_lease(self._opened(), new_id):
            await self._refuse_existing(new_id, target)
            await self.graph.aupdate_state(
                target, values, as_node=START if as_node == "start" else as_node
            )
            await self._invoke(
                None, target, points if isinstance(points, Breakpoints) else Breakpoints()
            )
            return await self._kept(new_id, await self.aresult(new_id))

    def fork(
        self,
        thread_id: str,
        checkpoint_id: str,
        *,
        edit: Mapping[int, Mapping[str, Any]] | None = None,
        new_thread_id: str | None = None,
    ) -> RunResult:
        """`afork` from sync code; see it for the arguments and errors."""
        return run_sync(
            lambda: self.afork(thread_id, checkpoint_id, edit=edit, new_thread_id=new_thread_id)
        )

    # -- reading (a `RunReader`: each call reads the run once) -----------------------------

    @property
    def reader(self) -> RunReader:
        """What reads this agent's runs from its store; the methods below use it."""
        return self._reader

    def result(self, thread_id: str) -> RunResult:
        """The current result of a run, read from the store."""
        return self._reader.result(thread_id)

    async def aresult(self, thread_id: str) -> RunResult:
        """`result` from async code: the store is read off the event loop."""
        return await self._reader.aresult(thread_id)

    def chain(self, thread_id: str) -> list[BaseStep]:
        """Every step of a run, in order."""
        return self._reader.result(thread_id).chain

    def runs(self, status: RunStatus | None = None, limit: int | None = None) -> list[RunSummary]:
        """The runs in this agent's store, the most recently updated first (see `RunReader`).

        Raises:
            StorageError: the store cannot be read.
        """
        return self._reader.runs(status, limit)

    def history(self, thread_id: str) -> list[CheckpointInfo]:
        """The checkpoints of a run, oldest first: one per node that completed."""
        return self._reader.history(thread_id)

    def checkpoint_id(self, thread_id: str) -> str | None:
        """The id of a run's latest checkpoint, or None when the thread holds no run."""
        return self._reader.checkpoint_id(thread_id)

    async def acheckpoint_id(self, thread_id: str) -> str | None:
        """`checkpoint_id` from async code."""
        return await self._reader.acheckpoint_id(thread_id)

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

        Returns:
            The diagram as text; png as bytes.

        Raises:
            ValueError: an unknown format.
            GraphvizNotFoundError: svg or png without Graphviz's `dot` installed.
            ThreadNotFoundError: no run is stored under `thread_id`.
        """
        from thinkgraph.viz.render import draw_run

        run = None
        if thread_id is not None:
            snapshot = self._reader.snapshot(thread_id)
            run = (snapshot, self._reader.result_of(thread_id, snapshot))  # one read
        return draw_run(
            self.graph, self.deps, fmt, limits=self.limits, breakpoints=self.breakpoints, run=run
        )
