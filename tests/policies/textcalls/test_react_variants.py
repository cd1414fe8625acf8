"""ReAct as models vary it: a fenced Action Input, call syntax or JSON on the ``Action:`` line,
and LangChain's JSON-agent blob ``{"action", "action_input"}``.

Shapes from the ReAct prompt LangChain's agents use (``Action:`` then a ```json fenced blob;
``{"action": "Final Answer", "action_input": …}`` for the answer), smolagents'
ToolCallingAgent prompt (``Action:`` then ``{"name", "arguments"}``), and the call syntax
models carry over from code (``Action: search(query="x")``).
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Call, Calls, Error, Expected, Final, assert_consistent, check
from thinkgraph.policies.react_text import parse

OSLO = Call("search", {"query": "weather in Oslo"})

CASES = [
    # -- a fenced Action Input
    pytest.param(
        'Action: search\nAction Input:\n```json\n{"query": "weather in Oslo"}\n```',
        OSLO,
        id="fenced-action-input",
    ),
    pytest.param(
        'Action: search\nAction Input: ```\n{"query": "weather in Oslo"}\n```\nI will wait.',
        OSLO,
        id="fenced-action-input-then-prose",
    ),
    # -- special tokens end a final answer
    pytest.param(
        "Final Answer: 4<|im_end|>\n<|im_start|>user", Final("4"), id="answer-ends-at-token"
    ),
    pytest.param(
        "Final Answer: Paris<｜end▁of▁sentence｜>",
        Final("Paris"),
        id="answer-ends-at-deepseek-token",
    ),
    # -- call syntax on the Action line
    pytest.param('Action: search(query="weather in Oslo")', OSLO, id="call-keyword-argument"),
    pytest.param("Action: search(query='weather in Oslo')", OSLO, id="call-single-quotes"),
    pytest.param(
        'Action: search(query="weather in Oslo", limit=3, fresh=true)',
        Call("search", {"query": "weather in Oslo", "limit": 3, "fresh": True}),
        id="call-several-keyword-arguments",
    ),
    pytest.param('Action: search({"query": "weather in Oslo"})', OSLO, id="call-json-object"),
    pytest.param(
        'Action: `search({"query": "weather in Oslo"})`', OSLO, id="call-json-object-in-backticks"
    ),
    pytest.param(
        'Thought: I need a tool.\nAction: search ({"query": "weather in Oslo"})',
        OSLO,
        id="call-space-before-parenthesis",
    ),
    pytest.param(
        'Action: search({\n  "query": "weather in Oslo"\n})', OSLO, id="call-over-several-lines"
    ),
    pytest.param(
        "Action: get_time()", Error("Action Input"), id="call-without-arguments-needs-input"
    ),
    pytest.param(
        'Action: search("weather in Oslo")',
        Error("Action: search\nAction Input:"),
        id="call-positional-string-is-feedback",
    ),
    pytest.param(
        "Action: calculator(expression=2+2)",
        Error("Action: calculator\nAction Input:"),
        id="call-non-literal-argument-is-feedback",
    ),
    pytest.param(
        "Action: Search[weather in Oslo]",
        Error("Action: Search\nAction Input:"),
        id="react-paper-bracket-call-is-feedback",
    ),
    pytest.param(
        "Action: I will search(the web)",
        Error("is not the name of a tool"),
        id="sentence-with-parentheses-is-feedback",
    ),
    # -- JSON on the Action line
    pytest.param(
        'Action: {"name": "search", "arguments": {"query": "weather in Oslo"}}',
        OSLO,
        id="json-call-on-action-line",
    ),
    pytest.param(
        'Action:\n```json\n{"name": "search", "arguments": {"query": "weather in Oslo"}}\n```',
        OSLO,
        id="json-call-fenced-under-action",
    ),
    pytest.param(
        'Action: {"name": "search", "parameters": {"query": "weather in Oslo"}}',
        OSLO,
        id="json-call-with-parameters",
    ),
    pytest.param(
        'Action: [{"name": "search", "arguments": {"query": "weather in Oslo"}}, '
        '{"name": "get_time", "arguments": {}}]',
        Calls(OSLO, Call("get_time", {})),
        id="json-list-of-calls-on-action-line",
    ),
    pytest.param(
        'Action: {"city": "Rome", "temp": 20}',
        Error("held JSON instead of a tool name"),
        id="json-data-on-action-line-is-not-a-call",
    ),
    pytest.param(
        'Action: {"name": "Alice", "age": 3}',
        Error("held JSON instead of a tool name"),
        id="json-record-with-a-name-is-not-a-call",
    ),
    pytest.param(
        'Action: {"name": "search the web", "arguments": {}}',
        Error("not a tool name"),
        id="json-call-with-a-sentence-for-a-name",
    ),
    # -- LangChain's JSON-agent blob
    pytest.param(
        '{"action": "search", "action_input": {"query": "weather in Oslo"}}',
        OSLO,
        id="blob-reply",
    ),
    pytest.param(
        'Thought: I should search.\n```json\n{"action": "search", '
        '"action_input": {"query": "weather in Oslo"}}\n```',
        OSLO,
        id="blob-in-a-fence-after-a-thought",
    ),
    pytest.param(
        'Action:\n```json\n{"action": "search", "action_input": "weather in Oslo"}\n```',
        Call("search", raw="weather in Oslo"),
        id="blob-under-action-with-a-text-input",
    ),
    pytest.param(
        'Thought: I should search.\nAction: {"action": "search", "action_input": '
        '{"query": "weather in Oslo"}}',
        OSLO,
        id="blob-on-action-line",
    ),
    pytest.param(
        'Thought: I know it.\n```json\n{"action": "Final Answer", "action_input": "4"}\n```',
        Final("4"),
        id="blob-final-answer",
    ),
    pytest.param(
        '{"action": "final_answer", "action_input": "Paris"}',
        Final("Paris"),
        id="blob-final-answer-underscored",
    ),
    pytest.param(
        '{"action": "search the web", "action_input": {"query": "x"}}',
        Error("is not the name of a tool"),
        id="blob-with-a-sentence-for-an-action",
    ),
    pytest.param(
        '{"action": "Final Answer", "action_input": ""}',
        Error("empty"),
        id="blob-with-an-empty-answer",
    ),
    pytest.param(
        '{"action": "buy", "price": 3}',
        Error('"action_input"'),
        id="json-with-an-action-key-but-no-input-is-not-a-call",
    ),
    pytest.param(
        '<think>{"action": "delete_all", "action_input": {}}</think>I am not sure yet.',
        Error("no 'Action:' line"),
        id="blob-drafted-inside-think-is-not-acted-on",
    ),
    pytest.param(
        'Action: search\nAction Input: {"action": "search", "action_input": "weather in Oslo"}',
        Error('"action"'),
        id="blob-as-an-action-input-stays-feedback",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_react_variant(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_blob_thought_is_the_text_before_it() -> None:
    decision = parse(
        'Thought: I should search.\n```json\n{"action": "search", "action_input": {"q": "x"}}\n```'
    )
    assert decision.thought == "I should search."


def test_call_syntax_thought_is_kept() -> None:
    assert parse('Thought: look it up\nAction: search(query="x")').thought == "look it up"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Action: search(" + "a=1, " * 25_000 + ")", id="many-keyword-arguments"),
        pytest.param("Action: " + "{" * 100_000, id="many-braces-on-action-line"),
        pytest.param('{"action": ' * 10_000, id="many-blob-openers"),
        pytest.param("Action: search(" + "(" * 100_000, id="many-parentheses-unclosed"),
        pytest.param('Action: {"name": "a", "arguments": ' + "[" * 100_000, id="deep-arguments"),
        pytest.param("Action: x(" + "'a'," * 30_000 + ")", id="many-positional-arguments"),
    ],
)
def test_hostile_replies_are_read_quickly(text: str) -> None:
    assert len(text) >= 100_000
    assert_consistent(parse(text))
