"""The sync API over the async core: one event loop thread that sync calls hand work to.

Runs are async underneath (`Agent.arun`, `ainvoke`). `Agent.run` and the other sync
methods hand the coroutine to a long-lived loop in a daemon thread and wait for it, so
they work the same from a plain script, from a worker thread, and from inside a running
event loop (a Jupyter cell), where `asyncio.run` would refuse. One loop for the process
also keeps what async clients cache per loop (litellm's HTTP sessions) alive between
calls.

Ctrl-C while a sync call waits cancels the run on the loop: the node in progress stops,
the last checkpoint stays as it was, and the run can be resumed from it.

`sync_method` and `sync_iterator` make a class's sync methods from its async ones, here
and nowhere else: ``run = sync_method(arun)`` in a class body is the whole of `run`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = ["iterate_sync", "run_sync", "sync_iterator", "sync_method"]

T = TypeVar("T")
S = TypeVar("S")
P = ParamSpec("P")

_CANCEL_WAIT_S = 10.0
"""How long an interrupted sync call waits for the cancelled run to wind down."""

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _runner() -> asyncio.AbstractEventLoop:
    """The process's loop for sync calls, started on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="thinkgraph-loop", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def _on_runner_thread() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run ``make()`` on the loop thread and wait for its result.

    Args:
        make: builds the awaitable, e.g. ``lambda: agent.arun(task)``; called on the loop.

    Raises:
        Whatever the awaitable raises. KeyboardInterrupt cancels it first.
    """
    if _on_runner_thread():
        # A sync call from code running on the loop itself would wait on its own thread:
        # give it a loop of its own instead.
        return _in_own_thread(make)
    done = threading.Event()

    async def call() -> T:
        try:
            return await make()
        finally:
            done.set()

    future = asyncio.run_coroutine_threadsafe(call(), _runner())
    try:
        return future.result()
    except KeyboardInterrupt:
        future.cancel()
        done.wait(_CANCEL_WAIT_S)
        raise


def _in_own_thread(make: Callable[[], Awaitable[T]]) -> T:
    async def call() -> T:
        return await make()

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="thinkgraph-nested") as ex:
        return ex.submit(asyncio.run, call()).result()


def iterate_sync(make: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    """Iterate ``make()``'s async iterator from sync code, one item at a time.

    The async iterator runs in one task on the loop thread, at most one item ahead of the
    reader; stopping early (``break``, closing the generator, Ctrl-C) cancels it, so a run
    does not go on by itself after its reader left.
    """
    if _on_runner_thread():
        yield from _in_own_thread(lambda: _collect(make))
        return
    loop = _runner()
    handoff: asyncio.Queue[tuple[str, Any]] | None = None
    ready = threading.Event()
    finished = threading.Event()

    async def pump() -> None:
        nonlocal handoff
        handoff = asyncio.Queue(maxsize=1)
        ready.set()
        try:
            async for item in make():
                await handoff.put(("item", item))
        except BaseException as exc:  # handed to the reader, who raises it
            if not isinstance(exc, asyncio.CancelledError):
                await handoff.put(("error", exc))
            raise
        else:
            await handoff.put(("done", None))
        finally:
            finished.set()

    task = asyncio.run_coroutine_threadsafe(pump(), loop)
    ready.wait()
    assert handoff is not None
    queue = handoff
    waiting: concurrent.futures.Future[tuple[str, Any]] | None = None
    try:
        while True:
            waiting = asyncio.run_coroutine_threadsafe(queue.get(), loop)
            kind, value = waiting.result()
            if kind == "item":
                yield value
            elif kind == "error":
                raise value
            else:
                return
    finally:
        if waiting is not None and not waiting.done():
            waiting.cancel()  # the reader left mid-wait (Ctrl-C): nothing waits for it
        if not finished.is_set():
            task.cancel()
            finished.wait(_CANCEL_WAIT_S)


async def _collect(make: Callable[[], AsyncIterator[T]]) -> list[T]:
    return [item async for item in make()]


def sync_method(
    method: Callable[Concatenate[S, P], Awaitable[T]],
) -> Callable[Concatenate[S, P], T]:
    """The sync twin of an async method: same arguments, run to completion by `run_sync`.

    Example:
        >>> class Clock:
        ...     async def anow(self, plus: int = 0) -> int:
        ...         return 41 + plus
        ...     now = sync_method(anow)
        >>> Clock().now(plus=1)
        42
    """

    @functools.wraps(method)
    def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(lambda: method(self, *args, **kwargs))

    _named(call, method)
    call.__doc__ = (
        f"`{method.__name__}` from sync code (a script, a thread, a notebook cell).\n\n"
        + (method.__doc__ or "")
    )
    return call


def sync_iterator(
    method: Callable[Concatenate[S, P], AsyncIterator[T]],
) -> Callable[Concatenate[S, P], Iterator[T]]:
    """The sync twin of a method returning an async iterator, iterated by `iterate_sync`.

    Nothing runs until the first item is asked for; leaving the loop early stops the
    async iterator (a run stops at its last checkpoint).
    """

    @functools.wraps(method)
    def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        return iterate_sync(lambda: method(self, *args, **kwargs))

    _named(call, method)
    call.__doc__ = f"`{method.__name__}` from sync code; iterate it with a plain `for`.\n\n" + (
        method.__doc__ or ""
    )
    return call


def _named(twin: Callable[..., Any], method: Callable[..., Any]) -> None:
    """Name the sync twin as its async method without the leading "a" (`arun` → `run`)."""
    name = method.__name__[1:] if method.__name__.startswith("a") else method.__name__
    owner = method.__qualname__.rpartition(".")[0]
    twin.__name__ = name
    twin.__qualname__ = f"{owner}.{name}" if owner else name
