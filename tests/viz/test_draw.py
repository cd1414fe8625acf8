"""Agent.draw and `thinkgraph draw`: every format, a run's overlay, files and errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from thinkgraph import Agent, ScriptedModel, StepLimits
from thinkgraph.cli import app
from thinkgraph.storage import close_checkpointer, open_checkpointer
from thinkgraph.tools.builtin import calculator

runner = CliRunner()

needs_graphviz = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot is not installed (apt-get install graphviz)"
)


@pytest.fixture
def paused_thread(sqlite_url: str) -> str:
    """A run in the sqlite store, paused at ask_human after an unparsable reply."""
    model = ScriptedModel(
        ['Thought: add\nAction: calculator\nAction Input: {"expression": "2 + 40"}', "no format"]
    )
    limits = StepLimits(max_consecutive_failures=1, failure_policy="ask_human")
    with Agent(model, [calculator], limits=limits, store=sqlite_url) as agent:
        assert agent.run("What is 2 + 40?", thread_id="paused").status == "paused"
    return "paused"


def test_agent_draw_with_a_thread_overlays_that_run(sqlite_url: str, paused_thread: str) -> None:
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        plain = agent.draw("ascii")
        marked = agent.draw("ascii", thread_id=paused_thread)
    assert "PAUSED" not in plain and "[x" not in plain
    assert "ask_human  [x1]  << PAUSED (ask_human)" in marked
    # the run's own limits, stored with it, not the drawing agent's defaults
    assert "max_consecutive_failures=1, failure_policy=ask_human" in marked


def test_cli_draws_a_stored_run_in_every_text_format(sqlite_url: str, paused_thread: str) -> None:
    expected = {"mermaid": "class ask_human paused;", "ascii": "<< PAUSED", "dot": '"ask_human"'}
    for fmt, mark in expected.items():
        args = ["draw", "--thread", paused_thread, "--store", sqlite_url, "--format", fmt]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert mark in result.output


def test_cli_writes_the_diagram_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "graph.mmd"
    result = runner.invoke(app, ["draw", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote {out} (mermaid)\n"
    assert out.read_text().startswith("graph TD;\n")


@needs_graphviz
def test_cli_draws_a_paused_run_as_svg(sqlite_url: str, paused_thread: str) -> None:
    args = ["draw", "--thread", paused_thread, "--store", sqlite_url, "--format", "svg"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "</svg>" in result.output and "paused (ask_human)" in result.output


@needs_graphviz
def test_cli_writes_png_bytes(tmp_path: Path) -> None:
    out = tmp_path / "graph.png"
    result = runner.invoke(app, ["draw", "--format", "png", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["draw", "--format", "gif"], "use one of mermaid, ascii, dot, svg, png"),
        (["draw", "--thread", "nope", "--store", "{db}"], "no run is stored under thread 'nope'"),
    ],
)
def test_cli_errors_are_one_line(args: list[str], message: str, sqlite_url: str) -> None:
    close_checkpointer(open_checkpointer(sqlite_url))  # the store exists, the run does not
    result = runner.invoke(app, [a.replace("{db}", sqlite_url) for a in args])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_cli_svg_without_graphviz_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("thinkgraph.viz.dot.shutil.which", lambda name: None)
    result = runner.invoke(app, ["draw", "--format", "svg"])
    assert result.exit_code == 2
    assert result.output == (
        "error: Graphviz is not installed: apt-get install graphviz "
        "(or use --format mermaid|ascii|dot)\n"
    )


def test_the_mermaid_of_the_agent_is_the_default(sqlite_url: str) -> None:
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        assert agent.draw() == agent.draw("mermaid")
        assert agent.draw().startswith("graph TD;\n")
