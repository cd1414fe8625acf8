"""A sensitive argument stays masked at every door of the CLI.

`open_safe` (tests/cli/sample_tools.py) declares `pin` sensitive and needs approval, so a
run pauses with the pin in the proposed call, in the thought that quotes it and in the
answer. Whatever prints the run (the pause, `pending`, the inline questions, `approve
--edit`, `decide`, `fork`, the JSON lines, the live display) shows "***" instead.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner, Result

from tests.cli import sample_tools
from thinkgraph import Agent, ScriptedModel
from thinkgraph.cli import app
from thinkgraph.cli._app import print_steps
from thinkgraph.cli._progress import Mode, show
from thinkgraph.state import BaseStep, HumanStep, ToolCallStep

ROOT = Path(__file__).resolve().parents[2]
SAFE = "tests.cli.sample_tools:open_safe"
PIN = "pin-4471-9903"
NEW_PIN = "pin-8812-0047"
REPLIES = [
    f"Thought: open it with {PIN}\nAction: open_safe\n"
    f"Action Input: {json.dumps({'safe': 'lab', 'pin': PIN})}",
    f"Thought: done\nFinal Answer: the lab safe is open (pin {PIN})",
]

runner = CliRunner()


@pytest.fixture(autouse=True)
def _at_the_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # so --tools tests.cli.sample_tools:… imports
    monkeypatch.delenv("THINKGRAPH_INTERACTIVE", raising=False)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(REPLIES))
    return path


def cli(*args: str, store: str, script: Path | None = None, tools: str = SAFE,
        input: str | None = None, env: dict[str, str] | None = None) -> Result:  # fmt: skip
    extra = ["--store", store, *(["--tools", tools] if tools else [])]
    extra += ["--script", str(script)] if script else []
    return runner.invoke(app, [*args, *extra], input=input, env=env)


def assert_masked(result: Result, *secrets: str) -> None:
    for secret in secrets or (PIN, NEW_PIN):
        assert secret not in result.output, result.output
    assert "***" in result.output, result.output


def paused(store: str, thread: str, script: Path) -> tuple[Result, str]:
    """A run paused for approval of one open_safe call, and that call's id."""
    result = cli("run", "open the lab safe", "--thread", thread, "--no-input", store=store,
                 script=script)  # fmt: skip
    assert result.exit_code == 3, result.output
    with Agent(ScriptedModel([]), store=store) as agent:
        call_id = agent.result(thread).pending[0].call_id
    assert call_id
    return result, call_id


def ran_with(store: str, thread: str) -> dict[str, Any]:
    """The stored (unmasked) arguments open_safe ran with: the person's edit, or as proposed."""
    with Agent(ScriptedModel([]), store=store) as agent:
        chain = agent.result(thread).chain
    edits = [s.text for s in chain if isinstance(s, HumanStep) and s.kind == "edit"]
    if edits:
        return json.loads(edits[-1])  # type: ignore[no-any-return]
    return next(s.call.args for s in chain if isinstance(s, ToolCallStep))


# -- the pause and `pending` ------------------------------------------------------------------


def test_a_pause_shows_the_proposed_call_without_its_pin(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    result, call_id = paused(sqlite_url, thread_id, script)
    assert_masked(result)
    assert '"safe": "lab"' in result.output and "thought: open it with ***" in result.output
    # The pasteable edit hint shows no pin, not even masked: a placeholder to replace.
    edit = """--edit '{"safe": "lab", "pin": "<masked: type the value>"}'"""
    assert f"thinkgraph approve {thread_id} {call_id} {edit}" in result.output


def test_pending_with_the_run_tools_masks_only_the_sensitive_argument(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    paused(sqlite_url, thread_id, script)
    result = cli("pending", thread_id, store=sqlite_url)
    assert result.exit_code == 0, result.output
    assert_masked(result)
    assert '"safe": "lab"' in result.output and "was not given" not in result.output
    assert f"--tools {SAFE}" in result.output


def test_pending_without_the_run_tools_masks_the_fields_the_run_recorded(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    paused(sqlite_url, thread_id, script)
    result = cli("pending", thread_id, store=sqlite_url, tools="")
    assert result.exit_code == 0, result.output
    assert_masked(result)
    assert '"safe": "lab"' in result.output and '"pin": "***"' in result.output
    assert "this view was not given that tool" not in result.output


# -- answering from the shell -----------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        ["approve", "{t}", "{c}"],
        ["approve", "{t}", "{c}", "--edit", json.dumps({"safe": "lab", "pin": NEW_PIN})],
        ["decide", "{t}", "--edit", "{c}=" + json.dumps({"safe": "lab", "pin": NEW_PIN})],
    ],
    ids=["approve", "approve-edit", "decide-edit"],
)
def test_answering_a_pause_prints_the_rest_of_the_run_without_a_pin(
    answer: list[str], sqlite_url: str, script: Path, thread_id: str
) -> None:
    _, call_id = paused(sqlite_url, thread_id, script)
    args = [a.replace("{t}", thread_id).replace("{c}", call_id) for a in answer]
    result = cli(*args, store=sqlite_url, script=script)
    assert result.exit_code == 0, result.output
    assert_masked(result)
    assert "observation the lab safe is open" in result.output
    assert ran_with(sqlite_url, thread_id)["pin"] == (NEW_PIN if "--edit" in args else PIN)


def test_an_edit_that_keeps_the_masked_pin_runs_with_the_proposed_pin(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    _, call_id = paused(sqlite_url, thread_id, script)
    edit = json.dumps({"safe": "vault", "pin": "***"})
    result = cli("approve", thread_id, call_id, "--edit", edit, store=sqlite_url, script=script)
    assert result.exit_code == 0, result.output
    assert_masked(result)
    assert "observation the vault safe is open" in result.output
    assert ran_with(sqlite_url, thread_id) == {"safe": "vault", "pin": PIN}


# -- asking inline ----------------------------------------------------------------------------


def _inline(command: str, store: str, thread: str, script: Path, typed: str) -> Result:
    forced = {"THINKGRAPH_INTERACTIVE": "1"}
    if command == "run":
        return cli("run", "open the lab safe", "--thread", thread, store=store, script=script,
                   input=typed, env=forced)  # fmt: skip
    paused(store, thread, script)
    return cli("resume", thread, store=store, script=script, input=typed, env=forced)


@pytest.mark.parametrize("command", ["run", "resume"])
def test_inline_questions_show_the_call_and_its_default_edit_without_the_pin(
    command: str, sqlite_url: str, script: Path, thread_id: str
) -> None:
    # "edit", then Enter: the default arguments, masked, keep the proposed pin.
    result = _inline(command, sqlite_url, thread_id, script, "edit\n\n")
    assert result.exit_code == 0, result.output
    assert_masked(result)
    assert 'new args (JSON object) [{"safe": "lab", "pin": "***"}]' in result.output
    assert "thought: open it with ***" in result.output
    assert ran_with(sqlite_url, thread_id) == {"safe": "lab", "pin": PIN}


@pytest.mark.parametrize("command", ["run", "resume"])
def test_an_inline_edit_is_printed_without_the_new_pin(
    command: str, sqlite_url: str, script: Path, thread_id: str
) -> None:
    typed = json.dumps({"safe": "lab", "pin": NEW_PIN})
    result = _inline(command, sqlite_url, thread_id, script, f"edit\n{typed}\n")
    assert result.exit_code == 0, result.output
    # The test runner echoes what the person typed; nothing else may show the new pin.
    assert result.output.replace(typed, "").count(NEW_PIN) == 0, result.output
    assert_masked(result, PIN)
    assert ran_with(sqlite_url, thread_id)["pin"] == NEW_PIN


# -- fork, JSON lines, the live display, the demo's printer -----------------------------------


def test_fork_with_the_run_tools_prints_known_calls_and_masks_the_pin(
    sqlite_url: str, script: Path, thread_id: str, tmp_path: Path
) -> None:
    _, call_id = paused(sqlite_url, thread_id, script)
    assert cli("approve", thread_id, call_id, store=sqlite_url, script=script).exit_code == 0
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        at_observe = next(p for p in agent.history(thread_id) if p.node == "observe")
    result = cli("fork", thread_id, at_observe.checkpoint_id, "--thread", f"{thread_id}-fork",
                 store=sqlite_url, script=script)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert_masked(result)
    assert 'open_safe({"safe": "lab", "pin": "***"})' in result.output
    assert "was not given" not in result.output


def test_json_lines_of_a_paused_run_carry_no_pin(
    sqlite_url: str, script: Path, thread_id: str
) -> None:
    result = cli("run", "open the lab safe", "--thread", thread_id, "--json", store=sqlite_url,
                 script=script)  # fmt: skip
    assert result.exit_code == 3, result.output
    assert_masked(result, PIN)
    events = [json.loads(line) for line in result.output.splitlines()]
    assert events[-2]["event"] == "paused"
    assert events[-2]["pending"][0]["args"] == {"safe": "lab", "pin": "***"}


UNLOCK = [REPLIES[0].replace("open_safe", "unlock").replace('"safe"', '"door"'), REPLIES[1]]
"""A run that unlocks a door (no approval): the pin is in the call, then in the answer."""


def _stopped_after_the_call(store: str, thread: str) -> list[BaseStep]:
    """A run stopped at a breakpoint after the think that proposed the call; its chain."""
    with Agent(ScriptedModel(UNLOCK), [sample_tools.unlock], store=store,
               breakpoints={"after": ["think"]}) as agent:  # fmt: skip
        result = agent.run("open the lab", thread_id=thread)
    assert result.status == "paused"
    return result.chain


@pytest.mark.parametrize("mode", ["json", "plain"])
def test_a_resumed_run_shown_with_its_earlier_steps_masks_a_secret_they_hold(
    mode: Mode, sqlite_url: str, thread_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _stopped_after_the_call(sqlite_url, thread_id)
    with Agent(ScriptedModel(UNLOCK), [sample_tools.unlock], store=sqlite_url) as agent:
        result = show(agent.resume_events(thread_id), mode, tools=[sample_tools.unlock],
                      chain=before)  # fmt: skip
    assert result.status == "paused"  # after the next think too: breakpoints stay with the run
    out = capsys.readouterr().out
    assert PIN not in out and "the lab safe is open (pin ***)" in out


@pytest.mark.parametrize("extra", [["--json"], []], ids=["json", "plain"])
def test_resume_from_the_cli_masks_a_secret_written_before_the_resume(
    extra: list[str], sqlite_url: str, script: Path, thread_id: str
) -> None:
    _stopped_after_the_call(sqlite_url, thread_id)
    path = script.with_name("unlock.json")
    path.write_text(json.dumps(UNLOCK))
    result = cli("resume", thread_id, *extra, store=sqlite_url, script=path,
                 tools="tests.cli.sample_tools:unlock")  # fmt: skip
    assert result.exit_code in (0, 3), result.output
    assert_masked(result, PIN)


def test_the_live_display_shows_no_pin(sqlite_url: str, thread_id: str) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200)
    with Agent(ScriptedModel(REPLIES), [sample_tools.open_safe], store=sqlite_url) as agent:
        result = show(agent.events("open it", thread_id), "live", console=console,
                      tools=[sample_tools.open_safe])  # fmt: skip
    assert result.status == "paused"
    assert PIN not in out.getvalue() and "***" in out.getvalue()


def test_printed_steps_mask_whole_calls_to_tools_the_printer_was_not_given(
    sqlite_url: str, thread_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Agent(ScriptedModel(REPLIES), [sample_tools.open_safe], store=sqlite_url) as agent:
        agent.run("open it", thread_id=thread_id)
        chain = agent.result(thread_id).chain
    unrecorded = [  # as stored before runs recorded their tools' sensitive fields
        s.model_copy(update={"sensitive": None}) if isinstance(s, ToolCallStep) else s
        for s in chain
    ]
    print_steps(iter(unrecorded))
    unknown = capsys.readouterr().out
    assert PIN not in unknown and 'open_safe({"safe": "***", "pin": "***"})' in unknown
    print_steps(iter(chain))
    recorded = capsys.readouterr().out
    assert PIN not in recorded and 'open_safe({"safe": "lab", "pin": "***"})' in recorded
    print_steps(iter(chain), [sample_tools.open_safe])
    known = capsys.readouterr().out
    assert PIN not in known and 'open_safe({"safe": "lab", "pin": "***"})' in known
