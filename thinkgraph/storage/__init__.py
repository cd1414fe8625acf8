"""Checkpoint stores."""

from thinkgraph.storage.checkpointers import (
    DEFAULT_STORE,
    close_checkpointer,
    is_postgres_url,
    open_checkpointer,
    serializer,
    sqlite_path,
)
from thinkgraph.storage.lease import ThreadLeases, athread_lease, thread_lease
from thinkgraph.storage.threads import RunSummary, list_threads

__all__ = [
    "DEFAULT_STORE",
    "RunSummary",
    "ThreadLeases",
    "athread_lease",
    "close_checkpointer",
    "is_postgres_url",
    "list_threads",
    "open_checkpointer",
    "serializer",
    "sqlite_path",
    "thread_lease",
]
