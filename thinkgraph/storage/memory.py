"""The in-process store (memory://): LangGraph's InMemorySaver with the store contract.

It knows and lists its threads from its dictionaries (`KnowsThreads`, `ListsThreads`).
It is lost at exit, so a paused run in it is resumed, if at all, by this process: it
keeps nothing for a later resume (not `KeepsPausedRuns`), and its leases are this
process's.
"""

from __future__ import annotations

from langgraph.checkpoint.memory import InMemorySaver

from thinkgraph.storage.contract import memory_thread_ids

__all__ = ["MemoryStore"]


class MemoryStore(InMemorySaver):
    """InMemorySaver that knows and lists its threads."""

    def has_thread(self, thread_id: str) -> bool:
        """Whether the store holds any checkpoint of `thread_id` (root namespace)."""
        by_ns = self.storage.get(str(thread_id))
        return bool(by_ns and by_ns.get(""))

    async def ahas_thread(self, thread_id: str) -> bool:
        """`has_thread` for async code: a look-up in a dictionary, done on the loop."""
        return self.has_thread(thread_id)

    def list_thread_ids(self) -> list[str]:
        """The thread ids (root namespace), the most recently updated first."""
        return memory_thread_ids(self)
