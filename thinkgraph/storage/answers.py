"""One answer per pause: the first answer given to a pause is claimed in the store, and
every other one is refused, naming it.

A paused run waits for one answer. Whoever brings it (`Agent.resume`, and through it the
CLI, the HTTP server and the workers; a job queued with an answer) claims the pause first:
a row keyed by the thread and the paused checkpoint's id, in the run's own store. The
first claim wins; any other finds it and is refused with what it found (`AnsweredError`,
worded by `Answer.refusal`). A claim is given back (`release`) when its answer was not
applied after all: refused before the run moved, or its job failed for good.

- SQLite and PostgreSQL: the `pause_answers` table beside the checkpoints (made by the
  stores' `setup`); the insert that claims is the one that decides, whichever process
  comes second finds the first's row. On PostgreSQL a job queued with an answer is
  inserted in the claim's own transaction (`claiming`): the claim and the job land
  together or not at all.
- Any other saver (memory://, a saver of yours): claims of this process only.

One checkpoint can hold two pauses, one after the other: a breakpoint after think (or
before approve), then the approval the approve node asks for there. A Continue's claim
(``continued``) is cleared by the claim of any other answer at its checkpoint: that answer
is for the later pause. (A second Continue still finds the first's claim and is refused.)

The rows are small and stay with their run; a deleted run's go with it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from thinkgraph._langgraph import postgres_cursor
from thinkgraph.errors import AnsweredError
from thinkgraph.hitl import CONTINUED

__all__ = [
    "ANSWERS_DDL",
    "Answer",
    "Claim",
    "aanswer_of",
    "aclaim",
    "answer_of",
    "arelease",
    "claim",
    "claiming",
    "latest_answer",
    "release",
    "this_process",
]

ANSWERS_DDL = """
CREATE TABLE IF NOT EXISTS pause_answers (
    thread_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    answer_id TEXT NOT NULL,
    what TEXT NOT NULL,
    answered_by TEXT NOT NULL,
    answered_at TEXT NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id)
)
"""
"""The claims' table, the same on SQLite and PostgreSQL (created by each store's setup)."""

_COLUMNS = "answer_id, what, answered_by, answered_at"


def this_process() -> str:
    """Who answers when nobody says: this process, by pid and host."""
    return f"process {os.getpid()} on {socket.gethostname()}"


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer to one pause, as claimed: what it decided, who gave it, and when."""

    thread_id: str
    checkpoint_id: str
    """The paused checkpoint it answers."""
    what: str
    """What it decided, in a word or a few ("approved", "rejected", "answered retry")."""
    by: str
    """Who gave it ("job 12 on queue 'q'", "process 4242 on host")."""
    answer_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Its identity: the same answer claimed again (a job retried) is still the winner."""
    at: datetime | None = None
    """When it was claimed (set by the store)."""

    def refusal(self) -> str:
        """The one line another answer to the same pause is refused with."""
        when = self.at.strftime("%Y-%m-%d %H:%M:%S UTC") if self.at else "an unknown time"
        return (
            f"the pause of thread {self.thread_id!r} at checkpoint {self.checkpoint_id} was "
            f"already answered: {self.what} by {self.by} at {when}; nothing changed"
        )


def _row(answer: Answer) -> tuple[str, ...]:
    at = (answer.at or datetime.now(UTC)).isoformat()
    return (answer.thread_id, answer.checkpoint_id, answer.answer_id, answer.what, answer.by, at)


def _found(thread_id: str, checkpoint_id: str, row: Any) -> Answer:
    values = list(row.values()) if isinstance(row, dict) else list(row)
    answer_id, what, by, at = values
    return Answer(thread_id, checkpoint_id, what, by, answer_id, datetime.fromisoformat(at))


# -- the stores -------------------------------------------------------------------------------

_SQ_CLAIM = "INSERT OR IGNORE INTO pause_answers VALUES (?, ?, ?, ?, ?, ?)"
_SQ_CLEAR_CONTINUE = (
    "DELETE FROM pause_answers WHERE thread_id = ? AND checkpoint_id = ? AND what = ?"
)
_SQ_READ = f"SELECT {_COLUMNS} FROM pause_answers WHERE thread_id = ? AND checkpoint_id = ?"
_SQ_RELEASE = (
    "DELETE FROM pause_answers WHERE thread_id = ? AND checkpoint_id = ? AND answer_id = ?"
)
_PG_CLAIM = (
    "INSERT INTO pause_answers VALUES (%s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (thread_id, checkpoint_id) DO NOTHING"
)
_PG_READ = _SQ_READ.replace("?", "%s")
_PG_CLEAR_CONTINUE = _SQ_CLEAR_CONTINUE.replace("?", "%s")
_PG_RELEASE = _SQ_RELEASE.replace("?", "%s")
_PG_RELABEL = (
    "UPDATE pause_answers SET answered_by = %s "
    "WHERE thread_id = %s AND checkpoint_id = %s AND answer_id = %s"
)

_LOCAL: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], Answer]] = weakref.WeakKeyDictionary()
_LOCAL_LOCK = threading.Lock()


def _sqlite(saver: BaseCheckpointSaver[Any]) -> Any:
    """`saver` if it is the SQLite store, else None."""
    # Like `_postgres`: the SQLite store's module makes the table and imports this one.
    sqlite = sys.modules.get("thinkgraph.storage.sqlite")
    return saver if sqlite is not None and isinstance(saver, sqlite.CompactSqliteSaver) else None


def _postgres(saver: BaseCheckpointSaver[Any]) -> bool:
    # Only a program that opened a PostgreSQL store has loaded its module.
    postgres = sys.modules.get("thinkgraph.storage.postgres")
    return postgres is not None and isinstance(saver, postgres.PostgresStore)


def _continue_of(answer: Answer) -> tuple[str, str, str] | None:
    """The row of a Continue at `answer`'s checkpoint that `answer`'s claim clears (None
    when `answer` is a Continue itself): that pause is over, `answer` is for a later one."""
    if answer.what == CONTINUED:
        return None
    return (answer.thread_id, answer.checkpoint_id, CONTINUED)


def _pg_claim(cur: Any, answer: Answer) -> Answer:
    if (cleared := _continue_of(answer)) is not None:
        cur.execute(_PG_CLEAR_CONTINUE, cleared)
    cur.execute(_PG_CLAIM, _row(answer))
    # A claim that was not committed yet made the insert wait for it; read committed,
    # this read sees it (or, rolled back, ours).
    row = cur.execute(_PG_READ, (answer.thread_id, answer.checkpoint_id)).fetchone()
    return _found(answer.thread_id, answer.checkpoint_id, row)


def claim(saver: BaseCheckpointSaver[Any], answer: Answer) -> Answer:
    """Claim `answer`'s pause for it, unless another answer has: the answer that holds it.

    The same answer (its `answer_id`) claimed again holds it still. Compare the ids: the
    result is `answer` (with its time) when it won.
    """
    if (sqlite := _sqlite(saver)) is not None:
        with sqlite.cursor() as cur:  # one transaction: the insert decides, the read tells
            if (cleared := _continue_of(answer)) is not None:
                cur.execute(_SQ_CLEAR_CONTINUE, cleared)
            cur.execute(_SQ_CLAIM, _row(answer))
            row = cur.execute(_SQ_READ, (answer.thread_id, answer.checkpoint_id)).fetchone()
        return _found(answer.thread_id, answer.checkpoint_id, row)
    if _postgres(saver):
        with postgres_cursor(saver) as cur, cur.connection.transaction():
            return _pg_claim(cur, answer)
    with _LOCAL_LOCK:
        held = _LOCAL.setdefault(saver, {})
        key = (answer.thread_id, answer.checkpoint_id)
        if _continue_of(answer) is not None and key in held and held[key].what == CONTINUED:
            del held[key]
        return held.setdefault(key, replace(answer, at=answer.at or datetime.now(UTC)))


def release(saver: BaseCheckpointSaver[Any], answer: Answer) -> None:
    """Give `answer`'s claim back (its answer was not applied); another's is left alone."""
    key = (answer.thread_id, answer.checkpoint_id, answer.answer_id)
    if (sqlite := _sqlite(saver)) is not None:
        with sqlite.cursor() as cur:
            cur.execute(_SQ_RELEASE, key)
        return
    if _postgres(saver):
        with postgres_cursor(saver) as cur:
            cur.execute(_PG_RELEASE, key)
        return
    with _LOCAL_LOCK:
        held = _LOCAL.get(saver, {})
        found = held.get(key[:2])
        if found is not None and found.answer_id == answer.answer_id:
            del held[key[:2]]


def answer_of(saver: BaseCheckpointSaver[Any], thread_id: str, checkpoint_id: str) -> Answer | None:
    """The answer that claimed the pause at `checkpoint_id`, if one did."""
    if (sqlite := _sqlite(saver)) is not None:
        with sqlite.lock:
            row = sqlite.conn.execute(_SQ_READ, (thread_id, checkpoint_id)).fetchone()
    elif _postgres(saver):
        with postgres_cursor(saver) as cur:
            row = cur.execute(_PG_READ, (thread_id, checkpoint_id)).fetchone()
    else:
        with _LOCAL_LOCK:
            return _LOCAL.get(saver, {}).get((thread_id, checkpoint_id))
    return None if row is None else _found(thread_id, checkpoint_id, row)


_SQ_LATEST = (
    f"SELECT checkpoint_id, {_COLUMNS} FROM pause_answers WHERE thread_id = ? "
    "ORDER BY answered_at DESC LIMIT 1"
)


def latest_answer(saver: BaseCheckpointSaver[Any], thread_id: str) -> Answer | None:
    """The answer that claimed the thread's latest answered pause, if any."""
    if (sqlite := _sqlite(saver)) is not None:
        with sqlite.lock:
            row = sqlite.conn.execute(_SQ_LATEST, (thread_id,)).fetchone()
    elif _postgres(saver):
        with postgres_cursor(saver) as cur:
            row = cur.execute(_SQ_LATEST.replace("?", "%s"), (thread_id,)).fetchone()
    else:
        with _LOCAL_LOCK:
            found = [a for (t, _), a in _LOCAL.get(saver, {}).items() if t == thread_id]
        return max(found, key=lambda a: a.at or datetime.min.replace(tzinfo=UTC), default=None)
    if row is None:
        return None
    values = list(row.values()) if isinstance(row, dict) else list(row)
    return _found(thread_id, str(values[0]), values[1:])


async def _off_loop(saver: BaseCheckpointSaver[Any], fn: Any, *args: Any) -> Any:
    if _sqlite(saver) is not None or _postgres(saver):
        return await asyncio.to_thread(fn, saver, *args)
    return fn(saver, *args)  # a dictionary of this process: no wait


async def aclaim(saver: BaseCheckpointSaver[Any], answer: Answer) -> Answer:
    """`claim` for async code (the store's query off the event loop)."""
    found: Answer = await _off_loop(saver, claim, answer)
    return found


async def arelease(saver: BaseCheckpointSaver[Any], answer: Answer) -> None:
    """`release` for async code."""
    await _off_loop(saver, release, answer)


async def aanswer_of(
    saver: BaseCheckpointSaver[Any], thread_id: str, checkpoint_id: str
) -> Answer | None:
    """`answer_of` for async code."""
    found: Answer | None = await _off_loop(saver, answer_of, thread_id, checkpoint_id)
    return found


# -- a claim and a job, together ---------------------------------------------------------------


@dataclass
class Claim:
    """A claim being made (see `claiming`): its transaction's connection, and a way to
    say at last who answered."""

    answer: Answer
    connection: Any = None
    """The PostgreSQL connection of the claim's transaction, None on another store: what
    is written on it inside the block is committed with the claim."""
    _saver: Any = None

    def relabel(self, by: str) -> None:
        """Say who answered, once it is known (the job's id): in the same transaction."""
        self.answer = replace(self.answer, by=by)
        if self.connection is not None:
            key = (self.answer.thread_id, self.answer.checkpoint_id, self.answer.answer_id)
            self.connection.execute(_PG_RELABEL, (by, *key))
        elif self._saver is not None:
            release(self._saver, self.answer)
            claim(self._saver, self.answer)


@contextmanager
def claiming(saver: BaseCheckpointSaver[Any], answer: Answer) -> Iterator[Claim]:
    """Claim `answer`'s pause for the block, and keep the claim only if the block ends well.

    On PostgreSQL the claim and the block share one transaction on the store's connection
    (`Claim.connection`): a job inserted on it lands with the claim, or neither does. On
    another store the claim is made first and given back if the block raises.

    Raises:
        AnsweredError: another answer holds the pause; nothing is claimed.
    """
    if _postgres(saver):
        with postgres_cursor(saver) as cur, cur.connection.transaction():
            won = _pg_claim(cur, answer)
            if won.answer_id != answer.answer_id:
                raise AnsweredError(won)
            yield Claim(won, cur.connection)
        return
    won = claim(saver, answer)
    if won.answer_id != answer.answer_id:
        raise AnsweredError(won)
    try:
        yield Claim(won, None, saver)
    except BaseException:
        release(saver, won)
        raise
