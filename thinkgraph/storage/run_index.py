"""The run index: one small row per run beside the checkpoints, so a listing reads no run.

Listing runs from their checkpoints costs a read of each run's latest checkpoint (about a
millisecond), and even naming the threads scans every checkpoint; at 100,000 runs that is
minutes, then seconds. The durable stores (SQLite and PostgreSQL) keep a `run_index` table
instead: per run, the checkpoint the row was read from, its status word, graph address,
task (masked as listings show it) and the summary a listing shows, with indexes for
newest first, by status and by graph. Filters, search and paging are one query on it.

The row is a cache: the checkpoints stay the truth. This module stores and queries rows;
`thinkgraph.runs.reader` decides what goes in them and when a row is read again (its
checkpoint moved, or the store holds runs the index has never seen).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from thinkgraph._langgraph import postgres_cursor

__all__ = [
    "INDEX_TABLES",
    "NOT_A_RUN",
    "IndexRow",
    "RunIndex",
    "SeenRow",
    "create_run_index",
    "run_index_of",
]

NOT_A_RUN = "other"
"""The status word of a thread that holds no thinkgraph run (another LangGraph program's,
or an id no command takes): kept so it is not read again, never listed."""

_TABLES = (
    # What filters, orders and searches: narrow, so a search that scans it reads little.
    "CREATE TABLE IF NOT EXISTS run_index ("
    " thread_id TEXT PRIMARY KEY,"
    " checkpoint_id TEXT,"  # the latest checkpoint the row was read from; NULL: none yet
    " gen INTEGER NOT NULL DEFAULT 0,"  # bumped as each segment starts
    " live INTEGER NOT NULL DEFAULT 1,"  # 1: checked against its checkpoints at each listing
    " status TEXT NOT NULL DEFAULT '',"  # '': not read yet
    " graph TEXT NOT NULL DEFAULT '',"  # '' for thinkgraph's own graph
    " thread_folded TEXT NOT NULL DEFAULT '',"
    " task_folded TEXT NOT NULL DEFAULT ''"
    ")",
    "CREATE INDEX IF NOT EXISTS run_index_newest ON run_index (checkpoint_id, thread_id)",
    "CREATE INDEX IF NOT EXISTS run_index_status ON run_index (status, checkpoint_id, thread_id)",
    "CREATE INDEX IF NOT EXISTS run_index_graph ON run_index (graph, checkpoint_id, thread_id)",
    "CREATE INDEX IF NOT EXISTS run_index_live ON run_index (live)",
    # What a listing shows of each run, read only for the rows of a page.
    "CREATE TABLE IF NOT EXISTS run_index_shown ("
    " thread_id TEXT PRIMARY KEY,"
    " task TEXT NOT NULL DEFAULT '',"  # masked as listings show it
    " summary TEXT"  # the listing's `RunSummary` as JSON
    ")",
    "CREATE TABLE IF NOT EXISTS run_index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
INDEX_TABLES = ("run_index", "run_index_shown")
"""The tables that hold a row of each run (a run deleted leaves none in either)."""
_CHUNK = 500
"""Thread ids per query when many are looked up (SQLite bounds a statement's parameters)."""
_RECONCILED = "reconciled"
"""The meta key set once every run in the store has a row (absent: some may not)."""

_COLUMNS = "r.thread_id, r.checkpoint_id, r.gen, s.task, s.summary"
_JOINED = "run_index r JOIN run_index_shown s ON s.thread_id = r.thread_id"
_LISTED = f"r.status NOT IN ('', '{NOT_A_RUN}')"
_PUT = (
    "INSERT INTO run_index (thread_id, checkpoint_id, live, status, graph, "
    "thread_folded, task_folded) VALUES (?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (thread_id) DO UPDATE SET checkpoint_id = excluded.checkpoint_id, "
    "live = excluded.live, status = excluded.status, graph = excluded.graph, "
    "thread_folded = excluded.thread_folded, task_folded = excluded.task_folded"
)
_PUT_SHOWN = (
    "INSERT INTO run_index_shown (thread_id, task, summary) VALUES (?, ?, ?) "
    "ON CONFLICT (thread_id) DO UPDATE SET task = excluded.task, summary = excluded.summary"
)
_GUARD = " WHERE run_index.checkpoint_id {is_} ? AND run_index.gen = ?"
_MARK = (
    "INSERT INTO run_index (thread_id, thread_folded) VALUES (?, ?) "
    "ON CONFLICT (thread_id) DO UPDATE SET gen = run_index.gen + 1, live = 1"
)
_LATEST = (
    "(SELECT MAX(c.checkpoint_id) FROM checkpoints c "
    "WHERE c.thread_id = r.thread_id AND c.checkpoint_ns = '')"
)
_UNKNOWN = (
    "SELECT l.thread_id, r.checkpoint_id, COALESCE(r.gen, -1), l.latest FROM ("
    "SELECT thread_id, MAX(checkpoint_id) AS latest FROM checkpoints "
    "WHERE checkpoint_ns = '' GROUP BY thread_id) l "
    "LEFT JOIN run_index r ON r.thread_id = l.thread_id "
    "WHERE r.checkpoint_id IS NULL OR r.checkpoint_id <> l.latest"
)


@dataclass(frozen=True, slots=True)
class IndexRow:
    """What the index holds of one run."""

    thread_id: str
    checkpoint_id: str | None
    """The latest checkpoint it was read from."""
    status: str
    """The run's status word as its checkpoints say it (`NOT_A_RUN`: no thinkgraph run)."""
    graph: str
    """The address of its graph ('' for ours)."""
    task: str
    """Its task, masked as listings show it."""
    summary: str | None
    """The listing's summary of it, as JSON."""
    live: bool
    """Whether each listing checks it against its checkpoints (a run still running)."""


@dataclass(frozen=True, slots=True)
class SeenRow:
    """A row as a listing read it: enough to show it, and to rewrite it only if no one
    else has since (its `checkpoint_id` and `gen`)."""

    thread_id: str
    checkpoint_id: str | None
    gen: int
    task: str
    summary: str | None


class RunIndex:
    """The `run_index` queries of one store; the two backends differ only in dialect.

    Args:
        saver: thinkgraph's SQLite or PostgreSQL store (see `run_index_of`).
        postgres: whether it is the PostgreSQL one.
    """

    __slots__ = ("_is", "_postgres", "_strpos", "saver")

    def __init__(self, saver: Any, *, postgres: bool) -> None:
        self.saver = saver
        self._postgres = postgres
        self._is = "IS NOT DISTINCT FROM" if postgres else "IS"
        self._strpos = "strpos" if postgres else "instr"

    # -- the two dialects ------------------------------------------------------------------

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        """A cursor in one transaction (SQLite: committed by the saver's `cursor`)."""
        if self._postgres:
            with postgres_cursor(self.saver) as cur, cur.connection.transaction():
                yield cur
        else:
            with self.saver.cursor() as cur:
                yield cur

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self._postgres else sql

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self._postgres:
            with postgres_cursor(self.saver) as cur:
                return [tuple(r.values()) for r in cur.execute(self._sql(sql), args).fetchall()]
        with self.saver.lock:
            return [tuple(r) for r in self.saver.conn.execute(sql, args).fetchall()]

    def _write(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._cursor() as cur:
            cur.executemany(self._sql(sql), rows)

    # -- writing ---------------------------------------------------------------------------

    def mark_live(self, thread_id: str) -> None:
        """A segment of the run starts: each listing checks its row until it ends."""
        self._write(_MARK, [(thread_id, thread_id.casefold())])

    def put(self, row: IndexRow, *, seen: SeenRow | None = None) -> None:
        """Store `row`; with `seen`, only if the stored row is still the one seen (no
        writer came in between: a slower reader never overwrites a newer row)."""
        sql = _PUT + (_GUARD.format(is_=self._is) if seen is not None else "")
        args: list[Any] = [
            row.thread_id,
            row.checkpoint_id,
            int(row.live),
            row.status,
            row.graph,
            row.thread_id.casefold(),
            row.task.casefold(),
        ]
        if seen is not None:
            args += [seen.checkpoint_id, seen.gen]
        with self._cursor() as cur:
            cur.execute(self._sql(sql), args)
            if cur.rowcount == 0:
                return  # another writer's row stands
            cur.execute(self._sql(_PUT_SHOWN), (row.thread_id, row.task, row.summary))

    def forget(self, thread_id: str) -> None:
        """The run is deleted: its row goes too."""
        for table in INDEX_TABLES:
            self._write(f"DELETE FROM {table} WHERE thread_id = ?", [(thread_id,)])

    # -- what the checkpoints say now ------------------------------------------------------

    def moved(self, thread_ids: Sequence[str] | None = None) -> list[tuple[SeenRow, str | None]]:
        """The rows whose run has a newer latest checkpoint than they were read from (or
        none any more), with that checkpoint's id: of `thread_ids`, else the live rows.
        One primary-key look-up a row."""
        if thread_ids is None:
            return self._moved("r.live = 1", [])
        found: list[tuple[SeenRow, str | None]] = []
        for at in range(0, len(thread_ids), _CHUNK):
            chunk = list(thread_ids[at : at + _CHUNK])
            found += self._moved(f"r.thread_id IN ({', '.join('?' * len(chunk))})", chunk)
        return found

    def _moved(self, where: str, args: list[Any]) -> list[tuple[SeenRow, str | None]]:
        found = self._rows(
            f"SELECT r.thread_id, r.checkpoint_id, r.gen, s.task, s.summary, {_LATEST} "
            "FROM run_index r LEFT JOIN run_index_shown s ON s.thread_id = r.thread_id "
            f"WHERE {where}",
            args,
        )
        return [(SeenRow(*row[:5]), row[5]) for row in found if row[5] != row[1]]

    def reconciled(self) -> bool:
        """Whether every run in the store has a row (else `unknown` finds the rest)."""
        return bool(self._rows("SELECT 1 FROM run_index_meta WHERE key = ?", (_RECONCILED,)))

    def unknown(self) -> list[tuple[SeenRow, str]]:
        """Every thread whose row is missing or older than its latest checkpoint, with that
        checkpoint's id: a scan of every checkpoint's key, done once for a store written
        before the index existed (see `reconciled`)."""
        return [
            (SeenRow(row[0], row[1], int(row[2]), "", None), row[3]) for row in self._rows(_UNKNOWN)
        ]

    def set_reconciled(self) -> None:
        """Every run in the store has a row now."""
        self._write(
            "INSERT INTO run_index_meta VALUES (?, '1') ON CONFLICT (key) DO NOTHING",
            [(_RECONCILED,)],
        )

    # -- reading ---------------------------------------------------------------------------

    def page(
        self,
        *,
        status: str | None = None,
        graph: str | None = None,
        search: str = "",
        skip: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
    ) -> list[SeenRow]:
        """The listed runs newest first (latest checkpoint id, as the store names its
        threads), filtered: `status`, `graph` ('' for ours), `search` (a substring of the
        thread id or of the task, either case), none of `skip`; `limit` rows from `offset`."""
        where: list[str] = [_LISTED]
        args: list[Any] = []
        if status is not None:
            where.append("r.status = ?")
            args.append(status)
        if graph is not None:
            where.append("r.graph = ?")
            args.append(graph)
        if search:
            folded = search.casefold()
            where.append(
                f"({self._strpos}(thread_folded, ?) > 0 OR {self._strpos}(task_folded, ?) > 0)"
            )
            args += [folded, folded]
        if skip:
            where.append(f"r.thread_id NOT IN ({', '.join('?' * len(skip))})")
            args += list(skip)
        sql = (
            f"SELECT {_COLUMNS} FROM {_JOINED} WHERE {' AND '.join(where)} "
            "ORDER BY r.checkpoint_id DESC, r.thread_id DESC"
        )
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            args += [limit, offset]
        elif offset:
            sql += " LIMIT -1 OFFSET ?" if not self._postgres else " OFFSET ?"
            args.append(offset)
        return [SeenRow(r[0], r[1], int(r[2]), r[3], r[4]) for r in self._rows(sql, args)]

    def rows(self, thread_ids: Sequence[str]) -> list[SeenRow]:
        """The listed rows of `thread_ids` (those the index has)."""
        if not thread_ids:
            return []
        marks = ", ".join("?" * len(thread_ids))
        found = self._rows(
            f"SELECT {_COLUMNS} FROM {_JOINED} WHERE {_LISTED} AND r.thread_id IN ({marks})",
            list(thread_ids),
        )
        return [SeenRow(r[0], r[1], int(r[2]), r[3], r[4]) for r in found]

    def counts(self) -> dict[str, int]:
        """How many listed runs each status word has."""
        rows = self._rows(
            f"SELECT r.status, count(*) FROM run_index r WHERE {_LISTED} GROUP BY r.status"
        )
        return {str(status): int(n) for status, n in rows}

    def graphs(self) -> list[str]:
        """The graph addresses of the listed runs ('' for ours), sorted."""
        rows = self._rows(f"SELECT DISTINCT r.graph FROM run_index r WHERE {_LISTED}")
        return sorted(str(r[0]) for r in rows)


def create_run_index(cur: Any, *, postgres: bool) -> None:
    """Create the index's tables with `cur` (a store's setup). A store that holds
    checkpoints already is left unreconciled: its first listing gives every run a row."""
    table = (
        "to_regclass('run_index') IS NOT NULL"
        if postgres
        else ("EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'run_index')")
    )
    existed = _value(cur.execute(f"SELECT {table} AS v").fetchone())
    for ddl in _TABLES:
        cur.execute(ddl)
    if not existed:
        empty = cur.execute("SELECT NOT EXISTS (SELECT 1 FROM checkpoints) AS v").fetchone()
        if _value(empty):
            mark = "INSERT INTO run_index_meta VALUES ('reconciled', '1') ON CONFLICT DO NOTHING"
            cur.execute(mark)


def _value(row: Any) -> Any:
    return row["v"] if isinstance(row, dict) else row[0]


def run_index_of(saver: BaseCheckpointSaver[Any]) -> RunIndex | None:
    """The run index of thinkgraph's SQLite or PostgreSQL store; None for another saver
    (the in-memory one, a saver of yours), whose runs are listed from their checkpoints."""
    sqlite = sys.modules.get("thinkgraph.storage.sqlite")
    if sqlite is not None and isinstance(saver, sqlite.CompactSqliteSaver):
        return RunIndex(saver, postgres=False)
    # Only a program that opened a PostgreSQL store has loaded its module.
    postgres = sys.modules.get("thinkgraph.storage.postgres")
    if postgres is not None and isinstance(saver, postgres.PostgresStore):
        return RunIndex(saver, postgres=True)
    return None
