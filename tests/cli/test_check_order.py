"""The biggest mistake is reported first: an unknown thread before a missing model."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from thinkgraph.cli import app
from thinkgraph.storage import close_checkpointer, open_checkpointer

runner = CliRunner()


@pytest.mark.parametrize(
    "command",
    [
        ["resume", "nope"],
        ["approve", "nope"],
        ["reject", "nope", "--reason", "no"],
        ["respond", "nope", "c1", "text"],
        ["decide", "nope", "--approve", "c1"],
        ["fork", "nope", "cp1"],
    ],
    ids=lambda c: c[0],
)
def test_an_unknown_thread_is_reported_before_a_missing_model(
    command: list[str], sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("THINKGRAPH_MODEL", raising=False)
    close_checkpointer(open_checkpointer(sqlite_url))  # the store exists, the run does not
    result = runner.invoke(app, [*command, "--store", sqlite_url])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "no run is stored under thread 'nope'" in lines[0], lines
