"""The embedded store: LangGraph's SqliteSaver, tuned for long append-only runs.

Two things make a resume of a long run slow with the stock saver, and this subclass
changes both while keeping LangGraph's tables and their meaning:

- *Finding the chain's last snapshot.* The chain is a `DeltaChannel`: a checkpoint holds a
  full copy of it only now and then, and a resume replays the writes made since. The stock
  saver decodes every ancestor checkpoint to see whether it holds a copy. Here each
  checkpoint that holds one is listed in a small side table when it is stored, so the walk
  back reads only ids and decodes just the checkpoint it stops at.
- *Replaying the writes.* They are revived in one validation for all of them instead of
  one per write; and when a run pauses, `keep_for_resume` stores its chain whole in the
  paused checkpoint, so the resume, whenever it comes, replays nothing.
"""

from __future__ import annotations

import errno
import json
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    writes_sort_key,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from thinkgraph._langgraph import DeltaSnapshot, sqlite_has_task_path
from thinkgraph.errors import StorageError
from thinkgraph.storage.answers import ANSWERS_DDL
from thinkgraph.storage.run_index import INDEX_TABLES, create_run_index
from thinkgraph.storage.threaded import ThreadedAsyncSaver

__all__ = ["AGAIN", "LATEST_THREADS_SQL", "CompactSqliteSaver", "describe_fault", "open_sqlite"]

SETTLE_EVERY = 64
"""Checkpoints stored between two copies of the write-ahead log into the database file."""

BUSY_TIMEOUT_MS = 5000
"""How long a write waits for another process's write to finish before it fails."""

KEEP_MIN_SIZE = 256
"""The shortest chain (in steps) `keep_for_resume` stores: shorter ones replay quickly."""

REQUIRED_TABLES = {"checkpoints", "writes"}
"""LangGraph's two tables: a SQLite file without them is not a checkpoint store."""

_SNAPSHOTS_DDL = """
CREATE TABLE IF NOT EXISTS delta_snapshots (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    size INTEGER,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, channel)
)
"""

# The ancestors of a checkpoint, nearest first: ids only, so no checkpoint blob is read.
# Following parent ids (not id order) walks forks correctly; CROSS JOIN keeps the
# ancestors as the outer loop, one primary-key look-up per step.
_ANCESTORS_SQL = (
    "WITH RECURSIVE ancestors(checkpoint_id, parent_checkpoint_id) AS ("
    "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? "
    "UNION ALL "
    "SELECT c.checkpoint_id, c.parent_checkpoint_id "
    "FROM ancestors a CROSS JOIN checkpoints c ON c.checkpoint_id = a.parent_checkpoint_id "
    "WHERE c.thread_id = ? AND c.checkpoint_ns = ?"
    ") SELECT checkpoint_id, parent_checkpoint_id FROM ancestors"
)
_SNAPSHOTS_SQL = (
    "SELECT checkpoint_id, channel FROM delta_snapshots WHERE thread_id = ? AND checkpoint_ns = ?"
)
_BLOB_SQL = (
    "SELECT type, checkpoint FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
)
# Only the root namespace: subgraph checkpoints share the thread id but are not runs.
LATEST_THREADS_SQL = (
    "SELECT thread_id, MAX(checkpoint_id) AS latest FROM checkpoints "
    "WHERE checkpoint_ns = '' GROUP BY thread_id ORDER BY latest DESC"
)
"""The stores' query for `ListsThreads.list_thread_ids` (the same tables in both)."""
_HAS_THREAD_SQL = "SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' LIMIT 1"
_LIST_SNAPSHOT_SQL = "INSERT OR REPLACE INTO delta_snapshots VALUES (?, ?, ?, ?, ?)"
_LARGEST_SQL = "SELECT max(size) FROM delta_snapshots WHERE thread_id = ? AND channel = ?"
_REWRITE_SQL = (
    "UPDATE checkpoints SET type = ?, checkpoint = ? "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
)
# One channel's writes at a set of checkpoints, the ids passed as one JSON array (no limit
# on how many, and one statement text whatever the count).
_WRITES_SQL = (
    "SELECT checkpoint_id, task_id, idx, type, value, {task_path} FROM writes "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? "
    "AND checkpoint_id IN (SELECT value FROM json_each(?))"
)


class CompactSqliteSaver(ThreadedAsyncSaver, SqliteSaver):
    """LangGraph's SqliteSaver with integer channel versions and a fast resume.

    Every checkpoint stores the version of every channel, and again per node in
    `versions_seen`. SqliteSaver's versions are 50-character strings with a random suffix,
    which the savers that keep one blob per version need; SQLite keeps the values inline in
    the checkpoint, so a plain counter is enough and saves over a kilobyte per checkpoint.

    It serves async code too (`ainvoke`, `astream`): its async methods run these on the
    connection's own thread (`ThreadedAsyncSaver`), as aiosqlite would — except a write
    that nothing stands in the way of, which is done at once (`_call_now`).
    """

    def __init__(self, conn: sqlite3.Connection, **kwargs: Any) -> None:
        super().__init__(conn, **kwargs)
        # Reentrant: `_call_now` holds it around a method that takes it again.
        self.lock = cast(Any, threading.RLock())
        self._puts = 0

    def _call_now(self, fn: Any, *args: Any) -> tuple[bool, Any]:
        """Do a write or a short look-up on the loop when it will not wait, as
        `ThreadedAsyncSaver` asks.

        A call waits only for a lock: ours, held by the store's thread (a long read), or
        SQLite's, held by another process's write; neither is waited for here — the write
        then goes to the store's thread, which waits as long as `BUSY_TIMEOUT_MS`. Nor is
        an fsync: in WAL mode with synchronous=NORMAL a commit only appends to the log, and
        the log is copied back (`settle`, which syncs) on the store's thread.
        """
        if not self.lock.acquire(blocking=False):
            return False, None
        try:
            self.conn.execute("PRAGMA busy_timeout=0")
            try:
                return True, fn(*args)
            except sqlite3.OperationalError as exc:
                if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) != sqlite3.SQLITE_BUSY:
                    raise
                self.conn.rollback()
                return False, None  # nothing was stored: the store's thread does it all
            finally:
                self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        finally:
            self.lock.release()

    def setup(self) -> None:
        if self.is_setup:
            return
        super().setup()
        self.conn.execute(_SNAPSHOTS_DDL)
        self.conn.execute(ANSWERS_DDL)
        create_run_index(self.conn, postgres=False)
        self.conn.commit()

    def get_next_version(self, current: Any, channel: None) -> Any:
        if current is None:
            return 1
        if isinstance(current, int):
            return current + 1
        return int(str(current).split(".", 1)[0]) + 1

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        snapshots = [
            name
            for name, value in checkpoint["channel_values"].items()
            if isinstance(value, DeltaSnapshot)
        ]
        if snapshots:
            # Listed before the checkpoint is stored: a crash in between leaves an entry
            # for a checkpoint that does not exist, which no walk ever reaches.
            configurable = config["configurable"]
            thread_id = str(configurable["thread_id"])
            ns = configurable["checkpoint_ns"]
            values = checkpoint["channel_values"]
            rows = [(thread_id, ns, checkpoint["id"], n, _size(values[n].value)) for n in snapshots]
            with self.cursor() as cur:
                cur.executemany(_LIST_SNAPSHOT_SQL, rows)
        stored = super().put(config, checkpoint, metadata, new_versions)
        # SQLite's own copy-back of the log runs inside whichever commit fills it and
        # syncs the file; it is turned off (see `open_sqlite`) and done here instead, off
        # the event loop, every SETTLE_EVERY checkpoints.
        self._puts += 1
        if self._puts % SETTLE_EVERY == 0:
            self._executor().submit(self.settle)
        return stored

    def keep_for_resume(self, config: RunnableConfig, values: Mapping[str, Any]) -> list[str]:
        """Store delta channels' values whole in the checkpoint `config` names.

        Called when a run pauses at that checkpoint: a resume, maybe days later in another
        process, then reads each value from the checkpoint instead of replaying every write
        since the channel's last snapshot. `values` must be the channels' values at that
        checkpoint. A value is stored only when it is at least `KEEP_MIN_SIZE` long and
        at least twice the largest one already stored for the thread, so a run that pauses
        often stores at most about twice its chain, not a copy per pause.

        Returns:
            The channels stored.
        """
        thread_id, ns, checkpoint_id = checkpoint_key(config)
        with self.cursor() as cur:
            row = cur.execute(_BLOB_SQL, (thread_id, ns, checkpoint_id)).fetchone()
            if row is None:
                return []
            checkpoint = self.serde.loads_typed(row)
            stored = checkpoint.get("channel_values") or {}
            kept: dict[str, Any] = {}
            for channel, value in values.items():
                size = _size(value)
                if channel in stored or size is None:
                    continue
                largest = cur.execute(_LARGEST_SQL, (thread_id, channel)).fetchone()[0]
                if worth_keeping(size, largest):
                    kept[channel] = value
            if not kept:
                return []
            snapshots = {channel: DeltaSnapshot(value) for channel, value in kept.items()}
            checkpoint = {**checkpoint, "channel_values": {**stored, **snapshots}}
            type_tag, blob = self.serde.dumps_typed(checkpoint)
            # One transaction: the listing and the value land together or not at all.
            cur.executemany(
                _LIST_SNAPSHOT_SQL,
                [(thread_id, ns, checkpoint_id, ch, _size(v)) for ch, v in kept.items()],
            )
            cur.execute(_REWRITE_SQL, (type_tag, blob, thread_id, ns, checkpoint_id))
        return sorted(kept)

    def settle(self) -> None:
        """Copy the write-ahead log into the database file while the run waits.

        SQLite does this by itself once the log passes 1,000 pages, in whichever commit
        crosses the line, which then takes as long as an fsync of the file. Done when a
        run pauses, that commit is not the resume's. Never waits for other connections:
        what they still read stays in the log.
        """
        with self.lock:
            self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def close(self) -> None:
        """Let the calls in flight finish, then close the database connection."""
        super().close()
        self.conn.close()

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        with self.cursor() as cur:
            cur.execute("DELETE FROM delta_snapshots WHERE thread_id = ?", (str(thread_id),))
            cur.execute("DELETE FROM pause_answers WHERE thread_id = ?", (str(thread_id),))
            for table in INDEX_TABLES:
                cur.execute(f"DELETE FROM {table} WHERE thread_id = ?", (str(thread_id),))

    def has_thread(self, thread_id: str) -> bool:
        """Whether the store holds `thread_id`, by index alone (see `KnowsThreads`)."""
        with self.lock:
            found = self.conn.execute(_HAS_THREAD_SQL, (str(thread_id),)).fetchone()
        return found is not None

    def list_thread_ids(self) -> list[str]:
        """The runs' thread ids, newest first, in one query (see `ListsThreads`)."""
        with self.lock:
            return [row[0] for row in self.conn.execute(LATEST_THREADS_SQL)]

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Each channel's writes since its nearest snapshot, as LangGraph's contract says.

        Walks the ancestors of the checkpoint in `config` by id alone, collecting their
        ids, and stops once every channel has its `seed`: the value in the nearest
        checkpoint listed as holding a snapshot of it, or in the root. The root
        is always decoded, so a store whose snapshots were never listed still loads
        correctly: the writes replayed then simply start further back.
        """
        if not channels:
            return {}
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns", "")
        target = get_checkpoint_id(config)
        if not target:
            latest = self.get_tuple(config)
            if latest is None:
                return {ch: {"writes": []} for ch in channels}
            target = latest.config["configurable"]["checkpoint_id"]

        ids_by_ch: dict[str, list[str]] = {ch: [] for ch in channels}
        seeds: dict[str, Any] = {}
        with self.cursor(transaction=False) as cur:
            listed: dict[str, set[str]] = {}
            for cid, channel in cur.execute(_SNAPSHOTS_SQL, (thread_id, ns)):
                listed.setdefault(cid, set()).add(channel)
            active = set(channels)
            # Read lazily: SQLite extends the walk only as far as rows are asked for.
            walk = self.conn.execute(_ANCESTORS_SQL, (thread_id, ns, target, thread_id, ns))
            walked = {target}
            first = next(walk, None)  # the target: its own writes are not its history
            parent = first[1] if first else None
            while active and parent is not None:
                row = next(walk, None)
                if row is None or row[0] in walked:  # parent missing, or a loop (re-put id)
                    break
                cid, parent = row
                walked.add(cid)
                for ch in active:
                    ids_by_ch[ch].append(cid)
                if active & listed.get(cid, set()) or parent is None:
                    found = self._seeds(cur, thread_id, ns, cid, active)
                    seeds.update(found)
                    active.difference_update(found)
            walk.close()
            writes = {
                ch: self._writes(cur, thread_id, ns, ch, ids)
                for ch, ids in ids_by_ch.items()
                if ids
            }
        history: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            entry: DeltaChannelHistory = {"writes": writes.get(ch, [])}
            if ch in seeds:
                entry["seed"] = seeds[ch]
            history[ch] = entry
        return history

    def _seeds(
        self, cur: sqlite3.Cursor, thread_id: str, ns: str, cid: str, wanted: set[str]
    ) -> dict[str, Any]:
        type_tag, blob = cur.execute(_BLOB_SQL, (thread_id, ns, cid)).fetchone()
        values = self.serde.loads_typed((type_tag, blob)).get("channel_values") or {}
        return {ch: values[ch] for ch in wanted if ch in values}

    def _writes(
        self, cur: sqlite3.Cursor, thread_id: str, ns: str, channel: str, ids: list[str]
    ) -> list[PendingWrite]:
        """`channel`'s writes at the checkpoints `ids` (newest first), oldest first."""
        task_path = "task_path" if sqlite_has_task_path(self) else "''"
        sql = _WRITES_SQL.format(task_path=task_path)
        by_id: dict[str, list[tuple[tuple[str, str, int], str, str, bytes]]] = {}
        for cid, task_id, idx, type_tag, value, path in cur.execute(
            sql, (thread_id, ns, channel, json.dumps(ids))
        ):
            key = writes_sort_key(path, task_id, idx)
            by_id.setdefault(cid, []).append((key, task_id, type_tag, value))
        ordered = [w for cid in reversed(ids) for w in sorted(by_id.get(cid, ()))]
        values = _loads_many(self.serde, [(type_tag, value) for _, _, type_tag, value in ordered])
        return [(w[1], channel, value) for w, value in zip(ordered, values, strict=True)]


def checkpoint_key(config: RunnableConfig) -> tuple[str, str, str]:
    """(thread id, namespace, checkpoint id) of the checkpoint a config names."""
    configurable = config["configurable"]
    ns = str(configurable.get("checkpoint_ns", ""))
    return str(configurable["thread_id"]), ns, str(get_checkpoint_id(config))


def worth_keeping(size: int, largest_kept: int | None) -> bool:
    """Whether `keep_for_resume` stores a value of `size` (in steps) for a thread.

    At least `KEEP_MIN_SIZE` (shorter ones replay quickly), and at least twice the largest
    already kept for the thread, so what a thread keeps adds up to about twice its chain.
    """
    return size >= max(KEEP_MIN_SIZE, 2 * (largest_kept or 0))


def _size(value: Any) -> int | None:
    try:
        return len(value)
    except TypeError:
        return None


def _loads_many(serde: Any, items: list[tuple[str, bytes]]) -> list[Any]:
    loads_many = getattr(serde, "loads_many", None)
    if loads_many is not None:
        return list(loads_many(items))
    return [serde.loads_typed(item) for item in items]


AGAIN = (
    "run the command again (a run it stopped continues from its last checkpoint with "
    "`thinkgraph resume THREAD`)"
)
"""How every transient store fault ends: what to do once the cause is fixed."""

_FAULTS: dict[int, str] = {
    sqlite3.SQLITE_CORRUPT: "{store} is damaged ({error}); restore it from a backup "
    "or point --store at another file",
    sqlite3.SQLITE_NOTADB: "cannot open {store}: it is not a SQLite database ({error}); "
    "point --store at another file or move this one away",
    sqlite3.SQLITE_FULL: "{store} is full ({error}); free some disk space, then " + AGAIN,
    sqlite3.SQLITE_IOERR: "cannot read or write {store} ({error}); check the disk, then " + AGAIN,
    sqlite3.SQLITE_CANTOPEN: "cannot open {store} ({error}); check that its folder "
    "exists and is writable, or point --store at another file",
    sqlite3.SQLITE_READONLY: "cannot write to {store} ({error}); make the file and "
    "its folder writable, or point --store at another file",
    sqlite3.SQLITE_PERM: "cannot write to {store} ({error}); make the file and its "
    "folder writable, or point --store at another file",
    sqlite3.SQLITE_BUSY: "{store} is locked by another process ({error}); wait for "
    "it to finish, then " + AGAIN,
    sqlite3.SQLITE_LOCKED: "{store} is locked by another process ({error}); wait "
    "for it to finish, then " + AGAIN,
}


def describe_fault(exc: sqlite3.Error, path: Path | None) -> str | None:
    """What a SQLite error says about the store at `path`, and what to do; None for an error
    that is not a fault of the store (a bug in a query, a closed connection)."""
    code = getattr(exc, "sqlite_errorcode", None)
    template = _FAULTS.get(code & 0xFF) if isinstance(code, int) else None
    if template is None:
        return None
    store = f"the store {path}" if path is not None else "the store"
    return template.format(store=store, error=exc)


def _not_a_store(path: Path, tables: set[str]) -> str:
    """Why a database with tables, but not all of ours, is refused: whose tables it holds."""
    foreign = tables - REQUIRED_TABLES - {"delta_snapshots"}
    if foreign:
        return (
            f"{path} is a SQLite database but not a thinkgraph store "
            f"(it has tables {sorted(foreign)}); use another file"
        )
    # Only tables of ours: a store that was damaged or cut short; setting it up again
    # would hide that its runs are lost.
    lacks = " and ".join(repr(name) for name in sorted(REQUIRED_TABLES - tables))
    return (
        f"{path} holds only part of a thinkgraph store: it lacks the table(s) {lacks}; "
        "restore it from a backup or point --store at another file"
    )


_OS_FAULTS: dict[int, int] = {
    errno.ENOSPC: sqlite3.SQLITE_FULL,
    errno.EDQUOT: sqlite3.SQLITE_FULL,
    errno.EIO: sqlite3.SQLITE_IOERR,
    errno.EROFS: sqlite3.SQLITE_READONLY,
    errno.EACCES: sqlite3.SQLITE_PERM,
    errno.EPERM: sqlite3.SQLITE_PERM,
}
"""The SQLite fault an OS error on one of the store's own files (its lease files) is."""


def describe_os_fault(exc: OSError, path: Path) -> str | None:
    """What an OS error on a file of the store at `path` says, worded as `describe_fault`
    words the same fault met by SQLite (a full disk is "is full", whoever met it first);
    None for an error that is not such a fault."""
    code = _OS_FAULTS.get(exc.errno) if exc.errno is not None else None
    if code is None:
        return None
    return _FAULTS[code].format(store=f"the store {path}", error=exc)


def open_sqlite(path: Path, serde: Any) -> CompactSqliteSaver:
    """Open (creating if need be) the SQLite store at `path`, tuned and set up."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False)
        # WAL lets readers (the CLI's `show`, `runs`) work while a run writes; NORMAL
        # synchronous is durable across process crashes, which is what resume needs.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        # The store copies its log back itself, off the event loop (CompactSqliteSaver.put).
        conn.execute("PRAGMA wal_autocheckpoint=0")
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
    except sqlite3.DatabaseError as exc:
        raise StorageError(
            describe_fault(exc, path)
            or f"cannot open {path} as a thinkgraph store ({exc}); "
            "point --store at another file or move this one away"
        ) from exc
    if tables and not tables >= REQUIRED_TABLES:
        conn.close()
        raise StorageError(_not_a_store(path, tables))
    saver = CompactSqliteSaver(conn, serde=serde)
    try:
        saver.setup()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StorageError(
            describe_fault(exc, path) or f"cannot set up {path} as a thinkgraph store: {exc}"
        ) from exc
    return saver
