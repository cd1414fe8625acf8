"""Listing the runs in a store: which threads it holds, and one summary line per run.

LangGraph's savers can list the checkpoints of one thread but have no "which threads are
there" query. Walking every checkpoint to find out would read the whole store, so each
backend gets its own cheap query (`ListsThreads`, see `thinkgraph.storage.contract`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import StateSnapshot

from thinkgraph.hitl import Pending
from thinkgraph.result import RunSummary
from thinkgraph.state import Counters, RunInfo
from thinkgraph.storage.contract import Store
from thinkgraph.types import RunStatus

__all__ = ["RunSummary", "list_threads", "summarize"]


def summarize(
    thread_id: str,
    snapshot: StateSnapshot,
    status: RunStatus,
    pending: list[Pending],
    graph: str | None = None,
) -> RunSummary:
    """The summary of one run from its latest state snapshot.

    Args:
        thread_id: the run's thread.
        snapshot: its latest state (the chain may be left out: it is not read).
        status: where the run stands, as the reader of runs decides it from `snapshot`.
        pending: what it waits for, likewise.
        graph: the address of the graph it runs on, as it recorded it (None: ours).
    """
    values = snapshot.values
    run = values.get("run")
    counters = values.get("counters")
    created = snapshot.created_at
    counted = counters if isinstance(counters, Counters) else Counters()
    return RunSummary(
        thread_id=thread_id,
        status=status,
        stop_reason=run.stop_reason if isinstance(run, RunInfo) else None,
        detail=run.detail if isinstance(run, RunInfo) else "",
        pending=pending,
        steps=counters.steps if isinstance(counters, Counters) else 0,
        nodes=max(0, int((snapshot.metadata or {}).get("step", 0) or 0)),
        updated_at=datetime.fromisoformat(created) if created else None,
        tokens=counted.tokens,
        cost_usd=counted.cost_usd if counted.cost_known else None,
        graph=graph,
        replay=_replay_outcome(values, run),
    )


def _replay_outcome(values: dict[str, Any], run: Any) -> str | None:
    if isinstance(run, RunInfo) and run.replay is not None:
        return run.replay
    return "stopped" if values.get("replay_of") is not None else None


def list_threads(saver: BaseCheckpointSaver[Any], limit: int | None = None) -> list[str]:
    """The thread ids in a store, the most recently updated first (`Store.thread_ids`).

    Args:
        saver: a checkpointer from `open_checkpointer` (SQLite, PostgreSQL or memory), or
            any store that implements `ListsThreads`; any other saver is walked checkpoint
            by checkpoint, which is correct but slow.
        limit: at most this many threads.

    Raises:
        StorageError: the store cannot be read.
    """
    return Store(saver).thread_ids(limit)
