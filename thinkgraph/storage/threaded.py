"""Async methods for a saver whose work is done by its sync methods, on its own threads.

SQLite and psycopg's sync connection do blocking I/O. LangGraph's async savers for them
(`AsyncSqliteSaver` through aiosqlite, `AsyncPostgresSaver`) run that I/O on a connection
thread too; here the saver's own sync methods — with thinkgraph's compact storage — run
on a small executor that belongs to the saver, so one object serves `invoke` and
`ainvoke` alike, and the event loop never waits on a disk or a socket.

A SQLite connection is used from one thread at a time anyway (the saver's lock), so its
executor has one thread, as aiosqlite has. Each call is one short statement batch; many
runs share the thread by taking turns per checkpoint, not per run.

A saver may do a short call on the loop instead (`_call_now`), where it can tell that
the call will not wait: a SQLite commit in WAL mode with ``synchronous=NORMAL`` is a copy
into the log, and "does this thread exist" one index look-up — both cheaper than the
hand-off to a thread and back. When anything stands in the way, the call goes to the
executor like every other.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

__all__ = ["ThreadedAsyncSaver"]

T = TypeVar("T")


class ThreadedAsyncSaver(BaseCheckpointSaver[Any]):
    """Mixin: the async saver methods, each running its sync twin on the saver's executor.

    Put it before the sync saver class in the bases. Only the methods the sync saver
    implements are given async twins, so LangGraph (and its conformance suite) see the
    same capabilities from both sides.
    """

    _executor_threads: int = 1
    __executor: ThreadPoolExecutor | None = None

    def _executor(self) -> ThreadPoolExecutor:
        if self.__executor is None:
            self.__executor = ThreadPoolExecutor(
                max_workers=self._executor_threads,
                thread_name_prefix=f"thinkgraph-{type(self).__name__}",
            )
        return self.__executor

    async def _off_loop(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        call = functools.partial(fn, *args, **kwargs)
        # The caller's context goes along (as with asyncio.to_thread): how a read decodes
        # may depend on it (`steps_left_packed`).
        context = contextvars.copy_context()
        future: Future[T] = self._executor().submit(context.run, call)
        self._in_flight.add(future)
        future.add_done_callback(self._in_flight.discard)
        return await asyncio.wrap_future(future)

    @functools.cached_property
    def _in_flight(self) -> set[Future[Any]]:
        """The calls handed to the executor and not done yet (see `close_executor`)."""
        return set()

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """A short call (a write, a look-up): done now if it will not wait, else off the loop."""
        done, value = self._call_now(fn, *args)
        if done:
            return cast(T, value)
        return await self._off_loop(fn, *args)

    def _call_now(self, fn: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
        """Do `fn(*args)` on the calling thread if it cannot wait on anything.

        Returns (True, its result) when done, (False, None) when it must be handed off;
        a saver whose calls may wait (on a socket, a lock) keeps this default.
        """
        return False, None

    def close_executor(self, grace_s: float | None = None) -> bool:
        """Stop the executor's threads once the calls already handed to it are done.

        With `grace_s`, wait at most that long: False when calls are still in flight then
        (the executor stays, for the caller to end their wait and close it again).
        """
        if self.__executor is None:
            return True
        if grace_s is not None:
            _, waiting = concurrent.futures.wait(list(self._in_flight), timeout=grace_s)
            if waiting:
                return False
        self.__executor.shutdown(wait=True)
        self.__executor = None
        return True

    def close(self) -> None:
        """Let the calls in flight finish, then close the saver's connection (a saver
        with one extends this)."""
        self.close_executor()

    async def ahas_thread(self, thread_id: str) -> bool:
        """Whether the store holds `thread_id` (see `KnowsThreads`): a look-up, so done on
        the loop when the saver can do it without waiting."""
        return bool(await self._call(self.has_thread, thread_id))

    def has_thread(self, thread_id: str) -> bool:
        """Whether the store holds any checkpoint of `thread_id` in the root namespace."""
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        return self.get_tuple(config) is not None

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._off_loop(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        # Listed in one go on the executor: a sync iterator must not be resumed from
        # several threads, and a listing is read whole by LangGraph anyway.
        def listed() -> list[CheckpointTuple]:
            return list(self.list(config, filter=filter, before=before, limit=limit))

        for item in await self._off_loop(listed):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._call(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._call(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._off_loop(self.delete_thread, thread_id)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await self._off_loop(
            self.get_delta_channel_history, config=config, channels=channels
        )
