"""A command opens its store once: continuing a run (approve, reject, resume, fork) reads
the graph the run recorded and builds its agent over one opened store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import thinkgraph.storage.checkpointers as checkpointers
from thinkgraph import Agent, ScriptedModel
from thinkgraph.cli import app

runner = CliRunner()
TOOLS = "tests.cli.sample_tools:send_email"
REPLIES = [
    'Thought: mail it\nAction: send_email\nAction Input: {"to": "a@b.c", "body": "hi"}',
    "Thought: sent\nFinal Answer: sent",
]


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The store URLs opened (at the one place every opening passes)."""
    seen: list[str] = []
    original = checkpointers._open_sqlite

    def counting(url: str, rest: str) -> Any:
        seen.append(url)
        return original(url, rest)

    monkeypatch.setattr(checkpointers, "_open_sqlite", counting)
    return seen


def _paused(tmp_path: Path) -> tuple[list[str], str]:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(REPLIES))
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    flags = ["--store", store, "--tools", TOOLS, "--script", str(script)]
    started = runner.invoke(app, ["run", "mail it", "--thread", "one", *flags])
    assert started.exit_code == 3, started.output  # paused for approval
    return flags, store


@pytest.mark.parametrize(
    ("command", "code", "said"),
    [
        (["approve", "one"], 0, "answer: sent"),
        (["reject", "one", "--reason", "no"], 0, "answer: sent"),
        (["resume", "one"], 2, "waits for approval, which resume cannot give"),
    ],
    ids=lambda c: c[0] if isinstance(c, list) else None,
)
def test_continuing_a_run_opens_its_store_once(
    command: list[str], code: int, said: str, tmp_path: Path, opens: list[str]
) -> None:
    flags, store = _paused(tmp_path)
    opens.clear()
    done = runner.invoke(app, [*command, *flags])
    assert done.exit_code == code, done.output
    assert said in done.output, done.output
    assert opens == [store], opens


def test_a_fork_opens_its_store_once(tmp_path: Path, opens: list[str]) -> None:
    flags, store = _paused(tmp_path)
    with Agent(ScriptedModel([]), store=store) as agent:
        first = next(h.checkpoint_id for h in agent.history("one") if h.node == "think")
    opens.clear()
    forked = runner.invoke(app, ["fork", "one", first, "--thread", "two", *flags])
    assert forked.exit_code == 3, forked.output  # the fork paused for approval again
    assert opens == [store], opens


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each read of a run's latest checkpoint (every path reads it through `get_tuple`)."""
    seen: list[str] = []
    original = checkpointers._open_sqlite

    def counting(url: str, rest: str) -> Any:
        saver = original(url, rest)
        read = saver.get_tuple

        def get_tuple(config: Any) -> Any:
            seen.append(str(config["configurable"].get("checkpoint_id") or "latest"))
            return read(config)

        object.__setattr__(saver, "get_tuple", get_tuple)
        return saver

    monkeypatch.setattr(checkpointers, "_open_sqlite", counting)
    return seen


def test_an_approve_reads_its_run_once_and_checks_it_once_more_to_claim(
    tmp_path: Path, reads: list[str]
) -> None:
    """Before the first node runs, `approve` reads the run's graph address, the run (one
    state read: its latest tuple, then the state on that graph), the claim's check of the
    pause, and the latest again under the run's lease; LangGraph then reads it to run, and
    the run index reads it once more for the run's row when the segment ends. It read the
    pause's checkpoint id apart from the run, and checked the pause twice (8 before the
    first node)."""
    flags, _store = _paused(tmp_path)
    reads.clear()
    done = runner.invoke(app, ["approve", "one", *flags])
    assert done.exit_code == 0, done.output
    assert len(reads) == 7, reads
