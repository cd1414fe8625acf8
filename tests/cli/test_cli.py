"""The `thinkgraph` command line, as a user meets it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from thinkgraph.cli import app
from thinkgraph.storage import close_checkpointer, open_checkpointer

runner = CliRunner()

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(
        json.dumps(
            [
                'Thought: add\nAction: calculator\nAction Input: {"expression": "2 + 40"}',
                "Thought: done\nFinal Answer: 42",
            ]
        )
    )
    return path


def test_run_prints_the_chain_and_the_answer(script: Path, sqlite_url: str) -> None:
    result = runner.invoke(
        app,
        ["run", "What is 2 + 40?", "--script", str(script), "--tools", "calculator",
         "--store", sqlite_url, "--thread", "cli1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "calculator" in result.output and "observation 42" in result.output
    assert "answer: 42" in result.output
    assert "status: done · thread cli1" in result.output


def test_show_prints_a_stored_run(script: Path, sqlite_url: str) -> None:
    runner.invoke(
        app,
        ["run", "x", "--script", str(script), "--tools", "calculator", "--store", sqlite_url,
         "--thread", "cli2", "--quiet"],
    )  # fmt: skip
    result = runner.invoke(app, ["show", "cli2", "--store", sqlite_url])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("#0   task        x\n")
    assert "#8   final       final_answer: 42" in result.output


def test_a_run_that_fails_exits_one_with_the_reason(tmp_path: Path, sqlite_url: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(["no format", "still none", "nothing"]))
    result = runner.invoke(app, ["run", "x", "--script", str(path), "--store", sqlite_url])
    assert result.exit_code == 1
    assert "status: failed (consecutive_failures)" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "x", "--store", "memory://"], "no model: pass --model"),
        (["run", "x", "--script", "missing.json"], "--script missing.json: cannot read"),
        (["run", "x", "--script", "{s}", "--tools", "nomodule_xyz:f"], "is not found from"),
        (["run", "x", "--script", "{s}", "--tools", "json"], "use module:attribute"),
        (["run", "x", "--script", "{s}", "--min-steps", "5", "--max-steps", "2"], "--min-steps 5"),
        (["run", "x", "--script", "{s}", "--store", "redis://x"], "unknown store scheme"),
        (["show", "nope", "--store", "{db}"], "no run is stored under thread 'nope'"),
        (["draw", "--format", "gif"], "--format 'gif' is not supported"),
    ],
)
def test_bad_arguments_get_one_line_naming_the_fix(
    args: list[str], message: str, script: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("THINKGRAPH_MODEL", raising=False)
    close_checkpointer(open_checkpointer(sqlite_url))  # the store exists, the run does not
    args = [a.replace("{s}", str(script)).replace("{db}", sqlite_url) for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_draw_prints_mermaid() -> None:
    result = runner.invoke(app, ["draw"])
    assert result.exit_code == 0
    assert 'think -.->|"continue"| act;' in result.output
    assert "act --> observe;" in result.output


def test_help_lists_the_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("run", "resume", "show", "draw", "demo"):
        assert command in result.output


def test_demo_runs_from_a_fresh_directory(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    exe = Path(sys.executable).parent / "thinkgraph"
    done = subprocess.run(
        [str(exe), "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "model: ScriptedModel" in out
    assert "sql_query" in out and "calculator" in out
    # The demo's printer is given its tools, so their calls are not masked.
    assert '#3   tool_call   sql_query({"query": "SELECT quarter, ROUND(' in out
    assert "observation 340.6875" in out and "***" not in out
    # Q3 totals 375.25k; the four quarters average 340.6875k; 375.25 is 10.14% above it.
    assert "Q3 2025 had the highest revenue (375.25k USD), 10.1% above" in out
    assert "(340.69k USD)" in out
    assert "graph TD;" in out
    assert (tmp_path / ".thinkgraph" / "runs.db").exists()


@pytest.mark.parametrize("command", ["show", "pending", "history", "runs"])
def test_reading_a_store_that_does_not_exist_creates_nothing(command: str, tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "runs.db"
    args = [command] if command == "runs" else [command, "t1"]
    result = runner.invoke(app, [*args, "--store", f"sqlite:///{missing}"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: no store at {missing}")
    assert not missing.parent.exists()
