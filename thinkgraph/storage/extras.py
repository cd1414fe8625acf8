"""What a store can do beyond LangGraph's saver interface, as small protocols.

thinkgraph's own stores (SQLite and PostgreSQL) implement these; any other saver works
without them, only slower. A store of yours gets the same speed-ups by implementing them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from langchain_core.runnables import RunnableConfig

__all__ = ["KeepsPausedRuns", "KnowsThreads", "ListsThreads"]


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
