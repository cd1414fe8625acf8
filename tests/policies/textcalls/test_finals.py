"""Final-answer styles other than ReAct's: answer tags, \\boxed{}, answer headings and lines,
and smolagents' ``final_answer`` tool call (the rule in `textcalls._common.calls`).

Shapes from DeepSeek-R1's ``<think>…</think><answer>…</answer>`` training template, the
``\\boxed{}`` convention of math models (QwQ, DeepSeek-R1), and smolagents' ToolCallingAgent
prompt (``{"name": "final_answer", "arguments": {"answer": …}}``).
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Call, Calls, Error, Expected, Final, assert_consistent, check
from thinkgraph.policies.react_text import parse

CASES = [
    # -- answer tags
    pytest.param("<think>2 + 2 = 4</think>\n<answer>4</answer>", Final("4"), id="answer-tags"),
    pytest.param(
        "<think>easy</think><answer>\nParis is the capital of France.\n</answer>",
        Final("Paris is the capital of France."),
        id="answer-tags-on-their-own-lines",
    ),
    pytest.param("<answer>42", Final("42"), id="answer-tag-never-closed"),
    pytest.param("<answer>42<|im_end|>", Final("42"), id="answer-tag-cut-at-a-special-token"),
    pytest.param(
        '<answer>{"city": "Rome", "temp": 20}</answer>',
        Final('{"city": "Rome", "temp": 20}'),
        id="json-answer-in-tags-stays-an-answer",
    ),
    # -- \boxed{}
    pytest.param("So the total is \\boxed{4}.", Final("4"), id="boxed"),
    pytest.param(
        "Half of one is \\boxed{\\frac{1}{2}}", Final("\\frac{1}{2}"), id="boxed-nested-braces"
    ),
    pytest.param(
        "First \\boxed{3}, no wait: \\boxed{4}", Final("4"), id="last-boxed-is-the-answer"
    ),
    pytest.param(
        "<think>long work</think>\n**Final Answer**\n\\[\n\\boxed{42}\n\\]",
        Final("42"),
        id="final-answer-heading-then-boxed",
    ),
    # -- headings and lines
    pytest.param("**Final Answer:** Paris", Final("Paris"), id="bold-final-answer-colon"),
    pytest.param(
        "Some working.\n\n**Final Answer**\nParis is the capital.",
        Final("Paris is the capital."),
        id="bold-final-answer-heading-without-colon",
    ),
    pytest.param(
        "## Final Answer\n\nThe tallest penguin is the emperor penguin.",
        Final("The tallest penguin is the emperor penguin."),
        id="final-answer-markdown-heading",
    ),
    pytest.param("Answer: Paris", Final("Paris"), id="answer-line"),
    pytest.param("Question: what is 2+2?\nAnswer: 4", Final("4"), id="answer-line-after-question"),
    pytest.param("**Answer:** 4", Final("4"), id="bold-answer-line"),
    pytest.param("Answer：北京", Final("北京"), id="answer-line-full-width-colon"),
    pytest.param("Answer: \\boxed{7}", Final("7"), id="answer-line-only-boxed"),
    # -- smolagents' final_answer tool
    pytest.param(
        'Action:\n{\n  "name": "final_answer",\n  "arguments": {"answer": "Paris"}\n}',
        Final("Paris"),
        id="final-answer-tool-call",
    ),
    pytest.param(
        '<|tool_call|>[{"name": "final_answer", "arguments": {"answer": 4}}]',
        Final("4"),
        id="final-answer-tool-with-a-number",
    ),
    pytest.param(
        'Action: final_answer(answer="Paris")', Final("Paris"), id="final-answer-call-syntax"
    ),
    pytest.param(
        'Action: final_answer\nAction Input: {"answer": "Paris"}',
        Final("Paris"),
        id="final-answer-as-a-react-action",
    ),
    pytest.param(
        'Action: {"name": "final_answer", "arguments": {"answer": "Paris", "confidence": 1}}',
        Call("final_answer", {"answer": "Paris", "confidence": 1}),
        id="final-answer-with-two-arguments-stays-a-call",
    ),
    pytest.param(
        'Action: {"name": "final_answer", "arguments": {"answer": {"city": "Rome"}}}',
        Call("final_answer", {"answer": {"city": "Rome"}}),
        id="final-answer-with-an-object-stays-a-call",
    ),
    pytest.param(
        '<|tool_call|>[{"name": "search", "arguments": {"query": "x"}}, '
        '{"name": "final_answer", "arguments": {"answer": "y"}}]',
        Calls(Call("search", {"query": "x"}), Call("final_answer", {"answer": "y"})),
        id="final-answer-among-other-calls-stays-a-call",
    ),
    pytest.param(
        '<|tool_call|>[{"name": "final_answer", "arguments": {"answer": "  "}}]',
        Error("empty"),
        id="final-answer-tool-with-an-empty-answer",
    ),
    # -- negatives: prose stays ReAct's feedback
    pytest.param("The answer is 4.", Error("no 'Action:' line"), id="plain-prose"),
    pytest.param("I think the Answer: 4 is right.", Error("no 'Action:'"), id="answer-mid-line"),
    pytest.param(
        "<think><answer>5</answer></think>I am not sure yet.",
        Error("no 'Action:' line"),
        id="drafted-answer-inside-think-is-not-the-answer",
    ),
    pytest.param("<answer>  </answer>", Error("empty"), id="empty-answer-tags"),
    pytest.param("The set is \\boxed{1, 2", Error("no 'Action:' line"), id="boxed-never-closed"),
    pytest.param("Use \\boxed{} for answers.", Error("no 'Action:'"), id="empty-boxed"),
    pytest.param(
        "Thought: I need the weather.\nAnswer: I will search.\nAction: search\n"
        'Action Input: {"query": "x"}',
        Call("search", {"query": "x"}),
        id="react-action-wins-over-an-answer-line",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_finals(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_reasoning_is_the_thought_never_the_answer() -> None:
    decision = parse("<think>2 + 2 = 4</think><answer>4</answer>")
    assert decision.thought == "2 + 2 = 4" and decision.answer == "4"


def test_text_before_the_answer_line_is_the_thought() -> None:
    assert parse("I added them up.\nAnswer: 4").thought == "I added them up."


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("\\boxed{" * 15_000, id="many-boxed-openers"),
        pytest.param("<answer>" * 13_000, id="many-answer-tags"),
        pytest.param("Answer:\n" * 13_000, id="many-answer-lines"),
        pytest.param("**Final Answer**\n" * 6_000, id="many-final-answer-headings"),
        pytest.param("\\boxed{" + "{" * 100_000, id="deep-braces"),
        pytest.param(" " * 100_000 + "Answer", id="spaces"),
    ],
)
def test_hostile_replies_are_read_quickly(text: str) -> None:
    assert len(text) >= 100_000
    assert_consistent(parse(text))
