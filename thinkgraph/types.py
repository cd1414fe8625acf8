"""Small shared types: the NextAction vocabulary, step limits and run status words."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "Breakpoints",
    "FailurePolicy",
    "NextAction",
    "RunStatus",
    "StepLimits",
    "StopReason",
]


class NextAction(StrEnum):
    """What the model asked to do next; the router turns it into an edge."""

    CONTINUE = "continue"
    """Keep reasoning: run the proposed tool calls, or think again."""
    VALIDATE = "validate"
    """Check the candidate answer with the validators before accepting it."""
    FINAL_ANSWER = "final_answer"
    """The candidate answer is final (it is still validated)."""
    RESET = "reset"
    """Start the reasoning over, keeping a short lesson."""


FailurePolicy = Literal["ask_human", "abort"]
"""What happens after `max_consecutive_failures`: pause for a person, or stop the run."""

RunStatus = Literal["running", "paused", "done", "failed"]
"""Where a run stands. `paused` waits for a person; `done` and `failed` are final."""

StopReason = Literal[
    "final_answer",
    "max_steps",
    "timeout",
    "max_cost",
    "max_tokens",
    "consecutive_failures",
    "aborted",
    "model_error",
]
"""Why a run stopped. Every guard has its own word, so a stop is never a mystery."""


class StepLimits(BaseModel):
    """The guards of a run. Stored with the run, so a resumed run keeps its limits.

    Example:
        >>> StepLimits(min_steps=2, max_steps=8, timeout_s=60).max_steps
        8
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_steps: int = Field(default=1, ge=1)
    """A final answer before this many think steps is sent back to think with a nudge."""
    max_steps: int = Field(default=12, ge=1)
    """At most this many think steps; at the limit the run is finalized with a forced answer."""
    max_resets: int = Field(default=2, ge=0)
    """How many times the reasoning may start over."""
    max_consecutive_failures: int = Field(default=3, ge=1)
    """Failures in a row (unparsable replies, failed tool rounds, rejected answers) allowed."""
    failure_policy: FailurePolicy = "abort"
    """After too many failures: `abort` finalizes the run, `ask_human` pauses and asks."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Wall-clock budget across resumes, in seconds; paused time is not counted."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """Budget in US dollars, from the model's reported cost."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Budget in prompt + completion tokens."""

    @model_validator(mode="after")
    def _min_not_above_max(self) -> StepLimits:
        if self.min_steps > self.max_steps:
            raise ValueError(
                f"min_steps ({self.min_steps}) is greater than max_steps ({self.max_steps}); "
                "raise max_steps or lower min_steps"
            )
        return self


class Breakpoints(BaseModel):
    """Node boundaries where a run pauses, for debugging. Stored with the run.

    Example:
        >>> Breakpoints(before=("act",), after=("think",)).before
        ('act',)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    before: tuple[str, ...] = ()
    """Pause before these nodes run."""
    after: tuple[str, ...] = ()
    """Pause after these nodes ran (their checkpoint is written)."""
