"""Secrets never reach the terminal or the JSON lines of a live run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from thinkgraph.cli import app

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
