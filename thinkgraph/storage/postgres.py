"""The shared store: LangGraph's PostgresSaver, plus a paused run's chain kept whole.

Workers on many machines share runs through this store. A run that pauses may be resumed
days later by any of them; like the SQLite store, this one then keeps the run's chain
whole at the paused checkpoint (`keep_for_resume`), so the resume reads one value instead
of replaying every chain write since the last snapshot.

The value is stored the way PostgresSaver stores a `DeltaChannel` snapshot: a blob for the
channel at the checkpoint's version of it, and a `true` marker in the checkpoint's
`channel_values`, so LangGraph's own loading and ancestor walk find it.

Its connections are a psycopg pool (LangGraph's saver takes one as its `conn`) of at most
`DEFAULT_POOL_SIZE` connections, or the URL's ``?pool_size=N``. Each connection is checked
before it is handed out, so one broken by a database restart or failover is replaced, and
the store works again once the server is back, with no restart of the process. The
saver's async calls run on as many threads as the pool has connections: the checkpoint
I/O of concurrent runs is not serialised through one connection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg import Connection, Error, OperationalError
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from thinkgraph._langgraph import DeltaSnapshot, postgres_cursor, share_pooled_cursor
from thinkgraph.errors import StorageError
from thinkgraph.result import JobState
from thinkgraph.storage.answers import ANSWERS_DDL
from thinkgraph.storage.jobs import jobs_sql
from thinkgraph.storage.lease import LEASE_NOTES_DDL, close_leases
from thinkgraph.storage.run_index import INDEX_TABLES, create_run_index
from thinkgraph.storage.sqlite import AGAIN, LATEST_THREADS_SQL, checkpoint_key, worth_keeping
from thinkgraph.storage.threaded import ThreadedAsyncSaver
from thinkgraph.storage.urls import shown_url, split_pool_size

__all__ = [
    "APPLICATION_NAME",
    "DEFAULT_POOL_SIZE",
    "PostgresStore",
    "describe_fault",
    "open_postgres",
    "shown_url",
]

DEFAULT_POOL_SIZE = 8
"""The store's connections at most, unless its URL says ``?pool_size=N``."""
APPLICATION_NAME = "thinkgraph"
"""How thinkgraph's connections show in ``pg_stat_activity`` unless the URL names them
(``?application_name=…``)."""
POOL_TIMEOUT_S = 20.0
"""How long a call waits for a connection (the server restarting) before it fails."""
CLOSE_GRACE_S = 2.0
"""How long closing the store waits for the calls in flight before it closes their pool."""

RECONNECT_GIVE_UP_S = 30.0
"""How long the pool keeps retrying one lost connection (1, 2, 4, … s apart) before it
starts over at the next call: a server back after a long outage is found within seconds."""
CONNECTION_KWARGS: dict[str, Any] = {
    "autocommit": True,
    "prepare_threshold": 0,
    "row_factory": dict_row,
    "connect_timeout": 10,
    "fallback_application_name": APPLICATION_NAME,
}
"""How the store connects: LangGraph's settings, a bounded connect, a name in the server."""

_KEPT_DDL = """
CREATE TABLE IF NOT EXISTS kept_snapshots (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, channel)
)
"""
_CHECKPOINT_SQL = (
    "SELECT checkpoint FROM checkpoints "
    "WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s FOR UPDATE"
)
_LARGEST_SQL = (
    "SELECT max(size) AS largest FROM kept_snapshots WHERE thread_id = %s AND channel = %s"
)
_BLOB_SQL = (
    "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
    "VALUES (%s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING"
)
_LIST_SQL = (
    "INSERT INTO kept_snapshots VALUES (%s, %s, %s, %s, %s) "
    "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, channel) DO NOTHING"
)
_MARK_SQL = (
    "UPDATE checkpoints SET checkpoint = %s "
    "WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s"
)


_SETUP_LOCK_SQL = "SELECT pg_advisory_lock(hashtext('thinkgraph:store-setup'))"
_HAS_THREAD_SQL = "SELECT 1 FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' LIMIT 1"


class PostgresStore(ThreadedAsyncSaver, PostgresSaver):
    """LangGraph's PostgresSaver that can keep a paused run's chain whole.

    Async code (`ainvoke`, `astream`) is served by the same object: its async methods run
    these on the saver's threads (`ThreadedAsyncSaver`), one per pooled connection.
    """

    pool_size = 1
    """The connections the store uses at most (one, on a single connection)."""

    def __init__(self, conn: Any, *, serde: Any = None) -> None:
        super().__init__(conn, serde=serde)
        if isinstance(conn, ConnectionPool):
            self.pool_size = self._executor_threads = conn.max_size
            share_pooled_cursor(self)

    def setup(self) -> None:
        super().setup()
        # One creator at a time: two CREATE … IF NOT EXISTS at once can both try to create.
        with postgres_cursor(self) as cur, cur.connection.transaction():
            cur.execute(_SETUP_LOCK_SQL.replace("pg_advisory_lock", "pg_advisory_xact_lock"))
            cur.execute(_KEPT_DDL)
            cur.execute(LEASE_NOTES_DDL)
            cur.execute(ANSWERS_DDL)
            create_run_index(cur, postgres=True)

    def keep_for_resume(self, config: RunnableConfig, values: Mapping[str, Any]) -> list[str]:
        """Store delta channels' values whole at the checkpoint `config` names.

        The same contract as the SQLite store's: `values` are the channels' values at that
        checkpoint; one is stored only when at least `KEEP_MIN_SIZE` long and at least
        twice the largest kept for the thread, so storage stays linear in the run.

        Returns:
            The channels stored.
        """
        thread_id, ns, checkpoint_id = checkpoint_key(config)
        with postgres_cursor(self) as cur, cur.connection.transaction():
            row = cur.execute(_CHECKPOINT_SQL, (thread_id, ns, checkpoint_id)).fetchone()
            if row is None:
                return []
            checkpoint = dict(row["checkpoint"])
            stored = dict(checkpoint.get("channel_values") or {})
            versions = checkpoint.get("channel_versions") or {}
            kept: dict[str, Any] = {}
            for channel, value in values.items():
                if channel in stored or channel not in versions or not isinstance(value, list):
                    continue
                largest = cur.execute(_LARGEST_SQL, (thread_id, channel)).fetchone()
                if worth_keeping(len(value), (largest or {}).get("largest")):
                    kept[channel] = value
            for channel, value in kept.items():
                type_tag, blob = self.serde.dumps_typed(DeltaSnapshot(value))
                version = str(versions[channel])
                cur.execute(_BLOB_SQL, (thread_id, ns, channel, version, type_tag, blob))
                cur.execute(_LIST_SQL, (thread_id, ns, checkpoint_id, channel, len(value)))
                stored[channel] = True  # PostgresSaver's marker: a snapshot in the blobs
            if kept:
                checkpoint["channel_values"] = stored
                cur.execute(_MARK_SQL, (Jsonb(checkpoint), thread_id, ns, checkpoint_id))
        return sorted(kept)

    def settle(self) -> None:
        """Nothing to do: PostgreSQL defers no write work to a later commit."""

    def close(self) -> None:
        """Let the calls in flight finish, then close the database connections (the pool's
        and the lease session's).

        A call still waiting after `CLOSE_GRACE_S` waits for a connection from a database
        that does not answer (it would wait the pool's whole timeout): the pool is closed
        first, which ends that wait with an error; calls that hold a connection finish.
        """
        if not self.close_executor(grace_s=CLOSE_GRACE_S):
            self.conn.close()
            self.close_executor()
        close_leases(self)
        self.conn.close()

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        with postgres_cursor(self) as cur:
            cur.execute("DELETE FROM kept_snapshots WHERE thread_id = %s", (str(thread_id),))
            cur.execute("DELETE FROM pause_answers WHERE thread_id = %s", (str(thread_id),))
            for table in INDEX_TABLES:
                cur.execute(f"DELETE FROM {table} WHERE thread_id = %s", (str(thread_id),))

    def has_thread(self, thread_id: str) -> bool:
        """Whether the store holds `thread_id`, by index alone (see `KnowsThreads`)."""
        with postgres_cursor(self) as cur:
            return cur.execute(_HAS_THREAD_SQL, (str(thread_id),)).fetchone() is not None

    def thread_jobs(self, thread_ids: Sequence[str] | None = None) -> dict[str, JobState]:
        """The worker queue's latest job of the runs whose job has not ended well, in one
        query (see `KnowsJobs`, `thinkgraph.storage.jobs`)."""
        try:
            with postgres_cursor(self) as cur:
                return jobs_sql(cur, thread_ids)
        except Error as exc:
            raise StorageError(f"cannot read the worker queue's jobs in this store: {exc}") from exc

    def list_thread_ids(self) -> list[str]:
        """The runs' thread ids, newest first, in one query (see `ListsThreads`)."""
        try:
            with postgres_cursor(self) as cur:
                rows = cur.execute(LATEST_THREADS_SQL).fetchall()
        except Error as exc:
            raise StorageError(f"cannot list the runs in this store: {exc}") from exc
        return [row["thread_id"] for row in rows]


def open_postgres(url: str, serde: Any) -> PostgresStore:
    """Connect to the PostgreSQL store at `url`, set it up, and give it its pool.

    The first connection is made here, so a server that cannot be reached is an error at
    once, in psycopg's words; it sets the store up and is closed. The pool then keeps one
    connection open and opens up to its size as calls come.

    Raises:
        StorageError: the URL's pool size is not a number of connections, or the server
            cannot be reached.
    """
    try:
        conninfo, size = split_pool_size(url)
    except ValueError as exc:
        raise StorageError(str(exc)) from None
    try:
        first = Connection.connect(conninfo, **CONNECTION_KWARGS)
    except OperationalError as exc:
        raise StorageError(describe_fault(exc, url) or f"cannot connect to {url}: {exc}") from exc
    with first:
        # One process sets a new database up at a time (workers and a server starting
        # together): LangGraph's migrations are not safe to run side by side.
        first.execute(_SETUP_LOCK_SQL)
        PostgresStore(first, serde=serde).setup()
    pool: ConnectionPool[Connection[Any]] = ConnectionPool(
        conninfo,
        kwargs=CONNECTION_KWARGS,
        min_size=1,
        max_size=size or DEFAULT_POOL_SIZE,
        open=False,
        check=ConnectionPool.check_connection,
        timeout=POOL_TIMEOUT_S,
        reconnect_timeout=RECONNECT_GIVE_UP_S,
        name="thinkgraph-store",
    )
    pool.open(wait=False)
    return PostgresStore(pool, serde=serde)


# psycopg words a failed connect "connection failed: …" (older versions: "connection to
# server at … failed"); a connection lost later says the server closed or ended it.
_CONNECT_FAILED = ("connection failed", "connection to server")
# SQLSTATEs of a connection the server refused or ended: connection exceptions (class 08),
# too many connections, and the server shutting down or starting up.
_CONNECTION_STATES = ("08", "53300", "57P01", "57P02", "57P03")
_DISK_FULL = "53100"


def describe_fault(exc: OperationalError, url: str | None) -> str | None:
    """What an error of the PostgreSQL connection says about the store at `url`, and what
    to do: it cannot be reached, the connection was lost, or the server's disk is full.
    None for another error (a lock or statement timeout, a query the server cancelled):
    the code that ran the query knows better what it means."""
    if isinstance(exc, PoolTimeout):
        store = f"the PostgreSQL store at {shown_url(url)}" if url else "the PostgreSQL store"
        return (
            f"cannot connect to {store} (no connection within {POOL_TIMEOUT_S:g} s); check "
            f"that the server is running and reachable, then {AGAIN}"
        )
    state = exc.sqlstate
    text = str(exc).strip()
    first = text.splitlines()[0].strip() if text else type(exc).__name__
    store = f"the PostgreSQL store at {shown_url(url)}" if url else "the PostgreSQL store"
    if state == _DISK_FULL:
        return f"{store} is full ({first}); free disk space on the database server, then {AGAIN}"
    if state is not None and not state.startswith(_CONNECTION_STATES):
        return None
    if first.startswith(_CONNECT_FAILED) or state in ("53300", "57P03"):
        return (
            f"cannot connect to {store} ({first}); check that the server is running and the "
            "URL is right"
        )
    return (
        f"lost the connection to {store} ({first}); check that the server is running and "
        f"reachable, then {AGAIN}"
    )
