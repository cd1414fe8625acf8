"""Small shared types: the NextAction vocabulary, step limits and run status words."""

from __future__ import annotations

import unicodedata
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from thinkgraph.errors import ThreadIdError

__all__ = [
    "MAX_THREAD_ID_CHARS",
    "Breakpoints",
    "FailurePolicy",
    "NextAction",
    "RunStatus",
    "StepLimits",
    "StopReason",
    "check_thread_id",
    "thread_id_problem",
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

RunStatus = Literal["queued", "running", "paused", "done", "failed"]
"""Where a run stands. `paused` waits for a person; `done` and `failed` are final;
`queued`: handed to the workers and not taken yet (its job says more: `RunSummary.job`)."""

StopReason = Literal[
    "final_answer",
    "max_steps",
    "timeout",
    "max_cost",
    "max_tokens",
    "consecutive_failures",
    "aborted",
    "model_error",
    "no_answer",
    "recursion_limit",
]
"""Why a run stopped. Every guard has its own word, so a stop is never a mystery
(``no_answer``: a node of a custom graph routed to finalize with no answer and no guard
tripped; ``recursion_limit``: a loop no guard counts, nodes of yours that never pass think,
reached LangGraph's recursion limit; the run's detail names the node either way)."""


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


# -- thread ids -------------------------------------------------------------------------------

MAX_THREAD_ID_CHARS = 256
"""The longest thread id: far more than anyone types, short enough for every store and log."""

_THREAD_ID_RULE = "a thread id is 1 to 256 printable characters, e.g. 'q3-report'"

_UNPRINTABLE = {"Cc", "Cf", "Cs", "Zl", "Zp"}
"""Unicode categories refused in a thread id: control characters (NUL, newline, escape),
format characters (a right-to-left override disguises an id on a terminal), lone
surrogates (no store can write them) and line or paragraph separators."""


def thread_id_problem(thread_id: object) -> str | None:
    """What is wrong with `thread_id` as the name of a run, in one line; None when nothing is.

    The one rule for thread ids, whichever door they come in by; `check_thread_id` raises it.
    """
    if not isinstance(thread_id, str):
        return f"a thread id is a string, not {type(thread_id).__name__}; {_THREAD_ID_RULE}"
    if not thread_id:
        return f"the thread id is empty; {_THREAD_ID_RULE}"
    if len(thread_id) > MAX_THREAD_ID_CHARS:
        start = thread_id[:20]
        return f"the thread id {start!r}… has {len(thread_id)} characters; {_THREAD_ID_RULE}"
    for place, char in enumerate(thread_id):
        if unicodedata.category(char) in _UNPRINTABLE:
            return (
                f"the thread id {thread_id!r} has the control character U+{ord(char):04X} at "
                f"{place}; {_THREAD_ID_RULE}"
            )
    return None


def check_thread_id(thread_id: object) -> str:
    """`thread_id`, once it passes the rule of `thread_id_problem`.

    Called where a thread id enters: every `Agent` method that takes one, the HTTP server,
    the worker queue. The CLI and the worker reach the store through an `Agent`.

    Example:
        >>> check_thread_id("q3-report")
        'q3-report'

    Raises:
        ThreadIdError: naming the rule.
    """
    problem = thread_id_problem(thread_id)
    if problem is not None or not isinstance(thread_id, str):
        raise ThreadIdError(problem)
    return thread_id
