"""A worker that drains without fighting itself, and hands its runs back when told to.

Stopped (SIGTERM, Ctrl+C), a worker takes no new job and lets the runs it holds finish.
Procrastinate stops the worker's heartbeat as soon as the stop is asked, before it waits
for those runs; a worker silent for ``--stalled-after`` is taken for dead, and its jobs
put back for others, who would find their threads busy. So a worker's process keeps the
heartbeat of every Procrastinate worker whose jobs it still runs (`Holdings.keep_alive`),
from its start to its last job's end, and never puts back a job it runs itself.

A run handed back (`Holdings.hand_back`: the shutdown timeout passed, or a second signal
came) is cancelled where it is, and its job goes back to the queue at once: the next worker
continues the run from its last checkpoint. The node in flight runs again there, so a tool
call cut short runs twice, with the same idempotency key (at least once, by design). A
hand-back is not a failed attempt: it uses up none of the retries the job has for faults
of the database (`thinkgraph.worker.queue.retry_decision_seconds`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import procrastinate
    from procrastinate.jobs import Job

__all__ = ["Holdings", "handed_back", "was_handed_back"]

logger = logging.getLogger("thinkgraph.worker")

_HANDED_BACK: set[int] = set()
"""Ids of the jobs of this process cancelled to be handed back, until their job's retry
is decided (`was_handed_back`)."""


def handed_back(job_id: int) -> None:
    """Note that the cancelled job `job_id` is handed back: it goes back to the queue."""
    _HANDED_BACK.add(job_id)


def was_handed_back(exc: BaseException, job: Any) -> bool:
    """Whether `job`, which ended on `exc`, was cancelled to be handed back (asked once)."""
    if not isinstance(exc, asyncio.CancelledError) or job.id not in _HANDED_BACK:
        return False
    _HANDED_BACK.discard(job.id)
    return True


class Holdings:
    """The jobs a worker's process runs now, each by the asyncio task that runs it."""

    def __init__(self) -> None:
        self._jobs: dict[asyncio.Task[Any], Job] = {}
        self.handing_back = False
        """Set by `hand_back`: a job cancelled from now on is handed back."""
        self.last_worker_id: int | None = None
        """The Procrastinate worker of the job held last: this process's worker now."""

    @contextlib.contextmanager
    def hold(self, job: Job) -> Iterator[None]:
        """Count `job` as run by the current task while inside."""
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - a job always runs in a task
            yield
            return
        self._jobs[task] = job
        if job.worker_id is not None:
            self.last_worker_id = job.worker_id
        try:
            yield
        finally:
            self._jobs.pop(task, None)

    def __len__(self) -> int:
        return len(self._jobs)

    def job_ids(self) -> set[int]:
        return {job.id for job in self._jobs.values() if job.id is not None}

    def worker_ids(self) -> set[int]:
        return {job.worker_id for job in self._jobs.values() if job.worker_id is not None}

    def own_worker_ids(self) -> set[int]:
        """The Procrastinate workers of this process: those of the jobs it holds, and the
        one it took its last job with (its jobs may still read ``doing`` for a moment after
        they end here, while Procrastinate records how they ended)."""
        last = set() if self.last_worker_id is None else {self.last_worker_id}
        return self.worker_ids() | last

    def hand_back(self) -> int:
        """Cancel every run in flight: each stops where it is, and its job goes back to the
        queue. Returns how many there were."""
        self.handing_back = True
        for task in self._jobs:
            task.cancel()
        return len(self._jobs)

    async def keep_alive(self, app: procrastinate.App, every_s: float) -> None:
        """Every `every_s`, the heartbeat of each worker whose jobs run here (Procrastinate
        beats too, but not while it drains), until cancelled."""
        while True:
            await asyncio.sleep(every_s)
            for worker_id in self.worker_ids():
                try:
                    await app.job_manager.update_heartbeat(worker_id)
                except Exception as exc:  # the database is away: the worker restarts
                    logger.debug("could not send the heartbeat of worker %s: %s", worker_id, exc)
