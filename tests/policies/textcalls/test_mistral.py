"""Mistral's ``[TOOL_CALLS]`` formats, from the tokenizer versions in ``mistral-common``.

Up to v3 (Mistral 7B v0.3, Mixtral, Nemo) the token is followed by a JSON list of calls,
``[{"name", "arguments", "id"}]``; from v11 (Mistral Small 3.1+, Devstral, Magistral) each
call is ``[TOOL_CALLS]NAME[ARGS]{…}``, with ``[CALL_ID]id`` before ``[ARGS]`` when the call
has an id; v13 / Magistral reason in ``[THINK]…[/THINK]`` first.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Call, Calls, Error, Expected, Final, check
from thinkgraph.policies.react_text import parse

ROME = Call("get_weather", {"city": "Rome"})
"""The call most cases here expect."""

_ROME_JSON = '{"name": "get_weather", "arguments": {"city": "Rome"}, "id": "a1b2c3d4e"}'

CASES = [
    # -- v3 and earlier: a JSON list after the token
    pytest.param(f"[TOOL_CALLS] [{_ROME_JSON}]", ROME, id="v3-list"),
    pytest.param(f"[TOOL_CALLS][{_ROME_JSON}]", ROME, id="v3-list-without-space"),
    pytest.param(
        f'[TOOL_CALLS] [{_ROME_JSON}, {{"name": "get_time", "arguments": {{"zone": "CET"}}, '
        '"id": "f5g6h7i8j"}]',
        Calls(ROME, Call("get_time", {"zone": "CET"})),
        id="v3-several-calls-in-order",
    ),
    pytest.param(
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}]',
        ROME,
        id="v3-arguments-as-a-json-string",
    ),
    pytest.param(
        "[TOOL_CALLS] [{'name': 'get_weather', 'arguments': {'city': 'Rome'}}]",
        ROME,
        id="v3-python-quoting",
    ),
    pytest.param(f"[TOOL_CALLS] [{_ROME_JSON}]</s>", ROME, id="v3-with-end-of-sequence"),
    pytest.param(
        f"I will look up the weather.\n[TOOL_CALLS] [{_ROME_JSON}]", ROME, id="v3-after-preamble"
    ),
    # -- v11 and later: NAME[ARGS]{…}, repeated for several calls
    pytest.param('[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}', ROME, id="v11-call"),
    pytest.param(
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}[TOOL_CALLS]get_time[ARGS]{"zone": "CET"}',
        Calls(ROME, Call("get_time", {"zone": "CET"})),
        id="v11-several-calls-in-order",
    ),
    pytest.param(
        '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Rome"}', ROME, id="v11-call-id"
    ),
    pytest.param(
        '[TOOL_CALLS]get_weather{"city": "Rome"}', ROME, id="v11-args-token-dropped-by-decoder"
    ),
    pytest.param('[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}</s>', ROME, id="v11-with-eos"),
    pytest.param("[TOOL_CALLS]get_time[ARGS]{}", Call("get_time", {}), id="v11-no-arguments"),
    pytest.param(
        'Let me check.[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}', ROME, id="v11-after-preamble"
    ),
    # -- v13 / Magistral: reasoning first
    pytest.param(
        '[THINK]The user wants the weather.[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}',
        ROME,
        id="magistral-think-then-call",
    ),
    pytest.param(
        '[THINK]maybe [TOOL_CALLS]delete_all[ARGS]{"really": true}[/THINK]Final Answer: 4',
        Final("4"),
        id="magistral-call-drafted-in-think-not-acted-on",
    ),
    # -- never misparsed
    pytest.param(
        '[TOOL_CALLS] [{"city": "Rome", "temp": 20}]',
        Error("[TOOL_CALLS]"),
        id="a-list-that-is-not-calls",
    ),
    pytest.param(
        '[TOOL_CALLS]get_weather[ARGS]{"city": ',
        Error("not one JSON object"),
        id="v11-malformed-arguments",
    ),
    pytest.param(
        f"[TOOL_CALLS] [{_ROME_JSON}",
        Error("[TOOL_CALLS]"),
        id="v3-unclosed-list",
    ),
    pytest.param(
        '[TOOL_CALLS]get the weather[ARGS]{"city": "Rome"}',
        Error("not a tool name"),
        id="v11-name-that-is-not-a-tool-name",
    ),
    pytest.param(
        '[TOOL_CALLS] [{"name": "get the weather", "arguments": {}}]',
        Error("not a tool name"),
        id="v3-name-that-is-not-a-tool-name",
    ),
    pytest.param("[TOOL_CALLS]get_weather", Error("no arguments"), id="v11-without-arguments"),
    pytest.param("[TOOL_CALLS]", Error("[TOOL_CALLS]"), id="token-alone"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_mistral_replies(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_think_text_is_the_thought() -> None:
    decision = parse('[THINK]Rome, then.[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}')
    assert decision.thought == "Rome, then."


def test_preamble_is_the_thought() -> None:
    decision = parse('I will look it up.[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}')
    assert decision.thought == "I will look it up."


def test_a_json_answer_without_the_token_is_not_a_call() -> None:
    assert parse('{"name": "Alice", "age": 3}').kind != "tool_calls"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[TOOL_CALLS]" * 10_000, id="many-tokens"),
        pytest.param("[TOOL_CALLS]" + "</s>" * 25_000, id="many-end-tokens"),
        pytest.param("[TOOL_CALLS] " + "[" * 100_000, id="deep-list"),
        pytest.param("[TOOL_CALLS]x[ARGS]" + "{" * 100_000, id="deep-arguments"),
        pytest.param("[TOOL_CALLS]" + "[ARGS]" * 20_000, id="many-args-tokens"),
        pytest.param("[TOOL_CALLS]" + " " * 100_000 + "x", id="many-spaces"),
    ],
)
def test_a_hostile_reply_is_read_quickly(text: str) -> None:
    assert parse(text).kind == "error"
