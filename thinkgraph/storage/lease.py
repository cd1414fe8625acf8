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
  held by a connection of its own (the lock workers take), so every machine sees it.
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
    "TakesLeasesAtOnce",
    "ThreadLeases",
    "athread_lease",
    "busy_message",
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


_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"
_NOTE_SQL = "SELECT set_config('application_name', %s, false)"
# A bigint advisory key shows in pg_locks as its high half (classid) and low half (objid).
_HOLDER_SQL = """
WITH k AS (SELECT hashtextextended(%s, 0) AS key)
SELECT a.application_name, a.backend_start
FROM k, pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid::bigint = (k.key >> 32) & 4294967295
  AND l.objid::bigint = k.key & 4294967295
"""
_NOTE_PREFIX = "thinkgraph lease since "


class AdvisoryLeases:
    """PostgreSQL: a session advisory lock per thread, on a connection of its own.

    Its own connection because a session lock is reentrant within its session: on the
    saver's connection, every thread of the process would hold it at once. The session
    ends with its process, and the lock with it.
    """

    def __init__(self, connect: Callable[[], AbstractContextManager[psycopg.Connection[Any]]]):
        self.connect = connect

    @contextmanager
    def lease_thread(self, thread_id: str) -> Iterator[None]:
        key = f"thinkgraph:thread:{thread_id}"
        with self.connect() as conn:
            got = conn.execute(_LOCK_SQL, (key,)).fetchone()
            if not got or not _first(got):
                raise ThreadBusyError(busy_message(thread_id, _holder_since(conn, key)))
            try:
                conn.execute(_NOTE_SQL, (f"{_NOTE_PREFIX}{time.time():.3f}",))
                yield
            finally:
                # Closing the connection releases it too; unlocking first keeps a pooled
                # or slow-closing connection from holding the thread.
                if not conn.closed:
                    conn.execute(_UNLOCK_SQL, (key,))
                    conn.execute(_NOTE_SQL, ("",))


def _first(row: Any) -> Any:
    return next(iter(row.values())) if isinstance(row, dict) else row[0]


def _holder_since(conn: psycopg.Connection[Any], key: str) -> float | None:
    row = conn.execute(_HOLDER_SQL, (key,)).fetchone()
    if row is None:
        return None
    name, started = row.values() if isinstance(row, dict) else row
    if isinstance(name, str) and name.startswith(_NOTE_PREFIX):
        try:
            return float(name.removeprefix(_NOTE_PREFIX))
        except ValueError:
            pass
    return started.timestamp() if isinstance(started, datetime) else None


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
    return LocalLeases() if connect is None else AdvisoryLeases(connect)


def _postgres_connect(
    saver: BaseCheckpointSaver[Any],
) -> Callable[[], AbstractContextManager[psycopg.Connection[Any]]] | None:
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
        return conn.connection
    if isinstance(conn, psycopg.Connection):
        dsn, password = conn.info.dsn, conn.info.password or None

        def connect() -> psycopg.Connection[Any]:
            return psycopg.Connection.connect(dsn, password=password, autocommit=True)

        return connect
    return None


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
        with leases.connect() as conn:
            return (
                conn.execute(_HOLDER_SQL, (f"thinkgraph:thread:{thread_id}",)).fetchone()
                is not None
            )
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
