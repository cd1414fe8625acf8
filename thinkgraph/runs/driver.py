"""The run driver: how a run is started, resumed and forked, written once and async.

`Driver.start`, `resume` and `fork` are async generators of `RunEvent`s over one core,
`Driver._advance`: it streams the graph, turns its updates into events, and ends with the
`RunResult` built from the values in hand. `Agent.run` and friends fold the events
(`outcome`); their sync forms are made once (`thinkgraph._sync`). What each call needs
(graph, store, reader, limits, tracing config) is held here, never rebuilt per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.constants import INTERRUPT
from langgraph.errors import GraphRecursionError, InvalidUpdateError
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Interrupt, StateSnapshot

from thinkgraph import tracing
from thinkgraph.errors import (
    AnsweredError,
    ConfigError,
    NotPausedError,
    ReplayThreadError,
    ResumeValueError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from thinkgraph.graphs.address import address_in, check_continues_on_its_graph
from thinkgraph.graphs.breakpoints import joined_breakpoints
from thinkgraph.graphs.react import build_react_graph
from thinkgraph.hitl import CONTINUED, describe_answer
from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.gate import check_answer
from thinkgraph.result import RunResult
from thinkgraph.runs.events import NodeStart, RunEnd, RunEvent, RunStart, StepEvent
from thinkgraph.runs.forks import (
    as_written,
    fork_edits,
    fork_values,
    forked_state,
    own_key_types,
    own_starts,
)
from thinkgraph.runs.lineage import FORK_AT, FORK_OF, REPLAY_OF
from thinkgraph.runs.reader import RunReader, pending_of, status_of
from thinkgraph.state import (
    AgentState,
    BaseStep,
    Counters,
    RunInfo,
    TaskStep,
    ToolCall,
    numbered,
    start_state,
    with_declared_keys,
)
from thinkgraph.storage import open_checkpointer
from thinkgraph.storage.answers import Answer, latest_answer, this_process
from thinkgraph.storage.contract import Store
from thinkgraph.storage.prune import Retention
from thinkgraph.tools.guard import ToolGuard, guarded
from thinkgraph.types import Breakpoints, StepLimits, check_thread_id

__all__ = ["Driver", "fresh_thread_id"]

Plan = tuple[Any, RunnableConfig, Breakpoints]
"""What continues a run: the graph's input, the run's config, where to pause."""


def fresh_thread_id() -> str:
    """A fresh thread id, for a run started without one."""
    return uuid.uuid4().hex[:12]


class Driver:
    """Starts, resumes and forks the runs of one compiled graph, as async event streams.

    Args:
        graph: the compiled graph, with its checkpointer (the store).
        deps: the agent's parts; answers to a pause are checked against its tools, and a
            fork's edits too.
        limits: the guards of a new run.
        breakpoints: where a new run pauses.
        traced: LangChain tracing config (callbacks, tags, metadata, run_name) for every
            graph call.
        describe: makes a custom graph's description, stored with each of its runs (None
            for ours); called on each run's start, so it should cache.
    """

    def __init__(
        self,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        deps: Deps,
        *,
        limits: StepLimits | None = None,
        breakpoints: Breakpoints | None = None,
        traced: RunnableConfig | None = None,
        describe: Callable[[], dict[str, Any]] | None = None,
        retention: Retention | None = None,
    ) -> None:
        saver = graph.checkpointer
        if not isinstance(saver, BaseCheckpointSaver):
            raise ConfigError("the graph has no checkpointer; compile it with checkpointer=...")
        self.graph = graph
        self.saver: BaseCheckpointSaver[Any] = saver
        """The LangGraph saver the runs are stored in."""
        self.store = Store(saver)
        """What the runs need of it beyond LangGraph's (has-thread, keep, lease)."""
        self.deps = deps
        self.limits = limits or StepLimits()
        self.breakpoints = breakpoints or Breakpoints()
        self._traced: RunnableConfig = dict(traced or {})  # type: ignore[assignment]
        self._describe = describe
        self.retention = retention
        """What of its finished runs is pruned when each ends (`storage.prune.Retention`)."""
        self.graph_address = address_in(self._traced.get("metadata"))
        """Where this driver's graph comes from (None: ours); a run on another is refused."""
        self.reader = RunReader(
            saver, graph, deps.validators, address=self.graph_address, tools=list(deps.tools)
        )
        self._keys = frozenset(k for k in graph.builder.channels if not k.startswith("__"))
        self._own_types = own_key_types(graph.builder.channels)
        """The keys the graph's state declares beyond ours, with their types (a fork sets
        them)."""

    def config(self, thread_id: str, limits: StepLimits | None = None) -> RunnableConfig:
        """The config of every graph call on `thread_id`: its id, tracing, recursion limit.

        Raises:
            ThreadIdError: the id breaks the rule of `check_thread_id`.
        """
        check_thread_id(thread_id)
        # Each think step takes at most five super-steps before the next think (approve,
        # act, observe, validate, reset, ask_human); the router stops the run, not this.
        limit = 6 * (limits or self.limits).max_steps + 25
        config: RunnableConfig = {
            **self._traced,
            "configurable": {"thread_id": thread_id},
            "recursion_limit": limit,
        }
        # Every node knows the keys of the state, so none is dropped unseen (`parts.node`).
        return with_declared_keys(config, self._keys)

    def start_state(
        self, task: str, replay_of: str | None = None, limits: StepLimits | None = None
    ) -> dict[str, Any]:
        """The channels a new run of `task` starts with (a replay's: of `replay_of`), with
        `limits` (the driver's when None)."""
        graph = None if self._describe is None else self._describe()
        started = start_state(task, limits or self.limits, self.breakpoints, graph, replay_of)
        return {**started, **own_starts(self.graph.builder.channels)}

    # -- the three ways to advance a run ---------------------------------------------------

    async def start(
        self,
        task: str,
        thread_id: str,
        *,
        detail: bool = True,
        replay_of: str | None = None,
        guard: ToolGuard | None = None,
        limits: StepLimits | None = None,
    ) -> AsyncIterator[RunEvent]:
        """Start a run of `task` on a new thread, yielding its events.

        First a `RunStart`, the task's step, then a `NodeStart` as each node begins and a
        `StepEvent` per step as it is written, and last a `RunEnd` with the `RunResult`.
        Cancelling the task that iterates it stops the run after its last checkpoint.

        Args:
            task: what the agent should do.
            thread_id: the new run's id.
            detail: False yields only the `RunStart` and the `RunEnd`: for a caller that
                folds the events to the result (`Agent.arun`), which then pays for no
                node start and no step event.
            replay_of: the run this one replays (`thinkgraph.runs.replay`): recorded with
                it, so only a replay continues it. Needs `guard`.
            guard: decides every tool call of the run before it runs (a replay's: served,
                refused or run; `thinkgraph.tools.guard`).
            limits: the run's limits (a replay takes its source's); the driver's when None.

        Raises:
            ConfigError: a replay (`replay_of`) without a `guard`.
            ThreadExistsError: the thread already holds a run (resume it, or use a new id).
            ThreadBusyError: another process is advancing the thread (see `Agent.lease`).
            ThreadIdError: the id breaks the rule of `check_thread_id`.
        """
        if replay_of is not None and guard is None:
            # Fail closed: a replay whose tool calls nothing decides would run them.
            raise ConfigError("a replay is started with the guard that decides its tool calls")
        config = guarded(self.config(thread_id, limits), guard)
        if replay_of is not None:  # found by query: `RunReader.replays`
            config["metadata"] = {**(config.get("metadata") or {}), REPLAY_OF: replay_of}
        # A generator's caller runs between its items: it must not pass as the holder.
        async with self.store.alease(thread_id, nested=False):
            await self._refuse_existing(thread_id)
            state = self.start_state(task, replay_of, limits)
            counters = state["counters"]
            yield RunStart(thread_id, state["limits"], counters)
            if detail:
                for step in state["chain"]:
                    yield StepEvent(thread_id, "start", step, counters)
            plan = (state, config, self.breakpoints)
            async for event in self._advance(
                thread_id, plan, counters, len(state["chain"]), detail
            ):
                yield event
        await self._retain(thread_id)

    async def resume(
        self,
        thread_id: str,
        decisions: Any = None,
        *,
        detail: bool = True,
        guard: ToolGuard | None = None,
        answer: Answer | None = None,
    ) -> AsyncIterator[RunEvent]:
        """Continue a run: after a crash, at a breakpoint, or with the answer it waits for.

        Yields the events of `start` for the steps it adds; a finished run yields only its
        `RunStart` and `RunEnd`.

        Args:
            thread_id: the run to continue.
            decisions: the answer to a pause. For approvals, a mapping of every waiting
                call id to `Approve()`, `Edit(args=...)`, `Reject(reason=...)` or
                `Respond(text=...)`. For an ask_human pause, "retry", "abort" or guidance
                text. Leave it out to continue a run whose process died or that stopped at
                a breakpoint.
            detail: False yields only the `RunStart` and the `RunEnd` (see `start`).
            guard: decides every tool call before it runs (`thinkgraph.tools.guard`); the
                replay that made this run passes its own, and a replay is refused to
                anyone without one.
            answer: the claim `decisions` were given under (`claim_answer`, or a worker's
                job); None: they claim the pause here. One answer per pause: the first
                claim wins, and a claim whose answer is not applied (refused before the
                run moved) is given back.

        Raises:
            ThreadNotFoundError: no run is stored under this thread id.
            ReplayThreadError: the thread holds a replay, which only its replay continues.
            NotPausedError: `decisions` was given but the run does not wait for an answer.
            AnsweredError: another answer to the pause was claimed first; nothing changed.
            ResumeValueError: the decisions do not fit what the run waits for; the run is
                left exactly as it was.
            ThreadBusyError: another process is advancing the thread right now; the run is
                left as that process leaves it.
        """
        check_thread_id(thread_id)
        claimed = None
        # Claimed before the lease, so a loser is told who won. A replay (`guard`) answers
        # only its own thread, with what its source recorded.
        if decisions is not None and guard is None:
            claimed = await self._claim(thread_id, decisions, answer)
        moved = False
        try:
            async with self.store.alease(thread_id, nested=False):
                latest, plan = await self._resume_plan(thread_id, decisions, guard)
                if claimed is not None:
                    self._still_paused(latest, claimed)
                limits = latest.values.get("limits")
                counters = latest.values.get("counters") or Counters()
                yield RunStart(thread_id, limits or self.limits, counters, resumed=True)
                if plan is None:
                    yield RunEnd(await self.reader.aresult(thread_id))
                    return
                if plan[0] is None:
                    await self._route_again(latest, plan[1])
                # `latest` left the chain out: a step of a user's node that comes
                # unnumbered is looked up in the stored chain.
                moved = True
                async for event in self._advance(thread_id, plan, counters, None, detail):
                    yield event
        except BaseException:
            if claimed is not None and not moved:  # not applied: the pause is free again
                await asyncio.shield(self.store.arelease_answer(claimed))
            raise
        await self._retain(thread_id)

    async def claim_answer(
        self,
        thread_id: str,
        decisions: Any,
        *,
        at: str | None = None,
        by: str | None = None,
    ) -> Answer:
        """Check `decisions` as `resume` would, and claim the run's pause for them.

        For a door that acknowledges an answer before it is applied (a server's request, a
        queued job): of two answers to one pause, only the first claim is acknowledged.
        Pass the claim to `resume` (``answer=``), which applies it.

        Args:
            thread_id: the paused run.
            decisions: the answer, as `resume` takes it.
            at: the paused checkpoint the answer was given for (what the person saw);
                None: the run's latest.
            by: who answers, for the refusal another answer gets ("job 12 on queue 'q'");
                None: this process.

        Raises:
            AnsweredError: another answer to the pause was claimed first; nothing changed.
            NotPausedError: the run (or the checkpoint `at`) does not wait for an answer.
            And what `resume` raises for a bad answer; nothing is claimed then.
        """
        check_thread_id(thread_id)
        checkpoint_id = await self.check_resume(thread_id, decisions, at=at)
        mine = Answer(thread_id, checkpoint_id, describe_answer(decisions), by or this_process())
        won = await self.store.aclaim_answer(mine)
        if won.answer_id != mine.answer_id:
            raise AnsweredError(won)
        return won

    async def _claim(self, thread_id: str, decisions: Any, answer: Answer | None) -> Answer:
        """The claim `resume` applies `decisions` under: `answer` claimed again (the same
        answer holds its pause still), or a new claim of the run's pause."""
        if answer is None:
            return await self.claim_answer(thread_id, decisions)
        won = await self.store.aclaim_answer(answer)
        if won.answer_id != answer.answer_id:
            raise AnsweredError(won)
        return won

    @staticmethod
    def _still_paused(latest: StateSnapshot, claimed: Answer) -> None:
        """Refuse to apply `claimed` to any checkpoint but the pause it claimed."""
        if str(latest.config["configurable"]["checkpoint_id"]) != claimed.checkpoint_id:
            raise NotPausedError(
                f"thread {claimed.thread_id!r} moved on from the pause at checkpoint "
                f"{claimed.checkpoint_id} without this answer; nothing changed"
            )

    async def fork(
        self,
        thread_id: str,
        checkpoint_id: str,
        *,
        edit: Mapping[int, Mapping[str, Any]] | None = None,
        state: Mapping[str, Any] | None = None,
        new_thread_id: str | None = None,
        detail: bool = True,
    ) -> AsyncIterator[RunEvent]:
        """Start a new thread from any checkpoint of a run, edited, and run it on.

        The source run is only read. The new chain is the chain at that checkpoint, with
        `edit` applied, and a `human` step recording the fork. An edit maps a step number
        to its new value, and changes only what a person may change (see
        `thinkgraph.runs.forks`): an observation's text (``{5: {"text": "the file is
        empty"}}``), the answer of a thought not yet validated (``{7: {"answer": "42"}}``),
        or the args of a tool call that has neither run nor a person's decision (``{3:
        {"args": {"path": "b.txt"}}}``): the call runs with them, approved again if they
        need it. `state` sets keys of the graph's own state (``{"score": 20}``), each
        checked against the type the state declares and taken as given (a reducer does not
        fold it into the value the key held); the run goes on as if its nodes had left it.

        Raises:
            ThreadNotFoundError: no such thread or no such checkpoint in it.
            ResumeValueError: `edit` is not ``{step_number: {field: value}}``, names a step
                that does not exist, or changes what a person may not change; `state` sets
                a key of ours or one the graph's state does not declare, or a value not of
                the declared type. Nothing is written: no new thread.
            ThreadBusyError: another process is advancing `new_thread_id`.
            ThreadIdError: either thread id breaks the rule of `check_thread_id`.
        """
        edits = fork_edits(edit)
        new_id = new_thread_id or fresh_thread_id()
        target = self.config(new_id)
        source = self.config(thread_id)
        source["configurable"]["checkpoint_id"] = checkpoint_id
        snapshot = await self.graph.aget_state(source)
        if not snapshot.values:
            raise ThreadNotFoundError(
                f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}; list them with "
                f"history({thread_id!r}) or `thinkgraph history {thread_id}`"
            )
        check_continues_on_its_graph(thread_id, address_in(snapshot.metadata), self.graph_address)
        values = dict(snapshot.values)
        if not isinstance(values.get("limits"), StepLimits):
            # The run's first checkpoint holds only its input, not yet applied: start
            # again from the run's task, with its limits and breakpoints (fixed for its
            # life), as the run itself started.
            run = (await self.graph.aget_state(self.config(thread_id))).values
            task = next((s for s in run.get("chain", ()) if isinstance(s, TaskStep)), None)
            values = self.start_state(task.text if task is not None else "")
            values["limits"] = run.get("limits") or self.limits
            values["breakpoints"] = run.get("breakpoints") or self.breakpoints
        setting = fork_values(state, self._own_types)
        values = forked_state(values, edits, self.deps, f"{thread_id}@{checkpoint_id}", setting)
        as_node = str(values.get("node") or "start")
        # The run's breakpoints hold on the fork, and this driver's (a fork's own) join them.
        stored = values.get("breakpoints")
        points = joined_breakpoints(
            stored if isinstance(stored, Breakpoints) else Breakpoints(), self.breakpoints
        )
        values["breakpoints"] = points
        counters = values.get("counters") or Counters()
        async with self.store.alease(new_id, nested=False):
            await self._refuse_existing(new_id)
            # Only the fork's first checkpoint records its source (`FORK_OF`, `FORK_AT`).
            recorded = {FORK_OF: thread_id, FORK_AT: checkpoint_id}
            await self.graph.aupdate_state(
                {**target, "metadata": {**(target.get("metadata") or {}), **recorded}},
                as_written(values, self.graph.builder.channels),
                as_node=START if as_node == "start" else as_node,
            )
            yield RunStart(new_id, values.get("limits") or self.limits, counters, resumed=True)
            plan = (None, target, points)
            async for event in self._advance(new_id, plan, counters, len(values["chain"]), detail):
                yield event
        await self._retain(new_id)

    async def end(self, thread_id: str, info: RunInfo) -> None:
        """Record `info` as how a run ended: for a replay, which stops where its record
        ends and is never continued, once it is compared (`thinkgraph.runs.replay`).

        Written as the node that ran last, so the graph sees the write as that node's;
        a run whose last node cannot be told is left as it is.
        """
        async with self.store.alease(thread_id, nested=False):
            latest = await self.reader.latest(thread_id)
            node = latest.values.get("node")
            as_node = node if isinstance(node, str) and node in self.graph.nodes else None
            try:
                await self.graph.aupdate_state(
                    self.config(thread_id), {"run": info}, as_node=as_node
                )
            except InvalidUpdateError:
                return
            await self.reader.aindex(thread_id)

    async def check_resume(
        self, thread_id: str, decisions: Any = None, *, at: str | None = None
    ) -> str:
        """Check that `resume(thread_id, decisions)` would be accepted, without running it.

        Args:
            thread_id: the run.
            decisions: the answer, as `resume` takes it.
            at: the paused checkpoint the answer was given for (what the person saw);
                None: the run's latest. A run that moved on from it refuses the answer,
                naming the answer that moved it when one was claimed.

        Returns:
            The id of the checkpoint the decisions answer (the run's latest).

        Raises:
            What `resume` raises for the same arguments; the run is not touched.
        """
        # The latest is read once; only an answer it refuses, or one given for another
        # checkpoint, reads again to say whether the run moved on from the pause the
        # person saw (and by whose answer) rather than why the answer does not fit.
        try:
            latest, _ = await self._resume_plan(thread_id, decisions)
        except (NotPausedError, ResumeValueError):
            if at is not None:
                await self._at_pause(thread_id, at, continues=decisions is None)
            raise
        checkpoint_id = str(latest.config["configurable"]["checkpoint_id"])
        if at is not None and checkpoint_id != at:
            await self._at_pause(thread_id, at)  # it moved in between: refused
        return checkpoint_id

    async def _at_pause(self, thread_id: str, at: str, *, continues: bool = False) -> None:
        """Refuse an answer given for the checkpoint `at` when the run has left it, or a
        Continue (`continues`) for a breakpoint there that was continued already (the run
        now waits at `at` for another answer: the approval asked for next)."""
        latest = await self.reader.acheckpoint_id(thread_id)
        if latest is None or (latest == at and not continues):
            return
        won = await self.store.aanswer_of(thread_id, at)
        if latest == at:
            if won is not None and won.what == CONTINUED:
                raise AnsweredError(won)
            return
        if won is not None:
            raise AnsweredError(won)
        raise NotPausedError(
            f"thread {thread_id!r} moved on from checkpoint {at}: it no longer waits for "
            "this answer; nothing changed"
        )

    # -- the one core ----------------------------------------------------------------------

    async def _advance(
        self,
        thread_id: str,
        plan: Plan,
        counters: Counters,
        first_number: int | None,
        detail: bool,
    ) -> AsyncIterator[NodeStart | StepEvent | RunEnd]:
        """Run the graph from `plan`, yielding node starts, written steps, and the end.

        `plan` is the graph's input (a state, a `Command(resume=...)`, or None to go on),
        the config and where to pause; `counters` the totals before. `first_number`, the
        chain's length before (None when not at hand: then looked up in the stored chain),
        numbers the steps a user's node left unnumbered (as the chain's reducer will).
        Without `detail`, only the `RunEnd`.
        """
        graph_input, config, points = plan
        with tracing.run_span(
            thread_id, resumed=graph_input is None or isinstance(graph_input, Command)
        ) as span:
            stream = self.graph.astream(
                graph_input,
                config,
                # "updates" carry the steps and the interrupts, "values" the state the
                # result is built from (as `ainvoke` does), "tasks" the node starts.
                stream_mode=["updates", "values", "tasks"] if detail else ["updates", "values"],
                durability="sync",
                interrupt_before=list(points.before) or None,
                interrupt_after=list(points.after) or None,
            )
            output: Any = None
            interrupts: list[Interrupt] = []
            number = first_number
            # Each call's place in the chain in the round of act tasks now running: the
            # order its tasks start is the order LangGraph applies their writes, and they
            # all start before any of them writes (so `number` is where the round begins).
            places: dict[str, int] = {}
            # The run's row in the store's run index: checked by every listing while the
            # segment runs, written once it stops (never per node).
            await self.reader.amark_live(thread_id)
            try:
                async for mode, chunk in cast(AsyncIterator[tuple[str, Any]], stream):
                    if mode == "values":  # a super-step ended
                        output = chunk
                        places.clear()
                        continue
                    if mode == "tasks":
                        if "input" in chunk:  # a task starting; its result comes as an update
                            call = _act_call(chunk["input"])
                            if call is not None and call.id not in places:
                                if number is None:
                                    number = await self._chain_length(thread_id, config)
                                places[call.id] = number + len(places)
                            yield NodeStart(thread_id, str(chunk["name"]), counters)
                        continue
                    if not detail:
                        interrupts.extend(chunk.get(INTERRUPT, ()))
                        continue
                    for name, values in chunk.items():
                        if name == INTERRUPT:
                            interrupts.extend(values)
                            continue
                        if not isinstance(values, dict):
                            continue  # metadata of a replayed write
                        if isinstance(values.get("counters"), Counters):
                            counters = values["counters"]
                        for step in values.get("chain", ()):
                            # Placed as the reducer will place it (docs/architecture.md): a
                            # call's result by the call's place in its round (the round's
                            # calls finish in any order), any other after what was shown.
                            if step.number < 0:
                                place = places.get(getattr(step, "call_id", None) or "")
                                if place is not None:
                                    step = numbered(step, place)
                                else:
                                    if number is None:
                                        number = await self._stored_number(config, step)
                                    step = numbered(step, number)
                            number = (
                                step.number + 1 if number is None else max(number, step.number + 1)
                            )
                            yield StepEvent(
                                thread_id, str(values.get("node") or name), step, counters
                            )
            except GraphRecursionError:
                # A loop no guard counts (nodes of yours that never pass think) ran into
                # LangGraph's limit: the run ends here, failed, with one line.
                output = await self._out_of_steps(config)
            except BaseException:
                # Stopped by an error or cancelled: its row says what its checkpoints say
                # (a row that cannot be written stays live: the next listing reads it).
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.reader.aindex(thread_id))
                raise
            result = await self._kept(
                thread_id, await self._finish(thread_id, config, output, interrupts)
            )
            first = result.chain[0] if result.chain else None
            await self.reader.aindex(thread_id, first.text if isinstance(first, TaskStep) else None)
            tracing.end_run(span, result)
        yield RunEnd(result)

    async def _out_of_steps(self, config: RunnableConfig) -> dict[str, Any]:
        """End a run that reached the recursion limit: failed, ``recursion_limit``, naming
        its last node, written as that node's (so nothing continues it). The run's values."""
        latest = await self.graph.aget_state(config)
        node = latest.values.get("node")
        limit = config.get("recursion_limit")
        info = RunInfo(
            status="failed",
            stop_reason="recursion_limit",
            detail=(
                f"the run took {limit} graph steps without ending, the last at node {node!r} "
                "(LangGraph's recursion limit, 6 × max_steps + 25): a loop of nodes that "
                "never passes think is not counted by the guards; give its router a way "
                "out, or raise max_steps"
            ),
        )
        as_node = node if isinstance(node, str) and node in self.graph.nodes else None
        await self.graph.aupdate_state(config, {"run": info}, as_node=as_node)
        return {**latest.values, "run": info}

    async def _finish(
        self, thread_id: str, config: RunnableConfig, output: Any, interrupts: list[Interrupt]
    ) -> RunResult:
        """The result of a run that just stopped, from the values the stream ended with.

        Reading the stored state again would rebuild the whole chain; the values in hand
        are the same. Only a stop they cannot explain (a breakpoint) is read back.
        """
        if not isinstance(output, dict) or (
            not interrupts and not isinstance(output.get("run"), RunInfo)
        ):
            return await self.reader.aresult(thread_id)
        snapshot = StateSnapshot(output, (), config, None, None, None, (), tuple(interrupts))
        return self.reader.result_of(thread_id, snapshot)

    async def _kept(self, thread_id: str, result: RunResult) -> RunResult:
        """Store a paused run's chain whole at its pause, so a resume replays nothing.

        The chain is a `DeltaChannel`: loading it replays every write since its last
        snapshot, which for a long run is most of a resume's time. A store that can keep
        a snapshot at the paused checkpoint (`KeepsPausedRuns`) is given the chain in hand.
        """
        if result.status != "paused" or not self.store.keeps_paused_runs:
            return result
        latest = await self.reader.latest_tuple(thread_id)
        if latest is not None:
            chain = {"chain": result.chain}
            await asyncio.to_thread(self.store.keep_for_resume, latest.config, chain)
        await asyncio.to_thread(self.store.settle)
        return result

    async def _retain(self, thread_id: str) -> None:
        """Prune as the agent's retention says, once the run has let go of its thread (a
        prune takes the lease itself); a run that did not finish is left whole."""
        if self.retention is not None:
            await asyncio.to_thread(self.retention.apply, self.saver, thread_id, self.reader.status)

    async def _refuse_existing(self, thread_id: str) -> None:
        # Any checkpoint means the thread holds a run, even one killed before its first
        # node; a store that knows its threads answers from its index alone.
        if await self.store.ahas_thread(thread_id):
            raise ThreadExistsError(
                f"thread {thread_id!r} already holds a run; continue it with "
                f"resume({thread_id!r}) or start this task on a new thread id"
            )

    async def _resume_plan(
        self, thread_id: str, decisions: Any, guard: ToolGuard | None = None
    ) -> tuple[StateSnapshot, Plan | None]:
        """The latest checkpoint, and what continues it (None when the run has finished).

        `decisions` are checked first, before any of the run is loaded.
        """
        snapshot = await self.reader.latest(thread_id)
        # On another graph the run's own nodes would be skipped and its state misread.
        check_continues_on_its_graph(thread_id, address_in(snapshot.metadata), self.graph_address)
        source = snapshot.values.get("replay_of")
        if source is not None and guard is None:
            raise ReplayThreadError(
                f"thread {thread_id!r} is a replay of {source!r}: a replay is compared, not "
                f"continued; replay {source!r} again (`thinkgraph replay {source}`)"
            )
        limits = snapshot.values.get("limits")
        config = self.config(thread_id, limits if isinstance(limits, StepLimits) else None)
        config = guarded(config, guard)
        points = snapshot.values.get("breakpoints")
        points = points if isinstance(points, Breakpoints) else Breakpoints()
        interrupts = list(snapshot.interrupts)
        if decisions is not None and not interrupts:
            # It left its pause: by whose answer, when one was claimed (the loser of a race).
            won = await asyncio.to_thread(latest_answer, self.saver, thread_id)
            if won is not None:
                raise AnsweredError(won)
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
            # The graph checks the answer again (whoever resumes it); checking here refuses
            # a bad one before the run moves, and before a worker is asked.
            tools = self.deps.tools
            answers = {i.id: check_answer(i.value, decisions, tools) for i in interrupts}
            return snapshot, (Command(resume=answers), config, points)
        if not isinstance(snapshot.values.get("run"), RunInfo):
            # Not finished: continue from the last checkpoint. `next` alone is not the
            # test: a run killed right after a node's writes were saved has no `next` yet
            # still has work left.
            return snapshot, (None, config, points)
        return snapshot, None

    async def _route_again(self, latest: StateSnapshot, config: RunnableConfig) -> None:
        """Route again from a node whose route failed (a router that raised, or returned a
        label without a route), now that its router may be fixed.

        LangGraph keeps such a node's writes but none of its route: continuing would end
        the run there. The writes are applied again as that node's, which runs its routers
        (a router still broken raises again, and the run is left as it was).
        """
        for task in latest.tasks:
            writes = task.result if isinstance(task.result, dict) else None
            if task.error is None or not writes or task.name not in self.graph.nodes:
                continue
            await self.graph.aupdate_state(config, writes, as_node=task.name)

    async def _chain_length(self, thread_id: str, config: RunnableConfig) -> int:
        """The chain's length at the run's latest checkpoint, without the writes of the
        tasks running from it: where the round of act tasks those are begins."""
        latest = await self.reader.latest_tuple(thread_id)
        if latest is None:
            return 0
        at: RunnableConfig = {
            "configurable": {**config.get("configurable", {}), **latest.config["configurable"]}
        }
        return len((await self.graph.aget_state(at)).values.get("chain", ()))

    async def _stored_number(self, config: RunnableConfig, step: BaseStep) -> int:
        """`step`'s number in the stored chain (its node has saved it), read once per stream."""
        chain = (await self.graph.aget_state(config)).values.get("chain", ())
        return next((s.number for s in reversed(chain) if s.id == step.id), len(chain))


def _act_call(given: Any) -> ToolCall | None:
    """The call an act task runs, from the task's input (`ActTask`); None for any other."""
    call = given.get("call") if isinstance(given, dict) else None
    return call if isinstance(call, ToolCall) else None


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
