"""Guards: which limit stops a run, decided in one place.

Every router asks these functions (by composition: the route table adds the guard routes
to each node's own), and finalize asks `guard_stop` again to record why it was reached, so
the recorded stop reason never disagrees with the route that was taken. They read only the
counters and the limits, so each guard is testable at its exact boundary.

The guard labels are the words a route carries in the route table and on the diagram:

- ``"failures"``: consecutive failures reached the limit and a person is asked
  (``failure_policy="ask_human"``);
- ``"abort"``: consecutive failures reached the limit and the run stops;
- ``"budget"``: the time, cost or token budget is spent;
- ``"max_steps"``: no think step is left.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from thinkgraph.state import Counters
from thinkgraph.types import StepLimits, StopReason

__all__ = [
    "ABORT",
    "BUDGET",
    "FAILURES",
    "GUARD_LABELS",
    "MAX_STEPS",
    "GuardLabel",
    "budget_stop",
    "failure_target",
    "guard_label",
    "guard_stop",
]

GuardLabel: TypeAlias = Literal["failures", "abort", "budget", "max_steps"]

FAILURES: Final = "failures"
ABORT: Final = "abort"
BUDGET: Final = "budget"
MAX_STEPS: Final = "max_steps"
GUARD_LABELS: Final[tuple[GuardLabel, ...]] = ("failures", "abort", "budget", "max_steps")
"""Every guard label, in the order the guards are checked."""


def budget_stop(counters: Counters, limits: StepLimits) -> StopReason | None:
    """The budget guard that has tripped, if any: timeout, cost or tokens."""
    if limits.timeout_s is not None and counters.elapsed_s >= limits.timeout_s:
        return "timeout"
    if limits.max_cost_usd is not None and counters.cost_usd >= limits.max_cost_usd:
        return "max_cost"
    if limits.max_tokens is not None and counters.tokens >= limits.max_tokens:
        return "max_tokens"
    return None


def guard_stop(counters: Counters, limits: StepLimits) -> StopReason | None:
    """The guard that stops the run, if any: failures (abort), budgets, then max_steps."""
    if (
        counters.consecutive_failures >= limits.max_consecutive_failures
        and limits.failure_policy == "abort"
    ):
        return "consecutive_failures"
    budget = budget_stop(counters, limits)
    if budget is not None:
        return budget
    if counters.steps >= limits.max_steps:
        return "max_steps"
    return None


def failure_target(
    counters: Counters, limits: StepLimits
) -> Literal["ask_human", "finalize"] | None:
    """ask_human or finalize when consecutive failures reached the limit, else None."""
    if counters.consecutive_failures < limits.max_consecutive_failures:
        return None
    return "ask_human" if limits.failure_policy == "ask_human" else "finalize"


def guard_label(counters: Counters, limits: StepLimits, *, steps: bool = True) -> GuardLabel | None:
    """The label of the guard that has tripped, in guard order, or None.

    Args:
        counters: the run's counters.
        limits: the run's limits.
        steps: whether `max_steps` applies; the route after a tool round leaves it out,
            because the think that reads the round's results is always within the limit.
    """
    if counters.consecutive_failures >= limits.max_consecutive_failures:
        return FAILURES if limits.failure_policy == "ask_human" else ABORT
    if budget_stop(counters, limits) is not None:
        return BUDGET
    if steps and counters.steps >= limits.max_steps:
        return MAX_STEPS
    return None
