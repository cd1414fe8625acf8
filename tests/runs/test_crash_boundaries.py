"""Kill a run at every node boundary and inside a tool; resume; nothing lost or done twice."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.crash_cycles import build_agent
from thinkgraph.state import BaseStep

ROOT = Path(__file__).resolve().parents[2]


def _child(store: str, thread: str, log: Path, mode: str, kill: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.crash_cycles", store, thread, str(log), mode, kill],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode in (0, -9), done.stderr
    return done.returncode


def _content(chain: list[BaseStep]) -> list[tuple[str, str]]:
    drop = {"id", "at", "latency_s", "duration_s", "llm_call_id", "call", "call_id"}
    drop |= {"idempotency_key"}
    return [(s.type, repr(s.model_dump(exclude=drop))) for s in chain]  # type: ignore[attr-defined]


def _reference(tmp_path: Path) -> list[tuple[str, str]]:
    with build_agent(f"sqlite:///{tmp_path / 'ref.db'}", tmp_path / "ref.log") as agent:
        return _content(agent.run("record two lines", thread_id="ref").chain)


# An uninterrupted run writes 11 checkpoints (the input, the start, then one per node:
# think, act, observe, think, act, observe, think, validate, finalize); a kill after the
# last would find nothing left to do. It saves 10 task writes; a kill after a task's writes
# and before its checkpoint is the case that matters most after act (the tool finished:
# it must not run again), and after think (the model must not be asked again).
KILLS = [f"put:{n}" for n in range(1, 11)] + [f"writes:{n}" for n in (2, 3, 4, 6, 10)]


@pytest.mark.parametrize("kill", [*KILLS, "tool:1", "tool:2"])
def test_killed_at_any_boundary_the_run_resumes_to_the_same_chain(
    kill: str, sqlite_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "effects.log"
    assert _child(sqlite_url, "t", log, "run", kill) == -9
    with build_agent(sqlite_url, log) as agent:
        result = agent.resume("t")
    assert (result.status, result.answer) == ("done", "recorded one and two")
    assert _content(result.chain) == _reference(tmp_path)
    texts = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    assert texts == ["one", "two"]


def test_repeated_kill_resume_cycles_do_every_side_effect_exactly_once(
    store_url: str, thread_id: str, tmp_path: Path
) -> None:
    log = tmp_path / "effects.log"
    mode, cycles = "run", 0
    # Each process dies right after its first checkpoint or inside its first tool call.
    while _child(store_url, thread_id, log, mode, "tool:1" if cycles % 3 == 2 else "put:1"):
        mode, cycles = "resume", cycles + 1
        assert cycles < 40, "the run never finished"
    assert cycles >= 8
    with build_agent(store_url, log) as agent:
        result = agent.result(thread_id)
    assert (result.status, result.answer) == ("done", "recorded one and two")
    lines = log.read_text().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["one", "two"]
    keys = [line.split(" ", 1)[0] for line in lines]
    assert all(key.startswith(f"{thread_id}:") for key in keys) and len(set(keys)) == 2
