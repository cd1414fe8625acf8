"""Worker threads for tool calls: sync tools under a deadline, coroutines from sync code."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import queue
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["run_coroutine", "submit_to_worker"]

T = TypeVar("T")


class _WorkerPool:
    """Daemon threads that run tool calls the caller must be able to stop waiting for.

    Not a `ThreadPoolExecutor`: a Python thread cannot be killed, so a tool that never
    returns keeps its thread for good. An executor has a fixed size (a few hung tools
    would starve every later call) and joins its threads at interpreter exit (a hung tool
    would block exit). Here a busy pool starts another thread, and a hung daemon thread
    dies with the process. Idle threads are kept and reused.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        future: Future[T] = Future()
        # The caller's context variables (tracing, run config) follow the call.
        context = contextvars.copy_context()
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._jobs.put((future, functools.partial(context.run, fn, *args)))
        if start:
            threading.Thread(target=self._work, name="thinkgraph-tool", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            future, job = self._jobs.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(job())
                except BaseException as exc:
                    future.set_exception(exc)
            del future, job  # do not keep the last result alive while idle
            with self._lock:
                self._idle += 1


_POOL = _WorkerPool()


def _reset_after_fork() -> None:
    # A forked child has none of the parent's threads: counting them as idle would leave
    # every job queued forever.
    global _POOL
    _POOL = _WorkerPool()


os.register_at_fork(after_in_child=_reset_after_fork)


def submit_to_worker(fn: Callable[..., T], *args: Any) -> Future[T]:
    """Run `fn(*args)` in a shared daemon worker thread; the future holds the outcome."""
    return _POOL.submit(fn, *args)


def run_coroutine(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code, even if a loop runs in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    # A loop already runs in this thread and a second cannot; run one in a worker.
    return submit_to_worker(lambda: asyncio.run(make())).result()
