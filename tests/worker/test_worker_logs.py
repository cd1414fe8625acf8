"""What a worker writes to its log: no secret of a job, levels and JSON lines, busy retries
in one line each.

Real workers in child processes (`thinkgraph worker`), their output captured whole, on the
shared PostgreSQL with a queue of each test's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import POSTGRES_URL
from tests.support.cli import thinkgraph_here
from thinkgraph import Agent, tool
from thinkgraph.storage import close_checkpointer, open_checkpointer
from thinkgraph.storage.lease import thread_lease
from thinkgraph.tools.base import ToolContext

THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
ROOT = Path(__file__).resolve().parents[2]

PASSWORD = "hunter2-in-a-task"
KEY = "sk-live0123456789abcdefABCDEF"
EDIT_PASSWORD = "hunter3-in-an-edit"
EDIT_KEY = "sk-edit9876543210zyxwvuTSRQ"
SECRETS = (PASSWORD, KEY, EDIT_PASSWORD, EDIT_KEY, "hunter2", "hunter3")


@tool(requires_approval=True, side_effects=True)
def publish(text: str, ctx: ToolContext) -> str:
    """Publish a line (a person approves it first)."""
    raise AssertionError("the worker runs it, with the worker agent's own tool")


TOOLS = [publish]
"""The worker agent's gated tool as `approve --edit` checks an edit against it."""


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.log"
    monkeypatch.setenv("WORKER_LOG", str(path))
    monkeypatch.setenv("WORKER_STORE", POSTGRES_URL)
    monkeypatch.delenv("CRASH_AT", raising=False)
    return path


def _worker(queue: str, log: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "WORKER_STORE": POSTGRES_URL, "WORKER_LOG": str(log)}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("CRASH_AT", None)
    command = [
        THINKGRAPH, "worker", "--agent", "tests.support.worker_agent:make_agent",
        "--queue", queue, "--heartbeat", "0.2", "--stalled-after", "1.5", *extra,
    ]  # fmt: skip
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _once(queue: str, log: Path, *extra: str) -> str:
    worker = _worker(queue, log, "--once", *extra)
    output, _ = worker.communicate(timeout=120)
    assert worker.returncode == 0, output
    return output


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return thinkgraph_here(*args, cwd=ROOT, env={"THINKGRAPH_STORE": POSTGRES_URL})


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_no_secret_of_a_task_or_an_edit_reaches_a_worker_log_at_debug(
    fmt: str, queue: str, thread_id: str, log: Path
) -> None:
    task = f'deploy with {{"password": "{PASSWORD}"}} and key {KEY}'
    submitted = _cli("submit", task, "--thread", thread_id, "--queue", queue)
    assert submitted.returncode == 0, submitted.stderr
    first = _once(queue, log, "--log-level", "debug", "--log-format", fmt)

    from tests.support import worker_agent

    with worker_agent.make_agent() as agent:
        assert agent.result(thread_id).status == "paused"
        [pending] = agent.result(thread_id).pending
        edit = json.dumps({"text": f'{{"password": "{EDIT_PASSWORD}"}} {EDIT_KEY}'})
        approved = _cli(
            "approve", thread_id, pending.call_id, "--edit", edit, "--enqueue", "--queue", queue,
            "--tools", "tests.worker.test_worker_logs:TOOLS",
        )  # fmt: skip
        assert approved.returncode == 0, approved.stderr
        second = _once(queue, log, "--log-level", "debug", "--log-format", fmt)
        assert agent.result(thread_id).status == "done"
    assert f'published {{"password": "{EDIT_PASSWORD}"}}' in log.read_text()  # it ran

    output = first + second
    for secret in SECRETS:
        assert secret not in output, f"{secret!r} is in the worker's log:\n{output}"
    # The jobs were logged, by id and thread, at DEBUG too.
    assert output.count("Starting job thinkgraph.advance[") == 2, output
    assert "Loaded job info" in output and thread_id in output
    if fmt == "json":
        lines = [json.loads(line) for line in output.splitlines() if line.strip()]
        assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
        started = [line for line in lines if line["message"].startswith("Starting job")]
        assert len(started) == 2
        assert all(line["thread_id"] == thread_id and line["job_id"] for line in started)
        assert {line["level"] for line in lines} >= {"debug", "info"}


def test_log_options_take_a_level_and_a_format(queue: str, thread_id: str, log: Path) -> None:
    submitted = _cli("submit", "record and publish", "--thread", thread_id, "--queue", queue)
    assert submitted.returncode == 0, submitted.stderr
    quiet = _once(queue, log, "--log-level", "warning")
    assert "Starting job" not in quiet and "Loaded job info" not in quiet
    for args, choices in (
        (["--log-level", "loud"], "debug, info, warning, error"),
        (["--log-format", "xml"], "text, json"),
    ):
        done = thinkgraph_here(
            "worker", "--agent", "tests.support.worker_agent:make_agent", "--store",
            POSTGRES_URL, *args, cwd=ROOT,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        [line] = done.stderr.strip().splitlines()
        assert args[0] in line and args[1] in line and choices in line


def test_a_job_retried_because_its_thread_is_busy_logs_one_line_per_attempt(
    queue: str, thread_id: str, log: Path
) -> None:
    other = open_checkpointer(POSTGRES_URL)  # another process holds the thread
    worker = _worker(queue, log, "--log-level", "info")
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(worker.stdout or ()), daemon=True)
    reader.start()

    def busy() -> list[str]:
        return [line for line in list(lines) if "another" in line and thread_id in line]

    try:
        with thread_lease(other, thread_id):
            submitted = _cli(
                "submit", "record and publish", "--thread", thread_id, "--queue", queue
            )
            assert submitted.returncode == 0, submitted.stderr
            deadline = time.monotonic() + 90
            while len(busy()) < 3:  # a few attempts, a second apart
                assert time.monotonic() < deadline, "".join(lines)
                time.sleep(0.2)
        with _agent() as agent:
            deadline = time.monotonic() + 60
            while (
                agent.checkpoint_id(thread_id) is None or agent.result(thread_id).status != "paused"
            ):
                assert time.monotonic() < deadline, "the job never ran once the thread was free"
                time.sleep(0.2)
    finally:
        close_checkpointer(other)
        worker.terminate()
        worker.wait(timeout=60)
        reader.join(timeout=10)
    output = "".join(lines)
    assert "Traceback" not in output, output
    assert all(" WARNING " in line for line in busy()), busy()
    assert all(line.count("\n") == 1 for line in busy())


def _agent() -> Agent:
    from tests.support import worker_agent

    return worker_agent.make_agent()
