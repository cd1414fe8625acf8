"""Pythonic tool calls (Llama 3.2, 3.3 and 4): ``[get_weather(city="Rome"), …]``.

Shapes from Meta's Llama 3.2 and Llama 4 prompt-format documentation and vLLM's
``pythonic`` / ``llama4_pythonic`` tool parsers.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import CALC, Call, Calls, Error, Expected, Final, check
from thinkgraph.policies.react_text import parse

ROME = Call("get_weather", {"city": "Rome"})
"""The weather call several cases expect."""

CALL_CASES = [
    pytest.param('[get_weather(city="Rome")]', ROME, id="list-of-one"),
    pytest.param(
        "[get_weather(city=\"Rome\"), search(query='x')]",
        Calls(ROME, Call("search", {"query": "x"})),
        id="list-of-two",
    ),
    pytest.param('get_weather(city="Rome")', ROME, id="call-outside-a-list"),
    pytest.param('\n  [get_weather(city="Rome")]  \n<|eot_id|>', ROME, id="stop-token-after"),
    pytest.param(
        "get_weather(city=\"Rome\"); search(query='x')",
        Calls(ROME, Call("search", {"query": "x"})),
        id="semicolon-separated",
    ),
    pytest.param(
        "get_weather(city=\"Rome\")\nsearch(query='x')",
        Calls(ROME, Call("search", {"query": "x"})),
        id="one-per-line",
    ),
    pytest.param(
        '<|python_start|>[get_weather(city="Rome")]<|python_end|>', ROME, id="llama4-python-tokens"
    ),
    pytest.param(
        'I will look it up.\n<|python_start|>[get_weather(city="Rome")]<|python_end|><|eom|>',
        ROME,
        id="llama4-after-preamble",
    ),
    pytest.param(
        '<|python_start|>get_weather(city="Rome")', ROME, id="llama4-unclosed-single-call"
    ),
    pytest.param(
        "[set_alarm(hour=7, minute=-5, repeat=True, days=['mon', 'tue'], note=None)]",
        Call(
            "set_alarm",
            {"hour": 7, "minute": -5, "repeat": True, "days": ["mon", "tue"], "note": None},
        ),
        id="literal-values",
    ),
    pytest.param(
        '[configure(opts={"verbose": true, "level": null})]',
        Call("configure", {"opts": {"verbose": True, "level": None}}),
        id="json-constants",
    ),
    pytest.param("[get_time()]", Call("get_time", {}), id="no-arguments"),
    pytest.param('[calculator(expression="2+2")]', CALC, id="calculator"),
    pytest.param('<think>Rome, then.</think>\n[get_weather(city="Rome")]', ROME, id="after-think"),
]

NEGATIVE_CASES = [
    pytest.param(
        'Final Answer: [get_weather(city="Rome")]',
        Final('[get_weather(city="Rome")]'),
        id="shown-in-a-final-answer",
    ),
    pytest.param(
        '<think>[get_weather(city="Paris")]</think>\nFinal Answer: Sunny.',
        Final("Sunny."),
        id="drafted-in-think",
    ),
    pytest.param(
        'Final Answer: <|python_start|>[get_weather(city="Rome")]<|python_end|>',
        Final('<|python_start|>[get_weather(city="Rome")]<|python_end|>'),
        id="python-start-shown-in-a-final-answer",
    ),
    pytest.param("max(3, 4)", Error("name each argument"), id="positional-arguments"),
    pytest.param('[get_weather("Rome")]', Error("name each argument"), id="positional-in-a-list"),
    pytest.param("[get_weather(city=CITY)]", Error("not a value"), id="argument-not-a-literal"),
    pytest.param("[get_weather(city=input())]", Error("not a value"), id="argument-is-a-call"),
    pytest.param("[get_weather(**opts)]", Error("name each argument"), id="spread-arguments"),
    pytest.param(
        '<|python_start|>[get_weather(city="Rome"]<|python_end|>',
        Error("<|python_start|>"),
        id="llama4-malformed",
    ),
    pytest.param(
        '<|python_start|>print("hello")<|python_end|>',
        Error("name each argument"),
        id="llama4-code-not-a-call",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CALL_CASES + NEGATIVE_CASES)
def test_pythonic_reply(text: str, expected: Expected) -> None:
    check(parse(text), expected)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[1, 2, 3]", id="a-python-list"),
        pytest.param("['Rome', 'Paris']", id="a-list-of-strings"),
        pytest.param("The answer is f(x) for every x.", id="prose-with-a-call"),
        pytest.param("math.sqrt(x=2)", id="a-dotted-call"),
        pytest.param('[get_weather(city="Rome")] is what I would call.', id="call-in-a-sentence"),
        pytest.param("[get_weather(city='Rome'), 3]", id="a-list-not-only-of-calls"),
        pytest.param("get_weather(city='Rome') + 1", id="an-expression"),
        pytest.param("Yes (definitely)", id="prose-shaped-like-a-call"),
        pytest.param("f(x)", id="a-call-with-a-name-for-argument"),
        pytest.param("x = f(a=1)\nf(a=x)", id="python-code"),
        pytest.param("[get_weather(city='Rome')]\nget_time()", id="a-list-and-a-call"),
    ],
)
def test_not_a_pythonic_call(text: str) -> None:
    assert parse(text).kind != "tool_calls"


def test_a_whole_reply_call_to_any_name_is_a_call() -> None:
    """The parser does not know the tools: act reports a name that is not one of them."""
    check(parse('print(text="hi")'), Call("print", {"text": "hi"}))


def test_the_preamble_is_the_thought() -> None:
    decision = parse('Looking it up.\n<|python_start|>[get_weather(city="Rome")]<|python_end|>')
    assert decision.thought == "Looking it up."


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[" * 100_000, id="deep-list"),
        pytest.param("(" * 100_000, id="deep-parentheses"),
        pytest.param("[f(a=1), " * 10_000 + "]", id="many-calls-unclosed"),
        pytest.param("[f(a=1)" + ", f(a=1)" * 2_000 + "]", id="many-calls"),
        pytest.param("<|python_start|>" * 6_000, id="many-python-starts"),
        pytest.param("f(" + "a=1, " * 20_000 + ")", id="many-arguments"),
        pytest.param(" " * 100_000 + "f()", id="spaces"),
        pytest.param("f(x=" + "-" * 100_000 + "1)", id="many-signs"),
    ],
)
def test_hostile_replies_are_read_quickly(text: str) -> None:
    decision = parse(text)
    assert decision.kind in {"tool_calls", "final", "error"}
