"""`thinkgraph run` as it goes: a live status line in a terminal, plain lines elsewhere,
and `--json` for programs."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from thinkgraph import Agent, ScriptedModel
from thinkgraph.cli import app
from thinkgraph.cli._progress import ProgressLine, show
from thinkgraph.runs import NodeStart, RunStart
from thinkgraph.state import Counters
from thinkgraph.types import StepLimits

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
EMAIL = "tests.cli.sample_tools:send_email"

REPLIES = [
    'Thought: add\nAction: calculator\nAction Input: {"expression": "2 + 40"}',
    "Thought: done\nFinal Answer: 42",
]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(REPLIES))
    return path


def run_json(*args: str) -> tuple[int, list[dict[str, object]]]:
    result = runner.invoke(app, ["run", *args, "--json"])
    return result.exit_code, [json.loads(line) for line in result.stdout.splitlines()]


def test_json_prints_each_step_then_the_end_and_nothing_else(script: Path, sqlite_url: str) -> None:
    code, events = run_json("2 + 40?", "--script", str(script), "--tools", "calculator",
                            "--store", sqlite_url, "--thread", "j1")  # fmt: skip
    assert code == 0
    assert [e["event"] for e in events] == ["step"] * 9 + ["end"]
    steps = [e["step"] for e in events[:-1]]
    assert [s["number"] for s in steps] == list(range(9))  # type: ignore[index]
    assert [s["type"] for s in steps][:3] == ["task", "llm_call", "thought"]  # type: ignore[index]
    assert all(e["thread_id"] == "j1" for e in events)
    end = events[-1]
    assert (end["status"], end["answer"], end["stop_reason"]) == ("done", "42", "final_answer")
    assert end["counters"]["steps"] == 2 and end["counters"]["cost_known"] is True  # type: ignore[index]


def test_json_for_a_paused_run_ends_with_what_it_waits_for_and_exits_3(tmp_path: Path) -> None:
    path = tmp_path / "email.json"
    path.write_text(json.dumps([
        'Thought: mail\nAction: send_email\nAction Input: {"to": "ceo@x.com", "body": "hi"}',
    ]))  # fmt: skip
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    code, events = run_json("email the ceo", "--script", str(path), "--tools", EMAIL,
                            "--store", store, "--thread", "j2")  # fmt: skip
    assert code == 3
    assert [e["event"] for e in events[-2:]] == ["paused", "end"]
    pending = events[-2]["pending"]
    assert isinstance(pending, list) and pending[0]["tool"] == "send_email"
    assert pending[0]["kind"] == "approval" and pending[0]["args"] == {
        "to": "ceo@x.com",
        "body": "hi",
    }
    assert events[-1]["status"] == "paused"


def test_resume_json_streams_the_new_steps_and_the_next_pause(
    script: Path, sqlite_url: str
) -> None:
    from thinkgraph.tools.builtin import calculator

    with Agent(ScriptedModel(REPLIES), [calculator], store=sqlite_url,
               breakpoints={"after": ["think"]}) as agent:  # fmt: skip
        paused = agent.run("2 + 40?", thread_id="j3")
    assert paused.status == "paused"
    again = runner.invoke(app, ["resume", "j3", "--script", str(script), "--tools", "calculator",
                                "--store", sqlite_url, "--json"])  # fmt: skip
    events = [json.loads(line) for line in again.stdout.splitlines()]
    assert again.exit_code == 3  # it stops after the next think too
    steps = [e["step"] for e in events if e["event"] == "step"]
    assert [s["number"] for s in steps] == list(range(len(paused.chain), len(paused.chain) + 4))
    assert [s["type"] for s in steps] == ["tool_result", "observation", "llm_call", "thought"]
    assert [e["event"] for e in events[-2:]] == ["paused", "end"]
    assert events[-2]["pending"][0]["kind"] == "breakpoint"  # type: ignore[index]


def test_without_a_terminal_the_chain_prints_as_plain_lines(script: Path, sqlite_url: str) -> None:
    result = runner.invoke(app, ["run", "x", "--script", str(script), "--tools", "calculator",
                                 "--store", sqlite_url, "--thread", "p1"])  # fmt: skip
    assert result.exit_code == 0
    assert "\x1b[" not in result.output  # no cursor movement, no colour
    assert result.output.startswith("#0   task        x\n#1   llm_call    think call")
    assert "step 1 of" not in result.output


def test_the_status_line_shows_node_step_tokens_cost_and_elapsed() -> None:
    now = [100.0]
    line = ProgressLine(clock=lambda: now[0])
    line.update(RunStart("t", StepLimits(max_steps=12), Counters()))
    used = Counters(steps=2, prompt_tokens=1000, completion_tokens=234, cost_known=False)
    line.update(NodeStart("t", "think", used))
    now[0] = 104.25
    assert line.text() == "think · step 3 of 12 · 1,234 tokens · cost unknown · 4.2s"
    line.update(NodeStart("t", "act", used.model_copy(update={"steps": 3, "cost_usd": 0.5})))
    assert line.text().startswith("act · step 3 of 12 · 1,234 tokens · cost unknown")


def test_the_live_display_prints_the_chain_above_the_status_line() -> None:
    out = StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    agent = Agent(ScriptedModel(["Thought: easy\nFinal Answer: 4"]), store="memory://")
    result = show(agent.events("2 + 2?", "live"), "live", console=console)
    text = out.getvalue()
    assert result.answer == "4"
    assert "#0   task        2 + 2?" in text and "#3   final       final_answer: 4" in text
    assert "think · step 1 of 12 · 0 tokens · $0.0000" in text
    assert text.index("#0   task") < text.index("#3   final")


def test_run_in_a_terminal_shows_live_progress_then_the_summary(
    script: Path, sqlite_url: str
) -> None:
    exe = Path(sys.executable).parent / "thinkgraph"
    args = [str(exe), "run", "2 + 40?", "--script", str(script), "--tools", "calculator",
            "--store", sqlite_url, "--thread", "tty1"]  # fmt: skip
    primary, secondary = pty.openpty()
    env = {**os.environ, "THINKGRAPH_INTERACTIVE": "0", "COLUMNS": "120", "TERM": "xterm"}
    proc = subprocess.Popen(args, stdin=secondary, stdout=secondary, stderr=secondary, env=env)
    os.close(secondary)
    output = b""
    while select.select([primary], [], [], 60)[0]:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(primary)
    assert proc.wait(timeout=60) == 0
    text = output.decode()
    assert "think · step 1 of 12" in text and "observe · step 1 of 12" in text
    assert "#5   observation 42" in text
    assert "status: done · thread tty1" in text
    assert text.index("#8   final") < text.index("\nanswer: 42")  # the summary comes last
