"""Draining a worker (SIGTERM) while another serves the same queue: real `thinkgraph
worker` processes on the local PostgreSQL.

A draining worker keeps heartbeating for the runs it still holds, so neither it nor the
other worker takes them for stalled; `--shutdown-timeout` hands an unfinished run back at
its last checkpoint, and so does a second signal, at once; the other worker then finishes
it. The tool (`tests.support.drain_agent`) is async and waits DRAIN_TOOL_S seconds, set per
worker process, so the worker that takes a run back finishes it quickly.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest

from tests.conftest import POSTGRES_URL
from tests.support import worker_agent
from tests.support.cli import thinkgraph_here
from tests.worker.conftest import job_statuses
from thinkgraph import Agent, ScriptedModel
from thinkgraph.errors import ConfigError
from thinkgraph.worker import RunQueue, ThreadRunner, run_worker
from thinkgraph.worker.drain import handed_back
from thinkgraph.worker.queue import RETRY, retry_decision_seconds

THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
ROOT = Path(__file__).resolve().parents[2]


class Worker:
    """A `thinkgraph worker` process serving the drain agent, its output read as it comes."""

    def __init__(self, queue: str, log: Path, tool_s: float, *extra: str) -> None:
        env = {
            **os.environ,
            "WORKER_STORE": POSTGRES_URL,
            "WORKER_LOG": str(log),
            "DRAIN_TOOL_S": str(tool_s),
            "PYTHONPATH": str(ROOT),
        }
        command = [
            THINKGRAPH, "worker", "--agent", "tests.support.drain_agent:make_agent",
            "--queue", queue, "--heartbeat", "1", "--stalled-after", "4", *extra,
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def signal(self, number: int) -> None:
        assert self.process.poll() is None, f"the worker ended before the signal:\n{self.output}"
        self.process.send_signal(number)

    def wait(self, timeout: float) -> int:
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            raise AssertionError(f"the worker did not end in {timeout} s:\n{self.output}") from None
        self._reader.join(timeout=10)
        return code

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._reader.join(timeout=10)
        return self.output


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "calls.log"


@pytest.fixture
def agent(log: Path) -> Iterator[Agent]:
    with Agent(ScriptedModel([]), store=POSTGRES_URL) as made:
        yield made


def _calls(log: Path) -> list[list[str]]:
    """The tool's lines: [start|done, idempotency key, pid]."""
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def _until(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.1)


def _seconds(output: str, first: str, then: str) -> float:
    """Seconds between the log lines that say `first` and `then`, by their timestamps."""

    def at(text: str) -> datetime:
        line = next(line for line in output.splitlines() if text in line)
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")

    return (at(then) - at(first)).total_seconds()


def _events(queue: str) -> list[str]:
    """The job events of the queue, oldest first (Procrastinate's own record)."""
    with psycopg.connect(POSTGRES_URL) as conn:
        rows = conn.execute(
            "SELECT e.type::text FROM procrastinate_events e JOIN procrastinate_jobs j "
            "ON j.id = e.job_id WHERE j.queue_name = %s ORDER BY e.id",
            (queue,),
        ).fetchall()
    return [str(row[0]) for row in rows]


def _attempts(queue: str) -> list[int]:
    """The attempts Procrastinate counted of each job of the queue, oldest first."""
    with psycopg.connect(POSTGRES_URL) as conn:
        rows = conn.execute(
            "SELECT attempts FROM procrastinate_jobs WHERE queue_name = %s ORDER BY id", (queue,)
        ).fetchall()
    return [int(row[0]) for row in rows]


def _started(log: Path, worker: Worker) -> None:
    def started() -> bool:
        assert worker.process.poll() is None, f"the worker ended:\n{worker.stop()}"
        return any(c[0] == "start" and c[2] == str(worker.process.pid) for c in _calls(log))

    _until(started, 90, "the tool never started on the worker")


def test_a_draining_worker_keeps_its_run_and_nobody_takes_it_for_stalled(
    agent: Agent, queue: str, thread_id: str, log: Path
) -> None:
    # The drain (about 12 s) lasts three times --stalled-after: a worker that stopped
    # heartbeating while it drains would be taken for dead, its job put back, and the
    # other worker would fail it as busy, again and again.
    with RunQueue(agent, queue) as runs:
        runs.submit("write one line", thread_id)
    draining = Worker(queue, log, 14)
    other: Worker | None = None
    try:
        _started(log, draining)
        other = Worker(queue, log, 0.5)
        time.sleep(2)
        draining.signal(signal.SIGTERM)
        assert draining.wait(timeout=60) == 0, draining.output
        time.sleep(2)  # the other worker would take a job put back by now
    finally:
        draining.stop()
        others = other.stop() if other is not None else ""
    assert agent.result(thread_id).status == "done", draining.output
    assert _events(queue) == ["deferred", "started", "succeeded"], (draining.output, others)
    assert [c[0] for c in _calls(log)] == ["start", "done"]
    for output in (draining.output, others):
        assert "Traceback" not in output, output
        assert "stalled" not in output and "busy" not in output.lower(), output


def test_shutdown_timeout_hands_the_run_back_and_another_worker_finishes_it(
    agent: Agent, queue: str, thread_id: str, log: Path
) -> None:
    with RunQueue(agent, queue) as runs:
        runs.submit("write one line", thread_id)
    draining = Worker(queue, log, 30, "--shutdown-timeout", "3")
    other: Worker | None = None
    try:
        _started(log, draining)
        other = Worker(queue, log, 0.5)
        draining.signal(signal.SIGTERM)
        signalled = time.monotonic()
        assert draining.wait(timeout=30) == 0, draining.output
        took = time.monotonic() - signalled
        assert took < 10, (took, draining.output)  # its own exit is slow on a busy machine
        assert _seconds(draining.output, "Stop requested", "Stopped worker") < 4.5
        _until(lambda: agent.result(thread_id).status == "done", 90, "the other worker's run")
    finally:
        draining.stop()
        others = other.stop() if other is not None else ""
    calls = _calls(log)
    # The call in flight ran again, with the same idempotency key (at least once, by
    # design); it finished once, on the other worker.
    assert [c[0] for c in calls] == ["start", "start", "done"], calls
    assert calls[0][1] == calls[1][1] == calls[2][1]
    assert calls[0][2] == str(draining.process.pid)
    assert calls[1][2] == calls[2][2] != calls[0][2]
    assert "handed back" in draining.output
    # The hand-back used up no attempt: the job's only one is the run that finished it.
    assert _attempts(queue) == [1], draining.output
    for output in (draining.output, others):
        assert "Traceback" not in output, output


@pytest.mark.parametrize("second", [signal.SIGTERM, signal.SIGINT])
def test_a_second_signal_hands_the_run_back_at_once(
    agent: Agent, queue: str, thread_id: str, log: Path, second: int
) -> None:
    with RunQueue(agent, queue) as runs:
        runs.submit("write one line", thread_id)
    draining = Worker(queue, log, 30)
    other: Worker | None = None
    try:
        _started(log, draining)
        other = Worker(queue, log, 0.5)
        draining.signal(signal.SIGTERM)
        time.sleep(1)
        draining.signal(second)
        signalled = time.monotonic()
        assert draining.wait(timeout=30) == 0, draining.output
        took = time.monotonic() - signalled
        assert took < 8, (took, draining.output)  # its own exit is slow on a busy machine
        assert _seconds(draining.output, "stopping now", "Stopped worker") < 1.5
        _until(lambda: agent.result(thread_id).status == "done", 90, "the other worker's run")
    finally:
        draining.stop()
        others = other.stop() if other is not None else ""
    assert [c[0] for c in _calls(log)] == ["start", "start", "done"]
    assert "handed back" in draining.output
    for output in (draining.output, others):
        assert "Traceback" not in output, output


def test_a_negative_shutdown_timeout_is_refused(agent: Agent, queue: str) -> None:
    with pytest.raises(ConfigError, match="shutdown_timeout_s=-1"):
        run_worker(agent, queue=queue, shutdown_timeout_s=-1, install_signal_handlers=False)


def test_only_a_job_handed_back_is_retried_at_once_and_only_once() -> None:
    job = SimpleNamespace(id=987654321, attempts=3)
    cancelled = asyncio.CancelledError()
    assert retry_decision_seconds(cancelled, job) is None  # an abort asked for: not retried
    handed_back(job.id)
    assert retry_decision_seconds(cancelled, job) == 0
    assert retry_decision_seconds(cancelled, job) is None


def test_a_stalled_after_under_two_heartbeats_is_one_line_error(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKER_STORE", POSTGRES_URL)
    monkeypatch.setenv("WORKER_LOG", str(log))
    done = thinkgraph_here(
        "worker", "--agent", "tests.support.drain_agent:make_agent", "--heartbeat", "10",
        "--stalled-after", "6", cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2
    assert "a live worker would be taken for dead" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_hand_backs_do_not_use_up_the_retries_a_job_has_for_real_faults(
    queue: str, thread_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Handed back more times than a job is retried after connection faults, then one such
    # fault: the job is still retried, and the run goes on to its pause. Procrastinate
    # counts every retry as an attempt; a hand-back must not count.
    monkeypatch.setenv("WORKER_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("WORKER_STORE", POSTGRES_URL)
    monkeypatch.delenv("CRASH_AT", raising=False)
    hand_backs = RETRY.connection_retries + 1
    calls: list[str] = []
    advance = ThreadRunner.advance

    async def flaky(self: ThreadRunner, thread: str, **kwargs: Any) -> str:
        calls.append(thread)
        if len(calls) <= hand_backs:
            self.holdings.handing_back = False
            self.holdings.hand_back()  # as a second signal does: this very job is cancelled
            await asyncio.sleep(5)
        if len(calls) == hand_backs + 1:
            raise psycopg.OperationalError("the connection is closed")
        return await advance(self, thread, **kwargs)

    monkeypatch.setattr(ThreadRunner, "advance", flaky)
    with worker_agent.make_agent() as made, RunQueue(made, queue) as runs:
        runs.submit("record and publish", thread_id)
        deadline = time.monotonic() + 30
        while made.checkpoint_id(thread_id) is None or made.result(thread_id).status != "paused":
            assert time.monotonic() < deadline, (calls, job_statuses(queue))
            assert job_statuses(queue) != ["failed"], f"failed after {len(calls)} calls"
            run_worker(made, queue=queue, wait=False, install_signal_handlers=False)
            time.sleep(0.2)  # the fault's retry is a second away
    assert len(calls) == hand_backs + 2
    assert job_statuses(queue) == ["succeeded"]
    assert _attempts(queue) == [2]  # the fault's attempt and the last one: no hand-back
