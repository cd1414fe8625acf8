"""A graph with state of its own, from the command line: its keys in `show`, and each misuse
of the state — an undeclared key, a loop no guard counts — one line, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests.cli.state_graphs import ENDLESS, PLANNED, SLOPPY
from thinkgraph import Agent, ScriptedModel
from thinkgraph.cli import app

runner = CliRunner()


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(["Thought: done\nFinal Answer: 42"]))
    return str(path)


def run(graph: str, store: str, script: str) -> Result:
    return runner.invoke(
        app,
        ["run", "plan it", "--thread", "t1", "--no-input", "--store", store,
         "--script", script, "--graph", graph],
    )  # fmt: skip


def test_show_carries_the_runs_own_keys_in_every_format(sqlite_url: str, script: str) -> None:
    done = run(PLANNED, sqlite_url, script)
    assert done.exit_code == 0, done.output
    assert 'state: plan = ["step 1", "step 2"]' in done.output
    assert "state: score = 20" in done.output
    shown = runner.invoke(app, ["show", "t1", "--format", "json", "--store", sqlite_url])
    assert json.loads(shown.output)["state"] == {"plan": ["step 1", "step 2"], "score": 20}
    markdown = runner.invoke(app, ["show", "t1", "--format", "markdown", "--store", sqlite_url])
    assert "## State" in markdown.output and "score = 20" in markdown.output


def test_an_undeclared_key_is_one_line_and_the_run_stays_before_the_node(
    sqlite_url: str, script: str
) -> None:
    done = run(SLOPPY, sqlite_url, script)
    lines = [line for line in done.output.splitlines() if line.startswith("error")]
    assert done.exit_code == 2, done.output
    assert lines == [
        "error: node 'noter' returned 'route', which the graph's state does not declare "
        "(its own keys: plan, score; with AgentState's); declare it in a state class of "
        "yours, class MyState(AgentState): route: ..., built with state=MyState"
    ]
    assert "Traceback" not in done.output
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        assert [c.node for c in agent.history("t1")] == ["start", "start"]
        # Before any node of the user's: only the plan's start (its reducer's `[]`).
        assert agent.result("t1").state == {"plan": []}


def test_a_loop_that_never_passes_think_fails_with_one_line(sqlite_url: str, script: str) -> None:
    done = run(ENDLESS, sqlite_url, script)
    assert done.exit_code == 1, done.output
    assert "status: failed (recursion_limit)" in done.output
    detail = [line for line in done.output.splitlines() if line.startswith("detail: ")]
    assert len(detail) == 1 and "the last at node 'planner'" in detail[0]
    assert "Traceback" not in done.output


def test_a_breakpoint_pause_has_one_word_in_runs_show_and_pending(
    sqlite_url: str, script: str
) -> None:
    """One vocabulary: a run paused at a breakpoint reads the same in every command."""
    started = runner.invoke(
        app,
        ["run", "plan it", "--thread", "b1", "--no-input", "--store", sqlite_url,
         "--script", script, "--graph", PLANNED, "--breakpoint", "before:critic"],
    )  # fmt: skip
    assert started.exit_code == 3, started.output
    words = "paused (breakpoint before critic)"
    assert f"status: {words} · thread b1" in started.output
    listed = runner.invoke(app, ["runs", "--store", sqlite_url]).output
    assert words in next(line for line in listed.splitlines() if line.startswith("b1"))
    shown = runner.invoke(app, ["show", "b1", "--store", sqlite_url]).output
    assert f"status: {words} · thread b1" in shown
    pending = runner.invoke(app, ["pending", "b1", "--store", sqlite_url]).output
    assert pending.startswith(f"{words} at think step 0")
    paused_only = runner.invoke(app, ["runs", "--status", "paused", "--store", sqlite_url])
    assert "b1" in paused_only.output


def test_a_fork_keeps_the_runs_breakpoints_and_takes_more(sqlite_url: str, script: str) -> None:
    run_args = ["--store", sqlite_url, "--script", script, "--graph", PLANNED]
    started = runner.invoke(
        app,
        ["run", "plan it", "--thread", "k1", "--no-input", "--breakpoint", "before:critic",
         *run_args],
    )  # fmt: skip
    assert started.exit_code == 3, started.output
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        at = next(c for c in agent.history("k1") if c.node == "planner").checkpoint_id
    # The fork pauses at the run's own breakpoint, though this command names none.
    kept = runner.invoke(app, ["fork", "k1", at, "--thread", "k2", "--no-input", *run_args])
    assert kept.exit_code == 3 and "status: paused (breakpoint before critic)" in kept.output
    # --breakpoint adds one to those the run has.
    more = runner.invoke(
        app,
        ["fork", "k1", at, "--thread", "k3", "--no-input", "--breakpoint", "after:planner",
         *run_args],
    )  # fmt: skip
    assert more.exit_code == 3, more.output
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        stored = agent.graph.get_state({"configurable": {"thread_id": "k3"}}).values
    assert stored["breakpoints"].before == ("critic",)
    assert stored["breakpoints"].after == ("planner",)
