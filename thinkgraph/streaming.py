"""Streaming a run: typed events as nodes start and as their checkpoints are written.

`Agent.events` / `Agent.resume_events` yield, in order:

- one `RunStart` (the run's limits and counters so far);
- a `NodeStart` when a node begins (parallel act tasks each get one);
- a `StepEvent` for every chain step, once the node that wrote it has saved its writes,
  numbered as in the stored chain;
- one `RunEnd` with the run's `RunResult` (done, failed, paused or still running).

`Agent.stream` and friends keep only the steps. Each has an async twin (`Agent.aevents`,
`astream`, …): the sync ones run it on thinkgraph's loop thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from thinkgraph.state import BaseStep, Counters, numbered
from thinkgraph.types import StepLimits

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph.state import CompiledStateGraph

    from thinkgraph.result import RunResult
    from thinkgraph.types import Breakpoints

__all__ = [
    "NodeStart",
    "RunEnd",
    "RunEvent",
    "RunStart",
    "StepEvent",
    "asteps_of",
    "graph_events",
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


async def graph_events(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    graph_input: Any,
    config: RunnableConfig,
    *,
    thread_id: str,
    first_number: int | None,
    counters: Counters,
    breakpoints: Breakpoints,
) -> AsyncIterator[NodeStart | StepEvent]:
    """Run the graph, yielding node starts and written steps.

    Args:
        graph: the compiled graph, with its checkpointer.
        graph_input: the input, a `Command(resume=...)`, or None to continue.
        config: the run's config (thread id, recursion limit).
        thread_id: the run's thread id, copied into every event.
        first_number: the chain's length before this call, or None when not at hand. It
            numbers the steps of a user's node that did not number them (see
            `thinkgraph.state.number_steps`); without it the first such step is looked up
            in the stored chain.
        counters: the totals before this call.
        breakpoints: where to pause.
    """
    stream = graph.astream(
        graph_input,
        config,
        stream_mode=["updates", "tasks"],
        durability="sync",
        interrupt_before=list(breakpoints.before) or None,
        interrupt_after=list(breakpoints.after) or None,
    )
    # With a list of modes LangGraph yields (mode, chunk) pairs.
    chunks = cast(AsyncIterator[tuple[str, Any]], stream)
    number = first_number
    async for mode, chunk in chunks:
        if mode == "tasks":
            if "input" in chunk:  # a task starting; its result comes as an update
                yield NodeStart(thread_id, str(chunk["name"]), counters)
            continue
        for name, values in chunk.items():
            if not isinstance(values, dict):
                continue  # an interrupt, or metadata of a replayed write
            if isinstance(values.get("counters"), Counters):
                counters = values["counters"]
            for step in values.get("chain", ()):
                # Our nodes number their steps as the store will (parallel act tasks may
                # finish in any order); a node of a user's that did not is numbered here.
                if step.number < 0:
                    if number is None:
                        number = await _stored_number(graph, config, step)
                    step = numbered(step, number)
                number = step.number + 1 if number is None else max(number, step.number + 1)
                yield StepEvent(thread_id, str(values.get("node") or name), step, counters)


async def _stored_number(
    graph: CompiledStateGraph[Any, Any, Any, Any], config: RunnableConfig, step: BaseStep
) -> int:
    """`step`'s number in the stored chain (its node has saved it), read once per stream."""
    chain = (await graph.aget_state(config)).values.get("chain", ())
    return next((s.number for s in reversed(chain) if s.id == step.id), len(chain))


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
