"""ToolOutput and add_tool_usage: what a tool records beside the value the model sees."""

from __future__ import annotations

from typing import Any

from thinkgraph.state import Counters, ToolCall, ToolResultStep
from thinkgraph.tools import ToolContext, ToolOutput, ToolRegistry, execute_call, tool
from thinkgraph.tools.output import add_tool_usage

CTX = ToolContext.for_call("thread-1", 2, "call-1")


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


# -- ToolOutput ------------------------------------------------------------------------------


def test_a_tool_output_puts_its_extras_in_the_step_and_its_value_in_output() -> None:
    @tool
    def delegated() -> Any:
        """Return a value with usage and a child chain."""
        return ToolOutput(
            {"answer": 7},
            usage={"prompt_tokens": 3, "completion_tokens": 1, "cost_usd": None},
            child_thread_id="child",
            child_chain=[{"type": "task", "text": "x"}],
        )

    result = execute_call(ToolRegistry([delegated]), ToolCall(name="delegated"), CTX)
    assert (result.ok, result.output, result.child_thread_id) == (True, {"answer": 7}, "child")
    assert result.usage == {"prompt_tokens": 3, "completion_tokens": 1, "cost_usd": None}
    assert result.child_chain == [{"type": "task", "text": "x"}]


def test_a_plain_output_has_no_extras() -> None:
    @tool
    def add(a: int) -> int:
        """Add one."""
        return a + 1

    result = execute_call(ToolRegistry([add]), ToolCall(name="add", args={"a": 1}), CTX)
    assert (result.usage, result.child_thread_id, result.child_chain, result.cached) == (
        None,
        None,
        None,
        False,
    )
