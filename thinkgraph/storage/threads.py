"""Listing the runs in a store: which threads it holds, and one summary line per run.

LangGraph's savers can list the checkpoints of one thread but have no "which threads are
there" query. Walking every checkpoint to find out would read the whole store, so each
backend gets its own cheap query: one row per thread, newest first.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import StateSnapshot
from pydantic import BaseModel, ConfigDict, Field

from thinkgraph.errors import StorageError
from thinkgraph.hitl import Pending
from thinkgraph.state import Counters, RunInfo
from thinkgraph.storage.extras import ListsThreads
from thinkgraph.types import RunStatus, StopReason

__all__ = ["RunSummary", "list_threads", "summarize"]

# Only the root namespace: subgraph checkpoints share the thread id but are not runs.
LATEST_THREADS_SQL = (
    "SELECT thread_id, MAX(checkpoint_id) AS latest FROM checkpoints "
    "WHERE checkpoint_ns = '' GROUP BY thread_id ORDER BY latest DESC"
)
"""The stores' query for `ListsThreads.list_thread_ids` (the same tables in both)."""


class RunSummary(BaseModel):
    """One run as `Agent.runs` and `thinkgraph runs` list it: where it stands, no chain."""

    model_config = ConfigDict(frozen=True)

    thread_id: str
    status: RunStatus
    """running (unfinished, e.g. its process died), paused, done or failed."""
    stop_reason: StopReason | None = None
    """Why a done or failed run stopped."""
    detail: str = ""
    pending: list[Pending] = Field(default_factory=list)
    """What a paused run waits for."""
    steps: int = 0
    """Think steps taken."""
    updated_at: datetime | None = None
    """When the run's latest checkpoint was written."""

    @property
    def waiting_for(self) -> str:
        """What a paused run waits for, in a few words: "approval: send_email"."""
        approvals = [p.tool or "?" for p in self.pending if p.kind == "approval"]
        if approvals:
            return "approval: " + ", ".join(approvals)
        for p in self.pending:
            if p.kind == "breakpoint":
                return f"breakpoint {p.when} {p.node}"
            return p.kind
        return ""


def summarize(
    thread_id: str, snapshot: StateSnapshot, status: RunStatus, pending: list[Pending]
) -> RunSummary:
    """The summary of one run from its latest state snapshot.

    Args:
        thread_id: the run's thread.
        snapshot: its latest state (the chain may be left out: it is not read).
        status: where the run stands, as the reader of runs decides it from `snapshot`.
        pending: what it waits for, likewise.
    """
    values = snapshot.values
    run = values.get("run")
    counters = values.get("counters")
    created = snapshot.created_at
    return RunSummary(
        thread_id=thread_id,
        status=status,
        stop_reason=run.stop_reason if isinstance(run, RunInfo) else None,
        detail=run.detail if isinstance(run, RunInfo) else "",
        pending=pending,
        steps=counters.steps if isinstance(counters, Counters) else 0,
        updated_at=datetime.fromisoformat(created) if created else None,
    )


def list_threads(saver: BaseCheckpointSaver[Any], limit: int | None = None) -> list[str]:
    """The thread ids in a store, the most recently updated first.

    Args:
        saver: a checkpointer from `open_checkpointer` (SQLite, PostgreSQL or memory), or
            any store that implements `ListsThreads`; any other saver is walked checkpoint
            by checkpoint, which is correct but slow.
        limit: at most this many threads.

    Raises:
        StorageError: the store cannot be read.
    """
    try:
        if isinstance(saver, ListsThreads):
            ids = saver.list_thread_ids()
        elif isinstance(saver, InMemorySaver):
            ids = _memory_threads(saver)
        else:
            ids = _walked_threads(saver)
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"cannot list the runs in this store: {exc}") from exc
    return ids[:limit] if limit is not None else ids


def _memory_threads(saver: InMemorySaver) -> list[str]:
    # storage: thread id -> namespace -> checkpoint id -> checkpoint.
    latest = {t: max(by_ns[""]) for t, by_ns in saver.storage.items() if by_ns.get("")}
    return [t for t, _ in sorted(latest.items(), key=lambda kv: kv[1], reverse=True)]


def _walked_threads(saver: BaseCheckpointSaver[Any]) -> list[str]:
    latest: dict[str, str] = {}
    for item in saver.list(None):
        conf = item.config["configurable"]
        if conf.get("checkpoint_ns", "") == "":
            thread = str(conf["thread_id"])
            latest[thread] = max(latest.get(thread, ""), item.checkpoint["id"])
    return [t for t, _ in sorted(latest.items(), key=lambda kv: kv[1], reverse=True)]
