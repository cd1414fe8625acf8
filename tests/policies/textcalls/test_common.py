"""What every format shares: a flood of calls in one reply is feedback, not a round."""

from __future__ import annotations

import json

from thinkgraph.policies.react_text import parse
from thinkgraph.policies.textcalls._common import MAX_CALLS


def _calls(count: int) -> str:
    one = {"name": "add", "arguments": {"a": 1, "b": 2}}
    return json.dumps([one] * count)


def test_a_round_of_calls_up_to_the_cap_is_made() -> None:
    decision = parse(_calls(MAX_CALLS))
    assert decision.kind == "tool_calls"
    assert [c.name for c in decision.tool_calls] == ["add"] * MAX_CALLS


def test_more_calls_than_the_cap_in_one_reply_are_feedback_naming_the_cap() -> None:
    decision = parse(_calls(3000))
    assert decision.kind == "error" and not decision.tool_calls
    assert decision.error is not None
    assert "more than" in decision.error and f"at most {MAX_CALLS}" in decision.error
