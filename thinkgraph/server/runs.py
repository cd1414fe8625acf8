"""The server's runs: many at once on its event loop, each with one feed its streams share.

A run started (or answered) here is an asyncio task on the server's loop, driven by
`Agent.aevents` (the run driver's events): it waits on the model and the tools side by side
with every other run, up to `max_runs` at once (past that, `TooManyRunsError`, answered
429). A client that disconnects leaves its run going.

Each thread being watched has one `Feed`. A run of this process bumps its feed as its
nodes finish (pushed, no polling); a run advanced elsewhere (a worker, another process) is
watched by one poller per thread that reads only the latest checkpoint's id (no chain) and
bumps the feed when it moves. The feed holds the chain it has read: after the first read,
each change reads from the store only the steps written since (`RunReader.steps_since`).
The run's JSON document (redacted, the same as `GET /runs/T`) is rebuilt once per change,
and shared by every stream of that thread, each of which sends only the steps it has not
sent yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from thinkgraph.errors import (
    RunError,
    ThreadBusyError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from thinkgraph.runs import NodeStart, StepEvent
from thinkgraph.runs.driver import fresh_thread_id
from thinkgraph.runs.replay import fresh_replay_thread
from thinkgraph.storage.answers import this_process
from thinkgraph.types import thread_id_problem
from thinkgraph.views.json_doc import job_fields, waiting_doc

if TYPE_CHECKING:
    from thinkgraph.agent import Agent
    from thinkgraph.result import RunResult, RunSummary
    from thinkgraph.runs import RunEvent
    from thinkgraph.state import BaseStep
    from thinkgraph.worker import JobInfo, QueuedJob, RunQueue

__all__ = ["MAX_RUNS", "Feed", "ServerRuns", "TaskTooLongError", "TooManyRunsError"]

logger = logging.getLogger("thinkgraph.server")

MAX_RUNS = 100
"""The default number of runs one server advances at once."""

MAX_HELD = 64
"""Chains kept for streams asked for but not yet open; the oldest go past this."""


class TooManyRunsError(RunError):
    """The server already advances as many runs as it may; try again later."""


class TaskTooLongError(RunError):
    """A task over the server's limit (`ServerRuns.max_task_bytes`); nothing was started."""


@dataclass
class Feed:
    """What the streams of one thread share: a version that moves, and the document."""

    version: int = 0
    """Bumped each time the run may have changed."""
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    doc: dict[str, Any] | None = None
    doc_version: int = -1
    readers: int = 0
    poller: asyncio.Task[None] | None = None
    building: asyncio.Lock = field(default_factory=asyncio.Lock)
    chain: list[BaseStep] | None = None
    """The run's chain as of `checkpoint_id`, kept so a change reads only what is new."""
    checkpoint_id: str | None = None

    def bump(self) -> None:
        self.version += 1
        self.changed.set()
        self.changed = asyncio.Event()  # a fresh one for the next wait

    async def wait(self, seen: int, timeout: float) -> None:
        """Wait until the version passes `seen`, or `timeout` seconds."""
        if self.version > seen:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.changed.wait(), timeout)


class ServerRuns:
    """The agent's runs as the routes see them: start, answer, read, watch."""

    def __init__(
        self,
        agent: Agent,
        *,
        jobs: RunQueue | None,
        poll_s: float,
        max_runs: int,
        document: Callable[[RunResult], dict[str, Any]],
        max_task_bytes: int | None = None,
    ) -> None:
        self.agent = agent
        self.max_task_bytes = max_task_bytes
        """The longest task a run is started with, in UTF-8 bytes (None: no limit); held
        here, where every door's start passes."""
        self.jobs = jobs
        """The worker queue runs go to, when there is one (one connection for all requests)."""
        self.poll_s = poll_s
        self.max_runs = max_runs
        self._document = document
        self.tasks: dict[str, asyncio.Task[None]] = {}
        """The runs this server is advancing, by thread."""
        self.replays: dict[str, asyncio.Task[None]] = {}
        """The replays this server is making, by the replay's thread: apart from `tasks`,
        whose runs bump their feeds themselves, so a replay's page is followed by polling."""
        self.resuming: set[str] = set()
        """Threads with an answer being applied here."""
        self.feeds: dict[str, Feed] = {}
        self._held: dict[str, tuple[list[BaseStep], str | None]] = {}
        """Chains read for streams about to open, by thread (see `document`)."""

    # -- starting and answering -----------------------------------------------------------

    async def start(self, task: str, thread: str) -> dict[str, Any]:
        limit = self.max_task_bytes
        if limit is not None and len(task.encode()) > limit:
            raise TaskTooLongError(
                f"the task is over this server's limit of {limit} bytes; shorten it (put "
                "long material in a file or a tool), or raise --max-task-bytes"
            )
        if self.jobs is not None:
            return _queued(await asyncio.to_thread(self.jobs.submit, task, thread))
        if thread in self.tasks or await self.agent.acheckpoint_id(thread) is not None:
            raise ThreadExistsError(f"thread {thread!r} already holds a run")
        self._room()
        stored = asyncio.Event()
        self._launch(thread, self.agent.aevents(task, thread), stored=stored)
        # Answer once the run is stored, so the caller can read it at once.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stored.wait(), 2.0)
        return {"thread_id": thread}

    async def resume(self, thread: str, answer: Any, at: str | None = None) -> dict[str, Any]:
        """Hand `answer` to the run's pause (`at`: the paused checkpoint it answers; None:
        the latest), here or to the workers; what the answer claimed is acknowledged."""
        if self.jobs is not None:
            return _queued(await self.jobs.aresume(thread, answer, at=at))
        # One answer per pause, whichever server or process gives it: the answer claims
        # the pause before it is acknowledged; a second (a double click, another server)
        # is refused naming the first. A bad answer is refused here too, claiming nothing.
        by = f"a request to the server ({this_process()})"
        claim = await self.agent.driver.claim_answer(thread, answer, at=at, by=by)
        if thread in self.resuming:
            await self.agent.driver.store.arelease_answer(claim)
            raise ThreadBusyError(
                f"thread {thread!r} already has an answer on its way; wait for its events"
            )
        running = self.tasks.get(thread)
        self.resuming.add(thread)
        try:
            if running is not None:
                # Its start is still winding down after its pause: the answer goes after it.
                await asyncio.shield(running)
            self._room()
        except BaseException:
            self.resuming.discard(thread)
            await self.agent.driver.store.arelease_answer(claim)
            raise
        events = self.agent.aresume_events(thread, answer, answer=claim)
        self._launch(thread, events, answers=True)
        return {"thread_id": thread}

    async def fork(
        self,
        thread: str,
        checkpoint_id: str,
        *,
        edit: Mapping[int, Mapping[str, Any]] | None = None,
        state: Mapping[str, Any] | None = None,
        new_thread: str | None = None,
    ) -> str:
        """Start a fork of `thread` from `checkpoint_id` (see `Driver.fork`) on this server,
        and return its thread once its first checkpoint is written; it runs on after.

        Raises:
            What `Driver.fork` raises before it writes anything (no such checkpoint, an
            edit it refuses, a taken thread), at once; `TooManyRunsError`.
        """
        target = new_thread or fresh_thread_id()
        if self.advancing(target):
            raise ThreadExistsError(f"thread {target!r} already holds a run")
        self._room()
        begun: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        events = self.agent.driver.fork(
            thread, checkpoint_id, edit=edit, state=state, new_thread_id=target
        )
        self._launch(target, _announced(events, begun))
        await begun
        return target

    async def replay(self, thread: str) -> str:
        """Start a replay of `thread` on the agent's graph (`Agent.areplay`) on this server,
        and return the replay's thread at once; its report is recorded on that thread when
        it ends, and `advancing` says it is under way meanwhile.

        Raises:
            ThreadNotFoundError: no run under `thread`, at once; `TooManyRunsError`.
        """
        if await self.agent.acheckpoint_id(thread) is None:
            raise await self.agent.reader.ano_run(thread)
        self._room()
        store = self.agent.driver.store
        base = await fresh_replay_thread(store, thread)
        target, n = base, 1
        # Another replay of it started here may not be stored yet: its thread is taken too.
        while target in self.replays or (n > 1 and await store.ahas_thread(target)):
            n += 1
            target = f"{base}-{n}"
        self.replays[target] = asyncio.create_task(
            self._replaying(thread, target), name=f"thinkgraph-replay-{target}"
        )
        return target

    async def _replaying(self, thread: str, target: str) -> None:
        try:
            await self.agent.areplay(thread, new_thread_id=target)
        except Exception:
            logger.exception("replay %s of thread %s failed", target, thread)
        finally:
            self.replays.pop(target, None)

    def advancing(self, thread: str) -> bool:
        """Whether this server advances `thread` now: a run, a fork or a replay it started
        (a replay until its report is made)."""
        return thread in self.tasks or thread in self.replays

    def _room(self) -> None:
        if len(self.tasks) + len(self.replays) >= self.max_runs:
            raise TooManyRunsError(
                f"this server already advances {self.max_runs} runs at once; try again when "
                "one ends, start it with a larger --max-runs, or hand runs to workers "
                "(--queue)"
            )

    def _launch(
        self,
        thread: str,
        events: AsyncIterator[RunEvent],
        *,
        stored: asyncio.Event | None = None,
        answers: bool = False,
    ) -> None:
        async def drive() -> None:
            feed = self.feeds.get(thread)
            try:
                async for event in events:
                    if stored is not None and isinstance(event, NodeStart):
                        stored.set()  # the run's input checkpoint is written
                    if isinstance(event, StepEvent):
                        feed = self.feeds.get(thread)
                        if feed is not None:
                            feed.bump()
                # The run's end is told below, once it let go of the thread: a client
                # that reads it may answer or restart the thread at once.
            except Exception:
                logger.exception("run of thread %s failed", thread)
            finally:
                self.tasks.pop(thread, None)
                # Only the answer's own task says it is applied: a start still winding
                # down after its pause must not clear the mark of an answer waiting on it.
                if answers:
                    self.resuming.discard(thread)
                if stored is not None:
                    stored.set()
                feed = self.feeds.get(thread)
                if feed is not None:
                    feed.bump()

        self.tasks[thread] = asyncio.create_task(drive(), name=f"thinkgraph-run-{thread}")

    async def close(self) -> None:
        """Let the runs in progress reach their end or pause; stop the pollers."""
        for feed in self.feeds.values():
            if feed.poller is not None:
                feed.poller.cancel()
        if self.tasks or self.replays:
            running = [*self.tasks.values(), *self.replays.values()]
            await asyncio.gather(*running, return_exceptions=True)
        if self.jobs is not None:
            self.jobs.close()

    # -- reading and watching -------------------------------------------------------------

    async def settled(self, thread: str) -> None:
        """Wait until this server's run of `thread`, if any, let go of it.

        A run's document says done (or paused) as soon as its last checkpoint is written,
        a moment before its task has given the thread back; a stream says "end" only
        after that, so a client may start or answer the thread at once.
        """
        running = self.tasks.get(thread)
        if running is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(running)

    async def document(
        self, thread: str, feed: Feed | None = None, *, hold: bool = False
    ) -> dict[str, Any]:
        """The thread's JSON document, read whole.

        The chain read is kept for later reads of only what is new: in `feed`, or with
        `hold` for the feed of a stream about to open (`watching` takes it).
        """
        snapshot = await self.agent.reader.asnapshot(thread)
        checkpoint_id = snapshot.config["configurable"].get("checkpoint_id")
        # Building the result of a long chain is work: done off the loop.
        result = await asyncio.to_thread(self.agent.reader.result_of, thread, snapshot)
        if feed is not None:
            feed.chain, feed.checkpoint_id = result.chain, checkpoint_id
        elif hold:
            self._held[thread] = (result.chain, checkpoint_id)
            while len(self._held) > MAX_HELD:  # streams asked for but never opened
                self._held.pop(next(iter(self._held)))
        return await asyncio.to_thread(self._document, result)

    async def _read_new(self, thread: str, feed: Feed) -> dict[str, Any] | None:
        """The document after reading only the steps written since the feed's last read.

        None when that cannot be done (nothing held yet, the held checkpoint is gone, or
        the run stands where only a whole read tells a breakpoint pause apart).
        """
        if feed.chain is None or feed.checkpoint_id is None:
            return None
        reader = self.agent.reader
        tail = await reader.steps_since(thread, feed.checkpoint_id, feed.chain)
        if tail is None:
            return None
        snapshot, steps = tail
        chain = feed.chain + steps
        snapshot = snapshot._replace(values={**snapshot.values, "chain": chain})
        result = reader.result_of(thread, snapshot)
        points = snapshot.values.get("breakpoints")
        if result.status == "running" and (points is None or points.before or points.after):
            return None  # a breakpoint pause looks like a running run without `next`
        feed.chain, feed.checkpoint_id = chain, snapshot.config["configurable"]["checkpoint_id"]
        return await asyncio.to_thread(self._document, result)

    async def queued(self, thread: str) -> bool:
        """Whether the start of `thread` waits: for this server's runner, or for a worker."""
        waiting = await self.queued_document(thread)
        return waiting is not None and waiting["status"] != "failed"

    async def queued_document(self, thread: str) -> dict[str, Any] | None:
        """What `GET /runs/T` says of a run with no checkpoint yet: "queued" while its start
        waits (here or for a worker), "failed" when its job failed before the run began,
        with the job (`waiting_doc`); None when the thread holds no run and no job."""
        if thread in self.tasks:
            detail = "this server is starting it"
            return {
                "thread_id": thread,
                "status": "queued",
                "steps": [],
                "pending": [],
                "detail": detail,
            }
        summary = await self._summary(thread)
        if summary is None or summary.job is None:
            return None
        return waiting_doc(summary)

    async def job_fields(self, thread: str) -> dict[str, Any]:
        """What the thread's job in the worker queue adds to its document (`job_fields`):
        its status and job while that job waits, runs, stalled, is retried or failed."""
        summary = await self._summary(thread)
        return {} if summary is None else job_fields(summary)

    async def _summary(self, thread: str) -> RunSummary | None:
        """The thread as `GET /runs` lists it, its job's word included (`RunReader.summary`)."""
        # An id that cannot name a run has no jobs; the read of the run that follows
        # refuses it with the rule (a 400), instead of the queue's database failing on it.
        if thread_id_problem(thread) is not None:
            return None
        return await asyncio.to_thread(self.agent.reader.summary, thread)

    async def answer_on_its_way(self, thread: str) -> bool:
        """Whether an answer to `thread`'s pause is being applied, here or by a worker."""
        if thread in self.resuming:
            return True
        return any(job.action == "resume" for job in await self._open_jobs(thread))

    async def _open_jobs(self, thread: str) -> list[JobInfo]:
        """The worker queue's unfinished jobs of `thread`."""
        # An id that cannot name a run has no jobs; the read of the run that follows
        # refuses it with the rule (a 400), instead of the queue's database failing on it.
        if self.jobs is None or thread_id_problem(thread) is not None:
            return []
        from thinkgraph.worker import open_jobs

        return await asyncio.to_thread(open_jobs, self.jobs.url, thread)

    @contextlib.asynccontextmanager
    async def watching(self, thread: str) -> AsyncIterator[Feed]:
        """The thread's feed, for as long as a stream reads it."""
        feed = self.feeds.setdefault(thread, Feed())
        held = self._held.pop(thread, None)
        if held is not None and feed.chain is None:
            feed.chain, feed.checkpoint_id = held
        feed.readers += 1
        if feed.poller is None:
            feed.poller = asyncio.create_task(self._poll(thread, feed))
        try:
            yield feed
        finally:
            feed.readers -= 1
            if feed.readers == 0:
                feed.poller.cancel()
                self.feeds.pop(thread, None)

    async def _poll(self, thread: str, feed: Feed) -> None:
        """Bump the feed when the thread moves without this server (a worker advances it).

        Reads only the latest checkpoint's id, never the chain; a run of this server
        bumps its feed itself, so its thread is not polled meanwhile.
        """
        last = await self.agent.acheckpoint_id(thread)
        while True:
            await asyncio.sleep(self.poll_s)
            if thread in self.tasks:
                continue
            current = await self.agent.acheckpoint_id(thread)
            if current != last:
                last = current
                feed.bump()

    async def latest(self, thread: str, feed: Feed) -> dict[str, Any] | None:
        """The thread's document at the feed's version; rebuilt once per change, shared."""
        async with feed.building:
            if feed.doc_version != feed.version:
                version = feed.version
                try:
                    feed.doc = await self._read_new(thread, feed) or await self.document(
                        thread, feed
                    )
                except ThreadNotFoundError:
                    feed.doc = None
                feed.doc_version = version
            return feed.doc


async def _announced(
    events: AsyncIterator[RunEvent], begun: asyncio.Future[None]
) -> AsyncIterator[RunEvent]:
    """`events`, telling `begun` when the first comes (the run is stored) or, failing
    before it, the error: the run was refused, and the caller says so (no event follows)."""
    try:
        async for event in events:
            if not begun.done():
                begun.set_result(None)
            yield event
    except Exception as exc:
        if begun.done():
            raise
        begun.set_exception(exc)
    finally:
        if not begun.done():
            begun.set_result(None)


def _queued(job: QueuedJob) -> dict[str, Any]:
    return {"thread_id": job.thread_id, "job_id": job.job_id, "queue": job.queue}
