"""Reading runs from a store and a graph: each call reads a run once.

What `Agent`, the CLI and the server say of stored runs — a result, its status and what it
waits for, the listing, the history, the latest checkpoint — comes from here, given only
the store (an opened LangGraph saver) and the compiled graph. A read takes what it needs
and no more: a resume's decision reads only the latest checkpoint's small channels (the
chain, the costly part, left packed), a listing never rebuilds a chain, and a result is
one state read.

LangGraph's `StateSnapshot` says which nodes come next and which interrupts are open;
`status_of` and `pending_of` turn that into thinkgraph's words: running, paused (and for
what), done, failed.

A run of another graph than the reader's (another address recorded with it, or no graph
given) is read on a graph made from its record alone (`thinkgraph.graphs.recorded`): reading
a run never imports or runs the code its record names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.constants import INTERRUPT
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Interrupt, PregelTask, StateSnapshot
from pydantic import BaseModel, ConfigDict, Field

from thinkgraph._langgraph import ERROR_CHANNEL
from thinkgraph._sync import sync_method
from thinkgraph.errors import RunNotStartedError, StorageError, ThreadNotFoundError
from thinkgraph.graphs.address import GRAPH_KEY, address_in
from thinkgraph.graphs.recorded import next_nodes, reading_graph
from thinkgraph.hitl import Pending
from thinkgraph.nodes.deps import Validator
from thinkgraph.nodes.validators import structured_output
from thinkgraph.result import JobState, RunResult, RunSummary
from thinkgraph.runs.lineage import FORK_AT, FORK_OF, REPLAY_OF
from thinkgraph.runs.listing import (
    EVERY_RUN,
    RUN_STATUSES,
    ListedRun,
    RunCount,
    RunFilter,
    RunPage,
    newest_first,
    with_job,
)
from thinkgraph.state import (
    BaseStep,
    Counters,
    PackedSteps,
    RunInfo,
    TaskStep,
    as_step,
    own_keys,
    placed_after,
)
from thinkgraph.storage.checkpointers import steps_left_packed, unpack_steps
from thinkgraph.storage.contract import Store
from thinkgraph.storage.run_index import NOT_A_RUN, IndexRow, RunIndex, SeenRow, run_index_of
from thinkgraph.storage.threads import summarize
from thinkgraph.tools.base import Tool
from thinkgraph.types import (
    Breakpoints,
    RunStatus,
    StepLimits,
    check_thread_id,
    thread_id_problem,
)
from thinkgraph.views import Redactor
from thinkgraph.views.visibility import tool_map

__all__ = [
    "COUNTED_RUNS",
    "RUN_STATUSES",
    "CheckpointInfo",
    "RunCount",
    "RunReader",
    "breakpoint_pause",
    "checkpoint_info",
    "checkpoints",
    "no_run",
    "not_started",
    "pending_of",
    "status_of",
    "with_job",
    "without_chain",
]

COUNTED_RUNS = 1_000
"""The newest runs `RunReader.count` reads by default (`thinkgraph runs`' totals, the
runs of /metrics): about a second on PostgreSQL."""

HELD_OVERLAP = 256
"""How far back `steps_since` looks in the held chain for steps it has already: more than
one round of nodes writes."""


class RunReader:
    """Reads the runs of one store, as the graph that wrote them lays them out.

    Args:
        store: the opened LangGraph saver the runs are in.
        graph: the compiled graph of the runs (for a whole state read, which applies the
            graph's channels and computes the next nodes); None, or a run that recorded
            another address than `address`: the run is read on a graph made from its
            checkpoint (`thinkgraph.graphs.recorded.reading_graph`), importing nothing.
        validators: the agent's validators, for a result's structured `output`.
        address: the address `graph` records with its runs (None: ours).
        tools: the agent's tools, whose sensitive fields a listed task is masked by.

    Example:
        >>> reader = RunReader(agent.graph.checkpointer, agent.graph)  # doctest: +SKIP
        >>> reader.result("t1").status  # doctest: +SKIP
        'done'
    """

    __slots__ = ("_address", "_graph", "_index", "_masker", "_store", "_validators")

    def __init__(
        self,
        store: BaseCheckpointSaver[Any],
        graph: CompiledStateGraph[Any, Any, Any, Any] | None = None,
        validators: Sequence[Validator] = (),
        *,
        address: str | None = None,
        tools: Iterable[Tool] = (),
    ) -> None:
        self._store = store
        self._graph = graph
        self._validators = tuple(validators)
        self._address = address
        self._masker = Redactor([], tool_map(tools), mask_unknown=True)
        self._index: RunIndex | None = run_index_of(store)

    def no_run(self, thread_id: str) -> ThreadNotFoundError:
        """What to raise when `thread_id` holds no checkpoint: that no run is stored, or,
        when the worker queue holds its job, that it has not started yet
        (`RunNotStartedError`, from `not_started`)."""
        return self.not_started(thread_id) or no_run(thread_id)

    async def ano_run(self, thread_id: str) -> ThreadNotFoundError:
        """`no_run` for async code (the queue is read in a thread)."""
        return await asyncio.to_thread(self.no_run, thread_id)

    def not_started(self, thread_id: str) -> RunNotStartedError | None:
        """Why `thread_id`, which holds no checkpoint, still has a run: its job in the worker
        queue waits, was just taken, or failed before the run began; None when the queue
        holds no job of it (or cannot be read: then no run is stored, as far as we know)."""
        try:
            job = Store(self._store).jobs([thread_id]).get(thread_id)
        except StorageError:
            return None
        return None if job is None else not_started(thread_id, job)

    def _graph_for(self, found: CheckpointTuple) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The graph to read the run of checkpoint `found` on: the reader's when the run
        is of it, else one made from the checkpoint (its graph's code is never loaded)."""
        if self._graph is not None and address_in(found.metadata) == self._address:
            return self._graph
        return reading_graph(found.checkpoint, self._store)

    async def acheckpoint_id(self, thread_id: str) -> str | None:
        """The id of a run's latest checkpoint, or None when the thread holds no run."""
        found = await self.latest_tuple(thread_id)
        return None if found is None else str(found.config["configurable"]["checkpoint_id"])

    checkpoint_id = sync_method(acheckpoint_id)

    async def latest_tuple(self, thread_id: str) -> CheckpointTuple | None:
        """The run's latest checkpoint as stored, its steps left packed (never revived)."""
        with steps_left_packed():  # a paused run's checkpoint may hold the whole chain
            return await self._store.aget_tuple(_config(thread_id))

    def history(self, thread_id: str) -> list[CheckpointInfo]:
        """The checkpoints of a run, oldest first: one per node that completed."""
        with steps_left_packed():  # only whether it exists: the chain is not revived
            if self._store.get_tuple(_config(thread_id)) is None:
                raise self.no_run(thread_id)
        return list(reversed(list(checkpoints(self._store, thread_id))))

    async def ahistory(self, thread_id: str) -> list[CheckpointInfo]:
        """`history`, from async code (a replay compares its own state with its source's
        node by node)."""
        if await self.latest_tuple(thread_id) is None:
            raise await self.ano_run(thread_id)
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        found = [checkpoint_info(item) async for item in self._store.alist(config)]
        return found[::-1]

    async def latest(self, thread_id: str) -> StateSnapshot:
        """The latest checkpoint's small channels and open interrupts, without the chain.

        Enough to decide how to resume, and much cheaper than `get_state`, which rebuilds
        the whole chain. `values` lacks the chain; `next` is not computed.
        """
        found = await self.latest_tuple(thread_id)
        if found is None:
            raise await self.ano_run(thread_id)
        return without_chain(found)

    async def steps_since(
        self, thread_id: str, checkpoint_id: str, held: Sequence[BaseStep]
    ) -> tuple[StateSnapshot, list[BaseStep]] | None:
        """What a run added after the checkpoint `checkpoint_id`, reading only that.

        For a reader that holds the chain `held` read at that checkpoint (an event stream
        of a run another process advances): the latest checkpoint without its chain (see
        `latest`), and the chain steps written since, in order and numbered after `held`.
        Only the newest checkpoints and their writes are read, their steps revived; the
        chain before them is not touched. A step `held` has already is left out: a state
        read includes the writes of nodes that finished after its checkpoint was stored.

        Returns:
            None when `checkpoint_id` is not among the run's latest checkpoints (the run
            was forked over, or moved on by thousands): read it whole instead.
        """
        config = _config(thread_id)
        limit = 8
        while True:
            with steps_left_packed():  # a snapshot of the chain in a checkpoint stays packed
                found = [t async for t in self._store.alist(config, limit=limit)]
            ids = [str(t.config["configurable"]["checkpoint_id"]) for t in found]
            if checkpoint_id in ids:
                break
            if len(found) < limit or limit >= 4096:
                return None
            limit *= 8
        newer = found[: ids.index(checkpoint_id) + 1]  # newest first, down to the one held
        # A checkpoint's writes are what the nodes that ran from it wrote: they are in the
        # next checkpoint's chain, or, under the latest, in the state a read gives now (as
        # `get_state` applies them). So the new steps are the writes of the held checkpoint
        # and of every later one, oldest first.
        steps: list[BaseStep] = []
        for tup in reversed(newer):
            steps.extend(_as_applied(tup))
        have = {s.id for s in held[-HELD_OVERLAP:]}
        fresh = [s for s in steps if s.id not in have]
        return without_chain(newer[0]), placed_after(fresh, len(held))

    async def asnapshot(self, thread_id: str) -> StateSnapshot:
        """The run's whole state, as the graph applies it (the chain rebuilt).

        Raises:
            ThreadNotFoundError: no run is stored under `thread_id`.
        """
        # The latest checkpoint, its chain left packed, says which graph reads the run, so
        # the chain is rebuilt once, by that graph. A run killed right after its input was
        # saved has a checkpoint but no values yet: it exists (and resumes).
        found = await self.latest_tuple(thread_id)
        if found is None:
            raise await self.ano_run(thread_id)
        return await self._graph_for(found).aget_state(_config(thread_id))

    snapshot = sync_method(asnapshot)

    async def aat_checkpoint(
        self, thread_id: str, checkpoint_id: str
    ) -> tuple[StateSnapshot, RunResult]:
        """A run as it stood at one of its checkpoints: the whole state there (the chain
        rebuilt up to it) and the result it stood for, for drawing and showing that point
        (time travel). The run's input checkpoint holds no state yet: an empty chain.

        Raises:
            ThreadNotFoundError: no run is stored under `thread_id`, or it has no
                checkpoint `checkpoint_id`.
        """
        found = await self.latest_tuple(thread_id)
        if found is None:
            raise await self.ano_run(thread_id)
        config = _config(thread_id)
        config["configurable"]["checkpoint_id"] = checkpoint_id
        with steps_left_packed():
            there = await self._store.aget_tuple(config)
        if there is None:
            raise ThreadNotFoundError(
                f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}; list them with "
                f"history({thread_id!r}) or `thinkgraph history {thread_id}`"
            )
        snapshot = await self._graph_for(found).aget_state(config)
        return snapshot, self.result_of(thread_id, snapshot)

    at_checkpoint = sync_method(aat_checkpoint)

    def overlay(self, thread_id: str) -> tuple[StateSnapshot, RunResult]:
        """A run's whole state and its result, for drawing the path it took (one read)."""
        snapshot = self.snapshot(thread_id)
        return snapshot, self.result_of(thread_id, snapshot)

    async def aresult(self, thread_id: str) -> RunResult:
        """The current result of a run, read from the store (one state read).

        Raises:
            ThreadNotFoundError: no run is stored under `thread_id`.
        """
        return self.result_of(thread_id, await self.asnapshot(thread_id))

    result = sync_method(aresult)

    async def aresult_at(self, thread_id: str) -> tuple[str, RunResult]:
        """The id of the run's latest checkpoint and the result it stands for, from the one
        state read `aresult` makes: what a person answers is that checkpoint's pause.

        Raises:
            ThreadNotFoundError: no run is stored under `thread_id`.
        """
        snapshot = await self.asnapshot(thread_id)
        at = str(snapshot.config["configurable"]["checkpoint_id"])
        return at, self.result_of(thread_id, snapshot)

    result_at = sync_method(aresult_at)

    def result_of(self, thread_id: str, snapshot: StateSnapshot) -> RunResult:
        """The result a state snapshot of the run `thread_id` stands for (nothing read)."""
        values: Mapping[str, Any] = snapshot.values
        run = values.get("run")
        chain = values.get("chain", [])
        return RunResult(
            thread_id=thread_id,
            status=status_of(snapshot),
            answer=values.get("answer"),
            stop_reason=run.stop_reason if isinstance(run, RunInfo) else None,
            detail=run.detail if isinstance(run, RunInfo) else "",
            chain=list(chain),
            pending=pending_of(snapshot),
            counters=values.get("counters") or Counters(),
            output=structured_output(chain, self._validators),
            state=own_keys(values),
        )

    def status(self, thread_id: str) -> RunStatus | None:
        """Where a run stands, from its latest checkpoint's small channels (the chain is not
        rebuilt); None when the thread holds no run. A run stopped at a breakpoint reads
        as running: telling needs its next node, which only a full read computes."""
        with steps_left_packed():
            latest = self._store.get_tuple(_config(thread_id))
        return None if latest is None else status_of(without_chain(latest))

    def runs(self, status: RunStatus | None = None, limit: int | None = None) -> list[RunSummary]:
        """The runs in the store, the most recently updated first, each as its latest job
        in the worker queue tells it when that job has not ended well (`with_job`): a run
        handed to the workers is listed from the moment it is queued, a run whose job
        failed is listed as failed, with the job's error.

        Args:
            status: only runs with this status ("queued", "running", "paused", "done",
                "failed").
            limit: at most this many runs.

        Raises:
            StorageError: the store cannot be read.
        """
        found = self.page(RunFilter(status=status), limit=limit)
        return [run.summary for run in found.runs]

    def page(
        self, where: RunFilter = EVERY_RUN, offset: int = 0, limit: int | None = 50
    ) -> RunPage:
        """The runs `where` lets through, newest first: `limit` of them (None: all) from
        `offset`, each with its task masked as listings show it.

        From the store's run index when it keeps one (`thinkgraph.storage.run_index`):
        one query, whatever the number of runs; a row whose run moved since it was
        written is read again from the checkpoints first (`_heal`), so the page says what
        the checkpoints say. Otherwise every run's latest checkpoint is read
        (`page_from_checkpoints`).

        Raises:
            StorageError: the store cannot be read.
        """
        if self._index is None:
            return self.page_from_checkpoints(where, offset, limit)
        return self._indexed_page(self._index, where, offset, limit)

    def page_from_checkpoints(
        self, where: RunFilter = EVERY_RUN, offset: int = 0, limit: int | None = 50
    ) -> RunPage:
        """`page`, read from every run's latest checkpoint (and, for a search, each run's
        task from its first): for a store without a run index."""
        tasks: dict[str, str] = {}

        def task_of(thread_id: str) -> str:
            if thread_id not in tasks:
                tasks[thread_id] = self._masked_task(thread_id)
            return tasks[thread_id]

        found: list[RunSummary] = []
        for summary in self._listed():
            if where.matches(summary, task_of):
                found.append(summary)
                if limit is not None and len(found) > offset + limit:
                    break
        end = None if limit is None else offset + limit
        shown = [ListedRun(s, task_of(s.thread_id)) for s in found[offset:end]]
        return RunPage(shown, end is not None and len(found) > end)

    def _indexed_page(
        self, index: RunIndex, where: RunFilter, offset: int, limit: int | None
    ) -> RunPage:
        """`page` from the run index: the worker queue's unfinished jobs (few) laid over
        in Python, every other run filtered and paged by one query."""
        self._refresh(index)
        jobs = Store(self._store).jobs()
        skip = sorted(jobs)
        # With jobs laid over, the query's rows are merged with theirs, so it pages from 0.
        start, most = (
            (offset, limit) if not jobs else (0, None if limit is None else offset + limit)
        )

        def query() -> list[SeenRow]:
            return index.page(
                status=where.status,
                graph=where.graph,
                search=where.search,
                skip=skip,
                limit=None if most is None else most + 1,
                offset=start,
            )

        rows = query()
        for _ in range(2):  # a row shown is what its checkpoints say now
            moved = index.moved([row.thread_id for row in rows])
            if not moved:
                break
            self._heal(index, moved)
            rows = query()
        listed = [ListedRun(self._summary_of_row(row), row.task) for row in rows]
        if jobs:
            listed = sorted(
                [*listed, *self._job_runs(index, jobs, where)],
                key=lambda r: newest_first(r.summary),
            )
            listed = listed[offset:]
        end = None if limit is None else limit
        return RunPage(listed[:end], end is not None and len(listed) > end)

    def _job_runs(
        self, index: RunIndex, jobs: Mapping[str, JobState], where: RunFilter
    ) -> list[ListedRun]:
        """The runs the worker queue has a word on, as their jobs tell them, filtered."""
        rows = {row.thread_id: row for row in index.rows(sorted(jobs))}
        found: list[ListedRun] = []
        for thread_id, job in jobs.items():
            if thread_id_problem(thread_id) is not None:
                continue
            row = rows.get(thread_id)
            summary = with_job(None if row is None else self._summary_of_row(row), thread_id, job)
            task = "" if row is None else row.task
            if summary is not None and where.matches(summary, {thread_id: task}.__getitem__):
                found.append(ListedRun(summary, task))
        return found

    def _refresh(self, index: RunIndex) -> None:
        """Bring the index up to its runs' checkpoints before it is read: every run still
        running (its row is checked at each listing), and, once, every run of a store
        written before the index existed."""
        if not index.reconciled():
            self._heal(index, index.unknown())
            index.set_reconciled()
        self._heal(index, index.moved())

    def _heal(self, index: RunIndex, moved: Sequence[tuple[SeenRow, str | None]]) -> None:
        """Read each of `moved` again from its checkpoints and rewrite its row, unless a
        writer has rewritten it since it was seen; a row whose run is gone is dropped."""
        for seen, latest in moved:
            if latest is None:
                if seen.checkpoint_id is not None:  # deleted by another door
                    index.forget(seen.thread_id)
                continue  # a segment that has not stored its first checkpoint yet
            row = self.index_row(seen.thread_id, seen.task or None)
            if row is not None:
                index.put(row, seen=seen)

    def index_row(self, thread_id: str, task: str | None = None) -> IndexRow | None:
        """The run index's row of `thread_id`, read from its latest checkpoint (the chain
        left packed) and, unless `task` (masked) is given, its task from its first; None
        when the thread holds no checkpoint."""
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        with steps_left_packed():  # read as stored, even an id no command takes
            latest = self._store.get_tuple(config)
        if latest is None:
            return None
        at = str(latest.config["configurable"]["checkpoint_id"])
        usable = thread_id_problem(thread_id) is None
        summary = self._summary_of(thread_id, latest) if usable else None
        if summary is None:
            return IndexRow(thread_id, at, NOT_A_RUN, "", "", None, live=False)
        return IndexRow(
            thread_id,
            at,
            summary.status,
            summary.graph or "",
            self._masked_task(thread_id) if task is None else task,
            summary.model_dump_json(fallback=repr),
            live=summary.status == "running",
        )

    async def aindex(self, thread_id: str, task: str | None = None) -> None:
        """Write the run's row in the store's run index from its latest checkpoint: a
        segment of it ended (done, paused, failed, or stopped by an error). Nothing for a
        store without an index; `task` is the run's task as given (masked here), if known."""
        index = self._index
        if index is None:
            return
        masked = None if task is None else self._masker.text(task)

        def write() -> None:
            row = self.index_row(thread_id, masked)
            if row is not None:
                index.put(row)

        await asyncio.to_thread(write)

    async def amark_live(self, thread_id: str) -> None:
        """A segment of the run starts: listings check its row against its checkpoints
        until the segment writes it (`aindex`)."""
        if self._index is not None:
            await asyncio.to_thread(self._index.mark_live, thread_id)

    def graphs(self) -> list[str]:
        """The graph addresses the store's runs run on ('' for ours), sorted: what a
        listing's graph filter offers."""
        if self._index is not None:
            self._refresh(self._index)
            return self._index.graphs()
        return sorted({s.graph or "" for s in self._listed()})

    def reindex(self) -> int:
        """Give every run of the store a row that matches its checkpoints (a scan of every
        checkpoint's key, then a read of each run whose row is missing or old): for a
        store that other programs wrote runs to without the index. The rows rewritten."""
        if self._index is None:
            return 0
        unknown = self._index.unknown()
        self._heal(self._index, unknown)
        self._index.set_reconciled()
        return len(unknown)

    def _masked_task(self, thread_id: str) -> str:
        """The run's task masked as listings show it; '' when it has none."""
        text = self.task(thread_id)
        return "" if text is None else self._masker.text(text)

    @staticmethod
    def _summary_of_row(row: SeenRow) -> RunSummary:
        return RunSummary.model_validate_json(row.summary or "{}")

    def task(self, thread_id: str) -> str | None:
        """The task the run under `thread_id` was given (its task step's text); None when
        the thread holds no run.

        Read from the run's input checkpoint alone (the first one, whose writes hold the
        task step), so a search by task costs one small read a run; a fork, which has no
        input of its own, is read whole.

        Raises:
            ThreadIdError: `thread_id` cannot name a run.
            StorageError: the store cannot be read.
        """
        config = _config(thread_id)
        with steps_left_packed():
            first = next(iter(self._store.list(config, filter={"step": -1}, limit=1)), None)
        for _task, channel, value in (first.pending_writes or ()) if first else ():
            if channel == "chain":
                steps = unpack_steps(value) if isinstance(value, PackedSteps) else value
                if steps and isinstance(steps[0], TaskStep):
                    return steps[0].text
        try:
            chain = self.result(thread_id).chain
        except ThreadNotFoundError:
            return None
        return chain[0].text if chain and isinstance(chain[0], TaskStep) else None

    def forks(self, thread_id: str) -> list[tuple[str, str]]:
        """The runs forked from `thread_id`, oldest first, each as (its thread id, the
        checkpoint of `thread_id` it was forked at).

        One query over checkpoint metadata (a fork's first checkpoint names its source,
        `thinkgraph.runs.lineage.FORK_OF`): no run is read. The store scans the metadata of
        its checkpoints for it (SQLite's ``json_extract``, PostgreSQL's ``@>``), and reads
        only the few checkpoints that match.

        Raises:
            StorageError: the store cannot be read.
        """
        with steps_left_packed():
            found = list(self._store.list(None, filter={FORK_OF: thread_id}))
        found.sort(key=lambda t: str(t.config["configurable"]["checkpoint_id"]))
        return [
            (str(t.config["configurable"]["thread_id"]), str((t.metadata or {}).get(FORK_AT)))
            for t in found
        ]

    def replays(self, thread_id: str) -> list[str]:
        """The replays of `thread_id`, oldest first: one query over checkpoint metadata
        (`thinkgraph.runs.lineage.REPLAY_OF`) for each replay's input checkpoint; no run
        is read.

        Raises:
            StorageError: the store cannot be read.
        """
        with steps_left_packed():
            found = list(self._store.list(None, filter={REPLAY_OF: thread_id, "step": -1}))
        found.sort(key=lambda t: str(t.config["configurable"]["checkpoint_id"]))
        return [str(t.config["configurable"]["thread_id"]) for t in found]

    def fork_of(self, thread_id: str) -> tuple[str, str] | None:
        """The run `thread_id` was forked from and the checkpoint forked at; None when it
        was not forked. Read from the metadata of the run's checkpoints written by an
        update (a fork's first is one), their steps left packed.

        Raises:
            StorageError: the store cannot be read.
        """
        with steps_left_packed():
            for found in self._store.list(_config(thread_id), filter={"source": "update"}):
                meta: Mapping[str, Any] = found.metadata or {}
                source = meta.get(FORK_OF)
                if isinstance(source, str):
                    return source, str(meta.get(FORK_AT))
        return None

    def summary(self, thread_id: str) -> RunSummary | None:
        """One run as `runs` lists it (its job's word included); None when the thread holds
        no run and no job of the worker queue.

        Raises:
            ThreadIdError: `thread_id` cannot name a run.
            StorageError: the store cannot be read.
        """
        check_thread_id(thread_id)
        job = Store(self._store).jobs([thread_id]).get(thread_id)
        return with_job(next(self._summaries([thread_id]), None), thread_id, job)

    def count(self, most: int | None = COUNTED_RUNS) -> RunCount:
        """How many runs the store holds in each state.

        From the run index when the store keeps one: one query over every run (`most` is
        not needed), the worker queue's unfinished jobs laid over. Otherwise each run read
        costs one read of its latest checkpoint's small channels (about a millisecond on
        PostgreSQL), so at most the newest `most` are read; the threads past it are
        counted, not read (`RunCount.unread`); None: read them all. Runs queued and not
        started, or whose job failed before their first checkpoint, are counted too.

        Raises:
            StorageError: the store cannot be read.
        """
        by_status: dict[RunStatus, int] = dict.fromkeys(RUN_STATUSES, 0)
        if self._index is not None:
            self._refresh(self._index)
            for word, n in self._index.counts().items():
                if word in by_status:
                    by_status[word] += n  # type: ignore[index]
            jobs = Store(self._store).jobs()
            for row in self._index.rows(sorted(jobs)):
                by_status[self._summary_of_row(row).status] -= 1
            for run in self._job_runs(self._index, jobs, EVERY_RUN):
                by_status[run.summary.status] += 1
            return RunCount(by_status=by_status, unread=0)
        ids = Store(self._store).thread_ids()
        read = ids if most is None else ids[:most]
        for summary in self._listed(ids, read):
            by_status[summary.status] += 1
        return RunCount(by_status=by_status, unread=len(ids) - len(read))

    def _listed(
        self, ids: Sequence[str] | None = None, read: Sequence[str] | None = None
    ) -> Iterator[RunSummary]:
        """The runs among `read` (of the store's thread ids `ids`; None: all of them), with
        their jobs laid over, and the runs that exist only as jobs, newest first."""
        store = Store(self._store)
        jobs = store.jobs()
        ids = store.thread_ids() if ids is None else ids
        stored = set(ids)
        # Runs with no checkpoint yet (queued, or failed before their first one).
        unstored = sorted(
            (
                summary
                for thread_id, job in jobs.items()
                if thread_id not in stored and thread_id_problem(thread_id) is None
                for summary in [with_job(None, thread_id, job)]
                if summary is not None
            ),
            key=newest_first,
        )
        for summary in self._summaries(ids if read is None else read):
            while unstored and newest_first(unstored[0]) <= newest_first(summary):
                yield unstored.pop(0)
            yield with_job(summary, summary.thread_id, jobs.get(summary.thread_id)) or summary
        yield from unstored

    def _summaries(self, thread_ids: Sequence[str]) -> Iterator[RunSummary]:
        """The summary of each thinkgraph run among `thread_ids`, in their order."""
        for thread_id in thread_ids:
            if thread_id_problem(thread_id) is not None:
                # Stored by another door (a raw LangGraph call, an older version): no
                # command takes the id, and a listing must not break lines on it.
                continue
            # The latest checkpoint's small channels say where a run stands; its chain,
            # the costly part of a read, is never rebuilt for a listing.
            with steps_left_packed():
                latest = self._store.get_tuple(_config(thread_id))
            summary = None if latest is None else self._summary_of(thread_id, latest)
            if summary is not None:
                yield summary

    @staticmethod
    def _summary_of(thread_id: str, latest: CheckpointTuple) -> RunSummary | None:
        """The summary of the run whose latest checkpoint is `latest`; None when the thread
        is no thinkgraph run (some other LangGraph program wrote it)."""
        snapshot = without_chain(latest)
        if not isinstance(snapshot.values.get("limits"), StepLimits):
            return None
        # Whether it stands at a breakpoint is read from the checkpoint too (its next
        # nodes, `without_chain`): no run is read whole for a listing.
        address = (latest.metadata or {}).get(GRAPH_KEY)
        graph = address if isinstance(address, str) else None
        return summarize(
            thread_id, snapshot, status_of(snapshot), pending_of(snapshot), graph=graph
        )


class CheckpointInfo(BaseModel):
    """One checkpoint of a run, as `Agent.history` lists it."""

    model_config = ConfigDict(frozen=True)

    checkpoint_id: str
    """Pass it to `Agent.fork` to start a new thread from here."""
    node: str
    """The node whose completion wrote this checkpoint ("start" for the task input)."""
    step: int
    """Think steps taken at this point."""
    at: datetime | None
    """When the checkpoint was written."""
    state: dict[str, Any] = Field(default_factory=dict)
    """The graph's own state keys as they stood here (see `RunResult.state`)."""


def breakpoint_pause(snapshot: StateSnapshot) -> Pending | None:
    """The breakpoint a run stands at, if it was stopped by one.

    A static breakpoint leaves no interrupt in the snapshot; it is recognised by the run's
    stored breakpoints: the next node is a "before" one, or the last node an "after" one.
    """
    if not snapshot.next:
        return None
    values = snapshot.values
    points = values.get("breakpoints")
    if not isinstance(points, Breakpoints):
        return None
    step = (values.get("counters") or Counters()).steps
    # "after X" and "before Y" can name one boundary; LangGraph stops there once, and the
    # node that just ran is the more telling name for it.
    last = values.get("node")
    if isinstance(last, str) and last in points.after:
        return Pending(kind="breakpoint", node=last, when="after", step=step)
    for name in snapshot.next:
        if name in points.before:
            return Pending(kind="breakpoint", node=name, when="before", step=step)
    return None


def pending_of(snapshot: StateSnapshot) -> list[Pending]:
    """What a stored run waits for: approvals, an ask_human question, or a breakpoint."""
    pending: list[Pending] = []
    for item in snapshot.interrupts:
        value = item.value if isinstance(item.value, dict) else {"question": str(item.value)}
        if value.get("kind") == "approval":
            pending.extend(Pending.model_validate(r) for r in value.get("requests", []))
        else:
            details = {k: v for k, v in value.items() if k not in ("kind", "question")}
            pending.append(
                Pending(
                    kind="ask_human",
                    question=str(value.get("question", "")),
                    step=(snapshot.values.get("counters") or Counters()).steps,
                    details=details,
                )
            )
    if not pending:
        stop = breakpoint_pause(snapshot)
        if stop is not None:
            pending.append(stop)
    return pending


def status_of(snapshot: StateSnapshot) -> RunStatus:
    """running (not finished, e.g. its process died), paused, done or failed.

    A replay (a ``replay_of`` channel) is never running or paused: only the process that
    replays it advances it, holding its lease until it records the outcome. One that has
    recorded nothing stopped short (its process died, say) and is done there, as a replay
    that stops short is recorded (`thinkgraph.runs.replay`): listed as a replay that
    stopped, never resumed, and pruned like any finished run.
    """
    run = snapshot.values.get("run")
    if isinstance(run, RunInfo):
        return run.status
    if snapshot.values.get("replay_of") is not None:
        return "done"
    if snapshot.interrupts or breakpoint_pause(snapshot) is not None:
        return "paused"
    return "running"


def checkpoints(saver: BaseCheckpointSaver[Any], thread_id: str) -> Iterator[CheckpointInfo]:
    """The checkpoints of a thread, newest first, read without rebuilding the chain."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for item in saver.list(config):
        yield checkpoint_info(item)


def checkpoint_info(item: CheckpointTuple) -> CheckpointInfo:
    """One listed checkpoint as `history` gives it, its chain left as stored."""
    values = item.checkpoint.get("channel_values", {})
    counters = values.get("counters")
    ts = item.checkpoint.get("ts")
    return CheckpointInfo(
        checkpoint_id=item.checkpoint["id"],
        node=str(values.get("node") or "start"),
        step=counters.steps if isinstance(counters, Counters) else 0,
        at=datetime.fromisoformat(ts) if isinstance(ts, str) else None,
        state=own_keys(values),
    )


def without_chain(found: CheckpointTuple) -> StateSnapshot:
    """A checkpoint's small channels and open interrupts as a snapshot, the chain left out.

    `next` is computed from the checkpoint alone (`next_nodes`), so a static breakpoint is
    seen; empty for a finished run. `tasks`
    holds only the tasks that failed after their writes were kept, each with its writes as
    its `result`.
    """
    interrupts: list[Interrupt] = []
    errors: dict[str, Exception] = {}
    writes: dict[str, dict[str, Any]] = {}
    for task, channel, value in found.pending_writes or ():
        if channel == INTERRUPT:
            interrupts.extend(value if isinstance(value, list | tuple) else [value])
        elif channel == ERROR_CHANNEL:
            # Stored as the exception's repr: kept as an error that says it.
            errors[task] = value if isinstance(value, Exception) else RuntimeError(str(value))
        else:
            writes.setdefault(task, {})[channel] = value
    # A task that failed after its node's writes were kept (its router raised): its
    # writes, and its node's name from the ``node`` channel every node of ours writes.
    failed = tuple(
        PregelTask(task, str(writes[task].get("node", "")), (), error, result=_kept(writes[task]))
        for task, error in errors.items()
        if task in writes
    )
    values = dict(found.checkpoint.get("channel_values", {}))
    values.pop("chain", None)
    values.update(_outcome(writes, errors))
    created = found.checkpoint.get("ts")
    following = () if values.get("run") is not None else next_nodes(found.checkpoint)
    return StateSnapshot(
        values, following, found.config, found.metadata, created, None, failed, tuple(interrupts)
    )


_OUTCOME = ("run", "answer")
"""What finalize writes that says how a run ended (plain channels: the last write is the value)."""


def _outcome(writes: dict[str, dict[str, Any]], errors: dict[str, Exception]) -> dict[str, Any]:
    """The run's outcome among the latest checkpoint's pending writes, if finalize wrote it.

    A process killed after finalize's writes were stored and before the checkpoint after
    them leaves the outcome there. A full read applies it (LangGraph's `get_state` does),
    so every other reader applies it too: the run is done everywhere, or nowhere.
    """
    for task, written in writes.items():
        if task not in errors and written.get("run") is not None:
            return {key: written[key] for key in _OUTCOME if key in written}
    return {}


def _kept(writes: dict[str, Any]) -> dict[str, Any]:
    """A task's kept writes, its chain write revived into steps."""
    if "chain" in writes:
        writes = {**writes, "chain": _revived(writes["chain"])}
    return writes


def _as_applied(tup: CheckpointTuple) -> list[BaseStep]:
    """The chain steps the nodes that ran from checkpoint `tup` wrote, in the order
    LangGraph applies their writes (by task path): its pulled nodes' by node name, then
    its act tasks' in the order they were sent, the order of the checkpoint's pending
    calls. A store keeps a super-step's writes as they finished, or by task id."""
    tasks: dict[str, list[BaseStep]] = {}
    for task_id, channel, value in tup.pending_writes or ():
        if channel == "chain":
            tasks.setdefault(task_id, []).extend(_revived(value))
    if len(tasks) < 2:
        return [s for steps in tasks.values() for s in steps]
    calls = tup.checkpoint.get("channel_values", {}).get("pending_calls") or []
    place = {getattr(c, "id", None): n for n, c in enumerate(calls)}

    def key(steps: list[BaseStep]) -> tuple[int, str, int]:
        call = getattr(steps[0], "call_id", None) if steps else None
        if call in place:
            return (1, "", place[call])
        return (0, steps[0].node if steps else "", 0)

    return [s for steps in sorted(tasks.values(), key=key) for s in steps]


def _revived(written: Any) -> list[BaseStep]:
    """A chain write as stored (packed steps, a list of steps or of plain dicts) as steps."""
    if isinstance(written, PackedSteps):
        return unpack_steps(written)
    return [as_step(s) for s in written]


def not_started(thread_id: str, job: JobState) -> RunNotStartedError:
    """The error of a thread with no checkpoint whose run is a job of the worker queue: where
    the job stands (`JobState.text`), since when, which job, and what starts it."""
    since = f"{job.at.astimezone():%Y-%m-%d %H:%M:%S}" if job.at is not None else "?"
    where = job.text()
    if job.state == "failed":
        message = (
            f"thread {thread_id!r} never started: {where} at {since}; submit the task "
            f"again, or look at the workers of queue {job.queue}"
        )
    elif job.state in ("running", "stalled"):
        message = (
            f"thread {thread_id!r} has not stored its first checkpoint yet: {where} since "
            f"{since}, job {job.job_id}"
        )
    else:
        message = (
            f"thread {thread_id!r} has not started yet: {where} since {since}, job "
            f"{job.job_id} (start a worker with: thinkgraph worker --queue {job.queue})"
        )
    return RunNotStartedError(message, queue=job.queue, job_id=job.job_id, state=job.state)


def no_run(thread_id: str) -> ThreadNotFoundError:
    return ThreadNotFoundError(
        f"no run is stored under thread {thread_id!r}; list runs with `thinkgraph runs` "
        "or check --store"
    )


def _config(thread_id: str) -> RunnableConfig:
    # Every read of a thread passes here, so an id that cannot name a run stops here.
    return {"configurable": {"thread_id": check_thread_id(thread_id)}}
