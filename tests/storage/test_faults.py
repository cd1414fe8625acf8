"""`storage_fault`: which driver errors are faults of the store, and what they say."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from thinkgraph.storage.checkpointers import storage_fault


def sqlite_error(sql: str, path: Path) -> sqlite3.Error:
    try:
        with sqlite3.connect(path) as conn:
            conn.execute(sql)
    except sqlite3.Error as exc:
        return exc
    raise AssertionError("no error")


def test_a_query_bug_is_not_a_store_fault(tmp_path: Path) -> None:
    # A mistake in our own SQL keeps its traceback: nothing the user could fix.
    assert storage_fault(sqlite_error("SELECT * FROM nope", tmp_path / "a.db"), None) is None
    assert storage_fault(ValueError("x"), "sqlite:///a.db") is None


def test_a_fault_is_found_behind_what_wrapped_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"not a database\n" * 300)
    cause = sqlite_error("SELECT 1 FROM sqlite_master", path)
    try:
        raise RuntimeError("a saver failed") from cause
    except RuntimeError as exc:
        fault = storage_fault(exc, f"sqlite:///{path}")
    assert fault is not None
    assert str(fault) == (
        f"cannot open the store {path}: it is not a SQLite database (file is not a "
        "database); point --store at another file or move this one away"
    )


@pytest.mark.parametrize("url", [None, "sqlite://", "memory://"])
def test_without_a_usable_url_the_message_says_the_store(url: str | None, tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"not a database\n" * 300)
    fault = storage_fault(sqlite_error("SELECT 1 FROM sqlite_master", path), url)
    assert fault is not None and str(fault).startswith("cannot open the store: it is not")


def test_a_run_error_keeps_its_own_words_whatever_caused_it(tmp_path: Path) -> None:
    from thinkgraph.errors import ThreadBusyError

    path = tmp_path / "notes.db"
    path.write_bytes(b"not a database\n" * 300)
    try:
        raise ThreadBusyError("busy") from sqlite_error("SELECT 1 FROM sqlite_master", path)
    except ThreadBusyError as exc:
        assert storage_fault(exc, f"sqlite:///{path}") is None


def test_a_postgres_timeout_is_not_a_lost_connection() -> None:
    import psycopg

    from tests.conftest import POSTGRES_URL

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute("SET statement_timeout = 1")
        with pytest.raises(psycopg.OperationalError) as caught:
            conn.execute("SELECT pg_sleep(1)")
    assert storage_fault(caught.value, POSTGRES_URL) is None
