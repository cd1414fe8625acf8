"""The run queue: runs and resumes handed to workers through Procrastinate on PostgreSQL.

A job names a thread and what to do with it: start a task, or continue with a person's
decisions. Jobs of one thread carry the thread id as their Procrastinate `lock`, so they
run one at a time, in order, on whichever worker is free. A paused run holds no job: the
job ends at the pause, and the answer, whenever it comes, is a new job.

A job that fails on a fault of the database or the network (the server restarting,
refusing connections, "too many clients") is retried with a growing wait (`RETRY`): the
run continues from its last checkpoint. After the last attempt the job is ``failed`` in
Procrastinate's table.

A worker notes each job it takes, and the error of each attempt that fails, in
thinkgraph's row of the run (`thinkgraph.storage.jobs`): every listing then shows the run
as queued, running, stalled, retrying or failed with that error, and an answer queued
without a queue goes to the queue of the worker that last advanced the run.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from thinkgraph import metrics
from thinkgraph.errors import ConfigError, StorageError, ThreadBusyError, ThreadExistsError
from thinkgraph.hitl import describe_answer
from thinkgraph.storage.answers import Answer, claiming, release
from thinkgraph.storage.checkpointers import is_postgres_url
from thinkgraph.storage.jobs import (
    ADVANCE_TASK,
    HAND_BACK_SQL,
    RECORD_ERROR_SQL,
    RECORD_TAKEN_SQL,
    RUN_JOBS_DDL,
    RUN_QUEUE_SQL,
)
from thinkgraph.storage.urls import split_pool_size
from thinkgraph.types import check_thread_id
from thinkgraph.views.logs import log_job, mask_text
from thinkgraph.worker.drain import handed_back, was_handed_back

if TYPE_CHECKING:
    import procrastinate
    from procrastinate.jobs import Job

    from thinkgraph.agent import Agent

__all__ = [
    "ADVANCE_TASK",
    "DEFAULT_QUEUE",
    "QUEUE_POOL_NAME",
    "QUEUE_POOL_SIZE",
    "RETRY",
    "JobInfo",
    "QueuedJob",
    "RetryPolicy",
    "RunQueue",
    "build_app",
    "ensure_schema",
    "is_connection_fault",
    "open_jobs",
    "queue_connections",
    "retry_decision_seconds",
]

logger = logging.getLogger("thinkgraph.worker")

DEFAULT_QUEUE = "thinkgraph"
"""The queue jobs go to when none is named."""

RUNNER_KEY = "thinkgraph_runner"
"""Where a worker puts its runner in the job context (`additional_context`)."""

QUEUE_POOL_NAME = "thinkgraph-queue"
"""The job queue's pool, as psycopg_pool's log lines name it (the store's is
``thinkgraph-store``)."""

QUEUE_POOL_SIZE = 4
"""The connections of a worker's job queue pool (Procrastinate's default), whatever its
concurrency; Procrastinate's listener for new jobs holds one more."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When a failed job runs again (see `retry_decision_seconds`)."""

    busy_retries: int = 120
    """Retries of a job whose thread another process holds: one a second, two minutes."""
    busy_wait_s: int = 1
    connection_retries: int = 10
    """Retries of a job that met a database or network fault: 1, 2, 4, … s apart, at most
    `connection_wait_cap_s` apart (about four minutes in all); then it fails for good."""
    connection_wait_cap_s: int = 60


RETRY = RetryPolicy()


# SQLSTATEs of a connection lost, refused or not yet possible: class 08, too many
# connections, the server shutting down or starting up, and out of connection slots.
_TRANSIENT_STATES = ("08", "53300", "57P01", "57P02", "57P03")


def is_connection_fault(exc: BaseException) -> bool:
    """Whether `exc`, or what it wraps, is a connection fault of the database (psycopg's
    OperationalError with no SQLSTATE, or one of a lost or refused connection)."""
    psycopg = sys.modules.get("psycopg")
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if psycopg is not None and isinstance(current, psycopg.OperationalError):
            state = current.sqlstate
            return state is None or state.startswith(_TRANSIENT_STATES)
        if isinstance(current, ConnectionError | TimeoutError):
            return True
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return False


def retry_decision_seconds(exc: BaseException, job: Any, policy: RetryPolicy = RETRY) -> int | None:
    """Seconds until a job that failed with `exc` runs again, or None: it fails for good.

    A run its worker handed back (`thinkgraph.worker.drain`): at once, and without using
    up an attempt (the worker takes back the one Procrastinate's retry adds), so the
    limits below count real faults only. A busy thread
    (another process advances it): every `busy_wait_s`. A fault of the database or network
    connection (`psycopg.OperationalError` of a lost, refused or exhausted connection, also
    behind the `StorageError` that words it): 1, 2, 4, … s, capped. Anything else is the
    run's own failure, and is not retried.
    """
    if was_handed_back(exc, job):
        return 0
    attempts = int(job.attempts)
    if isinstance(exc, ThreadBusyError):
        return policy.busy_wait_s if attempts < policy.busy_retries else None
    if is_connection_fault(exc):
        if attempts >= policy.connection_retries:
            return None
        return int(min(2**attempts, policy.connection_wait_cap_s))
    return None


def _retry_strategy() -> Any:
    from procrastinate import BaseRetryStrategy, RetryDecision

    class Retry(BaseRetryStrategy):
        def get_retry_decision(self, *, exception: BaseException, job: Job) -> Any:
            seconds = retry_decision_seconds(exception, job)
            return None if seconds is None else RetryDecision(retry_in={"seconds": seconds})

    return Retry()


def queue_connections() -> int:
    """The connections a worker's job queue holds at most: its pool and its listener."""
    return QUEUE_POOL_SIZE + 1


@dataclass(frozen=True, slots=True)
class QueuedJob:
    """A job handed to the workers."""

    job_id: int
    """Procrastinate's id of the job."""
    thread_id: str
    """The run it advances."""
    queue: str
    """The queue it waits in: a worker started with `--queue` of that name takes it."""


@dataclass(frozen=True, slots=True)
class JobInfo:
    """A job not finished yet, as `open_jobs` reads it from the queue."""

    job_id: int
    thread_id: str
    queue: str
    action: str
    """"start" (a submitted task) or "resume" (an answer, or a continuation)."""
    running: bool
    """A worker has it (else it waits for one)."""


def open_jobs(url: str, thread_id: str | None = None) -> list[JobInfo]:
    """The thinkgraph jobs that wait for a worker or run on one, oldest first.

    Read with Procrastinate's job manager. Empty when the database at `url` has no job
    queue.

    Raises:
        ThreadIdError: `thread_id` cannot name a run (see `check_thread_id`).
    """
    from psycopg_pool import NullConnectionPool

    if thread_id is not None:
        check_thread_id(thread_id)

    # One connection per query, opened in this thread: an unreachable server fails at
    # once with psycopg's own error (a pool that waits for its first connection would
    # time out instead).
    conninfo, _ = split_pool_size(url)
    pool = NullConnectionPool(conninfo, max_size=1, open=False, kwargs=_CONNECTION_KWARGS)
    with pool, build_app(url).open(pool) as app:
        if not app.check_connection():
            return []
        found: dict[int, JobInfo] = {}
        # "todo" before "doing": a job that starts between the two reads is seen twice,
        # and the second read (running) wins; read the other way round, it would be missed.
        for status in ("todo", "doing"):
            for job in app.job_manager.list_jobs(task=ADVANCE_TASK, status=status, lock=thread_id):
                if job.id is not None:
                    found[job.id] = _job_info(job.id, job, running=status == "doing")
    return [found[job_id] for job_id in sorted(found)]


def _job_info(job_id: int, job: Job, *, running: bool) -> JobInfo:
    arguments = job.task_kwargs
    return JobInfo(
        job_id=job_id,
        thread_id=str(arguments.get("thread_id", "")),
        queue=job.queue,
        action="start" if arguments.get("task") is not None else "resume",
        running=running,
    )


async def _advance(
    context: Any,
    thread_id: str,
    task: str | None = None,
    decisions: Any = None,
    at: str | None = None,
    answer: str | None = None,
) -> str:
    runner = context.additional_context.get(RUNNER_KEY)
    if runner is None:
        raise RuntimeError(
            f"{ADVANCE_TASK} jobs run in a thinkgraph worker: start one with "
            "`thinkgraph worker` or thinkgraph.worker.run_worker"
        )
    job = getattr(context, "job", None)
    metrics.count_job_start(getattr(job, "attempts", 0))
    started = time.perf_counter()
    noted = {"thread_id": thread_id, "queue": context.job.queue, "job_id": context.job.id}
    try:
        # Held: its worker's heartbeat goes on while it runs, and a stop can hand it back.
        with log_job(context.job.id, thread_id), runner.holdings.hold(context.job):
            # Where the run was last taken from: where a worker listens for its answer.
            await context.app.connector.execute_query_async(RECORD_TAKEN_SQL, **noted)
            by = f"job {context.job.id} on queue {context.job.queue!r}"
            status: str = await runner.advance(
                thread_id, task=task, decisions=decisions, at=at, answer=answer, by=by
            )
    except ThreadBusyError:
        metrics.count_job_end("busy", time.perf_counter() - started)
        raise
    except asyncio.CancelledError:
        if runner.holdings.handing_back or _stopped_by_shutdown(context):
            handed_back(context.job.id)  # its job goes back to the queue at once
            await _uncount(context)
            metrics.count_job_end("handed_back", time.perf_counter() - started)
            with log_job(context.job.id, thread_id):
                logger.info(
                    "thread %s: handed back at its last checkpoint; the next worker "
                    "continues it from there",
                    thread_id,
                )
        raise
    except BaseException as exc:
        if isinstance(exc, Exception):
            metrics.count_job_end("error", time.perf_counter() - started, exc)
            await _note_error(context, noted, exc)
            if answer is not None and at is not None and retry_decision_seconds(exc, job) is None:
                await _give_back(runner, thread_id, at, answer)
        raise
    metrics.count_job_end(status, time.perf_counter() - started)
    return status


async def _uncount(context: Any) -> None:
    """Keep the retry of a job handed back from counting as an attempt (`HAND_BACK_SQL`):
    a job handed back at every deploy keeps all its retries for real faults. A database
    that does not answer now leaves it counted (the job is retried all the same)."""
    try:
        await context.app.connector.execute_query_async(HAND_BACK_SQL, job_id=context.job.id)
    except Exception as exc:  # best effort, as the job goes back anyway
        logger.debug("job %s: its hand-back counts as an attempt: %s", context.job.id, exc)
    except asyncio.CancelledError:  # cancelled again meanwhile: likewise
        logger.debug("job %s: its hand-back counts as an attempt", context.job.id)


def _stopped_by_shutdown(context: Any) -> bool:
    """Whether Procrastinate cancelled the job because its worker's shutdown timeout passed."""
    from procrastinate.job_context import AbortReason

    return bool(context.abort_reason() == AbortReason.SHUTDOWN)


async def _give_back(runner: Any, thread_id: str, at: str, answer_id: str) -> None:
    """The claim of an answer whose job failed for good: given back, so the pause can be
    answered again (a run that moved past it refuses the next answer anyway)."""
    mine = Answer(thread_id, at, "", "", answer_id=answer_id)
    try:
        await asyncio.to_thread(release, runner.agent.driver.saver, mine)
    except Exception:  # the store is down too: the claim stays, and names this job
        logger.warning("thread %s: could not give back the failed job's answer", thread_id)


ERROR_CHARS = 300
"""The most of a failed job's error kept for listings (its first line, masked)."""


def job_error(exc: BaseException) -> str:
    """A job's error as listings show it: its type and first line, masked as log lines
    are, cut to `ERROR_CHARS`."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0].strip()}" if lines else type(exc).__name__
    text = mask_text(text)
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


async def _note_error(context: Any, noted: dict[str, Any], exc: BaseException) -> None:
    """Keep the error of a failed attempt for listings; a database that is down keeps it
    from being noted, and the job's own failure is what matters then."""
    try:
        await context.app.connector.execute_query_async(
            RECORD_ERROR_SQL, **noted, error=job_error(exc)
        )
    except Exception as fault:  # best effort: the job's own failure goes on
        logger.warning("could not note the error of job %s: %s", noted["job_id"], fault)


def build_app(url: str) -> procrastinate.App:
    """A Procrastinate app on the PostgreSQL database at `url`, with thinkgraph's task.

    Raises:
        ConfigError: Procrastinate is not installed (the ``worker`` extra).
    """
    try:
        import procrastinate
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ConfigError("workers need Procrastinate: pip install 'thinkgraph[worker]'") from exc
    conninfo, _ = split_pool_size(url)  # the store's own pool size is not the queue's
    connector = procrastinate.PsycopgConnector(
        conninfo=conninfo,
        min_size=1,
        max_size=QUEUE_POOL_SIZE,
        kwargs=_CONNECTION_KWARGS,
        name=QUEUE_POOL_NAME,  # psycopg_pool's lines about it say so
    )
    app = procrastinate.App(connector=connector)
    app.task(name=ADVANCE_TASK, pass_context=True, retry=_retry_strategy())(_advance)
    return app


_CONNECTION_KWARGS: dict[str, Any] = {
    "fallback_application_name": "thinkgraph",
    "connect_timeout": 10,
}
"""How the queue's connections show in ``pg_stat_activity`` unless the URL names them."""


def ensure_schema(url: str) -> None:
    """Create Procrastinate's tables in the database at `url` unless they are there.

    Raises:
        StorageError: the database cannot be reached or the schema cannot be created.
    """
    import psycopg
    from procrastinate import schema

    try:
        conninfo, _ = split_pool_size(url)
        with (
            psycopg.connect(conninfo, autocommit=True, **_CONNECTION_KWARGS) as conn,
            conn.transaction(),
        ):
            # One creator at a time when several workers start together.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('thinkgraph:schema'))")
            found = conn.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()
            if found is None or found[0] is None:
                conn.execute(schema.SchemaManager.get_schema())  # type: ignore[arg-type]
            conn.execute(RUN_JOBS_DDL)  # type: ignore[arg-type]
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StorageError(f"cannot prepare the job queue in {url}: {first}") from exc


def queue_url(agent: Agent, url: str | None) -> str:
    """The PostgreSQL URL of the queue: `url`, or else the agent's store.

    Raises:
        ConfigError: it is not a PostgreSQL URL, or its ``?pool_size=`` is not a number of
            connections.
    """
    chosen = url or agent.store_url
    if not chosen or not is_postgres_url(chosen):
        raise ConfigError(
            "workers share runs through PostgreSQL: give the agent a postgresql://… store "
            f"(it has {chosen or 'a saver object'}), or pass url= to RunQueue"
        )
    try:
        split_pool_size(chosen)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return chosen


def encode_decisions(decisions: Any) -> Any:
    """Decisions as JSON for a job: a mapping of call id to decision, or an answer text."""
    if isinstance(decisions, Mapping):
        return {
            str(call_id): value.model_dump() if isinstance(value, BaseModel) else value
            for call_id, value in decisions.items()
        }
    return decisions


class RunQueue:
    """Hands runs to workers: `submit` a task, `resume` a paused run with decisions.

    Checks happen here, where the request is made: a thread that already holds a run, or
    decisions that do not fit what a paused run waits for, are refused with the same
    errors `Agent.run` and `Agent.resume` raise, and nothing is queued.

    Example:
        >>> with RunQueue(agent) as queue:  # doctest: +SKIP
        ...     job = queue.submit("Summarize the report", thread_id="r1")
        ...     # later, after `thinkgraph worker` ran it and it paused for approval:
        ...     queue.resume("r1", decisions={call_id: Approve()})
    """

    def __init__(self, agent: Agent, queue: str = DEFAULT_QUEUE, *, url: str | None = None):
        """
        Args:
            agent: the agent whose runs these are (its store must be PostgreSQL); used
                to check requests before they are queued.
            queue: the queue new runs go to (workers take jobs from the queues they serve);
                an answer goes to the queue of the worker that last advanced its run,
                and here only when none did (see `resume`).
            url: the database of the queue, when not the agent's store.
        """
        self.agent = agent
        self.queue = queue
        self.url = queue_url(agent, url)
        self._app: procrastinate.App | None = None

    def _opened(self) -> procrastinate.App:
        if self._app is None:
            ensure_schema(self.url)
            self._app = build_app(self.url).open()
        return self._app

    def close(self) -> None:
        """Close the queue's connection (the agent is left open)."""
        if self._app is not None:
            self._app.close()
            self._app = None

    def __enter__(self) -> RunQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, task: str, thread_id: str) -> QueuedJob:
        """Queue a new run of `task` on `thread_id`.

        Raises:
            ThreadExistsError: the thread already holds a run (queue a `resume` instead),
                or a run of it already waits in the queue.
        """
        if self.agent.checkpoint_id(thread_id) is not None:
            raise ThreadExistsError(
                f"thread {thread_id!r} already holds a run; continue it with "
                f"resume({thread_id!r}) or submit the task on a new thread id"
            )
        try:
            return self._defer(thread_id, self.queue, task=task)
        except ThreadBusyError as exc:
            raise ThreadExistsError(
                f"a run of thread {thread_id!r} already waits in the queue; submit the task "
                "on a new thread id"
            ) from exc

    def resume(
        self,
        thread_id: str,
        decisions: Any = None,
        *,
        at: str | None = None,
        queue: str | None = None,
    ) -> QueuedJob:
        """Queue the continuation of a run: with a paused run's answer, or after a crash.

        The request is checked as `Agent.resume` checks it (`Agent.check_resume`), the
        run's graph included, and nothing is queued when it is refused. An answer claims
        the pause (`thinkgraph.storage.answers`) in the transaction that queues its job:
        a second answer to the same pause is refused, naming the first, whether its job
        still waits, runs, or has run. `at`: the paused checkpoint the answer was given
        for (None: the run's latest). The job goes to `queue`, else to the run's queue
        (`run_queue`: where a worker took its last job), else to this queue.

        Raises:
            ThreadNotFoundError, NotPausedError, ResumeValueError: as `Agent.resume`.
            GraphAddressError: the run was recorded on another graph than the agent's.
            AnsweredError: another answer to the pause was given first (queued or
                applied): it is named, and nothing is queued.
            ThreadBusyError: a job for the thread already waits in the queue.
        """
        at = self.agent.check_resume(thread_id, decisions, at=at)
        chosen = queue or self.run_queue(thread_id) or self.queue
        return self._defer(thread_id, chosen, decisions=encode_decisions(decisions), at=at)

    async def aresume(
        self,
        thread_id: str,
        decisions: Any = None,
        *,
        queue: str | None = None,
        at: str | None = None,
    ) -> QueuedJob:
        """`resume` from async code: checked with `Agent.acheck_resume` on the caller's
        loop; only the queue's reads and the job's insertion run in a thread. Raises what
        `resume` raises. `at`: the paused checkpoint the answer was given for."""
        at = await self.agent.acheck_resume(thread_id, decisions, at=at)
        arguments = {"decisions": encode_decisions(decisions), "at": at}

        def defer() -> QueuedJob:
            chosen = queue or self.run_queue(thread_id) or self.queue
            return self._defer(thread_id, chosen, **arguments)

        return await asyncio.to_thread(defer)

    def run_queue(self, thread_id: str) -> str | None:
        """The queue whose worker took the run's latest job, where its answers go unless
        told otherwise; None when no worker of this version advanced it."""
        connector = self._opened().connector.get_sync_connector()
        rows = connector.execute_query_all(RUN_QUEUE_SQL, thread_id=thread_id)
        return str(rows[0]["queue_name"]) if rows else None

    def _defer(self, thread_id: str, queue: str | None = None, **arguments: Any) -> QueuedJob:
        from procrastinate.exceptions import AlreadyEnqueued

        queue = queue or self.queue
        task = self._opened().tasks[ADVANCE_TASK]
        try:
            if arguments.get("at") is None:
                job_id = self._deferrer(task, thread_id, queue).defer(
                    thread_id=thread_id, **arguments
                )
                return QueuedJob(job_id, thread_id, queue)
            # An answer: it claims the pause in the store, and the job is inserted in the
            # claim's own transaction (when the queue is in the store's database): of two
            # answers, only the first is queued, and the other is refused naming it.
            answer = Answer(
                thread_id,
                str(arguments["at"]),
                describe_answer(arguments.get("decisions")),
                f"a worker on queue {queue!r}",
            )
            with claiming(self.agent.driver.saver, answer) as claim:
                same = self.url == self.agent.store_url
                deferrer = self._deferrer(
                    task, thread_id, queue, claim.connection if same else None
                )
                job_id = deferrer.defer(thread_id=thread_id, answer=answer.answer_id, **arguments)
                claim.relabel(f"job {job_id} on queue {queue!r}")
        except AlreadyEnqueued as exc:
            raise ThreadBusyError(
                f"a job for thread {thread_id!r} already waits in the queue; a worker on "
                f"queue {queue!r} will run it"
            ) from exc
        return QueuedJob(job_id, thread_id, queue)

    def _deferrer(self, task: Any, thread_id: str, queue: str, connection: Any = None) -> Any:
        # `lock`: a thread's jobs run one at a time, in order. `queueing_lock`: at most one
        # of them waits at a time.
        return task.configure(
            lock=thread_id, queueing_lock=thread_id, queue=queue, connection=connection
        )
