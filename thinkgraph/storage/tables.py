"""What prune reads and deletes, per store: the checkpoint tables of SQLite and PostgreSQL.

`thinkgraph.storage.prune` decides what of a run may go (the policy); this module counts
and deletes it in each store's own tables, one transaction per run (`tables_of`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver

from thinkgraph._langgraph import DeltaSnapshot, postgres_cursor
from thinkgraph.errors import StorageError
from thinkgraph.storage.jobs import (
    count_run_jobs,
    delete_old_jobs,
    delete_run_jobs,
    old_job_threads,
)
from thinkgraph.storage.run_index import INDEX_TABLES
from thinkgraph.storage.sqlite import LATEST_THREADS_SQL, CompactSqliteSaver

__all__ = ["Counts", "Tables", "Trim", "tables_of"]


@dataclass(frozen=True)
class Counts:
    checkpoints: int = 0
    writes: int = 0
    blobs: int = 0
    size: int = 0
    jobs: int = 0
    """Finished jobs of the worker queue (PostgreSQL: in the store's database)."""


@dataclass(frozen=True)
class Trim:
    """A run's trim: the checkpoints kept and deleted, and the kept ones whose parent goes
    (each becomes a root, storing its delta channels whole)."""

    kept: list[str]
    deleted: list[str]
    roots: list[str]


class Tables(Protocol):
    """One backend's queries (SQLite or PostgreSQL)."""

    def latest(self) -> list[tuple[str, str]]: ...

    def lineage(self, thread_id: str) -> list[tuple[str, str | None]]: ...

    def count_thread(self, thread_id: str) -> Counts: ...

    def delete_thread(self, thread_id: str) -> Counts: ...

    def count_trim(self, thread_id: str, trim: Trim) -> Counts: ...

    def trim(
        self, thread_id: str, trim: Trim, snapshots: Mapping[str, Mapping[str, Any]]
    ) -> Counts: ...

    def sizes(self) -> dict[str, int]: ...

    def old_job_threads(
        self, cutoff: datetime, threads: Sequence[str] | None
    ) -> list[str] | None: ...

    def delete_old_jobs(
        self,
        cutoff: datetime,
        *,
        kept: Sequence[str],
        threads: Sequence[str] | None,
        dry_run: bool,
    ) -> int: ...


def tables_of(saver: BaseCheckpointSaver[Any]) -> Tables:
    """The queries of the store behind `saver`.

    Raises:
        StorageError: it is neither thinkgraph's SQLite nor its PostgreSQL store.
    """
    if isinstance(saver, CompactSqliteSaver):
        return _SqliteTables(saver)
    # Only a program that opened a PostgreSQL store has loaded its module.
    postgres = sys.modules.get("thinkgraph.storage.postgres")
    if postgres is not None and isinstance(saver, postgres.PostgresStore):
        return _PostgresTables(saver)
    raise StorageError(
        f"prune works on SQLite and PostgreSQL stores, not {type(saver).__name__}; "
        "point --store at a sqlite:/// or postgresql:// URL"
    )


# -- SQLite -----------------------------------------------------------------------------------

_SQ_LINEAGE = (
    "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id"
)
_SQ_IDS = "(SELECT value FROM json_each(?))"
_SQ_SIZES = (
    "SELECT thread_id, SUM(n) FROM ("
    "SELECT thread_id, length(checkpoint) + length(metadata) AS n FROM checkpoints "
    "UNION ALL SELECT thread_id, length(value) FROM writes"
    ") GROUP BY thread_id"
)


class _SqliteTables:
    """The SQLite store: `checkpoints`, `writes` and our `delta_snapshots` listing."""

    def __init__(self, saver: CompactSqliteSaver) -> None:
        self.saver = saver

    def _one(self, sql: str, args: Sequence[Any]) -> tuple[int, int]:
        with self.saver.lock:
            count, size = self.saver.conn.execute(sql, args).fetchone()
        return int(count or 0), int(size or 0)

    def latest(self) -> list[tuple[str, str]]:
        with self.saver.lock:
            return [(row[0], row[1]) for row in self.saver.conn.execute(LATEST_THREADS_SQL)]

    def lineage(self, thread_id: str) -> list[tuple[str, str | None]]:
        with self.saver.lock:
            return [(r[0], r[1]) for r in self.saver.conn.execute(_SQ_LINEAGE, (thread_id,))]

    def count_thread(self, thread_id: str) -> Counts:
        checkpoints, c_size = self._one(
            "SELECT count(*), SUM(length(checkpoint) + length(metadata)) FROM checkpoints "
            "WHERE thread_id = ?",
            (thread_id,),
        )
        writes, w_size = self._one(
            "SELECT count(*), SUM(length(value)) FROM writes WHERE thread_id = ?", (thread_id,)
        )
        return Counts(checkpoints, writes, 0, c_size + w_size)

    def delete_thread(self, thread_id: str) -> Counts:
        counts = self.count_thread(thread_id)
        with self.saver.cursor() as cur:  # one transaction
            tables = ("checkpoints", "writes", "delta_snapshots", "pause_answers", *INDEX_TABLES)
            for table in tables:
                cur.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
        return counts

    def count_trim(self, thread_id: str, trim: Trim) -> Counts:
        ids = json.dumps(trim.deleted)
        checkpoints, c_size = self._one(
            "SELECT count(*), SUM(length(checkpoint) + length(metadata)) FROM checkpoints "
            f"WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id IN {_SQ_IDS}",
            (thread_id, ids),
        )
        writes, w_size = self._one(
            "SELECT count(*), SUM(length(value)) FROM writes "
            f"WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id IN {_SQ_IDS}",
            (thread_id, ids),
        )
        return Counts(checkpoints, writes, 0, c_size + w_size)

    def trim(
        self, thread_id: str, trim: Trim, snapshots: Mapping[str, Mapping[str, Any]]
    ) -> Counts:
        counts = self.count_trim(thread_id, trim)
        ids = json.dumps(trim.deleted)
        serde = self.saver.serde
        with self.saver.cursor() as cur:  # one transaction: all of it, or none
            for root in trim.roots:
                key = (thread_id, "", root)
                row = cur.execute(
                    "SELECT type, checkpoint FROM checkpoints "
                    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                    key,
                ).fetchone()
                values = snapshots.get(root) or {}
                if row is not None and values:
                    checkpoint = serde.loads_typed((row[0], row[1]))
                    stored = dict(checkpoint.get("channel_values") or {})
                    stored.update({ch: DeltaSnapshot(v) for ch, v in values.items()})
                    type_tag, blob = serde.dumps_typed({**checkpoint, "channel_values": stored})
                    cur.execute(
                        "UPDATE checkpoints SET type = ?, checkpoint = ? "
                        "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                        (type_tag, blob, *key),
                    )
                    cur.executemany(
                        "INSERT OR REPLACE INTO delta_snapshots VALUES (?, ?, ?, ?, ?)",
                        [(*key, ch, _length(v)) for ch, v in values.items()],
                    )
                # A root now: no walk looks past it for a parent that is gone.
                cur.execute(
                    "UPDATE checkpoints SET parent_checkpoint_id = NULL "
                    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                    key,
                )
            for table in ("writes", "delta_snapshots", "checkpoints"):
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = '' "
                    f"AND checkpoint_id IN {_SQ_IDS}",
                    (thread_id, ids),
                )
        return counts

    def sizes(self) -> dict[str, int]:
        with self.saver.lock:
            return {row[0]: int(row[1] or 0) for row in self.saver.conn.execute(_SQ_SIZES)}

    # The worker queue lives in PostgreSQL only: a SQLite store has no job.
    def old_job_threads(self, cutoff: datetime, threads: Sequence[str] | None) -> list[str] | None:
        return None

    def delete_old_jobs(
        self,
        cutoff: datetime,
        *,
        kept: Sequence[str],
        threads: Sequence[str] | None,
        dry_run: bool,
    ) -> int:
        return 0


# -- PostgreSQL -------------------------------------------------------------------------------

_PG_LINEAGE = (
    "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints "
    "WHERE thread_id = %s AND checkpoint_ns = '' ORDER BY checkpoint_id"
)
_PG_SIZES = (
    "SELECT thread_id, SUM(n)::bigint AS size FROM ("
    "SELECT thread_id, pg_column_size(checkpoint) + pg_column_size(metadata) AS n "
    "FROM checkpoints "
    "UNION ALL SELECT thread_id, octet_length(blob) FROM checkpoint_writes "
    "UNION ALL SELECT thread_id, coalesce(octet_length(blob), 0) FROM checkpoint_blobs"
    ") s GROUP BY thread_id"
)
_PG_VERSIONS = (
    "SELECT DISTINCT v.key AS channel, v.value AS version FROM checkpoints c "
    "CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') AS v "
    "WHERE c.thread_id = %s AND c.checkpoint_ns = '' AND c.checkpoint_id = ANY(%s)"
)


class _PostgresTables:
    """The PostgreSQL store: `checkpoints`, `checkpoint_writes`, `checkpoint_blobs` (one
    value per channel version) and our `kept_snapshots` listing."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver

    def _rows(self, sql: str, args: Sequence[Any]) -> list[dict[str, Any]]:
        with postgres_cursor(self.saver) as cur:
            return list(cur.execute(sql, args).fetchall())

    def latest(self) -> list[tuple[str, str]]:
        return [(r["thread_id"], r["latest"]) for r in self._rows(LATEST_THREADS_SQL, ())]

    def lineage(self, thread_id: str) -> list[tuple[str, str | None]]:
        rows = self._rows(_PG_LINEAGE, (thread_id,))
        return [(r["checkpoint_id"], r["parent_checkpoint_id"]) for r in rows]

    def count_thread(self, thread_id: str) -> Counts:
        row = self._rows(
            "SELECT "
            "(SELECT count(*) FROM checkpoints WHERE thread_id = %s) AS c, "
            "(SELECT SUM(pg_column_size(checkpoint) + pg_column_size(metadata)) "
            " FROM checkpoints WHERE thread_id = %s) AS cs, "
            "(SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s) AS w, "
            "(SELECT SUM(octet_length(blob)) FROM checkpoint_writes WHERE thread_id = %s) AS ws, "
            "(SELECT count(*) FROM checkpoint_blobs WHERE thread_id = %s) AS b, "
            "(SELECT SUM(coalesce(octet_length(blob), 0)) FROM checkpoint_blobs "
            " WHERE thread_id = %s) AS bs",
            (thread_id,) * 6,
        )[0]
        size = sum(int(row[k] or 0) for k in ("cs", "ws", "bs"))
        with postgres_cursor(self.saver) as cur:
            jobs = count_run_jobs(cur, thread_id)
        return Counts(int(row["c"]), int(row["w"]), int(row["b"]), size, jobs)

    def delete_thread(self, thread_id: str) -> Counts:
        counts = self.count_thread(thread_id)
        with self._transaction() as cur:
            for table in (
                "checkpoints", "checkpoint_writes", "checkpoint_blobs", "kept_snapshots",
                "pause_answers", *INDEX_TABLES,
            ):  # fmt: skip
                cur.execute(f"DELETE FROM {table} WHERE thread_id = %s", (thread_id,))
            # Its finished jobs in the worker queue, and thinkgraph's row of it, go too.
            jobs = delete_run_jobs(cur, thread_id)
        return replace(counts, jobs=jobs)

    def old_job_threads(self, cutoff: datetime, threads: Sequence[str] | None) -> list[str] | None:
        with postgres_cursor(self.saver) as cur:
            return old_job_threads(cur, cutoff, threads)

    def delete_old_jobs(
        self,
        cutoff: datetime,
        *,
        kept: Sequence[str],
        threads: Sequence[str] | None,
        dry_run: bool,
    ) -> int:
        with self._transaction() as cur:
            return delete_old_jobs(cur, cutoff, kept=kept, threads=threads, dry_run=dry_run)

    def _garbage(self, cur: Any, thread_id: str, trim: Trim) -> dict[str, list[str]]:
        """Blob versions that deleted checkpoints use and no kept one does, by channel."""
        freed = cur.execute(_PG_VERSIONS, (thread_id, trim.deleted)).fetchall()
        used = cur.execute(_PG_VERSIONS, (thread_id, trim.kept)).fetchall()
        kept = {(r["channel"], r["version"]) for r in used}
        garbage: dict[str, list[str]] = {}
        for r in freed:
            if (r["channel"], r["version"]) not in kept:
                garbage.setdefault(r["channel"], []).append(r["version"])
        return garbage

    def count_trim(self, thread_id: str, trim: Trim) -> Counts:
        with postgres_cursor(self.saver) as cur:
            return self._count_trim(cur, thread_id, trim)

    def _count_trim(self, cur: Any, thread_id: str, trim: Trim) -> Counts:
        row = cur.execute(
            "SELECT count(*) AS c, SUM(pg_column_size(checkpoint) + pg_column_size(metadata)) "
            "AS s FROM checkpoints "
            "WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id = ANY(%s)",
            (thread_id, trim.deleted),
        ).fetchone()
        writes = cur.execute(
            "SELECT count(*) AS c, SUM(octet_length(blob)) AS s FROM checkpoint_writes "
            "WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id = ANY(%s)",
            (thread_id, trim.deleted),
        ).fetchone()
        blobs, b_size = 0, 0
        for channel, versions in self._garbage(cur, thread_id, trim).items():
            found = cur.execute(
                "SELECT count(*) AS c, SUM(coalesce(octet_length(blob), 0)) AS s "
                "FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = '' "
                "AND channel = %s AND version = ANY(%s)",
                (thread_id, channel, versions),
            ).fetchone()
            blobs += int(found["c"])
            b_size += int(found["s"] or 0)
        size = int(row["s"] or 0) + int(writes["s"] or 0) + b_size
        return Counts(int(row["c"]), int(writes["c"]), blobs, size)

    def trim(
        self, thread_id: str, trim: Trim, snapshots: Mapping[str, Mapping[str, Any]]
    ) -> Counts:
        serde = self.saver.serde
        with self._transaction() as cur:
            counts = self._count_trim(cur, thread_id, trim)
            garbage = self._garbage(cur, thread_id, trim)
            for root in trim.roots:
                values = snapshots.get(root) or {}
                found = cur.execute(
                    "SELECT checkpoint -> 'channel_versions' AS versions FROM checkpoints "
                    "WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id = %s FOR UPDATE",
                    (thread_id, root),
                ).fetchone()
                versions = (found or {}).get("versions") or {}
                for channel, value in values.items():
                    if channel not in versions:
                        continue
                    # Stored as PostgresSaver stores a snapshot: the value as the blob of
                    # the channel's version, a `true` marker in the checkpoint.
                    type_tag, blob = serde.dumps_typed(DeltaSnapshot(value))
                    cur.execute(
                        "INSERT INTO checkpoint_blobs "
                        "(thread_id, checkpoint_ns, channel, version, type, blob) "
                        "VALUES (%s, '', %s, %s, %s, %s) "
                        "ON CONFLICT (thread_id, checkpoint_ns, channel, version) "
                        "DO UPDATE SET type = EXCLUDED.type, blob = EXCLUDED.blob",
                        (thread_id, channel, str(versions[channel]), type_tag, blob),
                    )
                    cur.execute(
                        "UPDATE checkpoints SET checkpoint = jsonb_set(checkpoint, "
                        "ARRAY['channel_values', %s], 'true'::jsonb, true) "
                        "WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id = %s",
                        (channel, thread_id, root),
                    )
                    cur.execute(
                        "INSERT INTO kept_snapshots VALUES (%s, '', %s, %s, %s) "
                        "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, channel) "
                        "DO NOTHING",
                        (thread_id, root, channel, _length(value) or 0),
                    )
                cur.execute(
                    "UPDATE checkpoints SET parent_checkpoint_id = NULL "
                    "WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id = %s",
                    (thread_id, root),
                )
            for table in ("checkpoint_writes", "kept_snapshots", "checkpoints"):
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id = %s AND checkpoint_ns = '' "
                    "AND checkpoint_id = ANY(%s)",
                    (thread_id, trim.deleted),
                )
            for channel, versions in garbage.items():
                cur.execute(
                    "DELETE FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = '' "
                    "AND channel = %s AND version = ANY(%s)",
                    (thread_id, channel, versions),
                )
        return counts

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        """One transaction on a connection of the saver's, with a dict-row cursor."""
        with postgres_cursor(self.saver) as cur, cur.connection.transaction():
            yield cur

    def sizes(self) -> dict[str, int]:
        return {r["thread_id"]: int(r["size"] or 0) for r in self._rows(_PG_SIZES, ())}


def _length(value: Any) -> int | None:
    try:
        return len(value)
    except TypeError:
        return None
