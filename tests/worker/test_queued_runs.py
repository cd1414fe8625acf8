"""A run exists from the moment it is submitted: every door lists it with its job's state.

`thinkgraph runs`, `thinkgraph show`, `Agent.runs`, ``GET /runs`` and ``GET /runs/T`` say
the same of a run whose job has not finished: queued, running, stalled, retrying (attempt
N), or failed with the job's error in one line. A run also remembers the queue whose
worker advanced it, so an answer given without ``--queue`` goes where a worker listens.

Real Procrastinate workers in this process, on the test's own queue of the shared
PostgreSQL; the CLI is called in this process.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from tests.conftest import POSTGRES_URL
from tests.server.conftest import BASE
from tests.support import worker_agent
from tests.support.cli import thinkgraph_here
from thinkgraph import Agent, Approve
from thinkgraph.errors import RunNotStartedError, ThreadNotFoundError
from thinkgraph.result import RunSummary
from thinkgraph.server import build_app
from thinkgraph.worker import RunQueue, ThreadRunner, run_worker
from thinkgraph.worker.queue import ERROR_CHARS, job_error

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Agent]:
    monkeypatch.setenv("WORKER_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("WORKER_STORE", POSTGRES_URL)
    monkeypatch.delenv("CRASH_AT", raising=False)
    with worker_agent.make_agent() as made:
        yield made


@pytest.fixture
def thread() -> Iterator[str]:
    """A thread id of the test's own; any job of it left in another queue is deleted."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(POSTGRES_URL) as conn:
        conn.execute("DELETE FROM procrastinate_jobs WHERE lock = %s", (name,))


def _drain(agent: Agent, queue: str) -> None:
    """Run a worker in this process until its queue holds nothing it can take now."""
    run_worker(agent, queue=queue, wait=False, install_signal_handlers=False)


def _cli(*args: str) -> Any:
    return thinkgraph_here(*args, cwd=ROOT, env={"THINKGRAPH_STORE": POSTGRES_URL})


def _listed(agent: Agent, thread: str) -> RunSummary:
    found = [run for run in agent.runs() if run.thread_id == thread]
    assert len(found) == 1, [run.thread_id for run in agent.runs(limit=5)]
    return found[0]


def _line(output: str, thread: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith(thread)]
    assert len(lines) == 1, output
    return lines[0]


def _over_http(agent: Agent, thread: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """What ``GET /runs`` lists of `thread` and what ``GET /runs/T`` says, from a server
    that runs its own runs (no --queue): the queue is read all the same."""
    with TestClient(build_app(agent, token=None), base_url=BASE) as client:
        listed = client.get("/runs")
        assert listed.status_code == 200, listed.text
        rows = [row for row in listed.json() if row["thread_id"] == thread]
        shown = client.get(f"/runs/{thread}")
        assert shown.status_code == 200, shown.text
    assert len(rows) == 1, listed.text
    return rows[0], shown.json()


def _fail_jobs(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """Make every job a worker of this process takes fail with `exc` before it does anything
    (as a model server or a database that refuses it before the first checkpoint)."""

    async def advance(self: ThreadRunner, thread_id: str, **kwargs: Any) -> str:
        raise exc

    monkeypatch.setattr(ThreadRunner, "advance", advance)


def test_a_submitted_run_is_queued_everywhere_before_a_worker_starts_it(
    agent: Agent, queue: str, thread: str
) -> None:
    with RunQueue(agent, queue) as runs:
        job = runs.submit("record and publish", thread)

    summary = _listed(agent, thread)
    assert summary.status == "queued"
    assert summary.job is not None
    assert (summary.job.job_id, summary.job.queue, summary.job.state) == (
        job.job_id,
        queue,
        "queued",
    )

    listed = _cli("runs")
    assert listed.returncode == 0, listed.stderr
    assert "queued" in _line(listed.stdout, thread)
    shown = _cli("show", thread)
    assert shown.returncode == 0, shown.stderr
    assert "queued" in shown.stdout and f"queue {queue}" in shown.stdout

    # Since when, which job: the queue's own word on it.
    assert summary.job.at is not None
    since = f"since {summary.job.at.astimezone():%Y-%m-%d %H:%M:%S}, job {job.job_id}"
    assert since in shown.stdout, shown.stdout
    for command in ("history", "pending"):  # not "no run is stored": it waits for a worker
        said = _cli(command, thread)
        assert said.returncode == 0, said.stderr
        assert said.stdout.startswith(f"thread {thread!r} has not started yet: queued"), said
        assert since in said.stdout, said.stdout
        assert f"thinkgraph worker --queue {queue}" in said.stdout

    row, doc = _over_http(agent, thread)
    assert row["status"] == "queued" and row["job"]["queue"] == queue
    assert doc["status"] == "queued" and doc["job"]["job_id"] == job.job_id

    _drain(agent, queue)  # a worker takes it: the store says where it stands from now on
    assert _listed(agent, thread).status == "paused"
    assert _listed(agent, thread).job is None


def test_a_queued_run_has_not_started_yet_for_every_door_that_needs_its_checkpoints(
    agent: Agent, queue: str, thread: str
) -> None:
    with RunQueue(agent, queue) as runs:
        job = runs.submit("record and publish", thread)

    with pytest.raises(RunNotStartedError, match=f"job {job.job_id}") as raised:
        agent.result(thread)  # a ThreadNotFoundError still, for code that catches that
    assert isinstance(raised.value, ThreadNotFoundError)
    assert str(raised.value).startswith(f"thread {thread!r} has not started yet: queued")
    assert raised.value.queue == queue

    for args in (
        ("approve", thread, "--enqueue"),
        ("replay", thread),
        ("export-test", thread),
        ("diff", thread, thread),
    ):
        said = _cli(*args)
        assert said.returncode == 2, (args, said.stdout, said.stderr)
        assert f"thread {thread!r} has not started yet: queued" in said.stderr, (args, said)
        assert "no run" not in said.stderr, (args, said.stderr)

    with TestClient(build_app(agent, token=None), base_url=BASE) as client:
        answered = client.post(f"/runs/{thread}/resume", json={"answer": "yes"})
        drawn = client.get(f"/runs/{thread}/diagram", params={"format": "mermaid"})
    for response in (answered, drawn):
        assert response.status_code == 409, response.text
        assert "has not started yet: queued" in response.json()["error"]


def test_a_job_that_fails_before_its_first_checkpoint_is_failed_with_its_error_everywhere(
    agent: Agent, queue: str, thread: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RunQueue(agent, queue) as runs:
        runs.submit("record and publish", thread)
    _fail_jobs(monkeypatch, RuntimeError("the model server said no\nsecond line"))
    _drain(agent, queue)

    summary = _listed(agent, thread)
    assert summary.status == "failed"
    assert summary.job is not None and summary.job.state == "failed"
    assert summary.job.error == "RuntimeError: the model server said no"
    assert summary.status_text().startswith("failed")

    listed = _cli("runs", "--status", "failed")
    assert listed.returncode == 0, listed.stderr
    line = _line(listed.stdout, thread)
    assert "failed" in line and "the model server said no" in line
    shown = _cli("show", thread)
    assert shown.returncode == 0, shown.stderr
    assert "failed" in shown.stdout and "the model server said no" in shown.stdout
    history = _cli("history", thread)
    assert history.returncode == 0, history.stderr
    assert history.stdout.startswith(f"thread {thread!r} never started: failed (job"), history

    row, doc = _over_http(agent, thread)
    assert row["status"] == doc["status"] == "failed"
    assert "the model server said no" in row["job"]["error"]
    assert "the model server said no" in doc["job"]["error"]


def test_a_paused_run_whose_answer_failed_shows_the_failure_until_answered_again(
    agent: Agent, queue: str, thread: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RunQueue(agent, queue) as runs:
        runs.submit("record and publish", thread)
        _drain(agent, queue)
        paused = agent.result(thread)
        assert paused.status == "paused"
        decisions = {paused.pending[0].call_id: Approve()}
        runs.resume(thread, decisions)
        with monkeypatch.context() as patched:
            _fail_jobs(patched, RuntimeError("boom"))
            _drain(agent, queue)
        summary = _listed(agent, thread)
        assert summary.status == "failed" and summary.job is not None
        assert summary.job.error == "RuntimeError: boom"
        row, doc = _over_http(agent, thread)
        assert row["status"] == doc["status"] == "failed"

        runs.resume(thread, decisions)  # the pause still waits: answered again, it goes on
        _drain(agent, queue)
    assert _listed(agent, thread).status == "done"
    assert _listed(agent, thread).job is None


def test_a_job_retried_after_a_connection_fault_reads_retrying_with_its_attempt(
    agent: Agent, queue: str, thread: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RunQueue(agent, queue) as runs:
        runs.submit("record and publish", thread)
    _fail_jobs(monkeypatch, psycopg.OperationalError("the connection is closed"))
    _drain(agent, queue)  # one attempt; the next is two seconds away, so the worker stops

    summary = _listed(agent, thread)
    assert summary.job is not None
    assert (summary.job.state, summary.job.attempt) == ("retrying", 2)
    assert summary.status_text().startswith("retrying (attempt 2")
    assert "the connection is closed" in summary.status_text()
    listed = _cli("runs")
    assert "retrying (attempt 2" in _line(listed.stdout, thread)


def test_a_job_whose_worker_is_gone_reads_stalled(agent: Agent, queue: str, thread: str) -> None:
    with RunQueue(agent, queue) as runs:
        job = runs.submit("record and publish", thread)
    with psycopg.connect(POSTGRES_URL) as conn:  # taken by a worker that then vanished
        conn.execute(
            "UPDATE procrastinate_jobs SET status = 'doing', worker_id = NULL WHERE id = %s",
            (job.job_id,),
        )
    summary = _listed(agent, thread)
    assert summary.status == "running"
    assert summary.job is not None and summary.job.state == "stalled"
    assert summary.status_text().startswith("stalled")
    assert "stalled" in _line(_cli("runs").stdout, thread)


def test_an_answer_without_a_queue_goes_to_the_queue_the_run_paused_on(
    agent: Agent, queue: str, thread: str
) -> None:
    submitted = _cli("submit", "record and publish", "--thread", thread, "--queue", queue)
    assert submitted.returncode == 0, submitted.stderr
    _drain(agent, queue)
    assert agent.result(thread).status == "paused"

    approved = _cli("approve", thread, "--enqueue")
    assert approved.returncode == 0, approved.stderr
    assert f"on queue {queue}" in approved.stdout
    _drain(agent, queue)
    assert agent.result(thread).status == "done"


def test_an_answer_over_http_goes_to_the_queue_the_run_paused_on(
    agent: Agent, queue: str, thread: str
) -> None:
    with RunQueue(agent, queue) as runs:
        runs.submit("record and publish", thread)
    _drain(agent, queue)
    paused = agent.result(thread)
    assert paused.status == "paused"

    # A server that hands its own new runs to another queue.
    other = f"{queue}-other"
    try:
        with TestClient(build_app(agent, queue=other, token=None), base_url=BASE) as client:
            answer = {"decisions": {paused.pending[0].call_id: {"action": "approve"}}}
            response = client.post(f"/runs/{thread}/resume", json=answer)
        assert response.status_code == 202, response.text
        assert response.json()["queue"] == queue
        _drain(agent, queue)
        assert agent.result(thread).status == "done"
    finally:
        with psycopg.connect(POSTGRES_URL) as conn:
            conn.execute("DELETE FROM procrastinate_jobs WHERE queue_name = %s", (other,))


def test_a_job_error_is_kept_as_one_masked_line() -> None:
    secret = RuntimeError('refused {"password": "hunter2"} at postgresql://u:pw@db/x\ntrace')
    kept = job_error(secret)
    assert "hunter2" not in kept and ":pw@" not in kept and "trace" not in kept
    assert kept.startswith("RuntimeError: refused")
    assert len(job_error(RuntimeError("x" * 5000))) == ERROR_CHARS
