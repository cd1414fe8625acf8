"""A SQLite file that is not (all of) a thinkgraph store is refused, saying what it holds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from thinkgraph.errors import StorageError
from thinkgraph.storage import close_checkpointer, open_checkpointer


def tables_of(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


@pytest.mark.parametrize(
    ("tables", "lacks"),
    [(["checkpoints"], "'writes'"), (["delta_snapshots"], "'checkpoints' and 'writes'")],
)
def test_part_of_a_store_is_refused_naming_the_tables_it_lacks(
    tmp_path: Path, tables: list[str], lacks: str
) -> None:
    path = tmp_path / "runs.db"
    with sqlite3.connect(path) as conn:
        for name in tables:
            conn.execute(f"CREATE TABLE {name} (thread_id TEXT)")
    with pytest.raises(StorageError) as refused:
        open_checkpointer(f"sqlite:///{path}")
    message = str(refused.value)
    assert f"{path} holds only part of a thinkgraph store: it lacks the table" in message
    assert lacks in message and "[]" not in message
    assert "restore it from a backup or point --store at another file" in message
    assert tables_of(path) == set(tables)


def test_a_database_of_someone_else_names_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER)")
        conn.execute("CREATE TABLE checkpoints (id INTEGER)")
    with pytest.raises(StorageError, match=r"not a thinkgraph store \(it has tables \['users'\]\)"):
        open_checkpointer(f"sqlite:///{path}")


def test_an_empty_sqlite_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.touch()
    close_checkpointer(open_checkpointer(f"sqlite:///{path}"))
    assert {"checkpoints", "writes"} <= tables_of(path)
