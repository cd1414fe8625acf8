"""Llama 3.1–3.3 JSON tool calls: ``<|python_tag|>``, ``<function=NAME>``, bare and fenced JSON.

Shapes from Meta's Llama 3.1 prompt-format documentation (JSON and custom ``<function=…>``
tool calling, built-in tools) and vLLM's ``llama3_json`` tool parser.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import CALC, Call, Calls, Error, Expected, Final, check
from thinkgraph.policies.react_text import parse
from thinkgraph.policies.textcalls import llama
from thinkgraph.policies.textcalls._reasoning import split_reasoning

ROME = Call("get_weather", {"city": "Rome"})
"""The weather call several cases expect."""

_ROME_JSON = '{"name": "get_weather", "parameters": {"city": "Rome"}}'
_CALC_JSON = '{"name": "calculator", "parameters": {"expression": "2+2"}}'

MARKED_CASES = [
    pytest.param(f"<|python_tag|>{_ROME_JSON}<|eom_id|>", ROME, id="python-tag-eom"),
    pytest.param(f"<|python_tag|>{_ROME_JSON}<|eot_id|>", ROME, id="python-tag-eot"),
    pytest.param(f"<|python_tag|>{_ROME_JSON}", ROME, id="python-tag-no-stop-token"),
    pytest.param(f"<|python_tag|>\n{_ROME_JSON}\n", ROME, id="python-tag-newlines"),
    pytest.param(
        f"<|python_tag|>{_ROME_JSON}; {_CALC_JSON}<|eom_id|>",
        Calls(ROME, CALC),
        id="python-tag-semicolon-separated",
    ),
    pytest.param(
        f"<|python_tag|>{_ROME_JSON};<|python_tag|>{_CALC_JSON}",
        Calls(ROME, CALC),
        id="python-tag-repeated",
    ),
    pytest.param(
        "<|python_tag|>{'name': 'get_weather', 'parameters': {'city': 'Rome'}}<|eom_id|>",
        ROME,
        id="python-tag-python-dict-quoting",
    ),
    pytest.param(
        '<|python_tag|>{"name": "get_time"}<|eom_id|>',
        Call("get_time", {}),
        id="python-tag-no-parameters",
    ),
    pytest.param(
        '<|python_tag|>{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}',
        ROME,
        id="python-tag-stringified-arguments",
    ),
    pytest.param(
        f"Let me check the weather first.\n<|python_tag|>{_ROME_JSON}<|eom_id|>",
        ROME,
        id="python-tag-after-preamble",
    ),
    pytest.param(
        '<|python_tag|>brave_search.call(query="weather in Rome")<|eom_id|>',
        Call("brave_search", {"query": "weather in Rome"}),
        id="built-in-tool-call",
    ),
    pytest.param(
        '<function=get_weather>{"city": "Rome"}</function><|eot_id|>',
        ROME,
        id="custom-function-tag",
    ),
    pytest.param(
        '<function=get_weather>{"city": "Rome"}</function>\n'
        '<function=calculator>{"expression": "2+2"}</function>',
        Calls(ROME, CALC),
        id="custom-function-tags-several",
    ),
    pytest.param("<function=get_time>{}</function>", Call("get_time", {}), id="custom-no-args"),
    pytest.param('<function=get_weather>{"city": "Rome"}', ROME, id="custom-function-tag-unclosed"),
]

UNMARKED_CASES = [
    pytest.param(_ROME_JSON, ROME, id="bare-json-parameters"),
    pytest.param(
        '{"name": "get_weather", "arguments": {"city": "Rome"}}', ROME, id="bare-json-arguments"
    ),
    pytest.param(f"  \n{_ROME_JSON}\n<|eot_id|>", ROME, id="bare-json-with-stop-token"),
    pytest.param(
        '{"type": "function", "function": {"name": "get_weather", "parameters": {"city": "Rome"}}}',
        ROME,
        id="openai-wrapper",
    ),
    pytest.param(
        '{"type": "function", "name": "get_weather", "parameters": {"city": "Rome"}}',
        ROME,
        id="flat-type-function",
    ),
    pytest.param(f"[{_ROME_JSON}, {_CALC_JSON}]", Calls(ROME, CALC), id="json-list"),
    pytest.param(
        '[{"name": "get_weather", "arguments": {"city": "Rome"}, "id": "a1b2c3d4e"}]',
        ROME,
        id="mistral-list-without-its-token",
    ),
    pytest.param(f"{_ROME_JSON}; {_CALC_JSON}", Calls(ROME, CALC), id="semicolon-separated"),
    pytest.param(f"{_ROME_JSON}\n{_CALC_JSON}", Calls(ROME, CALC), id="one-per-line"),
    pytest.param(f"```json\n{_ROME_JSON}\n```", ROME, id="fenced-json"),
    pytest.param(f"```\n{_ROME_JSON}\n```", ROME, id="fenced-no-language"),
    pytest.param(
        f"I will look up the weather.\n\n```json\n{_ROME_JSON}\n```", ROME, id="fenced-after-prose"
    ),
    pytest.param(
        "{'name': 'get_weather', 'parameters': {'city': 'Rome'}}", ROME, id="python-dict-quoting"
    ),
]

NEGATIVE_CASES = [
    # JSON answers that are not calls stay what they are: never a call.
    pytest.param(
        'Final Answer: {"name": "Alice", "age": 30}',
        Final('{"name": "Alice", "age": 30}'),
        id="json-answer-after-final-answer",
    ),
    pytest.param(
        f"<think>Maybe <|python_tag|>{_ROME_JSON}</think>\nFinal Answer: It is sunny.",
        Final("It is sunny."),
        id="python-tag-drafted-in-think",
    ),
    pytest.param(
        f"<think>I could write {_ROME_JSON}</think>\n<|python_tag|>{_CALC_JSON}<|eom_id|>",
        CALC,
        id="only-the-call-after-think",
    ),
    pytest.param(
        '<|python_tag|>{"name": "get weather now", "parameters": {}}',
        Error("not a tool name"),
        id="python-tag-sentence-name",
    ),
    pytest.param(
        '<|python_tag|>{"name": "get_weather", "parameters": "Rome"}',
        Error("not one JSON object"),
        id="python-tag-arguments-not-an-object",
    ),
    pytest.param(
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Rome"}',
        Error("<|python_tag|>"),
        id="python-tag-malformed-json",
    ),
    pytest.param(
        "<|python_tag|>import math\nprint(math.sqrt(2))<|eom_id|>",
        Error("<|python_tag|>"),
        id="python-tag-code-not-a-call",
    ),
    pytest.param(
        '<|python_tag|>{"name": "Alice", "age": 30}',
        Error('it was JSON, but not an object with the tool\'s "name"'),
        id="python-tag-json-data-not-a-call",
    ),
    pytest.param(
        "<function=get_weather>city is Rome</function>",
        Error("not one JSON object"),
        id="custom-function-prose-arguments",
    ),
    pytest.param(
        '{"name": "get_weather", "parameters": {"city": "Rome"}',
        Error("not valid JSON: Expecting ',' delimiter"),
        id="bare-json-call-malformed",
    ),
    pytest.param(
        '{"name": "get weather", "parameters": {"city": "Rome"}}',
        Error("not a tool name"),
        id="bare-json-sentence-name",
    ),
]


@pytest.mark.parametrize(("text", "expected"), MARKED_CASES + UNMARKED_CASES + NEGATIVE_CASES)
def test_llama_reply(text: str, expected: Expected) -> None:
    check(parse(text), expected)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"name": "Alice", "age": 30}', id="json-object-with-a-name"),
        pytest.param('{"city": "Rome", "temp": 20}', id="json-object"),
        pytest.param('[{"name": "Alice"}, {"name": "Bob"}]', id="json-list-of-names"),
        pytest.param("[1, 2, 3]", id="json-list-of-numbers"),
        pytest.param("[]", id="empty-list"),
        pytest.param(
            f"Call it like this:\n```json\n{_ROME_JSON}\n```\nand it returns the weather.",
            id="fenced-example-inside-an-answer",
        ),
        pytest.param(
            f"Here is one:\n```json\n{_ROME_JSON}\n```\n```json\n{_CALC_JSON}\n```",
            id="two-fences",
        ),
        pytest.param(f"Sure! {_ROME_JSON}", id="json-call-inside-a-sentence"),
    ],
)
def test_a_json_answer_is_never_a_call(text: str) -> None:
    assert parse(text).kind != "tool_calls"


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "Alice", "age": 30}',
        "{'name': 'Alice', 'age': 30}",
        '{"name": "get_weather", "parameters": {}} is the call I would make.',
    ],
)
def test_a_json_answer_is_left_to_the_other_readers(text: str) -> None:
    assert llama.read_unmarked(split_reasoning(text)) is None


def test_qwen3_coder_xml_is_left_to_its_reader() -> None:
    reply = split_reasoning(
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert llama.read_marked(reply) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            'Action: render\nAction Input: {"html": "<function=f>x</function>"}',
            Call("render", {"html": "<function=f>x</function>"}),
            id="function-tag-inside-an-action-input",
        ),
        pytest.param(
            'Action: search\nAction Input: {"query": "what is <|python_tag|>?"}',
            Call("search", {"query": "what is <|python_tag|>?"}),
            id="python-tag-inside-an-action-input",
        ),
    ],
)
def test_markers_inside_react_text_are_react(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_the_preamble_is_the_thought() -> None:
    decision = parse(f"Let me check the weather.\n<|python_tag|>{_ROME_JSON}<|eom_id|>")
    assert decision.thought == "Let me check the weather."


def test_think_text_is_the_thought_of_a_bare_call() -> None:
    decision = parse(f"<think>The user wants Rome.</think>\n{_ROME_JSON}")
    check(decision, ROME)
    assert decision.thought == "The user wants Rome."


def test_a_final_answer_tool_is_the_answer() -> None:
    reply = split_reasoning('{"name": "final_answer", "arguments": {"answer": "42"}}')
    decision = llama.read_unmarked(reply)
    assert decision is not None
    check(decision, Final("42"))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("<|python_tag|>" * 20_000, id="many-python-tags"),
        pytest.param("<|python_tag|>" + "[" * 100_000, id="python-tag-deep-list"),
        pytest.param("<function=" * 10_000, id="many-function-openers"),
        pytest.param("<function=a>" * 10_000, id="many-function-tags"),
        pytest.param('{"name": "a", "parameters": {}};' * 3_000, id="many-calls"),
        pytest.param("[" * 100_000, id="deep-list"),
        pytest.param("{" * 100_000, id="deep-object"),
        pytest.param("```json\n" * 12_000, id="many-fences"),
        pytest.param(" " * 100_000 + "{", id="spaces"),
    ],
)
def test_hostile_replies_are_read_quickly(text: str) -> None:
    decision = parse(text)
    assert decision.kind in {"tool_calls", "final", "error"}
    assert all("<|" not in c.name for c in decision.tool_calls)


PREAMBLE_CASES = [
    pytest.param(
        'I will check the weather.\n\n{"name": "get_weather", "arguments": {"city": "Rome"}}',
        Call("get_weather", {"city": "Rome"}),
        id="preamble-then-a-json-call",
    ),
    pytest.param(
        'Let me look both up.\n[{"name": "a", "parameters": {}}, {"name": "b", "parameters": {}}]',
        Calls(Call("a", {}), Call("b", {})),
        id="preamble-then-a-list-of-calls",
    ),
    pytest.param(
        'Here is the data you asked for:\n{"city": "Rome", "temperature": 21}',
        Error("no 'Action:' line"),
        id="preamble-then-json-data-is-not-a-call",
    ),
    pytest.param(
        'I could call\n{"name": "get_weather", "arguments": {"city": "Rome"}}\nbut I will not.',
        Error("no 'Action:' line"),
        id="a-call-shape-inside-prose-is-not-a-call",
    ),
    pytest.param(
        '{"name": "final_answer", "arguments": {"answer": "Paris"}}',
        Final("Paris"),
        id="a-bare-final-answer-call-is-the-answer",
    ),
]


@pytest.mark.parametrize(("text", "expected"), PREAMBLE_CASES)
def test_calls_after_a_preamble(text: str, expected: Expected) -> None:
    check(parse(text), expected)
