"""Workers and `serve` against a database that restarts, refuses or fails: they heal without
a restart of their own, retry jobs that met a connection fault, and hold a bounded number
of connections whatever their concurrency.

The restarts happen on a private cluster each test starts (`tests.support.pg_cluster`): the
shared server of the suite is never restarted. The connection count is measured on a private
cluster too, so a worker that opened a connection per run could not starve other tests.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.conftest import POSTGRES_URL
from tests.server.support import Served
from tests.support import quick_agent
from tests.support.pg_cluster import PgCluster, pg_cluster
from thinkgraph import Agent
from thinkgraph.errors import StorageError, ThreadBusyError
from thinkgraph.worker import RunQueue, ThreadRunner, run_worker

__all__ = ["pg_cluster"]

THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
ROOT = Path(__file__).resolve().parents[2]


def _worker(url: str, queue: str, *extra: str, sleep: float = 0.0) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "WORKER_STORE": url,
        "QUICK_SLEEP": str(sleep),
    }
    command = [
        THINKGRAPH, "worker", "--agent", "tests.support.quick_agent:make_agent",
        "--store", url, "--queue", queue, "--heartbeat", "0.5", "--stalled-after", "5", *extra,
    ]  # fmt: skip
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


class _Output:
    """A child's output, read as it comes (so its pipe never fills)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self._reader.join(timeout=10)
        return "".join(self.lines)


def _job_states(url: str, queue: str) -> dict[str, str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT lock, status::text FROM procrastinate_jobs WHERE queue_name = %s ORDER BY id",
            (queue,),
        ).fetchall()
    return {str(lock): str(status) for lock, status in rows}


def _wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout} s: {what}")
        time.sleep(0.2)


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch, pg_cluster: PgCluster) -> Iterator[Agent]:
    monkeypatch.setenv("WORKER_STORE", pg_cluster.url)
    with quick_agent.make_agent() as agent:
        yield agent


@pytest.mark.timeout(240)
def test_workers_and_serve_keep_working_after_the_database_restarts(
    pg_cluster: PgCluster, quick: Agent, tmp_path: Path
) -> None:
    url, queue = pg_cluster.url, "restart"
    before = [f"before-{i}" for i in range(10)]
    after = [f"after-{i}" for i in range(10)]
    with RunQueue(quick, queue) as runs:
        worker = _Output(_worker(url, queue, "--concurrency", "10", sleep=1.0))
        served = Served(tmp_path, ["--no-token", "--store", url])
        try:
            assert httpx.get(served.url + "/runs", timeout=10).status_code == 200
            for thread in before:
                runs.submit("wait a bit", thread)
            # Some runs are inside their 1 s tool when the database goes away.
            try:
                _wait_for(
                    lambda: "doing" in _job_states(url, queue).values(), 60, "a job in flight"
                )
            except AssertionError:
                raise AssertionError("".join(worker.lines)[-4000:]) from None
            pg_cluster.restart(down_s=2.0)
            for thread in after:
                runs.submit("wait a bit", thread)

            def settled() -> bool:
                states = _job_states(url, queue)
                return all(states.get(t) == "succeeded" for t in after) and all(
                    states.get(t) in ("succeeded", "failed") for t in before
                )

            try:
                _wait_for(settled, 90, "every job settled")
            except AssertionError:
                states = _job_states(url, queue)
                raise AssertionError(f"{states}\n{''.join(worker.lines)[-6000:]}") from None
            # serve answers again, and starts and shows runs, without a restart of its own.
            listed = httpx.get(served.url + "/runs", timeout=30)
            assert listed.status_code == 200, listed.text
            started = httpx.post(served.url + "/runs", json={"task": "t", "thread_id": "web-1"})
            assert started.status_code in (200, 201, 202), started.text
            _wait_for(
                lambda: httpx.get(served.url + "/runs/web-1", timeout=10).status_code == 200,
                30,
                "the run started over HTTP is stored",
            )
        finally:
            log = worker.stop()
            served.stop()
    assert all(quick.result(t).status == "done" for t in after), log
    for thread in before:  # done, or visibly failed: none missing
        state = _job_states(url, queue)[thread]
        assert state == "succeeded" or state == "failed", (thread, state)
        if state == "succeeded":
            assert quick.result(thread).status == "done"


def test_a_worker_at_concurrency_100_holds_a_bounded_number_of_connections(
    pg_cluster: PgCluster, quick: Agent
) -> None:
    name = f"tg-worker-{uuid.uuid4().hex[:8]}"
    url, queue = f"{pg_cluster.url}?application_name={name}", "many"
    threads = [f"many-{i}" for i in range(100)]
    with RunQueue(quick, queue) as runs:
        for thread in threads:
            runs.submit("wait a bit", thread)
    worker = _Output(_worker(url, queue, "--concurrency", "100", "--once", sleep=1.0))
    highest = 0
    try:
        with psycopg.connect(pg_cluster.url, autocommit=True) as conn:
            while worker.process.poll() is None:
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
                ).fetchone()
                highest = max(highest, int(row[0]) if row else 0)
                time.sleep(0.05)
    finally:
        log = worker.stop()
    said = re.search(r"connections: store pool (\d+), leases (\d+), queue (\d+)", log)
    assert said, log
    budget = sum(int(n) for n in said.groups())
    assert budget <= 20
    assert 0 < highest <= budget, (highest, log)
    assert all(quick.result(t).status == "done" for t in threads)


# -- retries --------------------------------------------------------------------------------


def _connection_refused() -> psycopg.OperationalError:
    try:
        psycopg.connect("postgresql://postgres@127.0.0.1:1/none", connect_timeout=2)
    except psycopg.OperationalError as exc:
        return exc
    raise AssertionError("port 1 took a connection")


class _Job:
    def __init__(self, attempts: int) -> None:
        self.attempts = attempts


def test_connection_faults_are_retried_with_a_bounded_backoff() -> None:
    from thinkgraph.worker.queue import RETRY, retry_decision_seconds

    refused = _connection_refused()
    waits = [retry_decision_seconds(refused, _Job(n)) for n in range(12)]
    assert waits[0] is not None and waits[0] <= 2
    assert all(w is not None for w in waits[: RETRY.connection_retries])
    assert waits[RETRY.connection_retries :] == [None] * (12 - RETRY.connection_retries)
    assert max(w for w in waits if w is not None) <= 60
    # Through what wrapped it: a store fault, "too many clients".
    wrapped = StorageError("lost the connection to the PostgreSQL store")
    wrapped.__cause__ = refused
    assert retry_decision_seconds(wrapped, _Job(0)) is not None
    # A busy thread: every second, as before; anything else is not retried.
    assert retry_decision_seconds(ThreadBusyError("busy"), _Job(5)) == 1
    assert retry_decision_seconds(ValueError("a bug"), _Job(0)) is None


def test_a_job_that_met_a_connection_fault_is_retried(
    queue: str, thread_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKER_STORE", POSTGRES_URL)
    real = ThreadRunner.advance
    failures = [_connection_refused()]

    async def flaky(self: ThreadRunner, thread: str, **kwargs: Any) -> str:
        if failures:
            raise failures.pop()
        return await real(self, thread, **kwargs)

    monkeypatch.setattr(ThreadRunner, "advance", flaky)
    with quick_agent.make_agent() as agent, RunQueue(agent, queue) as runs:
        runs.submit("wait a bit", thread_id)
        run_worker(agent, queue=queue, wait=False, install_signal_handlers=False)
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            row = conn.execute(
                "SELECT status::text, attempts FROM procrastinate_jobs WHERE queue_name = %s",
                (queue,),
            ).fetchone()
        assert row == ("todo", 1)  # put back, to run again after its wait
        time.sleep(2.5)
        run_worker(agent, queue=queue, wait=False, install_signal_handlers=False)
        assert agent.result(thread_id).status == "done"
