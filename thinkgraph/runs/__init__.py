"""Runs: the one async driver (start, resume, fork, events) and reading runs from a store.

- `thinkgraph.runs.driver`: `Driver`, how a run is advanced, written once and async.
- `thinkgraph.runs.reader`: `RunReader`, a run's status, result, history and what it
  waits for, from a store and a graph.
- `thinkgraph.runs.events`: the typed events a run yields.
- `thinkgraph.runs.forks`: what a fork may edit.
- `thinkgraph.runs.lineage`: where a fork or a replay records its source, found by query.

`thinkgraph.Agent` is the facade over these.
"""

from typing import TYPE_CHECKING

from thinkgraph._lazy import lazy_names

if TYPE_CHECKING:
    from thinkgraph.runs.driver import Driver
    from thinkgraph.runs.events import NodeStart, RunEnd, RunEvent, RunStart, StepEvent, outcome
    from thinkgraph.runs.reader import CheckpointInfo, RunReader

__all__ = [
    # reading runs
    "CheckpointInfo",
    # driving runs
    "Driver",
    # the events of a run
    "NodeStart",
    "RunEnd",
    "RunEvent",
    "RunReader",
    "RunStart",
    "StepEvent",
    "outcome",
]

# Loaded on first use: a reader of events (the CLI's progress line) needs no driver, and
# the driver pulls in LangGraph's graph.
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "thinkgraph.runs.driver": ["Driver"],
        "thinkgraph.runs.events": [
            "NodeStart",
            "RunEnd",
            "RunEvent",
            "RunStart",
            "StepEvent",
            "outcome",
        ],
        "thinkgraph.runs.reader": ["CheckpointInfo", "RunReader"],
    },
)
