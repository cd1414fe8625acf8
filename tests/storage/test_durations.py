"""A duration is range-checked where it is parsed: `--older-than`, `Retention`, `prune`.

A duration too long to count back from today (before the year 1) used to raise
`OverflowError` from the CLI, or be accepted by `Retention` and then fail every run as it
ended, after storing it as done. Now each is refused where it is given, in one line that
names the longest duration accepted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from thinkgraph import Agent, ScriptedModel
from thinkgraph.storage.prune import MAX_AGE, PruneError, Retention, parse_duration, prune

ROOT = Path(__file__).resolve().parents[2]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
TOO_LONG = ("99999999999999w", "100000000000.0s", "36501d", "1" + "0" * 400 + "s")


def test_the_longest_duration_is_a_hundred_years() -> None:
    assert timedelta(days=36500) == MAX_AGE
    assert parse_duration("36500d") == MAX_AGE
    assert parse_duration("5214w") == timedelta(weeks=5214)


@pytest.mark.parametrize("text", TOO_LONG)
def test_a_duration_too_long_is_refused_naming_the_longest(text: str) -> None:
    with pytest.raises(PruneError) as refused:
        parse_duration(text)
    message = str(refused.value)
    assert "36500d" in message and text.strip() in message
    assert "\n" not in message


@pytest.mark.parametrize("text", TOO_LONG)
def test_retention_refuses_a_duration_too_long_when_it_is_made(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        Retention(older_than=text)
    message = str(refused.value)
    assert "\n" not in message and "36500d" in message and "older_than" in message


def test_retention_refuses_a_timedelta_too_long_or_negative() -> None:
    with pytest.raises(ValueError, match="36500d"):
        Retention(older_than=timedelta(days=10**6))
    with pytest.raises(ValueError, match="negative"):
        Retention(older_than=timedelta(seconds=-1))
    assert Retention(older_than=MAX_AGE).older_than == MAX_AGE


def test_other_retention_mistakes_are_one_line_too() -> None:
    with pytest.raises(ValueError) as refused:
        Retention(keep_last=0)
    assert "\n" not in str(refused.value) and "keep_last" in str(refused.value)


def test_prune_refuses_a_timedelta_too_long_before_touching_the_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Agent(ScriptedModel(["Thought: x\nFinal Answer: 1"]), store=url) as agent:
        assert agent.run("go", thread_id="t1").status == "done"
        saver = agent.graph.checkpointer
        status = agent.reader.status
        with pytest.raises(PruneError, match="36500d"):
            prune(saver, status=status, older_than=timedelta(days=10**6))  # type: ignore[arg-type]
        assert agent.result("t1").status == "done"


def _prune_cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    env["PYTHONPATH"] = str(ROOT)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Agent(ScriptedModel(["Thought: x\nFinal Answer: 1"]), store=url) as agent:
        agent.run("go", thread_id="t1")
    return subprocess.run(
        [THINKGRAPH, "prune", "--store", url, *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize("text", ["99999999999999w", "100000000000.0s"])
def test_the_cli_refuses_a_duration_too_long_in_one_line(text: str, tmp_path: Path) -> None:
    done = _prune_cli("--older-than", text, "--yes", tmp_path=tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: --older-than {text}") and "36500d" in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""
