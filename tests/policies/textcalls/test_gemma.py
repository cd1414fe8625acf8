"""Gemma tool calls: ``tool_code`` blocks, ``print(default_api.NAME(…))`` and FunctionGemma.

Shapes from Google's "Function calling with Gemma" guide, the Gemma 3 ``tool_code``
convention (``print(default_api.…)``, as LiteRT-LM parses it) and the FunctionGemma
formatting guide (``<start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call>``).
"""

from __future__ import annotations

import pytest

from tests.policies._expect import CALC, Call, Calls, Error, Expected, Final, check
from thinkgraph.policies.react_text import parse

ROME = Call("get_weather", {"city": "Rome"})
"""The weather call several cases expect."""

E = "<escape>"

TOOL_CODE_CASES = [
    pytest.param('```tool_code\nget_weather(city="Rome")\n```', ROME, id="tool-code-bare-call"),
    pytest.param(
        '```tool_code\nprint(default_api.get_weather(city="Rome"))\n```',
        ROME,
        id="tool-code-print-default-api",
    ),
    pytest.param(
        'I will check.\n```tool_code\nprint(default_api.get_weather(city="Rome"))\n```',
        ROME,
        id="tool-code-after-preamble",
    ),
    pytest.param(
        "```tool_code\n"
        'print(default_api.get_weather(city="Rome"))\n'
        'print(default_api.calculator(expression="2+2"))\n```',
        Calls(ROME, CALC),
        id="tool-code-two-lines",
    ),
    pytest.param(
        '```tool_code\nget_weather(city="Rome")\n```\n```tool_code\ncalculator(expression="2+2")\n```',
        Calls(ROME, CALC),
        id="two-tool-code-blocks",
    ),
    pytest.param(
        '```tool_code\nprint(default_api.edit_file(\n    path="a.md",\n    overwrite=True,\n))'
        "\n```",
        Call("edit_file", {"path": "a.md", "overwrite": True}),
        id="tool-code-call-over-lines",
    ),
    pytest.param(
        '```tool_code\nget_weather(city="Rome")\n```\n```tool_outputs\n{"temp": 20}\n```\n'
        '```tool_code\ncalculator(expression="2+2")\n```',
        ROME,
        id="stops-at-invented-tool-outputs",
    ),
    pytest.param('print(default_api.get_weather(city="Rome"))', ROME, id="print-default-api-bare"),
    pytest.param(
        'Checking.\ndefault_api.get_weather(city="Rome")<end_of_turn>',
        ROME,
        id="default-api-without-print",
    ),
]

FUNCTIONGEMMA_CASES = [
    pytest.param(
        f"<start_function_call>call:get_weather{{city:{E}Rome{E}}}<end_function_call>",
        ROME,
        id="functiongemma",
    ),
    pytest.param(
        f"call:get_weather{{city:{E}Rome{E}}}", ROME, id="functiongemma-without-its-tokens"
    ),
    pytest.param(
        f"<start_function_call>call:get_current_temperature{{location:{E}Tokyo, Japan{E},"
        f"unit:{E}celsius{E}}}<end_function_call>",
        Call("get_current_temperature", {"location": "Tokyo, Japan", "unit": "celsius"}),
        id="functiongemma-two-arguments",
    ),
    pytest.param(
        f"<start_function_call>call:book{{people:4,price:12.5,vip:true,note:null,"
        f"tags:[{E}a{E},{E}b{E}],where:{{city:{E}Rome{E}}}}}<end_function_call>",
        Call(
            "book",
            {
                "people": 4,
                "price": 12.5,
                "vip": True,
                "note": None,
                "tags": ["a", "b"],
                "where": {"city": "Rome"},
            },
        ),
        id="functiongemma-values",
    ),
    pytest.param(
        f"<start_function_call>call:get_weather{{city:{E}Rome{E}}}<end_function_call>"
        f"<start_function_call>call:calculator{{expression:{E}2+2{E}}}<end_function_call>",
        Calls(ROME, CALC),
        id="functiongemma-parallel",
    ),
    pytest.param(
        f"<start_function_call>call:get_weather{{city:{E}Rome{E}}}<end_function_call>"
        f"<start_function_response>response:get_weather{{temp:20}}<end_function_response>"
        f"<start_function_call>call:calculator{{expression:{E}2+2{E}}}<end_function_call>",
        ROME,
        id="functiongemma-stops-at-invented-response",
    ),
    pytest.param(
        f"<start_function_call>call:write{{text:{E}a {{b}}, c: d{E}}}<end_function_call>",
        Call("write", {"text": "a {b}, c: d"}),
        id="functiongemma-escaped-specials",
    ),
    pytest.param(
        "<start_function_call>call:get_time{}<end_function_call>",
        Call("get_time", {}),
        id="functiongemma-no-arguments",
    ),
]

NEGATIVE_CASES = [
    pytest.param(
        f"<think><start_function_call>call:get_weather{{city:{E}Paris{E}}}<end_function_call>"
        "</think>\nFinal Answer: Sunny.",
        Final("Sunny."),
        id="functiongemma-drafted-in-think",
    ),
    pytest.param(
        'Final Answer: Use it like this:\n```tool_code\nget_weather(city="Rome")\n```',
        Final('Use it like this:\n```tool_code\nget_weather(city="Rome")\n```'),
        id="tool-code-shown-in-a-final-answer",
    ),
    pytest.param(
        "Final Answer: Call it as\nprint(default_api.get_weather(city='Rome'))",
        Final("Call it as\nprint(default_api.get_weather(city='Rome'))"),
        id="default-api-shown-in-a-final-answer",
    ),
    pytest.param(
        f"<start_function_call>call:get weather{{city:{E}Rome{E}}}<end_function_call>",
        Error("FunctionGemma"),
        id="functiongemma-sentence-name",
    ),
    pytest.param(
        f"<start_function_call>call:get_weather{{city:{E}Rome}}<end_function_call>",
        Error("FunctionGemma"),
        id="functiongemma-unclosed-escape",
    ),
    pytest.param(
        f"<start_function_call>call:get_weather{{city:{E}Rome{E}<end_function_call>",
        Error("FunctionGemma"),
        id="functiongemma-unclosed-object",
    ),
    pytest.param(
        '```tool_code\nx = get_weather(city="Rome")\n```',
        Error("tool_code"),
        id="tool-code-assignment",
    ),
    pytest.param(
        '```tool_code\nget_weather("Rome")\n```', Error("name each argument"), id="positional"
    ),
    pytest.param(
        '```tool_code\nprint(default_api.get_weather(city="Rome")\n```',
        Error("tool_code"),
        id="tool-code-malformed",
    ),
    pytest.param(
        "```tool_code\nprint(default_api.get_weather(city=CITY))\n```",
        Error("not a value"),
        id="tool-code-argument-not-a-literal",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), TOOL_CODE_CASES + FUNCTIONGEMMA_CASES + NEGATIVE_CASES
)
def test_gemma_reply(text: str, expected: Expected) -> None:
    check(parse(text), expected)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"name": "Alice", "age": 30}', id="json-answer"),
        pytest.param("You can call: any of them{really}.", id="prose-with-call-colon"),
        pytest.param("The default_api.search(q='x') method is documented.", id="prose-default-api"),
        pytest.param("```python\nprint(2 + 2)\n```", id="python-fence"),
        pytest.param("```tool_code\nprint(2 + 2)\n```", id="tool-code-that-is-code"),
        pytest.param("```tool_code\n[1, 2]\n```", id="tool-code-list-of-numbers"),
    ],
)
def test_not_a_gemma_call(text: str) -> None:
    assert parse(text).kind != "tool_calls"


def test_the_preamble_is_the_thought() -> None:
    decision = parse('Let me see.\n```tool_code\nget_weather(city="Rome")\n```')
    assert decision.thought == "Let me see."


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("<start_function_call>" * 5_000, id="many-call-openers"),
        pytest.param("<start_function_call>call:f{" + "a:{" * 30_000, id="deep-object"),
        pytest.param("<start_function_call>call:f{a:" + "[" * 100_000, id="deep-list"),
        pytest.param("<start_function_call>call:f{a:" + E * 10_000, id="many-escapes"),
        pytest.param("call:f{" * 10_000, id="many-bare-calls"),
        pytest.param("```tool_code\n" * 8_000, id="many-tool-code-fences"),
        pytest.param("default_api." * 8_000, id="many-default-api"),
        pytest.param("\ndefault_api.f(" * 8_000, id="many-default-api-lines"),
    ],
)
def test_hostile_replies_are_read_quickly(text: str) -> None:
    decision = parse(text)
    assert decision.kind in {"tool_calls", "final", "error"}
    assert all("<" not in c.name for c in decision.tool_calls)
