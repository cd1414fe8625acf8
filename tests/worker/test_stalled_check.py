"""The stalled-job check of a worker: it puts back the jobs of silent workers, never one of
its own worker's, and a job it cannot put back is one line, not a traceback.

Right after the database comes back, a worker's own heartbeat is stale (it could not beat
while the database was away), and the runs it advanced through the outage end then: their
jobs still read ``doing`` for a moment after they left the worker's hands. The check used
to put such a job back — its own — and log a traceback when the job had ended meanwhile.
A fake job manager stands for Procrastinate's.
"""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from procrastinate.exceptions import ConnectorException

from thinkgraph.worker.drain import Holdings
from thinkgraph.worker.runner import _retry_stalled

OWN, GONE = 7, 9
"""This process's Procrastinate worker, and one that went silent."""


class Manager:
    """Procrastinate's job manager, as far as the check uses it: one check's worth."""

    def __init__(self, stalled: list[Any]) -> None:
        self.stalled = stalled
        self.retried: list[int] = []

    async def get_stalled_jobs(self, **_: Any) -> list[Any]:
        found, self.stalled = self.stalled, []
        return found

    async def retry_job(self, job: Any) -> None:
        if job.id == 3:  # it ended between the check's read and its retry
            try:
                raise psycopg.errors.RaiseException(
                    "Job was not found or has an invalid status to retry (job id: 3)"
                )
            except psycopg.Error as exc:
                raise ConnectorException("\n    Database error.\n    ") from exc
        self.retried.append(job.id)


def _job(job_id: int, worker_id: int | None) -> Any:
    return SimpleNamespace(id=job_id, worker_id=worker_id)


async def _check(holdings: Holdings, manager: Manager) -> None:
    app = SimpleNamespace(job_manager=manager)
    task = asyncio.create_task(_retry_stalled(app, "q", 4.0, 0.01, holdings))  # type: ignore[arg-type]
    await asyncio.sleep(0.1)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def test_the_check_never_puts_back_its_own_workers_job_and_says_one_line_when_it_cannot(
    caplog: pytest.LogCaptureFixture,
) -> None:
    holdings = Holdings()

    async def scenario() -> Manager:
        with holdings.hold(_job(1, OWN)):  # a run of this worker, ended just now
            pass
        manager = Manager([_job(1, OWN), _job(2, GONE), _job(3, GONE), _job(4, None)])
        await _check(holdings, manager)
        return manager

    with caplog.at_level(logging.INFO, logger="thinkgraph.worker"):
        manager = asyncio.run(scenario())
    assert manager.retried == [2, 4]  # the silent worker's, and one whose worker is gone
    lines = [r for r in caplog.records if r.name == "thinkgraph.worker"]
    assert [r.exc_info for r in lines] == [None] * len(lines), [r.getMessage() for r in lines]
    refused = [r.getMessage() for r in lines if "not put back" in r.getMessage()]
    assert refused == [
        "job 3 of a stalled worker was not put back: Job was not found or has an invalid "
        "status to retry (job id: 3)"
    ]
