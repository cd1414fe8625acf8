"""One process advances a thread at a time: a per-thread lease on every store.

Every door that moves a run on (`Agent.run`, `resume`, `fork` and their streaming forms,
and through them the CLI, the HTTP server and the workers) holds the thread's lease while
it does. Asking for a lease someone else holds is refused at once with `ThreadBusyError`,
before anything is read or written, so the run stays as its holder leaves it. Each store
keeps its leases where they die with their holder: a killed process never blocks a thread
for good.

- SQLite: an exclusive `flock` on a small file per thread beside the database
  (``runs.db-lease-<hash>``), there only while the thread is held. The holder writes its
  pid and start time in it, for the message.
- PostgreSQL: a session advisory lock on ``hashtextextended('thinkgraph:thread:<id>', 0)``
  (the lock workers take), so every machine sees it; all of a store's leases are held on
  one session of its own, whatever the number of runs at once (see `AdvisoryLeases`).
- Any other saver (memory://): a lock in this process.

A store of your own brings its leases by giving its saver a ``lease_thread(thread_id)``
method (the `ThreadLeases` protocol).

Within one process the lease is reentrant where that is safe: an `Agent` call made inside
a block that holds the thread (a worker's `Agent.lease`) goes through instead of waiting
for itself. Other threads of the same process, and tasks not started inside the block, are
refused like other processes. ("Inside" follows `contextvars`: an asyncio task created in
the block copies its context, and counts as the holder's code.)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from langgraph.checkpoint.base import BaseCheckpointSaver

from thinkgraph.errors import StorageError, ThreadBusyError
from thinkgraph.storage.sqlite import describe_os_fault

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "LEASE_NOTES_DDL",
    "TakesLeasesAtOnce",
    "ThreadLeases",
    "athread_lease",
    "busy_message",
    "close_leases",
    "is_held",
    "leases_for",
    "thread_lease",
]


@runtime_checkable
class ThreadLeases(Protocol):
    """Where a store keeps its per-thread leases."""

    def lease_thread(self, thread_id: str) -> AbstractContextManager[None]:
        """Hold `thread_id`'s lease for the block.

        Raises:
            ThreadBusyError: someone else holds it; nothing was changed.
        """
        ...


@runtime_checkable
class TakesLeasesAtOnce(Protocol):
    """Leases that can often be taken and given back without waiting on anything.

    Async code then takes them on the event loop, instead of handing both ends of every
    run to a thread (a hop that, with many runs at once, costs the loop more than the
    lease). The leases of the SQLite and in-process stores are such.
    """

    def try_lease_thread(self, thread_id: str) -> AbstractContextManager[None] | None:
        """`lease_thread`'s block if the lease is free now, else None (the caller then
        waits with `lease_thread` off the loop). Entering and leaving the block returned do
        not wait either; enter it at once.

        Raises:
            ThreadBusyError: someone else holds it; nothing was changed.
        """
        ...


def busy_message(thread_id: str, since: float | None) -> str:
    """The one line a refused caller gets."""
    when = "an unknown time"
    if since is not None:
        when = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        f"thread {thread_id!r} is being advanced by another process (since {when}); "
        "wait for it to stop, then try again"
    )


# -- the stores' leases ---------------------------------------------------------------------


class FileLeases:
    """SQLite: `flock` on one file per thread, beside the database, while it is held.

    The files are named after the database (``runs.db-lease-<hash of the thread id>``), so
    ``rm runs.db*`` removes them with the database, its ``-wal`` and its ``-shm``; a
    folder of them would be left behind. The holder removes its file when it lets go, so
    only threads held now (or by a process killed while holding) have one.

    `flock` belongs to the open file, not to the process: two opens in one process exclude
    each other too, and the kernel drops the lock when its holder dies. A file removed by
    its holder may still be open, and then locked, by a taker that opened it just before:
    a taker checks that the file it locked is still the one at its path, else looks again.
    """

    def __init__(self, database: Path) -> None:
        self.database = database
        self.folder = database.parent
        """Where the lease files are: the database's folder."""

    @contextmanager
    def lease_thread(self, thread_id: str) -> Iterator[None]:
        for _ in range(20):
            held = self.try_lease_thread(thread_id)
            if held is not None:
                break
            time.sleep(0.005)
        else:
            raise ThreadBusyError(busy_message(thread_id, None))
        with held:
            yield

    def try_lease_thread(self, thread_id: str) -> AbstractContextManager[None] | None:
        """See `TakesLeasesAtOnce`: a local file and a non-blocking `flock`, no retry."""
        path = self.path(thread_id)
        fd = self._open(path, thread_id)
        try:
            if self._lock(fd, thread_id) and _is_at(fd, path):
                return _Noted(fd, path, thread_id, self.database)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # held by someone starting or letting go, or removed meanwhile
        return None

    def path(self, thread_id: str) -> Path:
        """The lease file of `thread_id`."""
        digest = hashlib.sha256(thread_id.encode()).hexdigest()[:32]
        return self.database.with_name(f"{self.database.name}-lease-{digest}")

    def _open(self, path: Path, thread_id: str) -> int:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _fault(exc, self.database, thread_id) from exc

    @staticmethod
    def _lock(fd: int, thread_id: str) -> bool:
        """Lock `fd` if no one holds it; False if its holder is starting or letting go.

        A holder writes its note just after locking and clears it just before unlocking:
        an empty note means "look again in a moment", a note means refused.
        """
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            since = _note_since(os.pread(fd, 4096, 0))
            if since is not None:
                raise ThreadBusyError(busy_message(thread_id, since)) from None
            return False
        return True


def _is_at(fd: int, path: Path) -> bool:
    """Whether the open file `fd` is still the file at `path` (not removed meanwhile)."""
    try:
        at = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (at.st_dev, at.st_ino)


def _fault(exc: OSError, database: Path, thread_id: str) -> StorageError:
    """The store fault an OS error on a lease file is, worded as the database's faults are
    (a full disk says "is full" whether SQLite or the lease met it first)."""
    return StorageError(
        describe_os_fault(exc, database)
        or f"cannot take thread {thread_id!r}'s lease beside the store {database} ({exc}); "
        "the database's folder must be writable"
    )


class _Noted:
    """A locked lease file: the holder's note written on entry; on exit the note cleared,
    the file removed and closed (which lets go of the lock)."""

    def __init__(self, fd: int, path: Path, thread_id: str, database: Path) -> None:
        self.fd = fd
        self.path = path
        self.thread_id = thread_id
        self.database = database

    def __enter__(self) -> None:
        note = {"pid": os.getpid(), "since": time.time(), "thread_id": self.thread_id}
        try:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, json.dumps(note).encode(), 0)
        except OSError as exc:
            self._let_go()  # on a full disk: no file left behind, the thread free
            raise _fault(exc, self.database, self.thread_id) from exc
        except BaseException:
            self._let_go()
            raise

    def __exit__(self, *exc_info: object) -> None:
        self._let_go()

    def _let_go(self) -> None:
        # Cleared first, so a taker that finds it still locked looks again instead of
        # refusing; removed while still locked, so no one locks a file about to go.
        try:
            os.ftruncate(self.fd, 0)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        finally:
            os.close(self.fd)


def _note_since(raw: bytes) -> float | None:
    try:
        since = json.loads(raw)["since"]
    except (ValueError, KeyError, TypeError):
        return None
    return float(since) if isinstance(since, int | float) else None


LEASE_NOTES_DDL = """
CREATE UNLOGGED TABLE IF NOT EXISTS thinkgraph_leases (
    key TEXT PRIMARY KEY,
    since DOUBLE PRECISION NOT NULL
)
"""
"""When each thread held now was taken, for the message a refused caller gets (the store's
setup creates it; unlogged: a note is worth nothing after a crash)."""

_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0)) AS got"
_UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"
# With the notes table: the lock and its note in one statement, one round trip.
_LOCK_NOTED_SQL = """
WITH taken AS (SELECT pg_try_advisory_lock(hashtextextended(%(key)s, 0)) AS got),
noted AS (
    INSERT INTO thinkgraph_leases (key, since) SELECT %(key)s, %(since)s FROM taken WHERE got
    ON CONFLICT (key) DO UPDATE SET since = excluded.since
)
SELECT got FROM taken
"""
_UNLOCK_NOTED_SQL = """
WITH gone AS (DELETE FROM thinkgraph_leases WHERE key = %(key)s)
SELECT pg_advisory_unlock(hashtextextended(%(key)s, 0))
"""
_HAS_NOTES_SQL = "SELECT to_regclass('thinkgraph_leases') IS NOT NULL AS found"
_NOTE_SINCE_SQL = "SELECT since FROM thinkgraph_leases WHERE key = %s"
# A bigint advisory key shows in pg_locks as its high half (classid) and low half (objid).
_HOLDER_SQL = """
WITH k AS (SELECT hashtextextended(%s, 0) AS key)
SELECT a.backend_start
FROM k, pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid::bigint = (k.key >> 32) & 4294967295
  AND l.objid::bigint = k.key & 4294967295
"""

logger = logging.getLogger("thinkgraph.storage")


class AdvisoryLeases:
    """PostgreSQL: a session advisory lock per thread, all of a store's on ONE session of
    its own.

    A process holds all its threads on one connection, however many runs it advances at
    once, so a worker's connections are bounded by its pools, not by its concurrency.
    Session locks are reentrant within their session, so the session alone would let every
    thread of the process through at once: the threads held here are also kept in a
    registry of this process, and a second taker of one of them is refused by it before
    the database is asked.

    The session is not one of the store's pool: a lock taken on a pooled connection would
    go back to the pool with it. Its statements (one short one to take a lease, one to give
    it back) take turns under a lock of this object.

    The session ends with its process, and every lock with it: a killed process never
    blocks a thread. It also ends when the database restarts or the connection is cut, and
    then every lease it held is LOST: another process may take those threads at once,
    while the runs that held them here go on until they next touch the store (after a
    restart their store connections failed too, and a worker's jobs are retried). A lost
    lease is let go of quietly (nothing is left to unlock) and logged once; the next lease
    opens a new session. A worker's jobs keep a second guard meanwhile: Procrastinate runs
    one job of a thread at a time (the thread id is the job's lock, kept in its table, not
    in a session).
    """

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]]):
        self.connect = connect
        """Opens a new session (autocommit)."""
        self._guard = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._noted = False
        self._generation = 0
        self._held: dict[str, tuple[float, int]] = {}
        """The threads held here: when each was taken, and on which session."""

    @contextmanager
    def lease_thread(self, thread_id: str) -> Iterator[None]:
        key = f"thinkgraph:thread:{thread_id}"
        with self._guard:
            if thread_id in self._held:
                raise ThreadBusyError(busy_message(thread_id, self._held[thread_id][0]))
            since = time.time()
            got = self._execute(
                lambda noted: (
                    (_LOCK_NOTED_SQL, {"key": key, "since": since})
                    if noted
                    else (_LOCK_SQL, (key,))
                )
            )
            if not got or not _first(got):
                raise ThreadBusyError(busy_message(thread_id, self._holder_since(key)))
            self._held[thread_id] = (since, self._generation)
        try:
            yield
        finally:
            with self._guard:
                _, generation = self._held.pop(thread_id)
                conn = self._conn
                if generation == self._generation and conn is not None and not conn.closed:
                    sql, args = (
                        (_UNLOCK_NOTED_SQL, {"key": key}) if self._noted else (_UNLOCK_SQL, (key,))
                    )
                    # A session lost just now took the lock with it: nothing to give back.
                    with contextlib.suppress(_psycopg().OperationalError):
                        conn.execute(sql, args)

    def is_held(self, thread_id: str) -> bool:
        """Whether any session (this process's or another's) holds `thread_id`."""
        with self._guard:
            if thread_id in self._held:
                return True
            key = f"thinkgraph:thread:{thread_id}"
            return self._execute(lambda _: (_HOLDER_SQL, (key,))) is not None

    def close(self) -> None:
        """Close the session, letting go of every lease still held on it."""
        with self._guard:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None

    def _execute(self, statement: Callable[[bool], tuple[str, Any]]) -> Any:
        """The first row of a statement on the session, opened again if it was lost.

        `statement(noted)` gives the SQL and its arguments; `noted` says whether the
        notes table is there. A session found dead is replaced once: its locks went with
        it, so the statement means the same on the new one.
        """
        operational = _psycopg().OperationalError
        for attempt in (1, 2):
            conn = self._session()
            sql, args = statement(self._noted)
            try:
                return conn.execute(sql, args).fetchone()
            except operational:
                if attempt == 2 or not conn.closed:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _session(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is not None and not conn.closed:
            return conn
        if conn is not None:
            lost = sorted(t for t, (_, g) in self._held.items() if g == self._generation)
            if lost:
                shown = ", ".join(lost[:10]) + (" …" if len(lost) > 10 else "")
                logger.warning(
                    "the lease session to the database was lost (a restart, a cut "
                    "connection): %d thread(s) held here lost their lease: %s",
                    len(lost),
                    shown,
                )
            self._conn = None
        conn = self.connect()
        self._generation += 1
        found = conn.execute(_HAS_NOTES_SQL).fetchone()
        self._noted = bool(found and _first(found))
        self._conn = conn
        return conn

    def _holder_since(self, key: str) -> float | None:
        """When the holder of `key` took it: its note, else when its session began."""
        conn = self._session()
        if self._noted:
            row = conn.execute(_NOTE_SINCE_SQL, (key,)).fetchone()
            if row is not None:
                return float(_first(row))
        row = conn.execute(_HOLDER_SQL, (key,)).fetchone()
        started = None if row is None else _first(row)
        return started.timestamp() if isinstance(started, datetime) else None


def _psycopg() -> Any:
    """psycopg (imported only by a process with a PostgreSQL store)."""
    import psycopg

    return psycopg


def _first(row: Any) -> Any:
    return next(iter(row.values())) if isinstance(row, dict) else row[0]


class LocalLeases:
    """Any other store (memory://): a lease that only this process can see."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held: dict[str, float] = {}

    @contextmanager
    def lease_thread(self, thread_id: str) -> Iterator[None]:
        with self._guard:
            if thread_id in self._held:
                raise ThreadBusyError(busy_message(thread_id, self._held[thread_id]))
            self._held[thread_id] = time.time()
        try:
            yield
        finally:
            with self._guard:
                del self._held[thread_id]

    def try_lease_thread(self, thread_id: str) -> AbstractContextManager[None]:
        """See `TakesLeasesAtOnce`: a lock of this process, never waited on for long."""
        return self.lease_thread(thread_id)


# -- choosing a store's leases ----------------------------------------------------------------

_CHOSEN: weakref.WeakKeyDictionary[BaseCheckpointSaver[Any], ThreadLeases] = (
    weakref.WeakKeyDictionary()
)
_CHOOSING = threading.Lock()


def leases_for(saver: BaseCheckpointSaver[Any]) -> ThreadLeases:
    """The leases of the store behind `saver` (the same object every time for one saver)."""
    if isinstance(saver, ThreadLeases):
        return saver
    with _CHOOSING:
        chosen = _CHOSEN.get(saver)
        if chosen is None:
            chosen = _CHOSEN[saver] = _choose(saver)
        return chosen


def _choose(saver: BaseCheckpointSaver[Any]) -> ThreadLeases:
    from langgraph.checkpoint.sqlite import SqliteSaver

    if isinstance(saver, SqliteSaver):
        with saver.lock:
            files = {row[1]: row[2] for row in saver.conn.execute("PRAGMA database_list")}
        if files.get("main"):  # an in-memory SQLite database has no file
            return FileLeases(Path(files["main"]))
        return LocalLeases()
    connect = _postgres_connect(saver)
    if connect is None:
        return LocalLeases()
    leases = AdvisoryLeases(connect)
    weakref.finalize(saver, leases.close)  # a saver dropped unclosed: its session too
    return leases


def _postgres_connect(
    saver: BaseCheckpointSaver[Any],
) -> Callable[[], psycopg.Connection[Any]] | None:
    """How to open a lease session on the database of a PostgreSQL saver, else None."""
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg_pool import ConnectionPool
    except ImportError:  # pragma: no cover - depends on the installed extras
        return None
    if not isinstance(saver, PostgresSaver):
        return None
    conn = saver.conn
    if isinstance(conn, ConnectionPool):
        pool = conn

        def connect_like_the_pool() -> psycopg.Connection[Any]:
            # Read at each connect: a pool may compute them (callables, psycopg_pool 3.3).
            conninfo = pool.conninfo if isinstance(pool.conninfo, str) else pool.conninfo()
            given = pool.kwargs() if callable(pool.kwargs) else pool.kwargs
            return psycopg.Connection.connect(conninfo, **{**(given or {}), "autocommit": True})

        return connect_like_the_pool
    if isinstance(conn, psycopg.Connection):
        dsn, password = conn.info.dsn, conn.info.password or None

        def connect() -> psycopg.Connection[Any]:
            return psycopg.Connection.connect(dsn, password=password, autocommit=True)

        return connect
    return None


def close_leases(saver: BaseCheckpointSaver[Any]) -> None:
    """Close the lease session of `saver`'s store, if it opened one (the store closes)."""
    with _CHOOSING:
        leases = _CHOSEN.pop(saver, None)
    if isinstance(leases, AdvisoryLeases):
        leases.close()


def is_held(saver: BaseCheckpointSaver[Any], thread_id: str) -> bool:
    """Whether some process advances `thread_id` now (holds its lease), for a listing.

    SQLite: a non-blocking `flock` on the lease file (no file: never held), let go at
    once; a taker that comes in that instant finds no note and looks again, as it does
    for a holder that is just starting, so it is not refused. PostgreSQL: `pg_locks`,
    read only. In this process (memory://): the held set. A store's own leases: taken
    and given back.
    """
    leases = leases_for(saver)
    if isinstance(leases, FileLeases):
        import fcntl

        try:
            fd = os.open(leases.path(thread_id), os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # also lets go of the lock, if it was taken
        return False
    if isinstance(leases, AdvisoryLeases):
        return leases.is_held(thread_id)
    if isinstance(leases, LocalLeases):
        return thread_id in leases._held
    try:
        with leases.lease_thread(thread_id):
            return False
    except ThreadBusyError:
        return True


# -- holding a lease ------------------------------------------------------------------------

_HELD: ContextVar[frozenset[tuple[int, str]]] = ContextVar("thinkgraph_held", default=frozenset())


@contextmanager
def thread_lease(
    saver: BaseCheckpointSaver[Any], thread_id: str, *, nested: bool = True
) -> Iterator[None]:
    """Hold `thread_id`'s lease in the store behind `saver` for the block.

    Args:
        saver: the store's saver.
        thread_id: the thread to hold.
        nested: let code inside the block (same thread or task) take the lease again
            without waiting for itself, as `Agent` calls inside a worker's lease do. Pass
            False around a generator's body: between its items the caller's code runs, and
            must not pass as the holder.

    Raises:
        ThreadBusyError: another process, thread or task holds it; nothing was changed.

    Example:
        >>> from thinkgraph.storage import open_checkpointer
        >>> saver = open_checkpointer("memory://")
        >>> with thread_lease(saver, "t1"):
        ...     pass
    """
    leases = leases_for(saver)
    key = (id(leases), thread_id)
    if key in _HELD.get():
        yield
        return
    with leases.lease_thread(thread_id):
        if not nested:
            yield
            return
        token = _HELD.set(_HELD.get() | {key})
        try:
            yield
        finally:
            _HELD.reset(token)


@asynccontextmanager
async def athread_lease(
    saver: BaseCheckpointSaver[Any], thread_id: str, *, nested: bool = True
) -> AsyncIterator[None]:
    """`thread_lease` for async code: taking and giving back never make the event loop
    wait — done on it when the store's leases can be taken at once (`TakesLeasesAtOnce`)
    and are free, else on a thread."""
    leases = leases_for(saver)
    key = (id(leases), thread_id)
    if key in _HELD.get():
        yield
        return
    quick = leases.try_lease_thread(thread_id) if isinstance(leases, TakesLeasesAtOnce) else None
    held = quick if quick is not None else leases.lease_thread(thread_id)
    if quick is not None:
        quick.__enter__()
    else:
        await asyncio.to_thread(held.__enter__)
    token = _HELD.set(_HELD.get() | {key}) if nested else None
    try:
        yield
    finally:
        if token is not None:
            _HELD.reset(token)
        if quick is not None:
            quick.__exit__(None, None, None)
        else:
            await asyncio.to_thread(held.__exit__, None, None, None)
