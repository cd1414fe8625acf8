"""A store that fails under a command: one `error:` line, exit 2, and the run left intact.

The faults are real ones: SQLite files with damaged pages, a file that is not a database, a
truncated one, a full disk (SQLite's `max_page_count` makes the store's connection hit
SQLITE_FULL, as a full disk does), and a PostgreSQL connection terminated by the server.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from tests.conftest import POSTGRES_URL
from thinkgraph.cli import app

runner = CliRunner()

STEP = 'Thought: add\nAction: calculator\nAction Input: {"expression": "2 + 40"}'
FINAL = "Thought: done\nFinal Answer: 42"

# A representative command of each kind: read one run, list runs, answer, continue, start.
COMMANDS = [
    ["show", "T"],
    ["runs"],
    ["history", "T"],
    ["pending", "T"],
    ["draw", "--thread", "T"],
    ["approve", "T", "--script", "{script}"],
    ["reject", "T", "--reason", "not now", "--script", "{script}"],
    ["resume", "T", "--script", "{script}", "--tools", "calculator"],
    ["fork", "T", "1f1e6f94-df08-63e5-8000-8c92b7143e2c", "--script", "{script}"],
    ["run", "again", "--script", "{script}", "--tools", "calculator", "--quiet"],
]


def cli(args: list[str], store: str, script: Path) -> Result:
    filled = [a.replace("{script}", str(script)) for a in args]
    return runner.invoke(app, [*filled, "--store", store])


def one_error_line(result: Result) -> str:
    """The single `error:` line a failed command printed (and nothing else on stderr)."""
    assert "Traceback" not in result.output, result.output
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps([STEP, FINAL]))
    return path


@pytest.fixture
def long_script(tmp_path: Path) -> Path:
    path = tmp_path / "long.json"
    path.write_text(json.dumps([STEP] * 20 + [FINAL]))
    return path


@pytest.fixture
def store_file(tmp_path: Path, script: Path) -> Path:
    """A SQLite store holding one finished run (thread T), its log folded into the file."""
    path = tmp_path / "runs.db"
    result = runner.invoke(
        app,
        ["run", "x", "--script", str(script), "--tools", "calculator",
         "--store", f"sqlite:///{path}", "--thread", "T", "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for extra in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        extra.unlink(missing_ok=True)
    return path


def overwrite_pages(path: Path) -> None:
    """Every page but the first (the header and the schema) overwritten with garbage."""
    data = path.read_bytes()
    page_size = int.from_bytes(data[16:18], "big")
    path.write_bytes(data[:page_size] + bytes([0x5A, 0xA5]) * ((len(data) - page_size) // 2))


def not_a_database(path: Path) -> None:
    path.write_bytes(b"these are my notes, not a database\n" * 400)


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


DAMAGED = (
    "error: the store {path} is damaged (database disk image is malformed); "
    "restore it from a backup or point --store at another file"
)
NOT_A_DATABASE = (
    "error: cannot open the store {path}: it is not a SQLite database (file is not a database); "
    "point --store at another file or move this one away"
)


@pytest.mark.parametrize(
    ("damage", "expected"),
    [(overwrite_pages, DAMAGED), (not_a_database, NOT_A_DATABASE), (truncate, DAMAGED)],
    ids=["pages-overwritten", "not-a-database", "truncated"],
)
def test_a_damaged_sqlite_store_is_one_line_on_every_command(
    damage: Callable[[Path], None], expected: str, store_file: Path, script: Path
) -> None:
    damage(store_file)
    damaged = store_file.read_bytes()
    for command in COMMANDS:
        line = one_error_line(cli(command, f"sqlite:///{store_file}", script))
        assert line == expected.format(path=store_file), command
    assert store_file.read_bytes() == damaged  # nothing tried to "repair" it


def test_a_damaged_store_is_one_line_in_a_real_process(store_file: Path) -> None:
    import subprocess
    import sys

    overwrite_pages(store_file)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from thinkgraph.cli import main; main()",
            "show",
            "T",
            "--store",
            f"sqlite:///{store_file}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [DAMAGED.format(path=store_file)]


FULL = (
    "error: the store {path} is full (database or disk is full); free some disk space, "
    "then run the command again (a run it stopped continues from its last checkpoint with "
    "`thinkgraph resume THREAD`)"
)


def test_a_full_disk_stops_the_run_with_one_line_and_resume_finishes_it(
    tmp_path: Path, long_script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import thinkgraph.storage.sqlite as sqlite_store

    path = tmp_path / "full.db"
    url = f"sqlite:///{path}"
    opened = sqlite_store.open_sqlite

    def nearly_full(where: Path, serde: Any) -> Any:
        # The disk has room for a few more pages than the store holds when it is opened.
        saver = opened(where, serde)
        pages = saver.conn.execute("PRAGMA page_count").fetchone()[0]
        saver.conn.execute(f"PRAGMA max_page_count = {pages + 8}")
        return saver

    monkeypatch.setattr(sqlite_store, "open_sqlite", nearly_full)
    run = [
        "run", "add", "--script", str(long_script), "--tools", "calculator",
        "--thread", "T", "--max-steps", "30", "--quiet",
    ]  # fmt: skip
    line = one_error_line(runner.invoke(app, [*run, "--store", url]))
    assert line == FULL.format(path=path)
    monkeypatch.undo()  # space is back

    # The chain up to the last durable checkpoint reads back: a run part-way through.
    shown = runner.invoke(app, ["show", "T", "--store", url])
    assert shown.exit_code == 0, shown.output
    steps = [ln for ln in shown.output.splitlines() if ln.startswith("#")]
    assert steps[0] == "#0   task        add"
    assert any("observation 42" in s for s in steps)
    assert "status: running" in shown.output and "answer:" not in shown.output

    resumed = runner.invoke(
        app, ["resume", "T", "--script", str(long_script), "--tools", "calculator", "--store", url]
    )
    assert resumed.exit_code == 0, resumed.output
    assert "answer: 42" in resumed.output and "status: done" in resumed.output
    final = runner.invoke(app, ["show", "T", "--store", url]).output.splitlines()
    assert [ln for ln in final if ln.startswith("#")][
        : len(steps)
    ] == steps  # the history before the fault is unchanged


# -- PostgreSQL ------------------------------------------------------------------------------


def terminate(pid: int) -> None:
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


LOST = (
    "error: lost the connection to the PostgreSQL store at {url} (terminating connection "
    "due to administrator command); check that the server is running and reachable, then "
    "run the command again (a run it stopped continues from its last checkpoint with "
    "`thinkgraph resume THREAD`)"
)


def cut_after_check(monkeypatch: pytest.MonkeyPatch, when: Callable[[], bool]) -> None:
    """The store's pool checks each connection before handing it out (a connection broken
    while idle is replaced, silently: see tests/storage/test_pool.py); this ends the
    session just after the check passed, while `when()` says so: the statement that
    follows meets a connection lost in use, as when the server goes away mid-command."""
    from psycopg_pool import ConnectionPool

    real = ConnectionPool.check_connection

    def check_then_cut(conn: Any) -> None:
        real(conn)
        if when():
            terminate(conn.info.backend_pid)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(check_then_cut))


def test_a_lost_postgres_connection_is_one_line_on_every_command(
    script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = f"t-{uuid.uuid4().hex[:12]}"
    started = runner.invoke(
        app,
        ["run", "x", "--script", str(script), "--tools", "calculator", "--store", POSTGRES_URL,
         "--thread", thread, "--quiet"],
    )  # fmt: skip
    assert started.exit_code == 0, started.output
    cut_after_check(monkeypatch, lambda: True)
    for command in [*COMMANDS, ["submit", "a task for the workers"]]:
        args = [thread if a == "T" else a for a in command]
        line = one_error_line(cli(args, POSTGRES_URL, script))
        assert line == LOST.format(url=POSTGRES_URL), command


def test_a_postgres_connection_lost_mid_run_leaves_the_run_to_resume(
    long_script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from thinkgraph.storage.postgres import PostgresStore

    thread = f"t-{uuid.uuid4().hex[:12]}"
    put = PostgresStore.put
    calls = []

    def counted_put(self: PostgresStore, *args: Any) -> Any:
        calls.append(1)
        return put(self, *args)

    monkeypatch.setattr(PostgresStore, "put", counted_put)
    cut_after_check(monkeypatch, lambda: len(calls) == 12)
    run = [
        "run", "add", "--script", str(long_script), "--tools", "calculator",
        "--thread", thread, "--max-steps", "30", "--quiet", "--store", POSTGRES_URL,
    ]  # fmt: skip
    line = one_error_line(runner.invoke(app, run))
    assert line.startswith(
        f"error: lost the connection to the PostgreSQL store at {POSTGRES_URL} ("
    )
    assert line.endswith(LOST[LOST.index(");") :])
    monkeypatch.undo()
    resumed = runner.invoke(
        app,
        ["resume", thread, "--script", str(long_script), "--tools", "calculator",
         "--store", POSTGRES_URL],
    )  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    assert "status: done" in resumed.output


def test_a_postgres_server_that_is_not_there_is_one_line() -> None:
    url = "postgresql://postgres@127.0.0.1:1/test"
    line = one_error_line(runner.invoke(app, ["runs", "--store", url]))
    assert line.startswith(f"error: cannot connect to the PostgreSQL store at {url} (")
    assert line.endswith("; check that the server is running and the URL is right")


def test_a_password_in_the_url_is_not_printed() -> None:
    url = "postgresql://postgres:s3cret@127.0.0.1:1/test"
    line = one_error_line(runner.invoke(app, ["runs", "--store", url]))
    assert "s3cret" not in line and "postgresql://postgres:***@127.0.0.1:1/test" in line
