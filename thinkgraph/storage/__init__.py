"""Checkpoint stores: LangGraph savers opened from a URL, and the store contract
(`Store`, `RunStore`) that says what thinkgraph needs of them beyond LangGraph's."""

from thinkgraph.storage.checkpointers import (
    DEFAULT_STORE,
    close_checkpointer,
    is_postgres_url,
    open_checkpointer,
    serializer,
    sqlite_path,
)
from thinkgraph.storage.contract import RunStore, Store
from thinkgraph.storage.lease import ThreadLeases, athread_lease, thread_lease
from thinkgraph.storage.prune import PruneReport, Retention, RunPruned, prune
from thinkgraph.storage.threads import RunSummary, list_threads

__all__ = [
    "DEFAULT_STORE",
    "PruneReport",
    "Retention",
    "RunPruned",
    "RunStore",
    "RunSummary",
    "Store",
    "ThreadLeases",
    "athread_lease",
    "close_checkpointer",
    "is_postgres_url",
    "list_threads",
    "open_checkpointer",
    "prune",
    "serializer",
    "sqlite_path",
    "thread_lease",
]
