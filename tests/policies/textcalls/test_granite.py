"""IBM Granite 3.x and Microsoft Phi-4-mini: their tool calls and answers, read from the text.

Shapes from the Granite 3.x chat templates (``<|tool_call|>`` followed by a JSON list; 3.1
writes ``<tool_call>`` in text), Granite's thinking mode ("Here is my thought process: …
Here is my response: …", vLLM's granite reasoning parser), Granite 3.3's
``<think>``/``<response>``, and Phi-4-mini's ``functools[…]`` (vLLM's phi4_mini_json parser)
and ``<|tool_call|>…<|/tool_call|>`` (its Ollama template).
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Call, Calls, Error, Expected, Final, assert_consistent, check
from thinkgraph.policies.react_text import parse
from thinkgraph.policies.textcalls import granite
from thinkgraph.policies.textcalls._reasoning import split_reasoning

ROME = Call("get_weather", {"city": "Rome"})
OSLO = Call("search", {"query": "weather in Oslo"})
_ROME_JSON = '{"name": "get_weather", "arguments": {"city": "Rome"}}'
_OSLO_JSON = '{"name": "search", "arguments": {"query": "weather in Oslo"}}'

CASES = [
    # -- Granite 3.x
    pytest.param(f"<|tool_call|>[{_ROME_JSON}]", ROME, id="granite-tool-call-token"),
    pytest.param(
        f"<|tool_call|>[{_OSLO_JSON}, {_ROME_JSON}]",
        Calls(OSLO, ROME),
        id="granite-several-calls-in-order",
    ),
    pytest.param(f"<tool_call>[{_ROME_JSON}]", ROME, id="granite-3-1-tool-call-in-text"),
    pytest.param(
        f"<tool_call>\n[{_ROME_JSON}]\n</tool_call>", ROME, id="granite-tool-call-list-closed"
    ),
    pytest.param(
        f"I will check the weather.\n<|tool_call|>[{_ROME_JSON}]", ROME, id="granite-preamble"
    ),
    pytest.param(f"<|tool_call|>{_ROME_JSON}", ROME, id="granite-one-object-not-a-list"),
    pytest.param(
        '<|tool_call|>[{"name": "get_time"}]', Call("get_time", {}), id="granite-no-arguments"
    ),
    # -- Phi-4-mini
    pytest.param(f"functools[{_ROME_JSON}]", ROME, id="phi-4-mini-functools"),
    pytest.param(
        f"functools[{_OSLO_JSON}, {_ROME_JSON}]", Calls(OSLO, ROME), id="phi-4-mini-several"
    ),
    pytest.param(
        f"<|tool_call|>[{_ROME_JSON}]<|/tool_call|><|end|>", ROME, id="phi-4-mini-closed-token"
    ),
    # -- answers
    pytest.param(
        "Here is my thought process:\nThe user wants a capital; France's is Paris.\n\n"
        "Here is my response:\nParis is the capital of France.",
        Final("Paris is the capital of France."),
        id="granite-thought-process-and-response",
    ),
    pytest.param(
        "Here's my thought process: easy.\nHere's my response: 4",
        Final("4"),
        id="granite-heres-variant",
    ),
    pytest.param(
        "Here is my thought process: easy.\nHere is my response: Paris<|end_of_text|>",
        Final("Paris"),
        id="granite-response-ends-at-its-end-token",
    ),
    pytest.param(
        "<think>The user wants a capital.</think><response>Paris.</response>",
        Final("Paris."),
        id="granite-3-3-think-and-response-tags",
    ),
    pytest.param(
        "Here is my thought process: I need the weather.\n"
        f"Here is my response:\n<|tool_call|>[{_ROME_JSON}]",
        ROME,
        id="granite-response-holds-a-call",
    ),
    pytest.param(
        "Here is my thought process: I need the weather.\nHere is my response:\n"
        'Action: search\nAction Input: {"query": "weather in Oslo"}',
        OSLO,
        id="granite-response-holds-react",
    ),
    pytest.param(
        '<|tool_call|>[{"name": "final_answer", "arguments": {"answer": "Paris"}}]',
        Final("Paris"),
        id="final-answer-tool-is-the-answer",
    ),
    # -- negatives
    pytest.param(
        '<|tool_call|>[{"city": "Rome", "temp": 20}]',
        Error("<|tool_call|>"),
        id="json-data-is-not-a-call",
    ),
    pytest.param(
        '<|tool_call|>[{"name": "Alice", "age": 3}]',
        Error("<|tool_call|>"),
        id="json-record-with-a-name-is-not-a-call",
    ),
    pytest.param(
        '<|tool_call|>[{"name": "search", "arguments": {"q": }]',
        Error("<|tool_call|>"),
        id="malformed-list",
    ),
    pytest.param(
        '<|tool_call|>[{"name": "search the web", "arguments": {}}]',
        Error("not a tool name"),
        id="name-that-is-not-a-tool-name",
    ),
    pytest.param(
        f"<think><|tool_call|>[{_ROME_JSON}]</think>\nFinal Answer: 4",
        Final("4"),
        id="drafted-call-inside-think-is-not-acted-on",
    ),
    pytest.param(
        f"Here is my thought process: maybe <|tool_call|>[{_ROME_JSON}]? No.\n"
        "Here is my response: It is sunny.",
        Final("It is sunny."),
        id="drafted-call-in-the-thought-process-is-not-acted-on",
    ),
    pytest.param(
        "I used functools.partial and functools [the module] here.",
        Error("no 'Action:' line"),
        id="functools-in-prose-is-not-a-call",
    ),
    pytest.param(
        f"Here is my thought process: I will search.\n<|tool_call|>[{_ROME_JSON}]",
        ROME,
        id="thought-process-without-response-is-read-as-usual",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_granite(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_hermes_objects_are_left_to_hermes() -> None:
    text = f"<tool_call>{_ROME_JSON}</tool_call>"
    assert granite.read_calls(split_reasoning(text)) is None


def test_thought_process_is_the_thought_and_never_the_answer() -> None:
    decision = parse("Here is my thought process: secret.\nHere is my response: Hi.")
    assert decision.thought == "secret." and decision.answer == "Hi."


def test_preamble_is_the_thought() -> None:
    assert parse(f"I will check.\nfunctools[{_ROME_JSON}]").thought == "I will check."


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("<|tool_call|>" * 8_000, id="many-tool-call-tokens"),
        pytest.param("<tool_call>[" * 9_000, id="many-tool-call-list-openers"),
        pytest.param("functools[" * 10_000, id="many-functools"),
        pytest.param("Here is my response: " * 5_000, id="many-response-markers"),
        pytest.param(
            "Here is my thought process: " * 2_500 + "Here is my response: " * 2_500,
            id="many-thought-and-response-markers",
        ),
        pytest.param("<|tool_call|>" + "[" * 100_000, id="deep-list"),
        pytest.param("<response>" * 10_000, id="many-response-tags"),
    ],
)
def test_hostile_replies_are_read_quickly(text: str) -> None:
    assert len(text) >= 100_000
    assert_consistent(parse(text))
