"""What an operator scrapes from the fleet: a worker's `--metrics-port` (/healthz, /readyz,
/metrics), the queue's depth on `serve`'s /metrics, and a queued run over HTTP.

The worker is the real `thinkgraph worker` process; the queue is the test's own on the
shared PostgreSQL, except where the database goes down: that one is a private cluster.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from tests.conftest import POSTGRES_URL
from tests.server.conftest import BASE
from tests.server.support import free_port
from tests.server.test_health import _sample
from tests.support import worker_agent
from tests.support.pg_cluster import PgCluster, pg_cluster
from thinkgraph import Agent
from thinkgraph.server import build_app
from thinkgraph.worker import RunQueue

__all__ = ["pg_cluster"]

THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Agent]:
    monkeypatch.setenv("WORKER_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("WORKER_STORE", POSTGRES_URL)
    monkeypatch.delenv("CRASH_AT", raising=False)
    with worker_agent.make_agent() as made:
        yield made


class Worker:
    """`thinkgraph worker --metrics-port P` in a child process, its output kept."""

    def __init__(self, tmp_path: Path, store: str, queue: str, *extra: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "WORKER_STORE": store,
            "WORKER_LOG": str(tmp_path / "calls.log"),
        }
        env.pop("CRASH_AT", None)
        command = [
            THINKGRAPH, "worker", "--agent", "tests.support.worker_agent:make_agent",
            "--store", store, "--queue", queue, "--heartbeat", "0.5",
            "--metrics-port", str(self.port), *extra,
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        # A new process imports LangGraph, LiteLLM and Procrastinate first: slow on a busy
        # machine.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                httpx.get(self.url + "/healthz", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise AssertionError(f"the worker's metrics port did not open:\n{self.stop()}")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.url + path, timeout=10)

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


def _until(check: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.1)


def test_a_queued_run_reads_as_queued_over_http(agent: Agent, queue: str) -> None:
    with TestClient(build_app(agent, queue=queue, token=None), base_url=BASE) as client:
        started = client.post("/runs", json={"task": "record and publish"})
        assert started.status_code == 202, started.text
        thread, job = started.json()["thread_id"], started.json()["job_id"]
        response = client.get(f"/runs/{thread}")
        assert response.status_code == 200, response.text
        doc = response.json()
        assert doc["status"] == "queued"
        assert doc["thread_id"] == thread
        assert doc["job_id"] == job and doc["queue"] == queue
        assert doc["steps"] == []
        # A thread with neither a run nor a job is still 404.
        assert client.get(f"/runs/none-{uuid.uuid4().hex[:8]}").status_code == 404


def test_serve_metrics_show_the_queue_depth(agent: Agent, queue: str) -> None:
    with RunQueue(agent, queue) as runs:
        for _ in range(2):
            runs.submit("record and publish", f"t-{uuid.uuid4().hex[:12]}")
    with TestClient(build_app(agent, queue=queue, token=None), base_url=BASE) as client:
        text = client.get("/metrics").text
    assert _sample(text, "thinkgraph_queue_jobs", queue=queue, status="todo") == 2
    assert _sample(text, "thinkgraph_queue_jobs", queue=queue, status="doing") == 0
    assert _sample(text, "thinkgraph_queue_jobs", queue=queue, status="failed") == 0


def test_a_worker_serves_health_and_metrics_on_its_port(
    agent: Agent, queue: str, tmp_path: Path
) -> None:
    thread = f"t-{uuid.uuid4().hex[:12]}"
    with RunQueue(agent, queue) as runs:
        runs.submit("record and publish", thread)
    worker = Worker(tmp_path, POSTGRES_URL, queue)
    try:
        assert worker.get("/healthz").text == "ok"
        ready = worker.get("/readyz")
        assert ready.status_code == 200 and ready.text == "ok"
        _until(lambda: agent.checkpoint_id(thread) and agent.result(thread).status == "paused")

        def scraped() -> str:
            response = worker.get("/metrics")
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/plain")
            return response.text

        # The job ends at the pause; its outcome is counted as it returns.
        _until(lambda: _sample(scraped(), "thinkgraph_jobs_total", outcome="paused") == 1)
        text = scraped()
        assert _sample(text, "thinkgraph_job_seconds_count", outcome="paused") == 1
        assert _sample(text, "thinkgraph_job_retries_total") == 0
        assert _sample(text, "thinkgraph_tool_calls_total", tool="record", outcome="ok") == 2
        assert _sample(text, "thinkgraph_model_calls_total", model="scripted", outcome="ok") == 3
        assert _sample(text, "thinkgraph_queue_jobs", queue=queue, status="todo") == 0
        assert worker.get("/nothing").status_code == 404
    finally:
        output = worker.stop()
    assert f"metrics on http://127.0.0.1:{worker.port}/metrics" in output, output


def test_a_workers_readyz_fails_while_the_database_is_down_and_a_stop_still_ends_it(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    worker = Worker(tmp_path, pg_cluster.url, "thinkgraph")
    try:
        assert worker.get("/readyz").status_code == 200
        pg_cluster.stop()
        response = worker.get("/readyz")
        assert response.status_code == 503
        assert response.text.startswith("not ready: ")
        assert "\n" not in response.text.strip()
        assert worker.get("/healthz").status_code == 200
        # An operator stops a worker whose database is down: it holds no run, so it has
        # nothing to wait for, and ends within seconds, saying why, without a traceback.
        time.sleep(1.5)  # its fetch and heartbeat now wait on the database
        stopped = time.monotonic()
        worker.process.terminate()
        worker.process.wait(timeout=15)
        took = time.monotonic() - stopped
    finally:
        output = worker.stop()
    assert took < 10, f"the worker took {took:.1f} s to stop:\n{output}"
    assert worker.process.returncode == 0, output
    assert "Traceback" not in output, output
    assert "stopped without the database" in output, output


def test_a_metrics_port_in_use_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [THINKGRAPH, "worker", "--agent", "tests.support.worker_agent:make_agent",
             "--store", POSTGRES_URL, "--metrics-port", str(port)],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT), "WORKER_STORE": POSTGRES_URL,
                 "WORKER_LOG": str(tmp_path / "calls.log")},
        )  # fmt: skip
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert f"port {port}" in done.stderr and "--metrics-port" in done.stderr


def test_a_bad_pool_size_on_a_workers_store_is_one_line(tmp_path: Path) -> None:
    from tests.support.cli import thinkgraph_here

    bad = f"{POSTGRES_URL}?pool_size=0"
    done = thinkgraph_here(
        "worker", "--tools", "tests.support.quick_agent:pause_a_bit", "--model", "openai/x",
        "--store", bad, "--once", cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: pool_size=0 in the store URL"), done.stderr
    assert "Traceback" not in done.stderr


def test_run_worker_refuses_a_bad_pool_size_on_its_queue_url(agent: Agent) -> None:
    from thinkgraph.errors import ConfigError
    from thinkgraph.worker import run_worker

    with pytest.raises(ConfigError, match="pool_size=x in the store URL"):
        run_worker(agent, url=f"{POSTGRES_URL}?pool_size=x", install_signal_handlers=False)
