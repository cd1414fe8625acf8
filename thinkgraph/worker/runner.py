"""A worker: takes thinkgraph jobs from a queue and advances their runs.

Workers are stateless: every run lives in the PostgreSQL checkpoint store, so any worker
can take any job. Two locks keep one thread in one pair of hands: Procrastinate runs the
jobs of a thread one at a time (each carries the thread id as its `lock`), and the worker
holds the thread's lease (`thinkgraph.storage.lease`: PostgreSQL's advisory lock, the one
every `Agent` takes) while it advances it, so even a resume started outside the queue (the
CLI, the HTTP server, another program) cannot interleave.

A worker killed mid-run (SIGKILL, a lost machine) stops sending heartbeats; another
worker finds its job stalled and retries it. The retry continues the run from its last
checkpoint: only the node in flight runs again, and a tool with side effects sees the same
idempotency key.

A worker's connections to PostgreSQL are bounded whatever its concurrency: the store's
pool (``?pool_size=``, 8 by default), one session for every thread lease it holds, and
the job queue's pool and listener. It logs them when it starts (`WorkerConnections`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from thinkgraph.agent import Agent
from thinkgraph.errors import AnsweredError, ConfigError, ThreadNotFoundError
from thinkgraph.hitl import describe_answer
from thinkgraph.storage.answers import Answer
from thinkgraph.worker.drain import Holdings
from thinkgraph.worker.health import Health, listen, serve_health
from thinkgraph.worker.logs import fault_text, protect_job_logs
from thinkgraph.worker.queue import (
    DEFAULT_QUEUE,
    RUNNER_KEY,
    build_app,
    ensure_schema,
    queue_connections,
    queue_url,
)

if TYPE_CHECKING:
    import procrastinate

__all__ = [
    "DEFAULT_CONCURRENCY",
    "ThreadRunner",
    "WorkerConnections",
    "check_worker_options",
    "run_worker",
    "worker_connections",
]

DEFAULT_CONCURRENCY = 10
"""Runs one worker advances at once unless told otherwise."""

logger = logging.getLogger("thinkgraph.worker")


@dataclass(frozen=True, slots=True)
class WorkerConnections:
    """The PostgreSQL connections one worker holds at most, whatever its concurrency."""

    store: int
    """The checkpoint store's pool (``?pool_size=N`` in the store URL)."""
    leases: int
    """The one session that holds every thread lease of the process."""
    queue: int
    """Procrastinate's pool and its listener for new jobs."""

    @property
    def total(self) -> int:
        return self.store + self.leases + self.queue

    def __str__(self) -> str:
        return (
            f"connections: store pool {self.store}, leases {self.leases}, queue {self.queue} "
            f"(at most {self.total} to PostgreSQL)"
        )


def worker_connections(agent: Agent) -> WorkerConnections:
    """What `agent`'s worker connects with: its store opened, its leases' kind looked at."""
    from thinkgraph.storage.lease import AdvisoryLeases, leases_for

    saver = agent.driver.saver
    # A saver of the caller's: its pool's size, or its one connection.
    conn = getattr(saver, "conn", None)
    store = int(getattr(saver, "pool_size", None) or getattr(conn, "max_size", None) or 1)
    leases = 1 if isinstance(leases_for(saver), AdvisoryLeases) else 0
    return WorkerConnections(store, leases, queue_connections())


class ThreadRunner:
    """What a worker does with one job: advance the job's thread with the worker's agent."""

    def __init__(self, agent: Agent, url: str) -> None:
        self.agent = agent
        self.url = url
        self.holdings = Holdings()
        """The jobs it runs now (`thinkgraph.worker.drain`)."""

    async def advance(
        self,
        thread_id: str,
        *,
        task: str | None = None,
        decisions: Any = None,
        at: str | None = None,
        answer: str | None = None,
        by: str = "a worker",
    ) -> str:
        """Start or continue `thread_id`; return the run's status when it stops or pauses.

        `at` is the checkpoint a resume job was queued against, `answer` the id of the
        claim its decisions made on that pause when they were queued (see
        `thinkgraph.storage.answers`), `by` the job, for messages. A job retried after its
        worker died may find the run past that point: it then only continues a run left
        unfinished, and never applies its decisions to a later pause. A job whose pause
        another answer claimed first ends quietly, with one line in the log.

        Raises:
            ThreadBusyError: another process holds the thread; the job is retried a second
                later.
            GraphAddressError: the job would continue a run recorded on another graph
                than the agent's: the run driver refuses it before anything runs (see
                `thinkgraph.graphs.address.check_continues_on_its_graph`).
        """
        # One lease around the check and the step it decides; the agent's own calls inside
        # go through it rather than wait for themselves.
        agent = self.agent
        async with agent.alease(thread_id):
            current = await agent.acheckpoint_id(thread_id)
            if current is None:
                if task is None:
                    raise ThreadNotFoundError(f"no run is stored under thread {thread_id!r}")
                logger.info("thread %s: starting", thread_id)
                return (await agent.arun(task, thread_id=thread_id)).status
            # A run goes on only on the graph it recorded: the driver refuses another
            # (`GraphAddressError`) before anything runs, and the job fails saying which
            # graph the run needs.
            claim = None
            if task is None and at is not None and decisions is not None and answer:
                what = describe_answer(decisions)
                claim = Answer(thread_id, at, what, by, answer)
            if task is None and current == at:
                logger.info("thread %s: resuming at %s", thread_id, at)
                try:
                    return (await agent.aresume(thread_id, decisions, answer=claim)).status
                except AnsweredError as exc:
                    logger.info("thread %s: this job's answer is dropped: %s", thread_id, exc)
                    return (await agent.aresult(thread_id)).status
            status = (await agent.aresult(thread_id)).status
            if claim is not None:
                won = await agent.driver.store.aanswer_of(thread_id, claim.checkpoint_id)
                if won is not None and won.answer_id != claim.answer_id:
                    logger.info(
                        "thread %s: this job's answer is dropped: %s", thread_id, won.refusal()
                    )
                    if status != "running":
                        return status
            if status != "running":
                logger.info("thread %s: %s already, nothing to do", thread_id, status)
                return status
            logger.info("thread %s: continuing an unfinished run", thread_id)
            return (await agent.aresume(thread_id)).status


async def _retry_stalled(
    app: procrastinate.App,
    queue: str,
    stalled_after_s: float,
    every_s: float,
    holdings: Holdings | None = None,
) -> None:
    """Put back the jobs of workers that stopped sending heartbeats, now and then; never
    one this process runs (`holdings`), nor one of its own Procrastinate worker, whatever
    its heartbeat says (it is stale right after the database comes back). A job that
    cannot be put back (it ended meanwhile) is one line; the next check looks again."""
    while True:
        try:
            stalled = await app.job_manager.get_stalled_jobs(
                queue=queue, seconds_since_heartbeat=stalled_after_s
            )
            mine = holdings.job_ids() if holdings is not None else set()
            ours = holdings.own_worker_ids() if holdings is not None else set()
            for job in stalled:
                if job.id in mine or job.worker_id in ours:
                    continue
                logger.warning("job %s of a stalled worker: retrying it", job.id)
                try:
                    await app.job_manager.retry_job(job)
                except Exception as exc:
                    logger.warning(
                        "job %s of a stalled worker was not put back: %s", job.id, fault_text(exc)
                    )
        except Exception:  # a database hiccup must not stop the worker
            logger.exception("could not check for stalled jobs")
        await asyncio.sleep(every_s)


RESTART_WAIT_CAP_S = 30.0
"""The longest wait before a worker stopped by a database fault starts again."""


async def _work_through_faults(
    app: procrastinate.App,
    options: dict[str, Any],
    wait: bool,
    handle_signals: bool,
    holdings: Holdings | None = None,
) -> None:
    """Run Procrastinate's worker until asked to stop, starting it again after a database
    fault stopped it.

    Procrastinate stops its worker when the database goes away under it (its listener,
    heartbeat or job fetch fails); the jobs it was running finish first (or fail and are
    retried). A worker that serves a queue for good waits 1, 2, 4, … s (at most
    `RESTART_WAIT_CAP_S`) and starts again, as often as it takes; one told to stop when
    the queue is empty (`wait=False`) gives up after `RETRY.connection_retries` faults in a
    row. SIGINT or SIGTERM stops it gracefully: the runs in flight finish (or are handed
    back when the shutdown timeout passes); a second one hands them back at once
    (`Holdings.hand_back`), and a third ends the process as the signal does by default.
    """
    import signal

    from thinkgraph.worker.queue import RETRY, is_connection_fault

    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    current: asyncio.Task[None] | None = None
    signals = (signal.SIGINT, signal.SIGTERM)

    def stop() -> None:
        if stopping.is_set():  # the second signal
            for number in signals:  # a third one: the default, at once
                loop.remove_signal_handler(number)
            if holdings is not None and len(holdings):
                count = holdings.hand_back()
                logger.warning(
                    "stopping now: %d run(s) handed back at their last checkpoint", count
                )
            return
        stopping.set()
        if holdings is not None and len(holdings):
            timeout = options.get("shutdown_graceful_timeout")
            limit = "" if timeout is None else f" (or are handed back after {timeout:g} s)"
            logger.info(
                "draining: %d run(s) in flight finish first%s; a second signal hands them back now",
                len(holdings),
                limit,
            )
        if current is not None:
            current.cancel()  # Procrastinate's worker then stops gracefully

    if handle_signals:
        for number in signals:
            loop.add_signal_handler(number, stop)
    delay, faults = 1.0, 0
    try:
        while not stopping.is_set():
            started = loop.time()
            current = asyncio.create_task(app.run_worker_async(**options))
            try:
                if not await _ends_or_stuck(current, stopping, holdings):
                    return  # stopped, nothing held, and Procrastinate waits on the database
                current.result()
                fault: BaseException | None = None
            except asyncio.CancelledError:
                if stopping.is_set():
                    return
                raise
            except Exception as exc:
                if not is_connection_fault(exc):
                    raise
                fault = exc
            finally:
                current = None
            if stopping.is_set() or (fault is None and not wait):
                return
            faults = faults + 1 if loop.time() - started < 60 else 1
            if not wait and faults > RETRY.connection_retries:
                assert fault is not None
                raise fault
            if loop.time() - started >= 60:
                delay = 1.0
            reason = str(fault).strip().splitlines()[0] if fault else "its database went away"
            logger.warning(
                "the worker stopped (%s); starting it again in %.0f s", reason or fault, delay
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), delay)
            delay = min(delay * 2, RESTART_WAIT_CAP_S)
    finally:
        if handle_signals:
            for number in signals:  # those still ours
                loop.remove_signal_handler(number)


STOP_WITHOUT_DATABASE_S = 3.0
"""How long a stopped worker that holds no run waits for Procrastinate to end before it
leaves without it (Procrastinate's last steps wait on a database that may be gone)."""


async def _ends_or_stuck(
    task: asyncio.Task[None], stopping: asyncio.Event, holdings: Holdings | None
) -> bool:
    """Wait for Procrastinate's worker `task` to end: True when it did.

    Once the worker is stopped, its loop ends after its current fetch and it unregisters,
    both through the database; a database that is down makes each wait for its pool's
    timeout. A worker that holds no run has nothing left to finish, so after
    `STOP_WITHOUT_DATABASE_S` it cancels those steps (False) and the process ends; one
    that holds runs waits for them (they are handed back at the shutdown timeout or at a
    second signal).
    """
    stop = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    idle_s, step_s = 0.0, 0.25
    while not task.done():
        await asyncio.wait({task}, timeout=step_s)
        held = holdings is not None and len(holdings) > 0
        idle_s = 0.0 if held or task.done() else idle_s + step_s
        if idle_s >= STOP_WITHOUT_DATABASE_S:
            task.cancel()  # a second cancel reaches its last steps, which wait on the database
            await asyncio.wait({task}, timeout=1.0)
            task.add_done_callback(_forget)
            logger.warning(
                "stopped without the database: it did not answer in %.0f s, and no run "
                "was in flight",
                STOP_WITHOUT_DATABASE_S,
            )
            return False
    return True


def _quiet_connection_faults(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's handler of errors nobody awaited: a database connection fault (a task
    Procrastinate left behind at a stop without the database) is a debug line."""
    from thinkgraph.worker.queue import is_connection_fault

    error = context.get("exception")
    if error is not None and is_connection_fault(error):
        logger.debug("left behind at the stop: %s", context.get("message"))
        return
    loop.default_exception_handler(context)


def _forget(task: asyncio.Task[None]) -> None:
    """Collect the outcome of a Procrastinate task left behind at a stop."""
    if not task.cancelled():
        task.exception()


def check_worker_options(
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    heartbeat_s: float = 10.0,
    stalled_after_s: float = 30.0,
    shutdown_timeout_s: float | None = None,
) -> None:
    """Refuse worker options that cannot work (`run_worker` checks them; so does the CLI,
    before it loads anything).

    Raises:
        ConfigError: `concurrency` is below 1, `stalled_after_s` is under two heartbeats
            (a live worker would be taken for dead), or `shutdown_timeout_s` is negative.
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency={concurrency}: a worker advances at least 1 run at once")
    if stalled_after_s < 2 * heartbeat_s:
        raise ConfigError(
            f"stalled-after {stalled_after_s:g} s is under two heartbeats ({heartbeat_s:g} s "
            "apart): a live worker would be taken for dead; give stalled-after three "
            f"heartbeats or more (e.g. {3 * heartbeat_s:g} s), or a shorter heartbeat"
        )
    if shutdown_timeout_s is not None and shutdown_timeout_s < 0:
        raise ConfigError(
            f"shutdown_timeout_s={shutdown_timeout_s}: give the seconds a stopped worker's runs "
            "may take to finish (0 or more), or None to wait for them"
        )


def run_worker(
    agent: Agent | Callable[[], Agent],
    *,
    queue: str = DEFAULT_QUEUE,
    url: str | None = None,
    name: str | None = None,
    heartbeat_s: float = 10.0,
    stalled_after_s: float = 30.0,
    shutdown_timeout_s: float | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    wait: bool = True,
    install_signal_handlers: bool = True,
    metrics: socket.socket | tuple[str, int] | None = None,
) -> None:
    """Take jobs from `queue` and advance up to `concurrency` runs at once, until stopped.

    Run as many workers (processes, machines) as the load needs; they share the store.

    Args:
        agent: the agent that runs the jobs, or a function that makes it (called once).
        queue: the queue to serve.
        url: the queue's database, when not the agent's store.
        name: the worker's name in Procrastinate's tables and logs.
        heartbeat_s: how often the worker says it is alive.
        stalled_after_s: a worker silent for this long is taken for dead, and its job is
            retried by another. A stopped worker keeps its heartbeat while its runs finish.
        shutdown_timeout_s: once stopped, how long the runs in flight may take to finish;
            then they are cancelled and handed back at their last checkpoint (another
            worker continues each, running its tool call in flight again with the same
            idempotency key). None: as long as they take; a second signal hands them back
            at once.
        concurrency: how many runs this worker advances at once. Runs wait on models and
            tools, so one process holds many; jobs of one thread still run one at a time
            and in order (each job carries the thread id as its lock).
        wait: keep waiting for jobs (True), or stop once the queue is empty (False).
        install_signal_handlers: stop gracefully on SIGINT / SIGTERM.
        metrics: answer /healthz, /readyz and /metrics (`thinkgraph.worker.health`) on
            this bound socket, or this (host, port); None: not at all.

    Raises:
        ConfigError: the agent's store is not PostgreSQL, Procrastinate is missing,
            `concurrency` is below 1, `stalled_after_s` is under two heartbeats, or
            `shutdown_timeout_s` is negative.
        StorageError: the database cannot be reached.
    """
    check_worker_options(
        concurrency=concurrency,
        heartbeat_s=heartbeat_s,
        stalled_after_s=stalled_after_s,
        shutdown_timeout_s=shutdown_timeout_s,
    )
    chosen = agent if isinstance(agent, Agent) else agent()
    database = queue_url(chosen, url)
    ensure_schema(database)
    runner = ThreadRunner(chosen, database)
    app = build_app(database)
    worker_name = name or "thinkgraph-worker"
    protect_job_logs(worker_name)  # no job argument in clear, whoever set the logging up
    listening = listen(*metrics) if isinstance(metrics, tuple) else metrics
    logger.info("%s", worker_connections(chosen))

    options: dict[str, Any] = {
        "queues": [queue],
        "name": worker_name,
        "wait": wait,
        "concurrency": concurrency,
        "update_heartbeat_interval": heartbeat_s,
        "stalled_worker_timeout": stalled_after_s,
        # Procrastinate's: then it cancels the jobs, and `_advance` hands them back.
        "shutdown_graceful_timeout": shutdown_timeout_s,
        "additional_context": {RUNNER_KEY: runner},
        "install_signal_handlers": False,  # ours, below: they tell a stop from a fault
        "fetch_job_polling_interval": min(1.0, heartbeat_s),
    }

    async def serve() -> None:
        asyncio.get_running_loop().set_exception_handler(_quiet_connection_faults)
        probes = None
        if listening is not None:
            health = Health(chosen, queue_url=database, queues=(queue,))
            probes = await serve_health(health, listening)
        holdings = runner.holdings
        async with app.open_async(), probes or contextlib.nullcontext():
            every_s = max(stalled_after_s / 3, 0.5)
            side = [
                asyncio.create_task(_retry_stalled(app, queue, stalled_after_s, every_s, holdings)),
                asyncio.create_task(holdings.keep_alive(app, heartbeat_s)),
            ]
            try:
                await _work_through_faults(app, options, wait, install_signal_handlers, holdings)
            finally:
                for task in side:
                    task.cancel()
                await asyncio.gather(*side, return_exceptions=True)

    asyncio.run(serve())
