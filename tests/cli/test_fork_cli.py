"""`thinkgraph fork --edit`: what a person may change, and one line for what not.

The CLI runs the send_email tool (it needs approval) from tests/cli/sample_tools.py and a
ScriptedModel from a JSON file, as tests/cli/test_hitl_cli.py does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from thinkgraph import Agent, ScriptedModel
from thinkgraph.cli import app
from thinkgraph.state import ToolCallStep, ToolResultStep

EMAIL = "tests.cli.sample_tools:send_email"
REPLIES = [
    'Thought: tell the ceo\nAction: send_email\nAction Input: {"to": "ceo@x.com", "body": "hi"}',
    "Thought: sent\nFinal Answer: emailed",
]

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_forced_prompts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THINKGRAPH_INTERACTIVE", raising=False)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(REPLIES))
    return path


def cli(*args: str, store: str, script: Path) -> Result:
    return runner.invoke(app, [*args, "--store", store, "--tools", EMAIL, "--script", str(script)])


def paused(store: str, thread: str, script: Path) -> tuple[str, int]:
    """A run paused for approval of one send_email call: its checkpoint and call step."""
    result = cli(
        "run", "email the ceo", "--thread", thread, "--no-input", store=store, script=script
    )
    assert result.exit_code == 3, result.output
    with Agent(ScriptedModel([]), store=store) as agent:
        chain = agent.chain(thread)
        at = agent.checkpoint_id(thread)
    assert at is not None
    return at, next(s.number for s in chain if isinstance(s, ToolCallStep))


def one_error_line(result: Result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_a_forked_call_with_edited_args_is_approved_again_and_runs_with_them(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    at, number = paused(sqlite_url, thread_id, script)
    new = f"{thread_id}-fork"
    args = json.dumps({"to": "ops@x.com", "body": "hi"})
    forked = cli("fork", thread_id, at, "--edit", f"{number}:args={args}", "--thread", new,
                 "--no-input", store=sqlite_url, script=script)  # fmt: skip
    assert forked.exit_code == 3, forked.output
    assert "waiting for approval of 1 call:" in forked.output
    assert '"to": "ops@x.com",' in forked.output
    approved = cli("approve", new, store=sqlite_url, script=script)
    assert approved.exit_code == 0, approved.output
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        chain = agent.chain(new)
    ran = next(s for s in chain if isinstance(s, ToolResultStep))
    assert ran.output == "sent to ops@x.com"
    assert next(s for s in chain if isinstance(s, ToolCallStep)).call.args == json.loads(args)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ("{n}:id=x", "a fork may edit its args only, not 'id'"),
        ("{n}:number=999", "a fork may edit its args only, not 'number'"),
        ("{n}:type=thought", "a fork may edit its args only, not 'type'"),
        ("0:text=another task", "step 0 is a task step; a fork may edit an observation's text"),
        ("{n}:args=ops@x.com", "--edit '{n}:args=ops@x.com': args is a JSON object"),
        ("{n}:args=[1]", "--edit '{n}:args=[1]': args is a JSON object"),
    ],
)
def test_an_edit_a_person_may_not_make_is_one_error_line_and_forks_nothing(
    sqlite_url: str, script: Path, thread_id: str, edit: str, says: str
) -> None:
    at, number = paused(sqlite_url, thread_id, script)
    new = f"{thread_id}-fork"
    result = cli("fork", thread_id, at, "--edit", edit.format(n=number), "--thread", new,
                 "--no-input", store=sqlite_url, script=script)  # fmt: skip
    assert says.format(n=number) in one_error_line(result)
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        assert agent.checkpoint_id(new) is None
