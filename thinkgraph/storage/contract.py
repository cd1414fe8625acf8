"""The store contract: what thinkgraph needs of a store beyond LangGraph's saver, in one place.

A LangGraph saver stores checkpoints. A run driver, a reader and the CLI need four things
more, and this module is their one home:

- **has-thread**: whether a thread holds a run, without loading its checkpoint;
- **list runs**: the thread ids of the root namespace, newest first, in one query;
- **keep-for-resume**: a paused run's chain stored whole, so its resume replays nothing
  (and `settle`: deferred write work done while the run waits);
- **lease**: one process advances a thread at a time (see `thinkgraph.storage.lease`);
- **one answer per pause**: the first answer to a pause claims it, any other is refused
  naming it (see `thinkgraph.storage.answers`);
- **prune**: delete old checkpoints of finished runs, and each run's size
  (see `thinkgraph.storage.prune`);
- **jobs**: the worker queue's latest job of the runs whose job has not ended well, from
  the queue's tables beside the checkpoints (see `thinkgraph.storage.jobs`).

thinkgraph's durable stores (SQLite and PostgreSQL) implement the whole `RunStore`
protocol; the in-memory one knows and lists its threads (a run there is never resumed by
another process, so it keeps nothing). `Store` wraps any saver and offers the four to its
callers, answering from the saver for each protocol it implements and, for any other
saver, in a way that is correct but slower (has-thread reads the latest checkpoint,
listing walks every checkpoint, keeping does nothing, leases are this process's).

Example:
    >>> from thinkgraph.storage import open_checkpointer
    >>> store = Store(open_checkpointer("memory://"))
    >>> store.has_thread("t1"), store.thread_ids()
    (False, [])
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from thinkgraph.errors import StorageError
from thinkgraph.result import JobState
from thinkgraph.storage import answers
from thinkgraph.storage.answers import Answer
from thinkgraph.storage.lease import athread_lease, is_held, thread_lease
from thinkgraph.storage.prune import PruneReport, prune, run_sizes

__all__ = ["KeepsPausedRuns", "KnowsJobs", "KnowsThreads", "ListsThreads", "RunStore", "Store"]


@runtime_checkable
class KeepsPausedRuns(Protocol):
    """A store that can keep a paused run's chain whole, so its resume replays nothing."""

    def keep_for_resume(self, config: RunnableConfig, values: Mapping[str, Any]) -> list[str]:
        """Store delta channels' values whole in the checkpoint `config` names.

        Returns:
            The channels stored (a store may decline small or repeated ones).
        """
        ...

    def settle(self) -> None:
        """Finish any deferred write work now, while the run waits (e.g. SQLite's log)."""
        ...


@runtime_checkable
class ListsThreads(Protocol):
    """A store that can name its threads with one query instead of walking checkpoints."""

    def list_thread_ids(self) -> list[str]:
        """The thread ids of the root namespace, the most recently updated first."""
        ...


@runtime_checkable
class KnowsThreads(Protocol):
    """A store that can tell whether it holds a thread without loading its checkpoint."""

    def has_thread(self, thread_id: str) -> bool:
        """Whether any checkpoint of `thread_id` (root namespace) is stored."""
        ...

    async def ahas_thread(self, thread_id: str) -> bool:
        """`has_thread` for async code."""
        ...


@runtime_checkable
class KnowsJobs(Protocol):
    """A store whose database holds the worker queue: it tells the runs' unfinished jobs."""

    def thread_jobs(self, thread_ids: Sequence[str] | None = None) -> dict[str, JobState]:
        """The latest job of each run (of `thread_ids`, if given) whose latest job waits,
        runs, stalled, is retried or failed, by thread id; none for the others."""
        ...


@runtime_checkable
class RunStore(KnowsThreads, ListsThreads, KeepsPausedRuns, Protocol):
    """Everything a saver can offer beyond LangGraph's interface (all of thinkgraph's do).

    A store of yours gets the same speed-ups by implementing these methods on its saver;
    it brings its own leases with a ``lease_thread`` method (`storage.lease.ThreadLeases`).
    """


class Store:
    """A LangGraph saver with the extras thinkgraph needs: the one way code asks for them.

    Cheap to make (no query, no connection of its own): wrap a saver where it is used.

    Args:
        saver: any LangGraph checkpoint saver; thinkgraph's own (`open_checkpointer`)
            answer each question with one indexed query.
    """

    __slots__ = ("_jobs", "_keeps", "_knows", "_lists", "saver")

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.saver = saver
        self._knows = saver if isinstance(saver, KnowsThreads) else None
        self._lists = saver if isinstance(saver, ListsThreads) else None
        self._keeps = saver if isinstance(saver, KeepsPausedRuns) else None
        self._jobs = saver if isinstance(saver, KnowsJobs) else None

    def has_thread(self, thread_id: str) -> bool:
        """Whether the store holds any checkpoint of `thread_id` (a run, even one killed
        before its first node)."""
        if self._knows is not None:
            return self._knows.has_thread(thread_id)
        return self.saver.get_tuple(_latest(thread_id)) is not None

    async def ahas_thread(self, thread_id: str) -> bool:
        """`has_thread` for async code."""
        if self._knows is not None:
            return await self._knows.ahas_thread(thread_id)
        return await self.saver.aget_tuple(_latest(thread_id)) is not None

    def thread_ids(self, limit: int | None = None) -> list[str]:
        """The thread ids in the store (root namespace), the most recently updated first.

        Args:
            limit: at most this many.

        Raises:
            StorageError: the store cannot be read.
        """
        try:
            if self._lists is not None:
                ids = self._lists.list_thread_ids()
            elif isinstance(self.saver, InMemorySaver):
                ids = memory_thread_ids(self.saver)
            else:
                ids = _walked_thread_ids(self.saver)
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot list the runs in this store: {exc}") from exc
        return ids[:limit] if limit is not None else ids

    def keep_for_resume(self, config: RunnableConfig, values: Mapping[str, Any]) -> list[str]:
        """Keep delta channels' `values` whole at the (paused) checkpoint `config` names.

        Returns:
            The channels stored; none for a store that cannot keep them.
        """
        if self._keeps is None:
            return []
        return self._keeps.keep_for_resume(config, values)

    @property
    def keeps_paused_runs(self) -> bool:
        """Whether `keep_for_resume` can store anything here (else the caller may skip
        computing what it would pass)."""
        return self._keeps is not None

    def settle(self) -> None:
        """Finish the store's deferred write work now (a run just paused or stopped)."""
        if self._keeps is not None:
            self._keeps.settle()

    def lease(self, thread_id: str, *, nested: bool = True) -> AbstractContextManager[None]:
        """Hold `thread_id`'s lease for the block (see `storage.lease.thread_lease`).

        Raises:
            ThreadBusyError: another process, thread or task holds it.
        """
        return thread_lease(self.saver, thread_id, nested=nested)

    def alease(self, thread_id: str, *, nested: bool = True) -> AbstractAsyncContextManager[None]:
        """`lease` for async code (see `storage.lease.athread_lease`)."""
        return athread_lease(self.saver, thread_id, nested=nested)

    def is_held(self, thread_id: str) -> bool:
        """Whether some process advances `thread_id` now, for a listing."""
        return is_held(self.saver, thread_id)

    async def aclaim_answer(self, answer: Answer) -> Answer:
        """Claim `answer`'s pause, unless another answer has: the one that holds it (see
        `storage.answers.claim`; compare the `answer_id`s)."""
        return await answers.aclaim(self.saver, answer)

    async def arelease_answer(self, answer: Answer) -> None:
        """Give `answer`'s claim back: it was not applied after all."""
        await answers.arelease(self.saver, answer)

    async def aanswer_of(self, thread_id: str, checkpoint_id: str) -> Answer | None:
        """The answer that claimed the pause of `thread_id` at `checkpoint_id`, if any."""
        return await answers.aanswer_of(self.saver, thread_id, checkpoint_id)

    def prune(self, **options: Any) -> PruneReport:
        """Delete old checkpoints of finished runs (see `storage.prune.prune` for the
        options: `status`, `keep_last`, `older_than`, `thread`, `dry_run`, ...).

        Raises:
            StorageError: the store is not SQLite or PostgreSQL.
        """
        return prune(self.saver, **options)

    def jobs(self, thread_ids: Sequence[str] | None = None) -> dict[str, JobState]:
        """The worker queue's word on runs whose latest job has not ended well (see
        `KnowsJobs`); empty for a store without a queue beside it.

        Raises:
            StorageError: the queue's tables cannot be read.
        """
        return {} if self._jobs is None else self._jobs.thread_jobs(thread_ids)

    def run_sizes(self) -> dict[str, int]:
        """Each run's stored size in bytes, in one query; empty for another store."""
        return run_sizes(self.saver)


def memory_thread_ids(saver: InMemorySaver) -> list[str]:
    """The thread ids of an in-memory saver (root namespace), newest first."""
    # storage: thread id -> namespace -> checkpoint id -> checkpoint.
    latest = {t: max(by_ns[""]) for t, by_ns in saver.storage.items() if by_ns.get("")}
    return [t for t, _ in sorted(latest.items(), key=lambda kv: kv[1], reverse=True)]


def _latest(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def _walked_thread_ids(saver: BaseCheckpointSaver[Any]) -> list[str]:
    latest: dict[str, str] = {}
    for item in saver.list(None):
        conf = item.config["configurable"]
        if conf.get("checkpoint_ns", "") == "":
            thread = str(conf["thread_id"])
            latest[thread] = max(latest.get(thread, ""), item.checkpoint["id"])
    return [t for t, _ in sorted(latest.items(), key=lambda kv: kv[1], reverse=True)]
