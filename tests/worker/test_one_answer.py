"""One answer per pause: of two conflicting answers given at once, exactly one is
acknowledged; the other is refused in one line that names the answer that won.

Real processes run the real CLI (`tests.support.race` forks them and starts them at the
same moment), on the shared PostgreSQL; queued answers are run by a worker in this process
afterwards. The tool (`slow_append`) needs approval: it ran iff the winner approved.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import POSTGRES_URL
from tests.support import race
from tests.support.race import Racer
from thinkgraph import Agent, Approve, Reject, ScriptedModel
from thinkgraph.errors import NotPausedError
from thinkgraph.state import ToolResultStep
from thinkgraph.worker import RunQueue, ThreadRunner, run_worker

TOOLS = "tests.support.race:slow_append"
RUNS = 4
REFUSED = re.compile(
    r"^error: the pause of thread '(?P<thread>[^']+)' at checkpoint \S+ was already answered: "
    r"(?P<what>approved|rejected) by (?P<by>.+) at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; "
    r"nothing changed$"
)
LATE = "is done: nothing waits for approval"
"""What a loser says that read the run after the winner finished it (a loaded machine)."""


@pytest.fixture(scope="module")
def racer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Racer]:
    started = Racer(tmp_path_factory.mktemp("answers"))
    yield started
    started.close()


@pytest.fixture
def quick_tool(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The tool's effects file for runs advanced in this process (a worker), and no sleep."""
    log = tmp_path / "worker-effects"
    monkeypatch.setenv(race.EFFECTS, str(log))
    monkeypatch.setenv(race.SLEEP, "0.05")
    return log


def _agent() -> Agent:
    return Agent(ScriptedModel(race.REPLIES), [race.slow_append], store=POSTGRES_URL)


def _paused(count: int) -> list[tuple[str, str]]:
    made = []
    with Agent(ScriptedModel(race.REPLIES[:1]), [race.slow_append], store=POSTGRES_URL) as agent:
        for _ in range(count):
            thread = f"answer-{uuid.uuid4().hex[:12]}"
            result = agent.run("record once", thread_id=thread)
            assert result.status == "paused", result.chain
            made.append((thread, str(result.pending[0].call_id)))
    return made


def _tool_ran(agent: Agent, thread: str) -> bool:
    results = [s for s in agent.chain(thread) if isinstance(s, ToolResultStep)]
    return any("appended once" in str(s.output) for s in results)


def _drain(queue: str) -> None:
    with _agent() as agent:
        run_worker(agent, queue=queue, wait=False, install_signal_handlers=False)


def test_an_answer_queued_after_a_worker_took_the_first_is_refused_naming_it(
    queue: str, quick_tool: Path
) -> None:
    [(thread, call)] = _paused(1)
    with _agent() as agent, RunQueue(agent, queue) as runs:
        first = runs.resume(thread, {call: Approve()})
        # A worker takes the job: it no longer waits, so Procrastinate's queueing lock is
        # free again, while the pause is still the run's latest checkpoint.
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(
                "UPDATE procrastinate_jobs SET status = 'doing' WHERE id = %s", (first.job_id,)
            )
        try:
            with pytest.raises(NotPausedError) as refused:
                runs.resume(thread, {call: Reject(reason="no")})
        finally:
            with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
                conn.execute(
                    "UPDATE procrastinate_jobs SET status = 'todo' WHERE id = %s", (first.job_id,)
                )
        message = str(refused.value)
        assert "\n" not in message
        assert f"approved by job {first.job_id} on queue {queue!r}" in message, message
        assert message.endswith("nothing changed")
        # A stale or repeated answer changes nothing either.
        with pytest.raises(NotPausedError, match="already answered: approved"):
            runs.resume(thread, {call: Approve()})
    _drain(queue)
    with _agent() as agent:
        assert agent.result(thread).status == "done"
        assert _tool_ran(agent, thread)
    assert len(quick_tool.read_text().splitlines()) == 1


def _command(thread: str, call: str, kind: str, queue: str | None, script: Path) -> list[str]:
    answer = ["approve", thread, call] if kind == "approve" else ["reject", thread, call]
    if kind == "reject":
        answer += ["--reason", "no"]
    where = ["--store", POSTGRES_URL, "--tools", TOOLS]
    if queue is not None:
        return [*answer, *where, "--enqueue", "--queue", queue]
    return [*answer, *where, "--script", str(script)]


@pytest.mark.parametrize("mode", ["enqueue", "direct", "mixed"])
def test_two_conflicting_cli_answers_at_once_exactly_one_is_acknowledged(
    mode: str, racer: Racer, queue: str, quick_tool: Path, tmp_path: Path
) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(race.REPLIES))
    runs = _paused(RUNS)
    commands = []
    for n, (thread, call) in enumerate(runs):
        effects = {race.EFFECTS: str(tmp_path / f"effects-{thread}"), race.SLEEP: "0.3"}
        queued = {
            "enqueue": (queue, queue),
            "direct": (None, None),
            "mixed": (queue, None) if n % 2 else (None, queue),
        }[mode]
        commands.append((_command(thread, call, "approve", queued[0], script), effects))
        commands.append((_command(thread, call, "reject", queued[1], script), effects))
    results = racer.start(commands)
    _drain(queue)

    collided = 0
    with _agent() as agent:
        for n, (thread, _) in enumerate(runs):
            pair = results[2 * n : 2 * n + 2]
            codes = sorted(code for code, _ in pair)
            assert codes == [0, 2], pair  # exactly one acknowledged
            won = "approve" if pair[0][0] == 0 else "reject"
            loser = [line for line in pair[1 if won == "approve" else 0][1].splitlines() if line]
            assert len(loser) == 1, pair
            found = REFUSED.match(loser[0])
            if found is None:
                assert LATE in loser[0], pair
            else:
                collided += 1
                assert found["thread"] == thread
                assert found["what"] == {"approve": "approved", "reject": "rejected"}[won], pair
            assert agent.result(thread).status == "done", pair
            # The tool ran iff the acknowledged answer approved it, and at most once.
            assert _tool_ran(agent, thread) == (won == "approve"), pair
            direct_effects = tmp_path / f"effects-{thread}"
            direct = direct_effects.read_text().splitlines() if direct_effects.exists() else []
            assert len(direct) <= 1, pair
    assert collided, "no race collided: the processes never overlapped"


def test_a_job_whose_pause_another_answer_won_ends_quietly_with_one_line(
    queue: str, quick_tool: Path, caplog: pytest.LogCaptureFixture
) -> None:
    [(thread, call)] = _paused(1)
    with _agent() as agent, RunQueue(agent, queue) as runs:
        pause = agent.checkpoint_id(thread)
        first = runs.resume(thread, {call: Approve()})
        # A job of another answer to the same pause (queued where the claim was not seen).
        runner = ThreadRunner(agent, POSTGRES_URL)
        rejected = {call: Reject(reason="no").model_dump()}
        with caplog.at_level(logging.INFO, logger="thinkgraph.worker"):
            status = asyncio.run(
                runner.advance(thread, decisions=rejected, at=pause, answer="other", by="job 0")
            )
        assert status == "paused" and agent.checkpoint_id(thread) == pause
    lines = [r for r in caplog.records if "dropped" in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None
    assert f"already answered: approved by job {first.job_id}" in lines[0].getMessage()
    _drain(queue)
    with _agent() as agent:
        assert agent.result(thread).status == "done" and _tool_ran(agent, thread)
