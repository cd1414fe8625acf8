"""Checkpoint stores."""

from thinkgraph.storage.checkpointers import (
    DEFAULT_STORE,
    close_checkpointer,
    open_checkpointer,
    serializer,
)

__all__ = ["DEFAULT_STORE", "close_checkpointer", "open_checkpointer", "serializer"]
