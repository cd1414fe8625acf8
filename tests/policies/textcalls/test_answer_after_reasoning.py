"""A reasoning model's plain answer after its closed reasoning block is the final answer.

DeepSeek R1, QwQ, Qwen3 and Magistral think in a block, then answer in plain text when they
need no tool. Plain prose with no reasoning block before it stays ReAct's feedback (the
prompt asks for ``Final Answer:``), and so does anything after the block that looks like a
call or a ReAct reply that decided nothing.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Error, Expected, Final, check
from thinkgraph.policies.react_text import parse

CASES = [
    pytest.param(
        "<think>\nThe user asks for the capital of France. It is Paris.\n</think>\n\n"
        "The capital of France is Paris.",
        Final("The capital of France is Paris."),
        id="r1-think-then-plain-answer",
    ),
    pytest.param(
        "Okay, 12 times 12 is 144.\n</think>\n\n12 × 12 = 144.",
        Final("12 × 12 = 144."),
        id="qwq-only-closing-tag-then-answer",
    ),
    pytest.param(
        "[THINK]Simple arithmetic: 2 + 2 = 4.[/THINK]The answer is 4.",
        Final("The answer is 4."),
        id="magistral-think-then-answer",
    ),
    pytest.param(
        "<think>Let me see. I need the weather.\nAction: search\nAction Input: {}</think>\n\n"
        "It is sunny.",
        Error("no 'Action:' line"),
        id="text-after-a-block-that-drafted-a-call-is-feedback",
    ),
    pytest.param(
        '<think>\n<tool_call>{"name": "search", "arguments": {}}</tool_call>\n</think>\n'
        "It is sunny.",
        Error("no 'Action:' line"),
        id="text-after-a-block-that-drafted-a-tool-call-is-feedback",
    ),
    pytest.param(
        "<think>Maybe I should search? No: I know this one.</think>\nParis.",
        Final("Paris."),
        id="reasoning-about-searching-is-not-a-draft",
    ),
    pytest.param(
        "The capital of France is Paris.",
        Error("no 'Action:' line"),
        id="plain-prose-without-reasoning-is-feedback",
    ),
    pytest.param(
        "<think>I should look it up.",
        Error("unclosed <think>"),
        id="unclosed-reasoning-is-feedback",
    ),
    pytest.param(
        '<think>call it</think>\n{"city": "Rome"',
        Error(""),
        id="broken-json-after-reasoning-is-feedback",
    ),
    pytest.param(
        "<think>hmm</think>\nThought: I should search first.",
        Error("no 'Action:' line"),
        id="a-react-thought-without-decision-is-feedback",
    ),
    pytest.param(
        "<think>Action: search\nAction Input: {}</think>\n   \n",
        Error("only a reasoning block"),
        id="only-a-reasoning-block-is-feedback-that-says-so",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_answer_after_reasoning(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_the_reasoning_is_the_thought_and_never_the_answer() -> None:
    decision = parse("<think>secret plan: Paris</think>\nParis")
    assert decision.answer == "Paris"
    assert decision.thought == "secret plan: Paris"
