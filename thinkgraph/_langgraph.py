"""Every use of LangGraph's private parts, in one place, checked against one version range.

thinkgraph leans on a few names LangGraph does not export. They live here so an upgrade
that moves them fails in one module, loudly, with what to check (see
tests/test_langgraph_internals.py), instead of somewhere deep in a run:

- `DeltaSnapshot` (``langgraph.checkpoint.serde.types._DeltaSnapshot``): how a
  `DeltaChannel` marks a full copy of its value in a checkpoint; the stores find, write
  and pack them.
- the serializer's ext hook (``JsonPlusSerializer(__unpack_ext_hook__=...)`` and its
  ``_unpack_ext_hook``): how stored records are revived, for the fast path of our own.
- ``PostgresSaver._cursor`` and ``SqliteSaver._has_task_path``: the savers' connection
  and table layout, for the stores' extra queries.
- ``PostgresSaver.lock``: `_cursor` takes it around every cursor, on a pool too, where
  each cursor has a connection of its own; a pooled store gives it one that excludes no
  one (`share_pooled_cursor`), so its connections serve calls side by side.
- ``RunnableCallable``: how LangGraph builds a node with a sync and an async body.
- ``ERROR`` (``langgraph._internal._constants``): the channel a failed task's error is
  stored under among a checkpoint's pending writes; a resume finds a failed route by it.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any

from langgraph._internal._constants import ERROR as ERROR_CHANNEL
from langgraph._internal._runnable import RunnableCallable
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot as DeltaSnapshot

from thinkgraph._sync import run_sync

__all__ = [
    "ERROR_CHANNEL",
    "LANGGRAPH_TESTED",
    "DeltaSnapshot",
    "DualNode",
    "ext_hook_of",
    "postgres_cursor",
    "serializer_with_hook",
    "share_pooled_cursor",
    "sqlite_has_task_path",
]

LANGGRAPH_TESTED = (">=1.2.20", "<1.3")
"""The LangGraph versions these uses were checked against (the dependency's pin)."""


def ext_hook_of(serializer: JsonPlusSerializer) -> Callable[[int, bytes], Any]:
    """LangGraph's own msgpack ext hook of `serializer` (revives any allowed type)."""
    hook: Callable[[int, bytes], Any] = serializer._unpack_ext_hook
    return hook


def serializer_with_hook(
    cls: type[JsonPlusSerializer], hook: Callable[[int, bytes], Any], **kwargs: Any
) -> JsonPlusSerializer:
    """A serializer of `cls` that revives stored ext values with `hook`."""
    return cls(**kwargs, __unpack_ext_hook__=hook)


def postgres_cursor(saver: Any) -> AbstractContextManager[Any]:
    """A dict-row cursor of a PostgresSaver (on a pool: on a connection of its own, held
    for the block), under its lock (its own context manager)."""
    cursor: AbstractContextManager[Any] = saver._cursor()
    return cursor


class _NoExclusion:
    """A lock that every thread holds at once (for a saver whose cursors do not share)."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return True

    def release(self) -> None:
        """Nothing to release."""

    def __enter__(self) -> bool:
        return True

    def __exit__(self, *exc: object) -> None:
        return None


def share_pooled_cursor(saver: Any) -> None:
    """Let a PostgresSaver whose `conn` is a pool serve calls from several threads at once.

    Its `_cursor` holds `saver.lock` while a cursor is open, whatever its `conn`: right
    for one connection (used by one thread at a time), but on a pool, where each cursor
    takes a connection of its own, it makes the pool serve one call at a time.
    """
    saver.lock = _NoExclusion()


def sqlite_has_task_path(saver: Any) -> bool:
    """Whether a SqliteSaver's `writes` table has the `task_path` column."""
    return bool(saver._has_task_path)


class DualNode(RunnableCallable):
    """An async node that LangGraph can also run from ``invoke`` and ``stream``.

    The async function is the node's one implementation; from sync code LangGraph calls a
    wrapper that runs it on thinkgraph's loop thread (`thinkgraph._sync`), with the
    caller's context, so `interrupt` and the run's config work the same. Built as
    LangGraph builds its own nodes (`RunnableCallable`, not traced as a separate run).
    """

    def __init__(self, name: str, afunc: Callable[..., Awaitable[Any]]) -> None:
        @functools.wraps(afunc)  # the same signature: LangGraph injects `config` by it
        def func(*args: Any, **kwargs: Any) -> Any:
            return run_sync(lambda: afunc(*args, **kwargs))

        super().__init__(func, afunc, name=name, trace=False)
