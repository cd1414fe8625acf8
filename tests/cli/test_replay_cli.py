"""`thinkgraph replay RUN` on SQLite and PostgreSQL: a recorded demo run, replayed offline."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.replay.gated import gated_tools
from thinkgraph import Agent, StepLimits
from thinkgraph.cli import app
from thinkgraph.demo import DEMO_TASK, scripted_analyst
from thinkgraph.hitl import Approve

runner = CliRunner()

SKIP_CALCULATOR = f"{Path(__file__).parents[1] / 'replay' / 'graphs.py'}:skip_calculator"
DEMO_TOOLS = "tests.replay.gated:tools"
"""The demo's tools, the SQL one gated: the CLI takes its approvals from the tools."""


@pytest.fixture
def recorded(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A demo run (3 tool calls, the SQL call approved) in `store_url`, run from tmp_path."""
    monkeypatch.chdir(tmp_path)  # the demo's database is made under the working directory
    thread = f"demo-{uuid.uuid4().hex[:8]}"
    limits = StepLimits(max_steps=8)
    with Agent(scripted_analyst(), gated_tools(), limits=limits, store=store_url) as a:
        paused = a.run(DEMO_TASK, thread)
        done = a.resume(thread, {p.call_id: Approve() for p in paused.pending})
    assert done.status == "done"
    return thread


def replay(store: str, *args: str) -> object:
    return runner.invoke(app, ["replay", *args, "--store", store])


def test_a_demo_run_replays_same_offline_and_exits_zero(store_url: str, recorded: str) -> None:
    done = runner.invoke(app, ["replay", recorded, "--tools", DEMO_TOOLS, "--store", store_url])
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [
        f"replay replay-{recorded} of {recorded}: same",
        "served 4 model replies, 3 tool results, 1 decision; made 0 model calls, 0 tool runs",
    ]
    again = runner.invoke(
        app,
        [
            "replay",
            recorded,
            "--tools",
            DEMO_TOOLS,
            "--store",
            store_url,
            "--json",
            "-t",
            f"j-{recorded}",
        ],
    )
    doc = json.loads(again.stdout)
    assert (doc["outcome"], doc["model_calls"], doc["tool_runs"]) == ("same", 0, 0)
    assert doc["served"] == {"model_replies": 4, "tool_results": 3, "decisions": 1}


def test_a_changed_prompt_is_a_changed_request_exit_zero_unless_strict(
    store_url: str, recorded: str
) -> None:
    # The calculator described in other words: the system prompt changes, nothing else.
    reworded = "tests.replay.gated:reworded"
    done = runner.invoke(app, ["replay", recorded, "--tools", reworded, "--store", store_url])
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0] == (
        f"replay replay-{recorded} of {recorded}: request changed at think#1 (and 3 more calls)"
    )
    assert lines[1:3] == [f"--- {recorded} think#1", f"+++ replay-{recorded} think#1"]
    assert any(
        line.startswith("+- calculator(expression: string) — Work out an arithmetic expression")
        for line in lines
    )
    assert any(line.startswith("-- calculator(expression: string) — Evaluate") for line in lines)
    assert done.stderr == ""
    strict = runner.invoke(
        app,
        [
            "replay",
            recorded,
            "--tools",
            reworded,
            "--store",
            store_url,
            "--strict",
            "-t",
            f"s-{recorded}",
        ],
    )
    assert strict.exit_code == 1, strict.output
    # Without sql_query among the tools, the run cannot take its path: it stops, and says why.
    missing = runner.invoke(
        app,
        ["replay", recorded, "--tools", "calculator", "--store", store_url, "-t", f"m-{recorded}"],
    )
    assert missing.exit_code == 1
    assert missing.stderr == (
        "note: the run called sql_query, which --tools/--mcp do not give: the recorded "
        "results are served, but the prompt no longer describes it\n"
    )


def test_a_router_that_skips_a_tool_diverges_and_the_diagram_marks_it(
    store_url: str, recorded: str
) -> None:
    args = ["replay", recorded, "--tools", DEMO_TOOLS, "--graph", SKIP_CALCULATOR]
    done = runner.invoke(app, [*args, "--store", store_url])
    assert done.exit_code == 1, done.output
    assert done.stdout.startswith(
        f"replay replay-{recorded} of {recorded}: first divergence: route at think#2: "
        f"{recorded} goes to act (step #"
    )
    drawn = runner.invoke(
        app, ["draw", "--diff", recorded, f"replay-{recorded}", "-f", "ascii", "--store", store_url]
    )
    assert drawn.exit_code == 0, drawn.output
    assert "<< FIRST DIVERGENCE: route" in next(
        line for line in drawn.stdout.splitlines() if line.startswith("think ")
    )


def test_a_replay_is_not_continued_and_bad_options_are_one_line(
    store_url: str, recorded: str, tmp_path: Path
) -> None:
    same = runner.invoke(app, ["replay", recorded, "--tools", DEMO_TOOLS, "--store", store_url])
    assert same.exit_code == 0, same.output
    script = tmp_path / "s.json"
    script.write_text('["Final Answer: 1"]')
    resumed = runner.invoke(
        app, ["resume", f"replay-{recorded}", "--script", str(script), "--store", store_url]
    )
    assert resumed.exit_code == 2
    assert f"is a replay of '{recorded}'" in resumed.output
    live = runner.invoke(app, ["replay", recorded, "--live-from-divergence", "--store", store_url])
    assert live.exit_code == 2
    assert (
        live.output
        == "error: --live-from-divergence needs --max-calls N (the real model calls allowed)\n"
    )
    unknown = runner.invoke(app, ["replay", "nope", "--store", store_url])
    assert unknown.exit_code == 2 and unknown.output.startswith("error: ")
