"""Reading a stored run: its status, what it waits for, its checkpoints.

LangGraph's `StateSnapshot` says which nodes come next and which interrupts are open; this
module turns that into thinkgraph's words: running, paused (and for what), done, failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import StateSnapshot
from pydantic import BaseModel, ConfigDict

from thinkgraph.hitl import Pending
from thinkgraph.state import Counters, RunInfo
from thinkgraph.types import Breakpoints, RunStatus

__all__ = [
    "CheckpointInfo",
    "breakpoint_pause",
    "checkpoints",
    "pending_of",
    "status_of",
]


class CheckpointInfo(BaseModel):
    """One checkpoint of a run, as `Agent.history` lists it."""

    model_config = ConfigDict(frozen=True)

    checkpoint_id: str
    """Pass it to `Agent.fork` to start a new thread from here."""
    node: str
    """The node whose completion wrote this checkpoint ("start" for the task input)."""
    step: int
    """Think steps taken at this point."""
    at: datetime | None
    """When the checkpoint was written."""


def breakpoint_pause(snapshot: StateSnapshot) -> Pending | None:
    """The breakpoint a run stands at, if it was stopped by one.

    A static breakpoint leaves no interrupt in the snapshot; it is recognised by the run's
    stored breakpoints: the next node is a "before" one, or the last node an "after" one.
    """
    if not snapshot.next:
        return None
    values = snapshot.values
    points = values.get("breakpoints")
    if not isinstance(points, Breakpoints):
        return None
    step = (values.get("counters") or Counters()).steps
    # "after X" and "before Y" can name one boundary; LangGraph stops there once, and the
    # node that just ran is the more telling name for it.
    last = values.get("node")
    if isinstance(last, str) and last in points.after:
        return Pending(kind="breakpoint", node=last, when="after", step=step)
    for name in snapshot.next:
        if name in points.before:
            return Pending(kind="breakpoint", node=name, when="before", step=step)
    return None


def pending_of(snapshot: StateSnapshot) -> list[Pending]:
    """What a stored run waits for: approvals, an ask_human question, or a breakpoint."""
    pending: list[Pending] = []
    for item in snapshot.interrupts:
        value = item.value if isinstance(item.value, dict) else {"question": str(item.value)}
        if value.get("kind") == "approval":
            pending.extend(Pending.model_validate(r) for r in value.get("requests", []))
        else:
            details = {k: v for k, v in value.items() if k not in ("kind", "question")}
            pending.append(
                Pending(
                    kind="ask_human",
                    question=str(value.get("question", "")),
                    step=(snapshot.values.get("counters") or Counters()).steps,
                    details=details,
                )
            )
    if not pending:
        stop = breakpoint_pause(snapshot)
        if stop is not None:
            pending.append(stop)
    return pending


def status_of(snapshot: StateSnapshot) -> RunStatus:
    """running (not finished, e.g. its process died), paused, done or failed."""
    run = snapshot.values.get("run")
    if isinstance(run, RunInfo):
        return run.status
    if snapshot.interrupts or breakpoint_pause(snapshot) is not None:
        return "paused"
    return "running"


def checkpoints(saver: BaseCheckpointSaver[Any], thread_id: str) -> Iterator[CheckpointInfo]:
    """The checkpoints of a thread, newest first, read without rebuilding the chain."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for item in saver.list(config):
        values = item.checkpoint.get("channel_values", {})
        counters = values.get("counters")
        ts = item.checkpoint.get("ts")
        yield CheckpointInfo(
            checkpoint_id=item.checkpoint["id"],
            node=str(values.get("node") or "start"),
            step=counters.steps if isinstance(counters, Counters) else 0,
            at=datetime.fromisoformat(ts) if isinstance(ts, str) else None,
        )
