"""`thinkgraph run --model … --api-base …`: a real litellm call to an OpenAI-protocol server."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tests.support.openai_server import OpenAIServer
from thinkgraph.cli import app


def test_run_talks_to_an_openai_compatible_server(
    openai_server: OpenAIServer, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    openai_server.reply_text(
        'Thought: add\nAction: calculator\nAction Input: {"expression": "2 + 40"}'
    )
    openai_server.reply_text("Thought: done\nFinal Answer: 42")
    result = CliRunner().invoke(
        app,
        ["run", "What is 2 + 40?", "--model", "openai/test-model",
         "--api-base", f"{openai_server.url}/v1", "--tools", "calculator",
         "--store", sqlite_url, "--thread", "loop"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "answer: 42" in result.output
    assert "cost unknown" in result.output  # test-model is not in litellm's cost map
    sent = openai_server.bodies[0]
    assert sent is not None and sent["model"] == "test-model"
    assert any("2 + 40" in str(m["content"]) for m in openai_server.bodies[1]["messages"])  # type: ignore[index]


def test_an_unknown_model_string_is_one_line_and_exit_two(sqlite_url: str) -> None:
    result = CliRunner().invoke(app, ["run", "x", "--model", "gpt5x", "--store", sqlite_url])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "gpt5x" in lines[0]
