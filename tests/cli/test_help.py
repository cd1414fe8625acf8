"""Help reads like other command-line tools: ARGUMENTS in capitals, flags without a type."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from thinkgraph.cli import app

runner = CliRunner()


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("run", "Usage: thinkgraph run [OPTIONS] TASK"),
        ("approve", "Usage: thinkgraph approve [OPTIONS] THREAD [CALL_IDS]..."),
        ("respond", "Usage: thinkgraph respond [OPTIONS] THREAD CALL_ID TEXT"),
        ("fork", "Usage: thinkgraph fork [OPTIONS] THREAD CHECKPOINT"),
    ],
)
def test_usage_names_arguments_in_capitals(command: str, usage: str) -> None:
    shown = runner.invoke(app, [command, "--help"], env={"COLUMNS": "120"}).output
    assert usage in shown, shown
    assert "{" not in shown.split("Usage:")[1].splitlines()[0]


@pytest.mark.parametrize("command", ["run", "approve", "resume", "serve", "worker", "runs"])
def test_flags_show_no_bool_type(command: str) -> None:
    shown = runner.invoke(app, [command, "--help"], env={"COLUMNS": "120"}).output
    assert "<bool>" not in shown, shown
    tools = [line for line in shown.splitlines() if "│ --tools" in line]
    assert all("MODULE:ATTR" in line for line in tools), tools  # what it takes, not list[str]


def test_arguments_are_listed_in_capitals() -> None:
    shown = runner.invoke(app, ["approve", "--help"], env={"COLUMNS": "120"}).output
    listed = shown.split("Arguments")[1].split("Options")[0]
    assert "THREAD " in listed and "CALL_IDS... " in listed, listed
