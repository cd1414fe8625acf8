"""`thinkgraph replay RUN` on SQLite and PostgreSQL: a recorded demo run, replayed offline."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

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


NOTE_TOOL = "tests.replay.world:write_note"
OBSERVE_TO_FINALIZE = "tests.replay.world:observe_to_finalize"


@pytest.fixture
def outbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "outbox.txt"
    monkeypatch.setenv("THINKGRAPH_TEST_OUTBOX", str(path))
    return path


def noted(store: str, tmp_path: Path, thread: str, notes: int, *more: str) -> None:
    """A run of `notes` notes, then an answer, made by `thinkgraph run`."""
    replies = [
        f'Thought: note {n}\nAction: write_note\nAction Input: {{"text": "n{n}"}}'
        for n in range(notes)
    ]
    script = tmp_path / f"{thread}.json"
    script.write_text(json.dumps([*replies, "Thought: done\nFinal Answer: noted"]))
    args = ["run", "take notes", "--tools", NOTE_TOOL, "--script", str(script), "-t", thread]
    done = runner.invoke(app, [*args, *more, "--store", store])
    assert done.exit_code == 0, done.output


def test_a_run_made_with_its_own_max_steps_replays_same_with_those_limits(
    sqlite_url: str, tmp_path: Path, outbox: Path
) -> None:
    noted(sqlite_url, tmp_path, "long", 14, "--max-steps", "20")  # 15 think steps

    done = runner.invoke(app, ["replay", "long", "--tools", NOTE_TOOL, "--store", sqlite_url])

    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0] == "replay replay-long of long: same"
    assert len(outbox.read_text().splitlines()) == 14  # the run's notes, none of the replay's


def test_a_changed_route_is_reported_at_the_route_before_the_other_node_runs(
    sqlite_url: str, tmp_path: Path, outbox: Path
) -> None:
    noted(sqlite_url, tmp_path, "route", 1)

    args = ["replay", "route", "--tools", NOTE_TOOL, "--graph", OBSERVE_TO_FINALIZE]
    done = runner.invoke(app, [*args, "--store", sqlite_url])

    assert done.exit_code == 1, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)
    assert done.stdout.startswith(
        "replay replay-route of route: first divergence: route at observe#1: route goes to "
        "think (step #"
    )
    assert "replay-route goes to finalize" in done.stdout.splitlines()[0]
    assert "Traceback" not in done.output
    shown = runner.invoke(app, ["show", "replay-route", "-f", "json", "--store", sqlite_url])
    steps = json.loads(shown.stdout)["steps"]
    assert not [s for s in steps if s["node"] == "finalize"]  # finalize never ran


def test_replaying_a_run_again_takes_the_next_free_replay_thread(
    sqlite_url: str, tmp_path: Path, outbox: Path
) -> None:
    noted(sqlite_url, tmp_path, "twice", 1)
    args = ["replay", "twice", "--tools", NOTE_TOOL, "--store", sqlite_url]

    first, second = runner.invoke(app, args), runner.invoke(app, args)

    assert (first.exit_code, second.exit_code) == (0, 0), second.output
    assert first.stdout.startswith("replay replay-twice of twice: same")
    assert second.stdout.startswith("replay replay-twice-2 of twice: same")
    taken = runner.invoke(app, [*args, "--thread", "replay-twice"])
    assert taken.exit_code == 2 and taken.output.startswith("error: thread 'replay-twice'")


def test_a_stopped_replay_is_listed_as_a_replay_and_pruned_like_a_finished_run(
    sqlite_url: str, tmp_path: Path, outbox: Path
) -> None:
    noted(sqlite_url, tmp_path, "src", 1)
    args = ["--tools", NOTE_TOOL, "--store", sqlite_url]
    runner.invoke(app, ["replay", "src", *args])
    diverged = runner.invoke(app, ["replay", "src", "--graph", OBSERVE_TO_FINALIZE, *args])
    assert diverged.exit_code == 1, diverged.output

    listed = runner.invoke(app, ["runs", "--store", sqlite_url])

    rows = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "replay: diverged" in rows["replay-src-2"], listed.stdout
    assert "replay: same" in rows["replay-src"], listed.stdout
    assert "resume" not in listed.stdout
    script = tmp_path / "more.json"
    script.write_text('["Final Answer: 1"]')
    resumed = runner.invoke(
        app, ["resume", "replay-src-2", "--script", str(script), "--store", sqlite_url,
              "--graph", OBSERVE_TO_FINALIZE],
    )  # fmt: skip
    assert resumed.exit_code == 2 and "is a replay of 'src'" in resumed.output
    pruned = runner.invoke(app, ["prune", "--thread", "replay-src-2", "--store", sqlite_url])
    assert pruned.exit_code == 0, pruned.output
    after = runner.invoke(app, ["runs", "--store", sqlite_url])
    assert "replay-src-2" not in after.stdout and "replay-src " in after.stdout


def test_max_calls_counts_the_requests_sent_retries_included(
    store_url: str, recorded: str, openai_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for _ in range(5):
        openai_server.server_error(status=500)  # each would be retried
    args = ["replay", recorded, "--tools", DEMO_TOOLS, "--graph", SKIP_CALCULATOR, "--json"]
    live = ["--live-from-divergence", "--max-calls", "1", "--model", "openai/test-model"]
    api = ["--api-base", openai_server.url + "/v1"]

    done = runner.invoke(app, [*args, *live, *api, "--store", store_url])

    report = json.loads(done.stdout)
    assert len(openai_server.requests) == 1, done.output
    assert (report["model_calls"], report["requests_sent"]) == (1, 1)
    assert report["stopped"] == "after 1 real model request (max_calls)"
