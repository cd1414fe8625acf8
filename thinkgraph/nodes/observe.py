"""observe: fold the tool results into what the model will see next."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from thinkgraph.nodes.deps import Deps
from thinkgraph.state import (
    AgentState,
    BaseStep,
    Counters,
    ObservationStep,
    ThoughtStep,
    ToolCall,
    ToolResultStep,
)
from thinkgraph.tools.output import add_tool_usage

__all__ = ["observe", "render_output"]


def render_output(output: Any) -> str:
    """A tool's output as text for the model: strings as they are, the rest as JSON."""
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(output)


def _shorten(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    keep = max(limit - 80, 0)
    return (
        f"{text[:keep]}\n… [{len(text) - keep} more characters not shown; the output as "
        "stored (within the tools' result bounds) is kept in the run's chain]",
        True,
    )


def _results_for(chain: Sequence[BaseStep], calls: Sequence[ToolCall]) -> dict[str, ToolResultStep]:
    # The results of this round are at the tail, after the thought that proposed the calls.
    wanted = {c.id for c in calls}
    found: dict[str, ToolResultStep] = {}
    for step in reversed(chain):
        if isinstance(step, ToolResultStep) and step.call_id in wanted:
            found.setdefault(step.call_id, step)
            if len(found) == len(wanted):
                break
        elif isinstance(step, ThoughtStep):
            break
    return found


async def observe(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """Write one observation per call, update the failure counter, clear pending calls.

    act and observe are separate nodes so that a crash after a tool returned never re-runs
    the tool: its result is already in the checkpoint when observe starts.
    """
    started = time.perf_counter()
    calls = state.get("pending_calls") or []
    results = _results_for(state["chain"], calls)
    steps: list[BaseStep] = []
    any_ok = False
    any_failed = False
    slowest = 0.0
    for call in calls:
        result = results.get(call.id)
        if result is None:
            # Only reachable if act's write was lost, which durable checkpoints rule out;
            # say so to the model rather than pretending the call ran.
            text, is_error, cut = "the call did not run; try again", True, False
            any_failed = True
        elif result.ok:
            text, cut = _shorten(render_output(result.output), deps.max_observation_chars)
            is_error = False
            any_ok = True
        else:
            text, cut = _shorten(result.error or "the call failed", deps.max_observation_chars)
            is_error = True
            # A person's rejection is a decision, not the model failing.
            any_failed = any_failed or result.error_kind != "rejected"
        if result is not None:
            slowest = max(slowest, result.duration_s)
        steps.append(
            ObservationStep(
                call_id=call.id,
                tool=call.name,
                text=text,
                is_error=is_error,
                truncated=cut,
            )
        )
    counters = state.get("counters") or Counters()
    failures = counters.consecutive_failures
    if any_ok:
        failures = 0
    elif any_failed:
        failures += 1
    counters = counters.model_copy(
        update={
            "consecutive_failures": failures,
            "elapsed_s": counters.elapsed_s + slowest + (time.perf_counter() - started),
        }
    )
    # Model calls inside tools (llm_tool, sub-agents) spend the run's token and cost budget.
    counters = add_tool_usage(counters, results.values())
    return {"chain": steps, "counters": counters, "pending_calls": [], "run_calls": []}
