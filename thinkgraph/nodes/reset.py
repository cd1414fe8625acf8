"""reset: start the reasoning over, keeping a short lesson."""

from __future__ import annotations

from typing import Any

from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState, Counters, ResetStep, ThoughtStep, ValidationStep
from thinkgraph.types import NextAction

__all__ = ["reset"]


def _lesson(state: AgentState) -> str:
    for step in reversed(state["chain"]):
        if isinstance(step, ValidationStep) and not step.passed:
            reasons = "; ".join(v.reason for v in step.verdicts if not v.passed and v.reason)
            return f"the answer {step.answer!r} was rejected: {reasons}"
        if isinstance(step, ThoughtStep):
            return step.text
    return ""


async def reset(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """Mark a reset point; the next projection starts after it, with the lesson."""
    counters = state.get("counters") or Counters()
    return {
        "chain": [ResetStep(lesson=_lesson(state))],
        "counters": counters.model_copy(
            update={"resets": counters.resets + 1, "consecutive_failures": 0}
        ),
        "candidate": None,
        "pending_calls": [],
        "next_action": NextAction.CONTINUE,
    }
