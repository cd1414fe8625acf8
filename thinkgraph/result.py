"""RunResult: where a run stands, as `Agent.run`, `resume` and `result` return it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from thinkgraph.hitl import Pending
from thinkgraph.state import BaseStep, Counters
from thinkgraph.types import RunStatus, StopReason

__all__ = ["RunResult"]


class RunResult(BaseModel):
    """Where a run stands: its status, its answer and its whole chain."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    thread_id: str
    """The run's thread id; pass it to `Agent.resume`, `Agent.chain`, the CLI."""
    status: RunStatus
    """running (interrupted, e.g. by a crash), paused (waits for a person), done, failed."""
    answer: str | None = None
    stop_reason: StopReason | None = None
    """Why the run stopped; None while it has not."""
    detail: str = ""
    """More on the stop, e.g. the last error."""
    chain: list[BaseStep] = Field(default_factory=list)
    """Every step of the run."""
    pending: list[Pending] = Field(default_factory=list)
    """What a paused run waits for: one entry per call to approve, or the question."""
    counters: Counters = Field(default_factory=Counters)
    """Steps, tokens, cost and time so far."""
    output: Any = None
    """The structured answer: the object an `output_schema` validator parsed, else None."""
