"""The ReAct text parser: every shape of Action Input a model writes, and what it becomes."""

from __future__ import annotations

import json

import pytest

from tests.policies._expect import CALC, Call, Error, Expected, check
from thinkgraph.policies.react_text import parse

INPUT_CASES = [
    # -- action input: JSON
    pytest.param(
        'Action: calculator\nAction Input:\n{"expression": "2+2"}', CALC, id="input-on-next-line"
    ),
    pytest.param(
        'Action: search\nAction Input: {\n  "query": "paris",\n  "limit": 3\n}',
        Call("search", {"query": "paris", "limit": 3}),
        id="input-spans-lines",
    ),
    pytest.param(
        'Action: calculator\nAction Input: ```json\n{"expression": "2+2"}\n```',
        CALC,
        id="input-in-json-fence",
    ),
    pytest.param(
        'Action: calculator\nAction Input:\n```\n{"expression": "2+2"}\n```',
        CALC,
        id="input-in-bare-fence-on-next-line",
    ),
    pytest.param(
        'Action: calculator\nAction Input: ```{"expression": "2+2"}```',
        CALC,
        id="input-inline-fence",
    ),
    pytest.param(
        'Action: calculator\nAction Input: ```json {"expression": "2+2"}```',
        CALC,
        id="input-inline-fence-with-language",
    ),
    pytest.param(
        'Action: calculator\nAction Input: ```json\n{"expression": "2+2"}',
        CALC,
        id="input-unclosed-fence",
    ),
    pytest.param(
        'Action: calculator\nAction Input: `{"expression": "2+2"}`', CALC, id="input-in-backticks"
    ),
    pytest.param(
        'Action: calculator\nAction Input: {"expression": "2+2"} I will wait for the result.',
        CALC,
        id="input-trailing-prose-same-line",
    ),
    pytest.param(
        'Action: calculator\nAction Input: {"expression": "2+2"}\n\nThen I will report back.',
        CALC,
        id="input-trailing-prose-next-lines",
    ),
    pytest.param(
        'Action: calculator\nAction Input: ```json\n{"expression": "2+2"}\n```\nLet me see.',
        CALC,
        id="input-fence-then-prose",
    ),
    pytest.param(
        'Action: echo\nAction Input: {"text": "Observation: x\\nAction: y"}',
        Call("echo", {"text": "Observation: x\nAction: y"}),
        id="keys-inside-json-string-are-data",
    ),
    pytest.param(
        'Action: echo\nAction Input: {"text": "héllo ✓"}',
        Call("echo", {"text": "héllo ✓"}),
        id="unicode-input",
    ),
    pytest.param(
        'Action: calculator\n{"expression": "2+2"}', CALC, id="json-under-action-without-input-key"
    ),
    pytest.param("Action: clock\nAction Input: {}", Call("clock", {}), id="empty-json-object"),
    # -- action input: none at all (a tool without arguments takes `{}`)
    pytest.param(
        "Action: clock\nAction Input:",
        Error("write Action Input: {}"),
        id="empty-input-is-an-error",
    ),
    pytest.param("Action: clock", Error("write Action Input: {}"), id="missing-input-is-an-error"),
    pytest.param(
        "Action: clock\nAction Input: ```\n```",
        Error("write Action Input: {}"),
        id="empty-fence-is-an-error",
    ),
    pytest.param(
        "Action: total\nAction Input: null",
        Error("write Action Input: {}"),
        id="json-null-is-no-input",
    ),
    # -- action input: not a JSON object
    pytest.param(
        "Action: calculator\nAction Input: 2+2",
        Call("calculator", raw="2+2"),
        id="bare-input-kept-raw",
    ),
    pytest.param(
        'Action: echo\nAction Input: "hello"',
        Call("echo", raw="hello"),
        id="json-string-input-unquoted",
    ),
    pytest.param(
        'Action: echo\nAction Input: "say \\"hi\\""',
        Call("echo", raw='say "hi"'),
        id="json-string-input-decoded",
    ),
    pytest.param(
        'Action: echo\nAction Input: "hello" and "bye"',
        Call("echo", raw='"hello" and "bye"'),
        id="quoted-string-with-more-text-kept-whole",
    ),
    pytest.param(
        "Action: search\nAction Input: capital of France",
        Call("search", raw="capital of France"),
        id="bare-words-input",
    ),
    pytest.param("Action: double\nAction Input: 21", Call("double", raw="21"), id="number-input"),
    pytest.param(
        "Action: total\nAction Input: [1, 2, 3]",
        Error("was a list"),
        id="json-array-input-is-an-error",
    ),
    pytest.param(
        "Action: python\nAction Input: ```python\nprint(1)\nprint(2)\n```",
        Call("python", raw="print(1)\nprint(2)"),
        id="fenced-code-kept-raw",
    ),
    # -- action input: broken JSON
    pytest.param(
        'Action: calculator\nAction Input: {"expression": "2+2"',
        Error("not valid JSON"),
        id="unterminated-object-is-an-error",
    ),
    pytest.param(
        "Action: calculator\nAction Input: {'expression': '2+2'}",
        Error("line 1, column 2"),
        id="single-quoted-object-error-has-position",
    ),
    pytest.param(
        'Action: search\nAction Input: {\n  "query": "x",\n  "limit": 3,,\n}',
        Error("line 3, column 14"),
        id="multi-line-object-error-has-line",
    ),
    pytest.param(
        'Action: calculator\nAction Input: ```json\n{"expression": 2+2}\n```',
        Error("'calculator'"),
        id="fenced-broken-json-error-names-tool",
    ),
]


@pytest.mark.parametrize(("text", "expected"), INPUT_CASES)
def test_action_input(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_arguments_round_trip_through_json() -> None:
    args = {"nested": {"list": [1, 2.5, None, True]}, "text": "a\nb"}
    decision = parse(f"Action: t\nAction Input: {json.dumps(args, indent=2)}")
    check(decision, Call("t", args))
