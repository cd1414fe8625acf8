"""`--mcp` gives a command the tools of MCP servers: a stdio command line or an HTTP URL.

Every command that takes `--tools` takes `--mcp`; a server that cannot start is one
`error:` line and exit 2; a server that dies mid-run is an observation, not a hang.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from thinkgraph.cli import app

runner = CliRunner()
ROOT = Path(__file__).parents[2]
SERVER = f"{shlex.quote(sys.executable)} {shlex.quote(str(ROOT / 'tests/support/mcp_server.py'))}"

pytestmark = pytest.mark.timeout(60)


def _act(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


def _script(tmp_path: Path, *replies: str) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(list(replies)))
    return path


def test_run_uses_the_tools_of_a_stdio_server(tmp_path: Path, sqlite_url: str) -> None:
    script = _script(tmp_path, _act("add", a=2, b=40), "Thought: done\nFinal Answer: 42")
    result = runner.invoke(app, ["run", "2 + 40?", "--script", str(script), "--mcp", SERVER,
                                 "--store", sqlite_url])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert 'add({"a": 2, "b": 40})' in result.output and "answer: 42" in result.output


def test_the_installed_cli_runs_with_mcp_and_tools_together(tmp_path: Path) -> None:
    script = _script(
        tmp_path, _act("add", a=2, b=40), _act("calculator", expression="6*7"),
        "Thought: done\nFinal Answer: 42",
    )  # fmt: skip
    cli = [sys.executable, "-c", "from thinkgraph.cli import main; main()"]
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    # "python" is the interpreter running the tests, as in a shell with its venv active.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": path}
    done = subprocess.run(
        [*cli, "run", "go", "--script", str(script), "--store", store, "--tools", "calculator",
         "--mcp", "python tests/support/mcp_server.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answer: 42" in done.stdout and "42" in done.stdout


def test_a_server_that_dies_is_an_observation(tmp_path: Path, sqlite_url: str) -> None:
    script = _script(tmp_path, _act("die"), "Thought: done\nFinal Answer: gone")
    result = runner.invoke(app, ["run", "die", "--script", str(script), "--mcp", SERVER,
                                 "--store", sqlite_url])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "is gone" in result.output and "answer: gone" in result.output


@pytest.mark.parametrize(
    "command",
    ["no-such-mcp-server-command", f"{shlex.quote(sys.executable)} -c 'raise SystemExit(1)'"],
    ids=["missing", "exits"],
)  # fmt: skip
def test_a_server_that_cannot_start_is_one_error_line(
    command: str, tmp_path: Path, sqlite_url: str
) -> None:
    script = _script(tmp_path, "Thought: done\nFinal Answer: x")
    result = runner.invoke(app, ["run", "x", "--script", str(script), "--mcp", command,
                                 "--store", sqlite_url])  # fmt: skip
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "did not start" in lines[0]


def test_an_empty_mcp_value_is_refused(tmp_path: Path, sqlite_url: str) -> None:
    result = runner.invoke(app, ["run", "x", "--script", "s.json", "--mcp", " "])
    assert result.exit_code == 2 and "error: --mcp" in result.output


COMMANDS_WITH_TOOLS = ["run", "resume", "approve", "reject", "respond", "decide", "fork",
                       "show", "pending", "serve", "worker"]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS_WITH_TOOLS)
def test_every_command_that_takes_tools_takes_mcp(command: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--tools" in result.output and "--mcp" in result.output


def test_the_commands_that_continue_a_run_repeat_its_mcp_servers() -> None:
    from thinkgraph.cli._pending import AgentFlags

    flags = AgentFlags("sqlite:///runs.db", ("tools:T",), script="r.json", mcp=("python s.py",))
    assert (
        str(flags)
        == " --store sqlite:///runs.db --tools tools:T --mcp 'python s.py' --script r.json"
    )
