"""A full disk met while taking a thread's lease is one `error:` line, exit 2, nothing lost.

A full disk reaches a SQLite store's lease file (the holder's note) before the database:
`resume` then failed with a traceback from the lease. It now says what `run` and
`approve` say when the database itself is full, and leaves the run as it was.

The disk is made full twice over, as in tests/cli/test_storage_faults.py: SQLite's
`max_page_count` makes the store's connection hit SQLITE_FULL, and every `os.pwrite` (the
lease note is the only thing written with it) fails with ENOSPC.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from thinkgraph.cli import app

runner = CliRunner()

STEP = 'Thought: add\nAction: calculator\nAction Input: {"expression": "2 + 40"}'
FINAL = "Thought: done\nFinal Answer: 42"
FULL = (
    "error: the store {path} is full ({error}); free some disk space, then run the command "
    "again (a run it stopped continues from its last checkpoint with `thinkgraph resume "
    "THREAD`)"
)
NO_SPACE = f"[Errno {errno.ENOSPC}] {os.strerror(errno.ENOSPC)}"


def one_error_line(result: Result) -> str:
    """The single `error:` line a failed command printed (and nothing else on stderr)."""
    assert "Traceback" not in result.output, result.output
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def fill_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on the store's database and its lease files get no more space."""
    import thinkgraph.storage.sqlite as sqlite_store

    opened = sqlite_store.open_sqlite

    def nearly_full(where: Path, serde: Any) -> Any:
        saver = opened(where, serde)
        pages = saver.conn.execute("PRAGMA page_count").fetchone()[0]
        saver.conn.execute(f"PRAGMA max_page_count = {pages + 8}")
        return saver

    def no_space(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sqlite_store, "open_sqlite", nearly_full)
    monkeypatch.setattr(os, "pwrite", no_space)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps([STEP] * 20 + [FINAL]))
    return path


def show(url: str) -> list[str]:
    shown = runner.invoke(app, ["show", "T", "--store", url])
    assert shown.exit_code == 0, shown.output
    return shown.output.splitlines()


def stop_a_run_on_a_full_database(url: str, tools: list[str]) -> None:
    """Thread T: a run part-way through, stopped when its database filled up."""
    import thinkgraph.storage.sqlite as sqlite_store

    opened = sqlite_store.open_sqlite

    def nearly_full(where: Path, serde: Any) -> Any:
        saver = opened(where, serde)
        pages = saver.conn.execute("PRAGMA page_count").fetchone()[0]
        saver.conn.execute(f"PRAGMA max_page_count = {pages + 8}")
        return saver

    with pytest.MonkeyPatch.context() as full:
        full.setattr(sqlite_store, "open_sqlite", nearly_full)
        run = ["run", "add", "--thread", "T", "--max-steps", "30", "--quiet", *tools]
        assert "is full (database or disk is full)" in one_error_line(runner.invoke(app, run))


@pytest.mark.timeout(120)
def test_resume_on_a_full_disk_is_one_line_and_loses_nothing(
    tmp_path: Path, script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    url = f"sqlite:///{path}"
    tools = ["--script", str(script), "--tools", "calculator", "--store", url]
    stop_a_run_on_a_full_database(url, tools)
    before = show(url)
    assert "status: running" in "\n".join(before)

    with monkeypatch.context() as full:
        fill_the_disk(full)
        line = one_error_line(runner.invoke(app, ["resume", "T", *tools]))
    assert line == FULL.format(path=path, error=NO_SPACE)
    assert show(url) == before  # nothing changed, nothing lost
    assert [p.name for p in tmp_path.iterdir() if "lease" in p.name] == []  # nothing left

    resumed = runner.invoke(app, ["resume", "T", *tools])  # space is back
    assert resumed.exit_code == 0, resumed.output
    assert "answer: 42" in resumed.output and "status: done" in resumed.output


@pytest.mark.timeout(120)
def test_run_on_a_full_disk_is_the_same_one_line(
    tmp_path: Path, script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    fill_the_disk(monkeypatch)
    run = ["run", "add", "--thread", "T", "--quiet", "--script", str(script)]
    result = runner.invoke(app, [*run, "--tools", "calculator", "--store", f"sqlite:///{path}"])
    assert one_error_line(result) == FULL.format(path=path, error=NO_SPACE)
