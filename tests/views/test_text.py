"""The text view: one block per step, as terminals and `thinkgraph show` print it."""

from __future__ import annotations

import json

import pytest

from tests.views._runs import TOOLS, expect, login_run
from thinkgraph.state import FinalStep, ThoughtStep, ToolCall, ToolCallStep
from thinkgraph.types import NextAction
from thinkgraph.views import format_step, to_text


@pytest.mark.parametrize("audience", ["developer", "user", "auditor"])
def test_the_text_view_of_a_run_for_each_audience(audience: str) -> None:
    text = to_text(login_run().chain, audience=audience, tools=TOOLS)  # type: ignore[arg-type]
    expect(f"login_run.{audience}.txt", text + "\n")


def test_the_user_sees_a_summary_line_for_a_summarized_tool() -> None:
    text = to_text(login_run().chain, audience="user", tools=TOOLS)
    assert "#8   tool        searched for cats\n" in text


def test_format_step_keeps_its_layout() -> None:
    thought = ThoughtStep(
        number=7, text="line one\nline two", next_action=NextAction.FINAL_ANSWER, answer="42"
    )
    assert format_step(thought) == (
        "#7   thought     line one\n                 line two\n                 → final_answer: 42"
    )
    final = FinalStep(number=12, answer=None, stop_reason="max_steps", forced=True)
    assert format_step(final) == "#12  final       max_steps (forced): —"


def test_a_long_body_is_clipped_to_the_width() -> None:
    step = ThoughtStep(number=0, text="x" * 50)
    assert to_text([step], width=10) == "#0   thought     xxxxxxxxx…"


def test_a_call_with_many_arguments_is_clipped_as_its_whole_json_would_be() -> None:
    # The view writes the arguments only as far as it shows them.
    args = {f"item_{i}": f"value {i}" for i in range(10_000)}
    step = ToolCallStep(number=4, call=ToolCall(name="store", args=args, id="c1"))
    whole = f"store({json.dumps(args, ensure_ascii=False)})  [call c1]"
    assert format_step(step) == f"#4   tool_call   {whole[:399]}…"
    small = ToolCallStep(number=5, call=ToolCall(name="store", args={"a": "é"}, id="c2"))
    assert format_step(small) == '#5   tool_call   store({"a": "é"})  [call c2]'
