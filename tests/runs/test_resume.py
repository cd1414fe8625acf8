"""Resume after a crash: a real child process is killed with SIGKILL, the parent resumes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.crash_agent import build_agent
from thinkgraph.state import BaseStep

ROOT = Path(__file__).resolve().parents[2]


def _child(store: str, thread: str, log: Path, kill_at: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "tests.support.crash_agent", store, thread, str(log), kill_at],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _content(chain: list[BaseStep]) -> list[tuple[object, ...]]:
    """What a step says, without its id, timestamp and timings."""
    out: list[tuple[object, ...]] = []
    for step in chain:
        data = step.model_dump(exclude={"id", "at", "latency_s", "duration_s", "llm_call_id"})
        data.pop("call", None)
        data.pop("call_id", None)
        data.pop("idempotency_key", None)
        out.append(tuple(sorted((k, repr(v)) for k, v in data.items())))
    return out


def _uninterrupted(tmp_path: Path) -> list[BaseStep]:
    log = tmp_path / "clean.log"
    with build_agent(f"sqlite:///{tmp_path / 'clean.db'}", log) as agent:
        return agent.run("record three lines", thread_id="clean").chain


@pytest.mark.parametrize("kill_at", ["think:2", "think:4", "tool:1", "tool:3"])
def test_a_killed_run_resumes_to_the_same_chain(
    kill_at: str, store_url: str, thread_id: str, tmp_path: Path
) -> None:
    log = tmp_path / "side-effects.log"
    child = _child(store_url, thread_id, log, kill_at)
    assert child.returncode == -9, child.stderr  # SIGKILL: nothing was cleaned up
    with build_agent(store_url, log) as agent:
        before = agent.result(thread_id)
        assert before.status == "running"
        result = agent.resume(thread_id)
    assert (result.status, result.answer) == ("done", "recorded one, two, three")
    assert _content(result.chain) == _content(_uninterrupted(tmp_path))
    lines = log.read_text().splitlines()
    for text in ("one", "two", "three"):
        assert lines.count(f"done {text}") == 1, lines


def test_a_call_that_finished_before_the_crash_is_not_run_again(
    sqlite_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "side-effects.log"
    child = _child(sqlite_url, "t", log, "tool:2")
    assert child.returncode == -9
    with build_agent(sqlite_url, log) as agent:
        agent.resume("t")
    lines = log.read_text().splitlines()
    assert lines.count("start one") == 1
    # The call in flight when the process died re-runs once; nothing else repeats.
    assert lines.count("start two") == 2 and lines.count("done two") == 1
