"""`--tools module:attr` takes what `Agent(tools=...)` takes, in every command.

A Tool, a plain typed function, or a list or tuple of them; anything else is one `error:`
line naming it and what is expected, exit 2, never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from thinkgraph.cli import app
from thinkgraph.storage import close_checkpointer, open_checkpointer

runner = CliRunner()
ADD = 'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 40}'
DONE = "Thought: done\nFinal Answer: 42"


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps([ADD, DONE]))
    return path


@pytest.mark.parametrize("spec", ["tests.cli.sample_tools:add", "tests.cli.sample_tools:plain"])
def test_run_takes_a_plain_typed_function_as_a_tool(
    spec: str, script: Path, sqlite_url: str
) -> None:
    result = runner.invoke(app, ["run", "2 + 40?", "--script", str(script), "--tools", spec,
                                 "--store", sqlite_url])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert 'add({"a": 2, "b": 40})' in result.output and "answer: 42" in result.output


COMMANDS = [
    ["run", "x", "--script", "{s}"],
    ["resume", "t", "--script", "{s}", "--store", "{db}"],
    ["approve", "t", "--script", "{s}", "--store", "{db}"],
    ["reject", "t", "--reason", "no", "--script", "{s}", "--store", "{db}"],
    ["respond", "t", "c", "text", "--script", "{s}", "--store", "{db}"],
    ["decide", "t", "--approve", "c", "--script", "{s}", "--store", "{db}"],
    ["fork", "t", "c", "--script", "{s}", "--store", "{db}"],
    ["show", "t", "--store", "{db}"],
    ["pending", "t", "--store", "{db}"],
    ["serve", "--script", "{s}", "--store", "{db}"],
    ["worker", "--script", "{s}", "--store", "postgresql://nobody@127.0.0.1:1/none"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    ("attr", "what"), [("motto", "a str"), ("Toolbox", "a class")], ids=["str", "class"]
)
def test_an_attribute_that_is_not_a_tool_is_one_error_line_in_every_command(
    command: list[str], attr: str, what: str, script: Path, sqlite_url: str
) -> None:
    close_checkpointer(open_checkpointer(sqlite_url))
    spec = f"tests.cli.sample_tools:{attr}"
    args = [a.replace("{s}", str(script)).replace("{db}", sqlite_url) for a in command]
    result = runner.invoke(app, [*args, "--tools", spec])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert lines == [
        f"error: --tools {spec!r} is {what}, not a tool: give a Tool, a typed function, "
        "or a list of them"
    ], result.output
