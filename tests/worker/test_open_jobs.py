"""`open_jobs`: the worker queue's unfinished jobs, as `thinkgraph runs` and `show` list them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg.conninfo import make_conninfo

from tests.conftest import POSTGRES_URL
from tests.support import worker_agent
from thinkgraph import Agent, Approve
from thinkgraph.worker import JobInfo, RunQueue, open_jobs, run_worker


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Agent]:
    monkeypatch.setenv("WORKER_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("WORKER_STORE", POSTGRES_URL)
    monkeypatch.delenv("CRASH_AT", raising=False)
    with worker_agent.make_agent() as made:
        yield made


def _drain(agent: Agent, queue: str) -> None:
    run_worker(agent, queue=queue, wait=False, install_signal_handlers=False)


def test_a_queued_start_and_a_queued_resume_are_listed_until_a_worker_runs_them(
    agent: Agent, queue: str
) -> None:
    starting, resuming = f"t-{uuid.uuid4().hex[:12]}", f"t-{uuid.uuid4().hex[:12]}"
    with RunQueue(agent, queue) as runs:
        runs.submit("record and publish", resuming)
        _drain(agent, queue)
        paused = agent.result(resuming)
        assert paused.status == "paused"
        start = runs.submit("record and publish", starting)
        resume = runs.resume(resuming, {paused.pending[0].call_id: Approve()})

        ours = [job for job in open_jobs(POSTGRES_URL) if job.queue == queue]
        assert ours == [
            JobInfo(start.job_id, starting, queue, action="start", running=False),
            JobInfo(resume.job_id, resuming, queue, action="resume", running=False),
        ]
        assert [job.job_id for job in open_jobs(POSTGRES_URL, resuming)] == [resume.job_id]

        _drain(agent, queue)
    assert [job for job in open_jobs(POSTGRES_URL) if job.queue == queue] == []
    assert open_jobs(POSTGRES_URL, starting) == open_jobs(POSTGRES_URL, resuming) == []


def test_a_database_without_a_job_queue_has_no_open_jobs() -> None:
    # A search path without Procrastinate's schema: its tables are not there.
    empty = make_conninfo(POSTGRES_URL, options="-csearch_path=no_queue_here")
    assert open_jobs(empty) == []
