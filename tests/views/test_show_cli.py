"""`thinkgraph show THREAD --format text|markdown|json|html --audience … -o FILE`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.views._runs import PASSWORD, TOOLS, _call
from thinkgraph import Agent, ScriptedModel
from thinkgraph.cli import app

runner = CliRunner()


@pytest.fixture
def stored(sqlite_url: str) -> str:
    """A finished run in a SQLite store: a login with a password, a search, an answer."""
    model = ScriptedModel(
        [
            _call("login", user="ann", password=PASSWORD),
            _call("search", query="cats"),
            "Thought: in\nFinal Answer: done",
        ]
    )
    with Agent(model, TOOLS, store=sqlite_url) as agent:
        agent.run("log in", thread_id="cli-views")
    return sqlite_url


@pytest.mark.parametrize(
    ("fmt", "start"),
    [
        ("text", "#0   task        log in\n"),
        ("markdown", "# Run cli-views: done (final_answer)\n"),
        ("json", '{\n  "format": "thinkgraph.chain/1",\n'),
        ("html", "<!DOCTYPE html>\n"),
    ],
)
def test_show_prints_each_format_with_secrets_redacted(stored: str, fmt: str, start: str) -> None:
    result = runner.invoke(app, ["show", "cli-views", "--store", stored, "--format", fmt])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(start)
    assert PASSWORD not in result.output and '"password": "***"' in result.output.replace(
        "&quot;", '"'
    )


def test_show_writes_a_file_with_o(stored: str, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    args = ["show", "cli-views", "--store", stored, "-f", "json", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote {out} (json, 14 steps)\n"
    assert json.loads(out.read_text())["status"] == "done"


def test_show_for_the_user_audience_leaves_out_model_calls(stored: str) -> None:
    result = runner.invoke(app, ["show", "cli-views", "--store", stored, "--audience", "user"])
    assert result.exit_code == 0, result.output
    assert "llm_call" not in result.output and "#2   thought     use login" in result.output


def test_show_with_the_runs_tools_applies_their_visibility(stored: str) -> None:
    args = ["show", "cli-views", "--store", stored, "--audience", "user"]
    without = runner.invoke(app, args).output
    with_tools = runner.invoke(app, [*args, "--tools", "tests.views._runs:TOOLS"]).output
    # Without the tools: in full, with the sensitive fields the run recorded masked.
    assert '#8   tool_call   search({"query": "cats"})' in without
    assert "#8   tool        searched for cats\n" in with_tools


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "pdf"], "error: --format 'pdf' is not supported; use one of text, "
         "markdown, json, html"),
        (["--audience", "admin"], "error: --audience 'admin' is unknown; use one of "
         "developer, user, auditor"),
        (["-o", "/nonexistent-dir/x.html"], "error: -o /nonexistent-dir/x.html: cannot write"),
    ],
)  # fmt: skip
def test_bad_show_options_get_one_line_and_exit_two(
    stored: str, args: list[str], message: str
) -> None:
    result = runner.invoke(app, ["show", "cli-views", "--store", stored, *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), lines


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "html"])
def test_show_learns_the_chain_once_per_view(
    stored: str, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reply with 200,000 secret keys takes a second to learn: the text view and the
    # outcome printed after it share one redactor, and still mask the answer and detail.
    from thinkgraph.views.redact import Redactor

    learned: list[int] = []
    init = Redactor.__init__

    def counting(self: Redactor, chain: object, *args: object, **kwargs: object) -> None:
        learned.append(len(chain))  # type: ignore[arg-type]
        init(self, chain, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Redactor, "__init__", counting)
    result = runner.invoke(app, ["show", "cli-views", "--store", stored, "--format", fmt])
    assert result.exit_code == 0, result.output
    assert [n for n in learned if n] == [14]
    assert PASSWORD not in result.output
