"""Commands that race for one thread: one process advances it, the other is refused.

Real processes run the real CLI (tests/support/race.py forks them from one process that
imported it once, so twenty races stay quick); the tool they race over appends a line to a
file and then sleeps, so the second process arrives while the first is inside it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import race
from tests.support.race import Racer
from thinkgraph import Agent, ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
TOOLS = "tests.support.race:slow_append"
BUSY = "is being advanced by another process (since "
RACES = 20
AT_ONCE = 5  # races started together (two processes each; ~2 connections a process)


@pytest.fixture(scope="module")
def racer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Racer]:
    started = Racer(tmp_path_factory.mktemp("race"))
    yield started
    started.close()


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(race.REPLIES))
    return path


def paused(store: str, count: int = 1) -> list[tuple[str, str]]:
    """New runs paused for approval of one slow_append call: (thread id, call id) each."""
    made = []
    with Agent(ScriptedModel(race.REPLIES[:1] * count), [race.slow_append], store=store) as agent:
        for _ in range(count):
            thread = f"race-{uuid.uuid4().hex[:12]}"
            result = agent.run("record once", thread_id=thread)
            assert result.status == "paused", result.chain
            made.append((thread, str(result.pending[0].call_id)))
    return made


def flags(store: str, script: Path) -> list[str]:
    return ["--store", store, "--tools", TOOLS, "--script", str(script)]


def effects(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def recorded(store: str, *threads: str) -> list[tuple[str, int, int]]:
    """(status, approval steps, tool results) of each stored run."""
    found = []
    with Agent(ScriptedModel([]), [race.slow_append], store=store) as agent:
        for thread in threads:
            result = agent.result(thread)
            humans = sum(1 for s in result.chain if s.type == "human" and s.node == "approve")
            results = sum(1 for s in result.chain if s.type == "tool_result")
            found.append((result.status, humans, results))
    return found


def busy_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    return lines[0]


def test_two_concurrent_approves_run_the_call_once(
    racer: Racer, store_url: str, script: Path, tmp_path: Path
) -> None:
    runs = paused(store_url, RACES)
    outcomes: list[Any] = []
    for wave in range(RACES // AT_ONCE):
        chosen = runs[wave * AT_ONCE : (wave + 1) * AT_ONCE]
        setups = [(t, c, tmp_path / f"effects-{t}") for t, c in chosen]
        commands = [
            (["approve", thread, call, *flags(store_url, script)], {race.EFFECTS: str(log)})
            for thread, call, log in setups
            for _ in range(2)
        ]
        results = racer.start(commands)
        for n, (thread, _, log) in enumerate(setups):
            pair = results[2 * n : 2 * n + 2]
            outcomes.append((thread, sorted(code for code, _ in pair), effects(log), pair))
    doubled = [o for o in outcomes if len(o[2]) != 1]
    assert not doubled, f"{len(doubled)} of {RACES} races ran the tool twice: {doubled[0]}"
    collided = 0
    for thread, codes, _, pair in outcomes:
        assert codes == [0, 2], pair
        line = busy_line(next(out for code, out in pair if code == 2))
        # On a loaded machine the loser may come after the winner finished: it then finds
        # nothing to approve, which also changes nothing.
        late = f"error: thread {thread!r} is done: nothing waits for approval"
        # One answer per pause: a loser that saw the pause is told the answer that won it.
        won = f"error: the pause of thread {thread!r} at checkpoint "
        answered = line.startswith(won) and "already answered: approved by process" in line
        assert line.startswith(f"error: thread {thread!r} {BUSY}") or answered or line == late
        collided += line != late
    print(f"{store_url.split(':')[0]}: {RACES} races, {collided} collided, 0 doubled")
    assert collided, "no race collided: the processes never overlapped"
    assert recorded(store_url, *(t for t, _ in runs)) == [("done", 1, 1)] * RACES


def test_resume_while_another_process_is_inside_the_tool_is_refused(
    racer: Racer, store_url: str, script: Path, tmp_path: Path
) -> None:
    [(thread, call)] = paused(store_url)
    log = tmp_path / "effects"
    holder = _approve_in_the_background(thread, call, store_url, script, log, sleep=2.0)
    try:
        _wait_for_the_tool(log, holder)
        [(code, out)] = racer.start(
            [(["resume", thread, *flags(store_url, script)], {race.EFFECTS: str(log)})]
        )
        assert code == 2, out
        assert busy_line(out).startswith(f"error: thread {thread!r} {BUSY}")
        assert holder.wait(timeout=30) == 0
    finally:
        holder.kill()
    assert len(effects(log)) == 1
    assert recorded(store_url, thread) == [("done", 1, 1)]


def test_a_killed_holder_leaves_the_thread_free_and_one_of_two_resumes_runs_the_rest(
    racer: Racer, store_url: str, script: Path, tmp_path: Path
) -> None:
    [(thread, call)] = paused(store_url)
    log = tmp_path / "effects"
    holder = _approve_in_the_background(thread, call, store_url, script, log, sleep=60.0)
    try:
        _wait_for_the_tool(log, holder)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    finally:
        holder.kill()
    command = (["resume", thread, *flags(store_url, script)], {race.EFFECTS: str(log)})
    results = racer.start([command, command])
    assert sorted(code for code, _ in results) == [0, 2], results
    loser = next(out for code, out in results if code == 2)
    assert BUSY in busy_line(loser)
    assert len(effects(log)) == 2  # the killed call, and its one re-run
    assert recorded(store_url, thread) == [("done", 1, 1)]


def _approve_in_the_background(
    thread: str, call: str, store: str, script: Path, log: Path, *, sleep: float
) -> subprocess.Popen[str]:
    """`thinkgraph approve` (the installed script) whose tool takes `sleep` seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), race.EFFECTS: str(log), race.SLEEP: str(sleep)}
    exe = Path(sys.executable).parent / "thinkgraph"
    return subprocess.Popen(
        [str(exe), "approve", thread, call, *flags(store, script)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _wait_for_the_tool(log: Path, holder: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while not effects(log):
        assert holder.poll() is None, holder.communicate()[0]
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.02)
