"""Connections and sizes of the SQLite checkpoint files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bench.samples import StorageSize

__all__ = ["count_checkpoints", "open_wal", "remove_store", "stopped_at", "storage_size"]


def open_wal(path: Path) -> sqlite3.Connection:
    """A connection tuned like thinkgraph's own store: WAL, synchronous=NORMAL.

    The prebuilt agent gets the same settings so that neither side is charged for a
    different durability level.
    """
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


def storage_size(path: Path) -> StorageSize:
    """Bytes on disk (after folding the WAL in) and bytes of stored blobs.

    Call it after the run's own connection is closed.
    """
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        blobs = conn.execute(
            "SELECT (SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0)"
            " FROM checkpoints) + (SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes)"
        ).fetchone()[0]
    finally:
        conn.close()
    on_disk = sum(
        f.stat().st_size for f in _files(path) if f.exists() and not f.name.endswith("-shm")
    )
    return StorageSize(file_bytes=on_disk, blob_bytes=int(blobs))


def _files(path: Path) -> list[Path]:
    """A SQLite store's files: the database, its write-ahead log and its shared memory."""
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def remove_store(path: Path) -> None:
    """Delete a SQLite store and its side files."""
    for file in _files(path):
        file.unlink(missing_ok=True)


def count_checkpoints(path: Path) -> int:
    """How many checkpoints the file holds (one per super-step, plus the input's two)."""
    conn = sqlite3.connect(str(path))
    try:
        return int(conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0])
    finally:
        conn.close()


def stopped_at(path: Path, checkpoint_id: str, copy: Path) -> Path:
    """A copy of the store at `path` as a process killed just after storing `checkpoint_id`
    leaves it: every later checkpoint, the writes of the tasks that ran from it on and
    thinkgraph's listing of later chain snapshots are removed. Untimed set-up of a resume.

    Checkpoint ids sort by time (LangGraph orders by them), so "later" is a comparison.
    """
    source = sqlite3.connect(str(path))
    target = sqlite3.connect(str(copy))
    try:
        source.backup(target)
        tables = {row[0] for row in target.execute("SELECT name FROM sqlite_master")}
        target.execute("DELETE FROM checkpoints WHERE checkpoint_id > ?", (checkpoint_id,))
        target.execute("DELETE FROM writes WHERE checkpoint_id >= ?", (checkpoint_id,))
        if "delta_snapshots" in tables:
            target.execute("DELETE FROM delta_snapshots WHERE checkpoint_id > ?", (checkpoint_id,))
        target.commit()
    finally:
        source.close()
        target.close()
    return copy
