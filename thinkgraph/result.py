"""RunResult: where a run stands, as `Agent.run`, `resume` and `result` return it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, TypeAdapter, field_validator

from thinkgraph.hitl import Pending
from thinkgraph.state import BaseStep, Counters, Step
from thinkgraph.types import RunStatus, StopReason

__all__ = ["RunResult"]

_STEP: TypeAdapter[BaseStep] = TypeAdapter(Step)  # type: ignore[arg-type]


class RunResult(BaseModel):
    """Where a run stands: its status, its answer and its whole chain.

    It round-trips through JSON: ``RunResult.model_validate_json(r.model_dump_json())``
    gives back every step with its own type and fields.
    """

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
    chain: list[SerializeAsAny[BaseStep]] = Field(default_factory=list)
    """Every step of the run (dumped with all of its own fields, whatever its type)."""
    pending: list[Pending] = Field(default_factory=list)
    """What a paused run waits for: one entry per call to approve, or the question."""
    counters: Counters = Field(default_factory=Counters)
    """Steps, tokens, cost and time so far."""
    output: Any = None
    """The structured answer: the object an `output_schema` validator parsed, else None."""

    @field_validator("chain", mode="before")
    @classmethod
    def _typed_steps(cls, value: Any) -> Any:
        # Steps read back from JSON are dicts: their `type` picks the class to revive.
        if isinstance(value, list):
            return [_STEP.validate_python(v) if isinstance(v, dict) else v for v in value]
        return value
