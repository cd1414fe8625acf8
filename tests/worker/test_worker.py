"""Workers on the local PostgreSQL: queued runs, pauses that hold no worker, killed workers.

Every test uses its own queue and thread ids (the database is shared between tests), and
real Procrastinate workers: in this process for the quick checks, in child processes for
the ones that kill a worker.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import POSTGRES_URL
from tests.support import worker_agent
from tests.support.cli import thinkgraph_here
from tests.support.meeting import REPLIES as MEETING
from tests.support.meeting import meeting
from thinkgraph import Agent, Approve, Reject, ScriptedModel
from thinkgraph.errors import (
    AnsweredError,
    ConfigError,
    ResumeValueError,
    ThreadBusyError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from thinkgraph.state import ToolResultStep
from thinkgraph.storage import close_checkpointer, open_checkpointer
from thinkgraph.storage.lease import thread_lease
from thinkgraph.worker import RunQueue, ThreadRunner, run_worker

THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.log"
    monkeypatch.setenv("WORKER_LOG", str(path))
    monkeypatch.setenv("WORKER_STORE", POSTGRES_URL)
    monkeypatch.delenv("CRASH_AT", raising=False)
    return path


@pytest.fixture
def agent(log: Path) -> Iterator[Agent]:
    with worker_agent.make_agent() as made:
        yield made


def _drain(agent: Agent, queue: str) -> None:
    """Run a worker in this process until the queue is empty."""
    run_worker(agent, queue=queue, wait=False, install_signal_handlers=False)


def _jobs(queue: str) -> list[tuple[int, str, str | None]]:
    with psycopg.connect(POSTGRES_URL) as conn:
        rows = conn.execute(
            "SELECT id, status::text, lock FROM procrastinate_jobs WHERE queue_name = %s "
            "ORDER BY id",
            (queue,),
        ).fetchall()
    return [(int(i), str(s), lock) for i, s, lock in rows]


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_a_queued_run_pauses_holding_no_worker_and_an_approval_finishes_it(
    agent: Agent, queue: str, thread_id: str, log: Path
) -> None:
    with RunQueue(agent, queue) as runs:
        first = runs.submit("record and publish", thread_id)
        _drain(agent, queue)
        paused = agent.result(thread_id)
        assert paused.status == "paused" and [p.tool for p in paused.pending] == ["publish"]
        # The job ended at the pause: nothing is in progress while the run waits.
        assert _jobs(queue) == [(first.job_id, "succeeded", thread_id)]

        second = runs.resume(thread_id, {paused.pending[0].call_id: Approve()})
        _drain(agent, queue)
    done = agent.result(thread_id)
    assert done.status == "done" and done.answer == "recorded one, two, three"
    assert [j[1] for j in _jobs(queue)] == ["succeeded", "succeeded"]
    assert _jobs(queue)[1][0] == second.job_id
    assert [line.split()[:2] for line in _lines(log)] == [
        ["start", "one"],
        ["done", "one"],
        ["start", "two"],
        ["done", "two"],
        ["published", "three"],
    ]


def test_bad_requests_are_refused_before_anything_is_queued(
    agent: Agent, queue: str, thread_id: str
) -> None:
    with RunQueue(agent, queue) as runs:
        with pytest.raises(ThreadNotFoundError):
            runs.resume(thread_id, {"c1": Approve()})
        runs.submit("record and publish", thread_id)
        with pytest.raises(ThreadExistsError, match="already waits in the queue"):
            runs.submit("again", thread_id)
        _drain(agent, queue)
        with pytest.raises(ThreadExistsError, match="already holds a run"):
            runs.submit("again", thread_id)
        call_id = agent.result(thread_id).pending[0].call_id
        with pytest.raises(ResumeValueError, match="no call 'nope'"):
            runs.resume(thread_id, {"nope": Approve()})
        with pytest.raises(ResumeValueError, match="invalid"):
            runs.resume(thread_id, {call_id: {"action": "edit", "args": {"text": 5}}})
        assert len(_jobs(queue)) == 1
        assert agent.result(thread_id).status == "paused"
        runs.resume(thread_id, {call_id: Approve()})
        with pytest.raises(AnsweredError, match="already answered: approved by job"):
            runs.resume(thread_id, {call_id: Approve()})  # a second click on "approve"
    assert [j[1] for j in _jobs(queue)] == ["succeeded", "todo"]


def test_a_queue_needs_a_postgres_store(tmp_path: Path) -> None:
    local = Agent(ScriptedModel([]), store=f"sqlite:///{tmp_path / 'runs.db'}")
    with local, pytest.raises(ConfigError, match="PostgreSQL"):
        RunQueue(local)


def test_a_retried_job_never_answers_a_later_pause(
    agent: Agent, queue: str, thread_id: str, log: Path
) -> None:
    runner = ThreadRunner(agent, POSTGRES_URL)
    assert asyncio.run(runner.advance(thread_id, task="record and publish")) == "paused"
    pause = agent.checkpoint_id(thread_id)
    call_id = agent.result(thread_id).pending[0].call_id
    # A job queued against an older checkpoint (its first attempt got further) does nothing.
    assert (
        asyncio.run(runner.advance(thread_id, decisions={call_id: Approve()}, at="older"))
        == "paused"
    )
    assert agent.checkpoint_id(thread_id) == pause
    rejected = {call_id: Reject(reason="not today").model_dump()}
    assert asyncio.run(runner.advance(thread_id, decisions=rejected, at=pause)) == "done"
    assert not any(line.startswith("published") for line in _lines(log))
    with pytest.raises(ThreadNotFoundError):
        asyncio.run(runner.advance(f"{thread_id}-none", decisions=None, at=None))


def test_a_thread_held_by_another_worker_is_busy(agent: Agent, thread_id: str) -> None:
    runner = ThreadRunner(agent, POSTGRES_URL)
    other = open_checkpointer(POSTGRES_URL)  # another worker's hold on the store
    try:
        with thread_lease(other, thread_id), pytest.raises(ThreadBusyError, match="another"):
            asyncio.run(runner.advance(thread_id, task="record and publish"))
    finally:
        close_checkpointer(other)
    assert agent.checkpoint_id(thread_id) is None
    assert asyncio.run(runner.advance(thread_id, task="record and publish")) == "paused"


def _worker(queue: str, log: Path, *extra: str, crash_at: str | None = None) -> Any:
    env = {
        **os.environ,
        "WORKER_STORE": POSTGRES_URL,
        "WORKER_LOG": str(log),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("CRASH_AT", None)
    if crash_at:
        env["CRASH_AT"] = crash_at
    command = [
        THINKGRAPH,
        "worker",
        "--agent",
        "tests.support.worker_agent:make_agent",
        "--queue",
        queue,
        "--heartbeat",
        "0.2",
        "--stalled-after",
        "1.5",
        *extra,
    ]
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _wait_for(predicate: Any, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError(f"not reached within {timeout} s")


def test_a_killed_workers_job_is_retried_by_another_and_no_call_runs_twice(
    agent: Agent, queue: str, thread_id: str, log: Path
) -> None:
    with RunQueue(agent, queue) as runs:
        runs.submit("record and publish", thread_id)
    doomed = _worker(queue, log, crash_at="tool:2")
    try:
        doomed.wait(timeout=60)
    finally:
        doomed.kill()
    assert doomed.returncode == -signal.SIGKILL
    assert [j[1] for j in _jobs(queue)] == ["doing"]  # left behind by the dead worker

    rescuer = _worker(queue, log)
    try:
        _wait_for(lambda: agent.result(thread_id).status == "paused", timeout=60)
    finally:
        rescuer.terminate()
        output, _ = rescuer.communicate(timeout=30)
    assert "stalled worker: retrying it" in output
    assert [j[1] for j in _jobs(queue)] == ["succeeded"]
    lines = [line.split() for line in _lines(log)]
    # The call in flight ran again with the same idempotency key; the one before did not.
    assert [line[:2] for line in lines] == [
        ["start", "one"],
        ["done", "one"],
        ["start", "two"],
        ["start", "two"],
        ["done", "two"],
    ]
    assert lines[2][2] == lines[3][2] == lines[4][2]
    chain = agent.result(thread_id).chain
    assert [s.tool for s in chain if s.type == "tool_result"] == ["record", "record"]


def test_one_worker_advances_many_runs_at_once(queue: str, tmp_path: Path) -> None:
    # Each run's tool waits until every run is inside it: only a worker that advances them
    # side by side gets them all there (one at a time, the first would wait alone).
    runs = 4
    with Agent(ScriptedModel(MEETING), [meeting(runs)], store=POSTGRES_URL) as agent:
        threads = [f"many-{uuid.uuid4().hex[:8]}" for _ in range(runs)]
        with RunQueue(agent, queue) as jobs:
            for thread in threads:
                jobs.submit("meet the others", thread)
        run_worker(agent, queue=queue, wait=False, install_signal_handlers=False, concurrency=4)
        outputs = [
            [s.output for s in agent.result(t).chain if isinstance(s, ToolResultStep)]
            for t in threads
        ]
    assert outputs == [["together"]] * runs


def test_worker_concurrency_below_one_is_refused(agent: Agent, queue: str) -> None:
    with pytest.raises(ConfigError, match="concurrency=0"):
        run_worker(agent, queue=queue, wait=False, install_signal_handlers=False, concurrency=0)


def test_a_killed_worker_advancing_several_runs_reruns_only_the_calls_in_flight(
    agent: Agent, queue: str, log: Path
) -> None:
    threads = [f"killed-{uuid.uuid4().hex[:8]}" for _ in range(3)]
    with RunQueue(agent, queue) as runs:
        for thread in threads:
            runs.submit("record and publish", thread)
    # Killed inside its 4th tool call: with 3 runs at once, some calls finished, others are
    # in flight in other runs.
    doomed = _worker(queue, log, "--concurrency", "3", crash_at="tool:4")
    try:
        doomed.wait(timeout=60)
    finally:
        doomed.kill()
    assert doomed.returncode == -signal.SIGKILL
    # The calls whose results were stored before the kill: these must never run again.
    stored = {
        r.idempotency_key
        for t in threads
        for r in agent.result(t).chain
        if isinstance(r, ToolResultStep)
    }
    assert stored  # some calls finished before the 4th
    rescuer = _worker(queue, log, "--concurrency", "3")
    try:
        _wait_for(lambda: all(agent.result(t).status == "paused" for t in threads), timeout=90)
    finally:
        rescuer.terminate()
        rescuer.communicate(timeout=30)
    done = [line.split()[2] for line in _lines(log) if line.startswith("done ")]
    # Every call stored before the kill ran once; a call in flight at the kill (its side
    # effect maybe done, its result not yet stored) ran again with the same key.
    assert all(done.count(key) == 1 for key in stored)
    assert set(done) == {
        r.idempotency_key
        for t in threads
        for r in agent.result(t).chain
        if isinstance(r, ToolResultStep)
    }
    assert len(done) - len(set(done)) <= len(threads)  # at most one re-run per run in flight
    for thread in threads:
        results = [s for s in agent.result(thread).chain if isinstance(s, ToolResultStep)]
        assert [r.tool for r in results] == ["record", "record"]


def test_the_cli_submits_and_approves_through_workers(
    agent: Agent, queue: str, thread_id: str, log: Path
) -> None:
    # The commands in this process; the workers that answer them in processes of their own.
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return thinkgraph_here(*args, cwd=ROOT, env={"THINKGRAPH_STORE": POSTGRES_URL})

    submitted = cli("submit", "record and publish", "--thread", thread_id, "--queue", queue)
    assert submitted.returncode == 0, submitted.stderr
    assert f"thread {thread_id} on queue {queue}" in submitted.stdout
    again = cli("submit", "again", "--thread", thread_id, "--queue", queue)
    assert again.returncode == 2 and "already waits in the queue" in again.stderr
    listed = cli("runs")
    assert listed.returncode == 0
    assert f"{thread_id:<16} queued (waits for a worker on queue {queue})" in listed.stdout
    early = cli("show", thread_id)
    assert early.returncode == 0
    said = f"thread {thread_id!r} has not started yet: queued (waits for a worker on queue {queue})"
    assert said in early.stdout

    first = _worker(queue, log, "--once")
    assert first.wait(timeout=120) == 0, first.communicate()[0]
    assert agent.result(thread_id).status == "paused"
    hints = cli("pending", thread_id)
    assert hints.returncode == 0 and "add --enqueue" in hints.stdout

    approved = cli("approve", thread_id, "--enqueue", "--queue", queue)
    assert approved.returncode == 0, approved.stderr
    assert f"continues thread {thread_id}" in approved.stdout
    refused = cli("approve", thread_id, "nope", "--enqueue", "--queue", queue)
    assert refused.returncode == 2 and "no call 'nope'" in refused.stderr

    second = _worker(queue, log, "--once")
    assert second.wait(timeout=120) == 0, second.communicate()[0]
    assert agent.result(thread_id).answer == "recorded one, two, three"
    local = cli("submit", "x", "--store", "sqlite:///nowhere.db")
    assert local.returncode == 2 and "PostgreSQL" in local.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "nocolon"], "use module:attribute"),
        (["--agent", "tests.support.worker_agent:REPLIES"], "is a list, not an Agent"),
        (["--agent", "json:dumps"], "calling it with no arguments failed"),
        (["--agent", "tests.support.worker_agent:make_agent", "--tools", "x:y"], "leave out"),
        (["--tools", "calculator", "--store", "sqlite:///x.db"], "PostgreSQL"),
    ],
)
def test_worker_options_that_cannot_work_are_one_line_errors(
    args: list[str], message: str, log: Path
) -> None:
    done = thinkgraph_here("worker", *args, cwd=ROOT)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
