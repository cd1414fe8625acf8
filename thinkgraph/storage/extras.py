"""The store's extras as protocols: kept for code written against this module.

They live in `thinkgraph.storage.contract`, the one home of the store contract.
"""

from thinkgraph.storage.contract import KeepsPausedRuns, KnowsThreads, ListsThreads, RunStore

__all__ = ["KeepsPausedRuns", "KnowsThreads", "ListsThreads", "RunStore"]
