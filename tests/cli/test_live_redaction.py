"""Secrets never reach the terminal or the JSON lines of a live run."""

from __future__ import annotations

import io
import json
from contextlib import suppress
from pathlib import Path
from unittest.mock import patch

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from thinkgraph.cli import app
from thinkgraph.cli._progress import Mode, finished, follow
from thinkgraph.result import RunResult
from thinkgraph.state import FinalStep, TaskStep, ToolCall, ToolCallStep, ToolResultStep

PIN = "pin-4471-9903"


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    args = json.dumps({"door": "lab", "pin": PIN})
    path.write_text(
        json.dumps(
            [
                f"Thought: open it with {PIN}\nAction: unlock\nAction Input: {args}",
                f"Thought: done\nFinal Answer: the lab is open (pin {PIN})",
            ]
        )
    )
    return path


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_a_sensitive_argument_is_masked_in_live_output(
    extra: list[str], script: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # so tests.cli.sample_tools imports
    result = CliRunner().invoke(
        app,
        ["run", "open the lab", "--script", str(script), "--store", sqlite_url,
         "--tools", "tests.cli.sample_tools:unlock", *extra],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert PIN not in result.output
    assert "unlock" in result.output and "***" in result.output


# -- the outcome after the live lines -------------------------------------------------------

TOKEN = "tok-5521-aa83-secret"


def _run_repeating_a_token() -> RunResult:
    """A run whose answer repeats the token its tool returned (its last step does not)."""
    chain = [
        TaskStep(number=0, text="read the record"),
        ToolCallStep(number=1, call=ToolCall(name="fetch", args={"key": "r1"}, id="c1"),
                     sensitive=[]),
        ToolResultStep(number=2, call_id="c1", tool="fetch", ok=True, output={"token": TOKEN}),
        FinalStep(number=3, answer="read", stop_reason="final_answer"),
    ]  # fmt: skip
    return RunResult(thread_id="t1", status="done", answer=f"the token is {TOKEN}", chain=chain)


@pytest.mark.parametrize("first", [0, 3], ids=["every step shown", "only the last shown"])
@pytest.mark.parametrize("mode", ["live", "plain"])
def test_the_outcome_after_the_lines_masks_what_any_step_holds(
    mode: Mode, first: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # The outcome is masked by the redactor that showed the lines; a step it did not show
    # is learned before the answer is printed.
    run = _run_repeating_a_token()
    console = Console(file=io.StringIO(), force_terminal=True)
    with patch("rich.console.Console", return_value=console), suppress(typer.Exit):
        follow(None, "t1", finished(run, first), "", mode=mode, no_input=True, tools=[])
    out = capsys.readouterr().out + console.file.getvalue()  # type: ignore[attr-defined]
    assert TOKEN not in out
    assert "answer: the token is ***" in out
