"""Every command that continues a run takes the flags `run` takes and prints like it.

`resume`, `approve`, `reject`, `respond`, `decide` and `fork` take `--no-input`, `--json`
and `-q`/`--quiet`, and show the steps they add as `run` does (the JSON lines of
`run --json`, or only the result).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.test_hitl_cli import BOTH, EMAIL, REPLIES, cli, paused_email
from thinkgraph import Agent, ScriptedModel
from thinkgraph.cli import app

CONTINUING = ["resume", "approve", "reject", "respond", "decide", "fork"]
TWO_PAUSES = [
    REPLIES[0],
    'Thought: and the board\nAction: post_note\nAction Input: {"text": "emailed"}',
    "Thought: both done\nFinal Answer: emailed and posted",
]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(REPLIES))
    return path


@pytest.fixture
def two_pauses(tmp_path: Path) -> Path:
    path = tmp_path / "two.json"
    path.write_text(json.dumps(TWO_PAUSES))
    return path


@pytest.mark.parametrize("command", CONTINUING)
def test_each_continuing_command_takes_the_flags_run_takes(command: str) -> None:
    shown = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
    for flag in ("--no-input", "--json", "--quiet", "-q"):
        assert f" {flag} " in shown, (command, flag, shown)


def json_lines(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.mark.parametrize(
    "answer",
    [
        ["approve", "{t}"],
        ["reject", "{t}", "--reason", "no"],
        ["respond", "{t}", "{c}", "done"],
        ["decide", "{t}", "--approve", "{c}"],
    ],
    ids=["approve", "reject", "respond", "decide"],
)
def test_answering_with_json_prints_json_lines_like_run(
    answer: list[str], sqlite_url: str, script: Path, thread_id: str
) -> None:
    call_id = paused_email(sqlite_url, thread_id, script)
    args = [a.replace("{t}", thread_id).replace("{c}", call_id) for a in answer]
    result = cli(*args, "--json", store=sqlite_url, script=script)
    assert result.exit_code == 0, result.output
    lines = json_lines(result.stdout)
    assert {line["event"] for line in lines[:-1]} == {"step"}
    assert lines[0]["step"]["type"] == "human"  # type: ignore[index]
    end = lines[-1]
    assert end["event"] == "end" and end["status"] == "done" and end["thread_id"] == thread_id


def test_approve_quiet_prints_only_the_result(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    paused_email(sqlite_url, thread_id, script)
    result = cli("approve", thread_id, "-q", store=sqlite_url, script=script)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"\nanswer: emailed\nstatus: done · thread {thread_id} · 2 think steps"
        " · 0 tokens · $0.000000\n"
    )


def test_approve_asks_inline_at_the_next_pause_unless_no_input(
    sqlite_url: str, two_pauses: Path, thread_id: str
) -> None:
    forced = {"THINKGRAPH_INTERACTIVE": "1"}
    for thread in (thread_id, f"{thread_id}-b"):
        paused_email(sqlite_url, thread, two_pauses)
    refused = cli("approve", thread_id, "--no-input", store=sqlite_url, script=two_pauses,
                  tools=BOTH, env=forced)  # fmt: skip
    assert refused.exit_code == 3, refused.output
    assert "waiting for approval of 1 call:" in refused.output and "post_note" in refused.output
    asked = cli("approve", f"{thread_id}-b", store=sqlite_url, script=two_pauses, tools=BOTH,
                env=forced, input="approve\n")  # fmt: skip
    assert asked.exit_code == 0, asked.output
    assert "approve, edit, reject or respond?" in asked.output
    assert "answer: emailed and posted" in asked.output


def test_fork_prints_json_lines_and_quiet_like_run(
    sqlite_url: str, tmp_path: Path, thread_id: str
) -> None:
    script = tmp_path / "answer.json"
    script.write_text(json.dumps(REPLIES[1:]))
    with Agent(ScriptedModel(REPLIES[1:]), store=sqlite_url) as agent:
        agent.run("say it", thread_id=thread_id)
        first = agent.history(thread_id)[1].checkpoint_id
    as_json = cli("fork", thread_id, first, "--json", store=sqlite_url, script=script, tools="")
    assert as_json.exit_code == 0, as_json.output
    lines = json_lines(as_json.stdout)
    assert lines[-1]["event"] == "end" and lines[-1]["status"] == "done"
    assert {line["event"] for line in lines[:-1]} == {"step"}
    quiet = cli("fork", thread_id, first, "-q", store=sqlite_url, script=script, tools="")
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stdout.startswith("\nanswer: ") and "#0" not in quiet.stdout


def test_resume_quiet_prints_only_the_result(sqlite_url: str, script: Path, thread_id: str) -> None:
    stops = {"after": ["think"]}
    with Agent(ScriptedModel(REPLIES[1:]), store=sqlite_url, breakpoints=stops) as agent:
        assert agent.run("say it", thread_id=thread_id).status == "paused"
    result = cli("resume", thread_id, "-q", store=sqlite_url, script=script, tools=EMAIL)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("\nanswer: ") and "#0" not in result.stdout
