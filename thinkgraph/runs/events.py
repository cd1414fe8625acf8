"""The events of a run: typed records as nodes start and as their checkpoints are written.

The run driver (`thinkgraph.runs.driver`) yields them; `Agent.events` /
`Agent.resume_events` hand them on, in order:

- one `RunStart` (the run's limits and counters so far);
- a `NodeStart` when a node begins (parallel act tasks each get one);
- a `StepEvent` for every chain step, once the node that wrote it has saved its writes,
  numbered as in the stored chain;
- one `RunEnd` with the run's `RunResult` (done, failed, paused or still running).

`Agent.stream` and friends keep only the steps (`steps_of`); `Agent.run` and friends keep
only the result (`outcome`). The sync forms run the async ones on thinkgraph's loop thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, TypeAlias

from thinkgraph.result import RunResult
from thinkgraph.state import BaseStep, Counters
from thinkgraph.types import StepLimits

__all__ = [
    "NodeStart",
    "RunEnd",
    "RunEvent",
    "RunStart",
    "StepEvent",
    "asteps_of",
    "outcome",
    "steps_of",
]

# Events are in-process records around pydantic ones (steps, counters, the result): they
# are never stored, so plain frozen dataclasses, with no validation per step.


@dataclass(frozen=True, slots=True)
class RunStart:
    """The run begins (or resumes) in this process."""

    thread_id: str
    limits: StepLimits
    """The run's guards, e.g. ``max_steps`` for "step n of max"."""
    counters: Counters
    """Totals so far: zero for a new run, the stored ones for a resume."""
    resumed: bool = False
    event: Literal["start"] = "start"


@dataclass(frozen=True, slots=True)
class NodeStart:
    """A node begins to run."""

    thread_id: str
    node: str
    counters: Counters
    """Totals before the node runs."""
    event: Literal["node"] = "node"


@dataclass(frozen=True, slots=True)
class StepEvent:
    """A chain step, written: the node that wrote it has saved its writes."""

    thread_id: str
    node: str
    """The node that wrote the step ("start" for the task)."""
    step: BaseStep
    """The step, with its number in the stored chain."""
    counters: Counters
    """Totals after the node that wrote the step."""
    event: Literal["step"] = "step"


@dataclass(frozen=True, slots=True)
class RunEnd:
    """The run stopped in this process: finished, failed, paused or interrupted."""

    result: RunResult
    event: Literal["end"] = "end"


RunEvent: TypeAlias = RunStart | NodeStart | StepEvent | RunEnd
"""Any event of a streamed run; tell them apart with `isinstance` or `.event`."""


def steps_of(events: Iterable[RunEvent]) -> Iterator[BaseStep]:
    """Only the chain steps of a stream of events."""
    for event in events:
        if isinstance(event, StepEvent):
            yield event.step


async def asteps_of(events: AsyncIterable[RunEvent]) -> AsyncIterator[BaseStep]:
    """Only the chain steps of an async stream of events."""
    async for event in events:
        if isinstance(event, StepEvent):
            yield event.step


async def outcome(events: AsyncIterable[RunEvent]) -> RunResult:
    """The result a stream of events ends with: the fold `Agent.arun` and friends are.

    The stream is read to its end, not only to its `RunEnd`: the driver lets go of the
    thread after it, and a run must have let go when its result is returned.
    """
    result: RunResult | None = None
    async for event in events:
        if isinstance(event, RunEnd):
            result = event.result
    if result is None:
        raise RuntimeError("the run's events ended without a RunEnd")  # a bug of the driver
    return result
