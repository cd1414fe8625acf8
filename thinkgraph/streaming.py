"""The typed events of a streamed run, where `Agent.events` users import them from.

They live in `thinkgraph.runs.events`; this module keeps the spelling users wrote against.
"""

from thinkgraph.runs.events import (
    NodeStart,
    RunEnd,
    RunEvent,
    RunStart,
    StepEvent,
    asteps_of,
    steps_of,
)

__all__ = ["NodeStart", "RunEnd", "RunEvent", "RunStart", "StepEvent", "asteps_of", "steps_of"]
