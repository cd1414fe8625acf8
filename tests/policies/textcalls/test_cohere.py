"""Cohere Command R / R+ / R7B / A: their tool calls and answers, read from the reply text.

Shapes from Cohere's model cards and prompt guide (Command R's ``Plan:`` then ``Action:``
with a fenced JSON list of ``{"tool_name", "parameters"}``; ``Relevant Documents:`` /
``Answer:`` / ``Grounded answer:`` finals) and the Command R7B / A chat templates
(``<|START_THINKING|>``, ``<|START_ACTION|>``, ``<|START_RESPONSE|>``).
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Call, Calls, Error, Expected, Final, assert_consistent, check
from thinkgraph.policies.react_text import parse

OSLO = Call("search", {"query": "weather in Oslo"})
ROME = Call("get_weather", {"city": "Rome"})

_R_ACTION = (
    "Plan: I will search for the weather in Oslo.\n"
    "Action: ```json\n"
    "[\n"
    "    {\n"
    '        "tool_name": "search",\n'
    '        "parameters": {"query": "weather in Oslo"}\n'
    "    }\n"
    "]\n"
    "```"
)

_A_ACTION = (
    "<|START_THINKING|>I should look the weather up.<|END_THINKING|>"
    '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "search", '
    '"parameters": {"query": "weather in Oslo"}}\n]<|END_ACTION|><|END_OF_TURN_TOKEN|>'
)

CASES = [
    # -- Command R / R+: Plan, then Action with a fenced JSON list
    pytest.param(_R_ACTION, OSLO, id="command-r-plan-and-action"),
    pytest.param(
        "Reflection: The search gave the city; now the weather.\n"
        'Action: ```json\n[{"tool_name": "get_weather", "parameters": {"city": "Rome"}}]\n```',
        ROME,
        id="command-r-reflection-and-action",
    ),
    pytest.param(
        "Plan: I will look up both cities.\n"
        "Action: ```json\n"
        '[{"tool_name": "search", "parameters": {"query": "weather in Oslo"}},\n'
        ' {"tool_name": "get_weather", "parameters": {"city": "Rome"}}]\n'
        "```",
        Calls(OSLO, ROME),
        id="command-r-several-calls-in-order",
    ),
    pytest.param(
        'Action: [{"tool_name": "get_weather", "parameters": {"city": "Rome"}}]',
        ROME,
        id="command-r-action-list-without-fence",
    ),
    pytest.param(
        'Action:\n```json\n[{"tool_name": "get_time", "parameters": {}}]\n```',
        Call("get_time", {}),
        id="command-r-fence-on-the-next-line-no-parameters",
    ),
    # -- Command R7B / A: thinking, then an action block
    pytest.param(_A_ACTION, OSLO, id="command-a-thinking-and-action"),
    pytest.param(
        "<|START_THINKING|>Two lookups.<|END_THINKING|><|START_ACTION|>["
        '{"tool_call_id": "0", "tool_name": "search", "parameters": {"query": "weather in Oslo"}},'
        '{"tool_call_id": "1", "tool_name": "get_weather", "parameters": {"city": "Rome"}}'
        "]<|END_ACTION|>",
        Calls(OSLO, ROME),
        id="command-a-several-calls-in-order",
    ),
    pytest.param(
        '<|START_ACTION|>{"tool_call_id": "0", "tool_name": "get_weather", '
        '"parameters": {"city": "Rome"}}<|END_ACTION|>',
        ROME,
        id="command-a-one-object-not-a-list",
    ),
    pytest.param(
        '<|START_ACTION|>[{"tool_name": "get_weather", "parameters": {"city": "Rome"}}]',
        ROME,
        id="command-a-action-without-its-end-token",
    ),
    # -- answers
    pytest.param(
        "<|START_THINKING|>I know this.<|END_THINKING|>"
        "<|START_RESPONSE|>Oslo is rainy today.<|END_RESPONSE|><|END_OF_TURN_TOKEN|>",
        Final("Oslo is rainy today."),
        id="command-a-response",
    ),
    pytest.param(
        "<|START_RESPONSE|>Paris<|END_OF_TURN_TOKEN|>",
        Final("Paris"),
        id="command-a-response-cut-at-the-turn-token",
    ),
    pytest.param(
        "<|START_TEXT|>Paris is the capital.<|END_TEXT|>",
        Final("Paris is the capital."),
        id="command-a-text-block",
    ),
    pytest.param(
        "Relevant Documents: 0,1\nCited Documents: 0\n"
        "Answer: The Emperor Penguin is the tallest penguin.\n"
        "Grounded answer: The <co: 0>Emperor Penguin</co: 0> is the tallest penguin.",
        Final("The Emperor Penguin is the tallest penguin."),
        id="command-r-answer-before-grounded-answer",
    ),
    pytest.param(
        "Relevant Documents: 0\nCited Documents: 0\n"
        "Grounded answer: The <co: 0>Emperor Penguin</co: 0> lives <co: 1>in Antarctica</co: 1>.",
        Final("The Emperor Penguin lives in Antarctica."),
        id="command-r-grounded-answer-alone-without-citation-tags",
    ),
    pytest.param(
        '<|START_RESPONSE|>{"city": "Rome", "temp": 20}<|END_RESPONSE|>',
        Final('{"city": "Rome", "temp": 20}'),
        id="json-answer-in-a-response-stays-an-answer",
    ),
    # -- directly_answer is never a call
    pytest.param(
        "Plan: I can answer this directly.\nAction: ```json\n"
        '[{"tool_name": "directly_answer", "parameters": {}}]\n```',
        Error("directly_answer"),
        id="directly-answer-asks-for-the-answer",
    ),
    pytest.param(
        "Action: ```json\n"
        '[{"tool_name": "directly-answer", "parameters": {}}]\n```\n'
        "Answer: Penguins live in Antarctica.",
        Final("Penguins live in Antarctica."),
        id="directly-answer-with-its-answer",
    ),
    # -- negatives
    pytest.param(
        '<|START_ACTION|>[{"city": "Rome", "temp": 20}]<|END_ACTION|>',
        Error("<|START_ACTION|>"),
        id="json-data-in-an-action-block-is-not-a-call",
    ),
    pytest.param(
        'Action: ```json\n[{"tool_name": "search the web", "parameters": {}}]\n```',
        Error("not a tool name"),
        id="name-that-is-not-a-tool-name",
    ),
    pytest.param(
        '<|START_ACTION|>[{"tool_name": "search", "parameters": {"query": }]<|END_ACTION|>',
        Error("<|START_ACTION|>"),
        id="malformed-action-block",
    ),
    pytest.param(
        '<|START_ACTION|>[{"tool_name": "search", "parameters": "weather"}]<|END_ACTION|>',
        Error("not one JSON object"),
        id="parameters-that-are-not-an-object",
    ),
    pytest.param(
        '<think>Action: ```json\n[{"tool_name": "delete_all", "parameters": {}}]\n```</think>\n'
        "Final Answer: 4",
        Final("4"),
        id="drafted-call-inside-think-is-not-acted-on",
    ),
    pytest.param(
        '<|START_THINKING|><|START_ACTION|>[{"tool_name": "delete_all", "parameters": {}}]'
        "<|END_ACTION|><|END_THINKING|><|START_RESPONSE|>4<|END_RESPONSE|>",
        Final("4"),
        id="drafted-call-inside-thinking-is-not-acted-on",
    ),
    pytest.param(
        'Thought: I should search.\nAction:\n```json\n{"action": "search", '
        '"action_input": {"query": "weather in Oslo"}}\n```',
        OSLO,
        id="react-json-agent-blob-is-not-cohere",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_cohere(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_plan_is_the_thought() -> None:
    assert parse(_R_ACTION).thought == "I will search for the weather in Oslo."


def test_thinking_is_the_thought_and_never_the_answer() -> None:
    assert parse(_A_ACTION).thought == "I should look the weather up."
    decision = parse(
        "<|START_THINKING|>secret plan<|END_THINKING|><|START_RESPONSE|>Hi<|END_RESPONSE|>"
    )
    assert decision.thought == "secret plan" and decision.answer == "Hi"


def test_documents_lines_are_not_part_of_the_answer() -> None:
    answer = parse("Relevant Documents: 0\nCited Documents: 0\nAnswer: Yes.").answer
    assert answer == "Yes."


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("<|START_ACTION|>" * 8_000, id="many-action-openers"),
        pytest.param("Action: ```json\n[" * 8_000, id="many-fenced-actions"),
        pytest.param("<|START_THINKING|>a<|END_THINKING|>" * 3_000, id="many-thinking-blocks"),
        pytest.param("<|START_RESPONSE|>" * 6_000, id="many-response-openers"),
        pytest.param("Grounded answer: <co: 0>" * 5_000, id="many-citation-openers"),
        pytest.param(
            '<|START_ACTION|>[{"tool_name": "a", "parameters": ' + "[" * 100_000, id="deep"
        ),
    ],
)
def test_hostile_replies_are_read_quickly(text: str) -> None:
    assert len(text) >= 100_000
    assert_consistent(parse(text))
