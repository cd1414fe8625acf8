"""`ToolOutput`: a tool's return value plus what belongs in the chain but not the prompt.

Most tools return a plain value and the model is shown all of it. A tool that calls a
model or a sub-agent has more to record (the tokens and cost it spent, the child run's
chain) that must be kept in the chain for audit and cost guards, yet never put in front of
the model. Such a tool returns a `ToolOutput`; the runner unpacks it into the fields of the
`ToolResultStep`, and `observe` shows the model only `value`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypedDict

from thinkgraph.state import Counters, ToolResultStep

__all__ = ["ToolOutput", "ToolUsage", "add_tool_usage"]


class ToolUsage(TypedDict, total=False):
    """Model usage inside one tool call, as stored in `ToolResultStep.usage`."""

    model: str
    """The model that answered, when there was one model."""
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    """Cost in USD; None when unknown (never a made-up 0)."""
    model_calls: int
    """How many model calls the tool made."""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool returns when it has more to record than the value the model sees.

    Example:
        >>> ToolOutput("42", usage={"prompt_tokens": 10, "completion_tokens": 2}).value
        '42'
    """

    value: Any
    """What the model is shown (made JSON-safe like any tool output)."""
    usage: ToolUsage | None = None
    """Tokens and cost spent inside the tool; added to the run's counters by observe."""
    child_thread_id: str | None = None
    """The thread id of a sub-agent run the tool started or resumed."""
    child_chain: list[dict[str, Any]] | None = None
    """That run's chain, one JSON-safe dict per step."""


def add_tool_usage(counters: Counters, results: Iterable[ToolResultStep | None]) -> Counters:
    """The counters with the usage reported by tool results added.

    Model calls made inside tools spend the same budget as the agent's own, so
    `max_tokens` and `max_cost_usd` see them. A cached result reports no usage: serving it
    cost nothing.
    """
    used = [r.usage for r in results if r is not None and r.usage]
    if not used:
        return counters  # the common case: plain tools, nothing to add
    prompt = sum(_tokens(u.get("prompt_tokens")) for u in used)
    completion = sum(_tokens(u.get("completion_tokens")) for u in used)
    costs = [_cost(u.get("cost_usd")) for u in used]
    return counters.model_copy(
        update={
            "prompt_tokens": counters.prompt_tokens + prompt,
            "completion_tokens": counters.completion_tokens + completion,
            "cost_usd": counters.cost_usd + sum(c for c in costs if c is not None),
            "cost_known": counters.cost_known and all(c is not None for c in costs),
        }
    )


# A tool reports its own usage, so what it reports is checked like any value it returns: a
# count that is not one counts as nothing, a cost that is not one as unknown.


def _tokens(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
        return value
    return 0


def _cost(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e12:
        return float(value)
    return None
