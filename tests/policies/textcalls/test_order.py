"""Which format reads a reply that holds markers of several: the one the model wrote in.

A marker quoted inside a ReAct input or answer is text (a coding assistant explaining a
format, a tool input that holds a tag); a call written before a hallucinated ``Final
Answer:`` is the call; harmony's channels and Cohere's ``Action:`` list keep their own
structure.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Call, Expected, Final, check
from thinkgraph.policies.react_text import parse

QUOTED_IN_ANSWERS = [
    '<tool_call>{"name": "x", "arguments": {}}</tool_call>',
    '<function_calls><invoke name="x"></invoke></function_calls>',
    "[TOOL_CALLS]x[ARGS]{}",
    '<|python_tag|>{"name": "x", "parameters": {}}',
    'functools[{"name": "x", "arguments": {}}]',
    '<|tool_call|>[{"name": "x", "arguments": {}}]',
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>x<｜tool▁sep｜>{}<｜tool▁call▁end｜>",
    "```tool_code\nx(a=1)\n```",
    "<start_function_call>call:x{a:1}<end_function_call>",
    "<function=x>{}</function>",
    "<|python_start|>[x(a=1)]<|python_end|>",
]


@pytest.mark.parametrize("marker", QUOTED_IN_ANSWERS)
def test_a_marker_quoted_in_a_final_answer_is_text(marker: str) -> None:
    decision = parse(f"Thought: I can explain this.\nFinal Answer: The model writes {marker}")
    assert decision.kind == "final" and not decision.tool_calls
    assert decision.answer is not None and decision.answer.startswith("The model writes")


@pytest.mark.parametrize("marker", QUOTED_IN_ANSWERS)
def test_a_marker_inside_an_action_input_is_the_input(marker: str) -> None:
    text = "Action: save_note\nAction Input: " + '{"text": "' + marker.replace('"', '\\"') + '"}'
    check(parse(text), Call("save_note", {"text": marker}))


CASES = [
    pytest.param(
        '<tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>\n'
        "Final Answer: it is sunny",
        Call("search", {"q": "x"}),
        id="a-call-before-a-hallucinated-final-answer-is-the-call",
    ),
    pytest.param(
        "<|channel|>analysis<|message|>I could write\nAction: delete_all\nAction Input: {}"
        "<|end|><|start|>assistant<|channel|>final<|message|>Nothing to delete.<|return|>",
        Final("Nothing to delete."),
        id="harmony-analysis-drafting-an-action-stays-harmony",
    ),
    pytest.param(
        'Plan: I will search.\nAction: ```json\n[{"tool_name": "search", "parameters": '
        '{"q": "x"}}]\n```',
        Call("search", {"q": "x"}),
        id="cohere-action-list-stays-cohere",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_order(text: str, expected: Expected) -> None:
    check(parse(text), expected)
