"""add_tool_usage: model usage inside tools spends the run's token and cost budget."""

from __future__ import annotations

from typing import Any

from thinkgraph.state import Counters, ToolResultStep
from thinkgraph.tools.output import add_tool_usage


def result(usage: dict[str, Any] | None) -> ToolResultStep:
    return ToolResultStep(call_id="c", tool="llm", ok=True, usage=usage)


def test_tokens_and_known_costs_are_added() -> None:
    start = Counters(prompt_tokens=10, completion_tokens=1, cost_usd=0.5, model_calls=2)
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "cost_usd": 0.25, "model_calls": 3}
    after = add_tool_usage(start, [result(usage), result(None), None])
    assert (after.prompt_tokens, after.completion_tokens) == (15, 3)
    assert (after.cost_usd, after.cost_known) == (0.75, True)
    assert after.model_calls == 2  # the agent's own turns only: replay models index by it


def test_an_unknown_cost_makes_the_total_unknown_and_no_usage_changes_nothing() -> None:
    start = Counters()
    assert add_tool_usage(start, [result(None)]) is start
    after = add_tool_usage(start, [result({"prompt_tokens": 1, "cost_usd": None})])
    assert (after.prompt_tokens, after.cost_known) == (1, False)
