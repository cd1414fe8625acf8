"""Reasoning models' think blocks (DeepSeek R1, QwQ, Qwen3): drafts are never acted on.

DeepSeek R1 and QwQ write ``<think>…</think>`` before their reply; chat templates that
open the block in the prompt leave only the closing ``</think>``; a model that forgets to
close it still writes its decision after the opening tag. What is drafted inside a closed
block — an Action, a Final Answer, a tool call — is never acted on, and its text is kept as
the thought, never in an answer.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import CALC, Call, Error, Expected, Final, check
from thinkgraph.policies.react_text import parse

_ACTION = 'Action: calculator\nAction Input: {"expression": "2+2"}'

CASES = [
    pytest.param(f"<think>I should add.</think>\n{_ACTION}", CALC, id="think-then-action"),
    pytest.param(
        "<think>\nOkay, the user wants 2+2. That's 4.\n</think>\n\nFinal Answer: 4",
        Final("4"),
        id="r1-think-then-final",
    ),
    pytest.param(
        "<think>\n\n</think>\n\nThought: easy\nFinal Answer: 4", Final("4"), id="empty-think"
    ),
    pytest.param(
        "Okay, so 2+2. Let me be careful.\n</think>\n\nFinal Answer: 4",
        Final("4"),
        id="qwq-only-closing-tag",
    ),
    pytest.param(
        f"Let me compute it.\n</think>\n{_ACTION}", CALC, id="only-closing-tag-then-action"
    ),
    pytest.param(
        f"<think>I should add.\n{_ACTION}", CALC, id="unclosed-think-then-action-still-acts"
    ),
    pytest.param(
        "<think>I should add.\nFinal Answer: 4", Final("4"), id="unclosed-think-then-final"
    ),
    pytest.param(
        "<think>hmm, still thinking", Error("unclosed <think> block"), id="unclosed-think-only"
    ),
    pytest.param(
        f"<think>Draft:\n{_ACTION}\n</think>",
        Error("only a reasoning block"),
        id="action-drafted-inside-think-not-acted-on",
    ),
    pytest.param(
        f"<think>Draft:\n{_ACTION}\n</think>\nThought: no tool needed\nFinal Answer: 4",
        Final("4"),
        id="action-drafted-inside-think-final-after",
    ),
    pytest.param(
        f"<think>Final Answer: 5?</think>\n{_ACTION}",
        CALC,
        id="final-drafted-inside-think-action-after",
    ),
    pytest.param(
        f"{_ACTION}\n</think>\nFinal Answer: 4",
        Final("4"),
        id="action-before-closing-tag-is-a-draft",
    ),
    pytest.param(
        '<think><tool_call>{"name": "delete_all", "arguments": {}}</tool_call></think>',
        Error("only a reasoning block"),
        id="tool-call-drafted-inside-think-not-acted-on",
    ),
    pytest.param(
        "<think>a</think>\n<think>b</think>\nFinal Answer: 4", Final("4"), id="two-think-blocks"
    ),
    pytest.param(
        "<think>outer <think>inner</think>\nFinal Answer: 4", Final("4"), id="nested-opening-tag"
    ),
    pytest.param("<Think>hm</Think>\nFinal Answer: 4", Final("4"), id="capitalised-tags"),
    pytest.param("<thinking>2+2</thinking>\nFinal Answer: 4", Final("4"), id="thinking-tags"),
    pytest.param(
        '<think>search first?</think>\nAction: search\nAction Input: {"query": "x"}',
        Call("search", {"query": "x"}),
        id="think-then-other-tool",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_reasoning_replies(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_think_text_is_the_thought_and_never_the_answer() -> None:
    decision = parse("<think>The answer is surely 5.</think>\nFinal Answer: 4")
    assert decision.answer == "4"
    assert "5" not in decision.answer
    assert decision.thought == "The answer is surely 5."


def test_a_thought_key_wins_over_the_think_text() -> None:
    decision = parse(f"<think>deep</think>\nThought: stated\n{_ACTION}")
    assert decision.thought == "stated"


def test_the_answer_after_only_a_closing_tag_holds_none_of_the_reasoning() -> None:
    decision = parse("I think it is 5. No, 4.\n</think>\nFinal Answer: 4")
    assert decision.answer == "4"
    assert decision.thought == "I think it is 5. No, 4."


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("</think>" * 50_000 + "Final Answer: 4", id="many-closing-tags"),
        pytest.param("<think>" * 50_000 + "\nFinal Answer: 4", id="many-opening-tags"),
        pytest.param("<think></think>" * 20_000 + "Final Answer: 4", id="many-blocks"),
        pytest.param("<think " * 30_000 + "\nFinal Answer: 4", id="many-unfinished-tags"),
    ],
)
def test_a_hostile_reply_is_read_quickly(text: str) -> None:
    assert parse(text).kind == "final"
