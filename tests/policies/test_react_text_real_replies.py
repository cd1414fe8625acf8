"""The ReAct text parser on reply shapes real models write (issue 12).

Each case is a reply of the kind agent-framework issue trackers report from real models:
decorated tool names, full-width colons, markdown around the input, JSON strings that
wrap an object, raw newlines in JSON, call syntax, placeholders and other protocols.
What a model could not have meant as a call is an error whose feedback shows the format,
never a call to a tool named like a sentence.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Call, Error, Expected, Final, check
from thinkgraph.policies.react_text import parse

OSLO = Call("search", {"query": "weather in Oslo"})
"""The call most cases here expect."""

_INPUT = 'Action Input: {"query": "weather in Oslo"}'

NAME_CASES = [
    pytest.param(f"Action: [search]\n{_INPUT}", OSLO, id="name-in-brackets"),
    pytest.param(f"Action: [`search`]\n{_INPUT}", OSLO, id="name-in-brackets-and-backticks"),
    pytest.param(f"Action: **[search]**\n{_INPUT}", OSLO, id="name-in-bold-brackets"),
    pytest.param(f"Action: 'search'\n{_INPUT}", OSLO, id="name-in-single-quotes"),
    pytest.param(f"Action: “search”\n{_INPUT}", OSLO, id="name-in-curly-quotes"),
    pytest.param(f"Action: search (searches the web)\n{_INPUT}", OSLO, id="name-with-description"),
    pytest.param(
        f"Action: `search` (use it to look things up on the web)\n{_INPUT}",
        OSLO,
        id="backticked-name-with-description",
    ),
    pytest.param(f"Action: search.\n{_INPUT}", OSLO, id="name-with-full-stop"),
    pytest.param(
        f"Action: get-weather\n{_INPUT}",
        Call("get-weather", {"query": "weather in Oslo"}),
        id="name-with-hyphen",
    ),
]

FULL_WIDTH_CASES = [
    pytest.param(
        'Thought：我需要查询北京的天气。\nAction：get_weather\nAction Input：{"city": "北京"}',
        Call("get_weather", {"city": "北京"}),
        id="full-width-colons-chinese",
    ),
    pytest.param(
        'Thought：東京の天気を調べます。\nAction：get_weather\nAction Input：{"city": "東京"}',
        Call("get_weather", {"city": "東京"}),
        id="full-width-colons-japanese",
    ),
    pytest.param(
        f"**Action：** search\n**Action Input：** {_INPUT[14:]}", OSLO, id="full-width-bold-keys"
    ),
    pytest.param(
        "Thought：我知道了。\nFinal Answer：北京今天晴。",
        Final("北京今天晴。"),
        id="full-width-final",
    ),
    pytest.param("FINAL_ANSWER：42", Final("42"), id="full-width-final-underscore-token"),
]

MARKDOWN_INPUT_CASES = [
    pytest.param(
        'Action: search\n**Action Input:** {"query": "weather in Oslo"}',
        OSLO,
        id="bold-input-key",
    ),
    pytest.param(
        'Action: search\nAction Input: **{"query": "weather in Oslo"}**',
        OSLO,
        id="bold-json",
    ),
    pytest.param(
        'Action: search\nAction Input:** {"query": "weather in Oslo"}',
        OSLO,
        id="stray-bold-after-colon",
    ),
    pytest.param(
        'Action: search\nAction Input:\n```json\n{"query": "weather in Oslo"}\n```',
        OSLO,
        id="json-fence-under-key",
    ),
    pytest.param(
        '**Action:** search\n**Action Input:**\n```json\n{"query": "weather in Oslo"}\n```',
        OSLO,
        id="bold-key-then-json-fence",
    ),
    pytest.param(
        'Action: search\nAction Input: **`{"query": "weather in Oslo"}`**',
        OSLO,
        id="bold-backticked-json",
    ),
]

LENIENT_JSON_CASES = [
    pytest.param(
        'Action: search\nAction Input: "{\\"query\\": \\"weather in Oslo\\"}"',
        OSLO,
        id="json-string-wrapping-an-object",
    ),
    pytest.param(
        'Action: python\nAction Input: {"code": "x = 1\nprint(x)"}',
        Call("python", {"code": "x = 1\nprint(x)"}),
        id="raw-newline-inside-json-string",
    ),
    pytest.param(
        'Action: write_file\nAction Input: {\n  "path": "notes.txt",\n'
        '  "content": "line one\n\tline two"\n}',
        Call("write_file", {"path": "notes.txt", "content": "line one\n\tline two"}),
        id="raw-newline-and-tab-in-multi-line-object",
    ),
    pytest.param(
        'Action: echo\nAction Input: "line one\nline two"',
        Call("echo", raw="line one\nline two"),
        id="raw-newline-inside-string-input",
    ),
    pytest.param(
        'Action: search\nAction Input: "weather in Oslo',
        Call("search", raw="weather in Oslo"),
        id="unterminated-string-input",
    ),
    pytest.param(
        'Action: search\nAction Input: "weather in Oslo\nObservation: It is raining.',
        Call("search", raw="weather in Oslo"),
        id="unterminated-string-then-hallucinated-observation",
    ),
    pytest.param(
        "Action: search\nAction Input: 'weather in Oslo'",
        Call("search", raw="weather in Oslo"),
        id="single-quoted-string-input",
    ),
    pytest.param(
        'Action: search\nAction Input: "Shohei Ohtani home runs 2022"',
        Call("search", raw="Shohei Ohtani home runs 2022"),
        id="quoted-search-query",
    ),
]

CALL_ON_THE_ACTION_LINE = [
    # -- call syntax with literal arguments, JSON and JSON-agent blobs are read (issue 27)
    pytest.param('Action: search({"query": "weather in Oslo"})', OSLO, id="call-syntax-with-json"),
    pytest.param(
        'Thought: I need a tool.\nAction: search ({"input": "weather in Oslo"})',
        Call("search", {"input": "weather in Oslo"}),
        id="call-syntax-with-space-and-json",
    ),
    pytest.param(
        'Action: calculator(expression="2+2")',
        Call("calculator", {"expression": "2+2"}),
        id="call-syntax-with-keyword-arguments",
    ),
    pytest.param(
        'Action:\n```json\n{"action": "search", "action_input": "weather in Oslo"}\n```',
        Call("search", raw="weather in Oslo"),
        id="json-agent-blob-under-action",
    ),
    pytest.param(
        'Thought: I should search.\nAction: {"action": "search", "action_input": {"query": "x"}}',
        Call("search", {"query": "x"}),
        id="json-agent-blob-on-action-line",
    ),
    pytest.param(
        'Thought: I know it.\n```json\n{"action": "Final Answer", "action_input": "4"}\n```',
        Final("4"),
        id="json-agent-blob-reply",
    ),
]

ERROR_CASES = [
    # -- call syntax on the Action line that cannot be read as a call
    pytest.param(
        'Action: search("weather in Oslo")',
        Error("Action: search\nAction Input: <its arguments as one JSON object>"),
        id="call-syntax-with-a-positional-string",
    ),
    pytest.param(
        "Action: calculator(expression=2+2)",
        Error('Action: calculator\nAction Input: {"expression": "2+2"}'),
        id="call-syntax-with-an-expression",
    ),
    pytest.param(
        "Action: Search[weather in Oslo]",
        Error("Action: Search\nAction Input:"),
        id="react-paper-bracket-call",
    ),
    # -- placeholders and sentences instead of a tool name
    pytest.param(
        "Thought: I can answer directly.\nAction: None\nFinal Answer: 4",
        Error("'None' is not the name of a tool"),
        id="action-none",
    ),
    pytest.param(
        "Thought: no tool fits.\nAction: None (direct response required)",
        Error("is not the name of a tool"),
        id="action-none-with-reason",
    ),
    pytest.param("Action: N/A\nAction Input: N/A", Error("Final Answer:"), id="action-n-a"),
    pytest.param(
        'Action: Use weather_tool\nAction Input: {"city": "Oslo"}',
        Error("'Use weather_tool' is not the name of a tool"),
        id="action-use-tool-sentence",
    ),
    pytest.param(
        "Action: I will search the web for the weather in Oslo.",
        Error("only the name of one tool"),
        id="action-sentence",
    ),
    pytest.param(
        'Action: search, calculator\nAction Input: {"query": "x"}',
        Error("is not the name of a tool"),
        id="two-tool-names",
    ),
    # -- the final answer written as an action
    pytest.param(
        "Action: Final Answer: The capital of France is Paris.",
        Error("'Final Answer' is not a tool"),
        id="final-answer-on-the-action-line",
    ),
    pytest.param(
        "Thought: I know it.\nAction: Final Answer\nAction Input: Paris",
        Error("'Final Answer' is not a tool"),
        id="final-answer-as-the-action",
    ),
    # -- another protocol
    pytest.param(
        'Action:\n```json\n{"action": "search"}\n```',
        Error("Write the tool's name after 'Action:'"),
        id="json-agent-blob-without-an-input",
    ),
    pytest.param(
        'Action: search\nAction Input: {"action": "search", "action_input": "weather in Oslo"}',
        Error('"action"'),
        id="json-agent-blob-as-input",
    ),
    # -- action inputs that are not arguments
    pytest.param(
        'Action: search\nAction Input: ["weather in Oslo", "weather in Bergen"]',
        Error("a list"),
        id="list-input",
    ),
    pytest.param(
        "Action: search\nAction Input: query=weather in Oslo",
        Error('{"query": "weather in Oslo"}'),
        id="key-value-input",
    ),
    pytest.param(
        'Action: search\nAction Input: query="weather in Oslo", limit=3',
        Error('{"query": "weather in Oslo", "limit": 3}'),
        id="key-value-pairs-input",
    ),
    pytest.param(
        "Action: search\nAction Input: \"{'query': 'weather in Oslo'}\"",
        Error("not valid JSON"),
        id="json-string-wrapping-a-python-dict",
    ),
    # -- a missing or empty input
    pytest.param("Action: get_time", Error("write Action Input: {}"), id="missing-input"),
    pytest.param(
        "Action: get_time\nAction Input:", Error("write Action Input: {}"), id="empty-input"
    ),
    pytest.param(
        "Action: get_time\nAction Input: None", Error("write Action Input: {}"), id="input-none"
    ),
    pytest.param(
        "Action: get_time\nAction Input: N/A", Error("write Action Input: {}"), id="input-n-a"
    ),
    pytest.param(
        'Action: get_time\nAction Input: ""',
        Error("write Action Input: {}"),
        id="input-empty-string",
    ),
    pytest.param(
        "Action: get_time\nAction Input: ```\n```",
        Error("write Action Input: {}"),
        id="input-empty-fence",
    ),
    pytest.param(
        "Action: get_time\nI will check the clock.",
        Error("write Action Input: {}"),
        id="prose-under-action-is-not-an-input",
    ),
]

FENCE_CASES = [
    pytest.param(
        "Thought: the user asked how to call tools.\n"
        "Final Answer: Reply like this:\n"
        "```\n"
        "Thought: I need the weather.\n"
        "Action: search\n"
        'Action Input: {"query": "weather in Oslo"}\n'
        "Observation: rain\n"
        "Final Answer: It rains.\n"
        "```\n"
        "Then wait for the result.",
        Final(
            "Reply like this:\n"
            "```\n"
            "Thought: I need the weather.\n"
            "Action: search\n"
            'Action Input: {"query": "weather in Oslo"}\n'
            "Observation: rain\n"
            "Final Answer: It rains.\n"
            "```\n"
            "Then wait for the result."
        ),
        id="final-answer-with-fenced-format-example",
    ),
    pytest.param(
        "Final Answer: Add a comment:\n```python\n# Thought: keep it short\nx = 1\n```",
        Final("Add a comment:\n```python\n# Thought: keep it short\nx = 1\n```"),
        id="final-answer-with-fenced-heading-like-comment",
    ),
    pytest.param(
        "Action: python\nAction Input: ```python\n# Thought: try it\nprint(1)\n```",
        Call("python", raw="# Thought: try it\nprint(1)"),
        id="fenced-code-input-with-key-like-comment",
    ),
    pytest.param(
        "```\nThought: I need the weather.\nAction: search\n{_INPUT}\n```".replace(
            "{_INPUT}", _INPUT
        ),
        OSLO,
        id="whole-reply-in-a-fence-still-acts",
    ),
    pytest.param(
        f"Thought: I need the weather.\n```\nAction: search\n{_INPUT}\n```",
        OSLO,
        id="action-only-in-a-fence-still-acts",
    ),
]

STILL_WORKING = [
    pytest.param(
        "Action: search\nAction Input: capital of France",
        Call("search", raw="capital of France"),
        id="bare-words-input-still-raw",
    ),
    pytest.param(
        "Action: calculator\nAction Input: 2+2",
        Call("calculator", raw="2+2"),
        id="bare-expression-still-raw",
    ),
    pytest.param("Action: get_time\nAction Input: {}", Call("get_time", {}), id="empty-object"),
    pytest.param(
        "Action: search\nAction Input: a = b is an equation",
        Call("search", raw="a = b is an equation"),
        id="sentence-with-equals-still-raw",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    NAME_CASES
    + FULL_WIDTH_CASES
    + MARKDOWN_INPUT_CASES
    + LENIENT_JSON_CASES
    + CALL_ON_THE_ACTION_LINE
    + ERROR_CASES
    + FENCE_CASES
    + STILL_WORKING,
)
def test_real_reply(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_full_width_thought_is_read() -> None:
    assert parse("Thought：先查天气。\nAction：search\nAction Input：{}").thought == "先查天气。"


def test_every_error_shows_the_expected_format() -> None:
    for case in ERROR_CASES:
        error = parse(case.values[0]).error  # type: ignore[arg-type]
        assert error is not None and "Action Input: <the tool's arguments" in error, case.id


def test_missing_input_feedback_is_exact() -> None:
    assert parse("Action: get_time").error == (
        "Your reply had no 'Action Input:' for 'get_time'. Write the tool's arguments as one "
        "JSON object after 'Action Input:'; for a tool without arguments, write "
        "Action Input: {}\n"
        "\n"
        "Reply in exactly this format:\n"
        "\n"
        "Thought: <your reasoning about what to do next>\n"
        "Action: <the name of one tool>\n"
        "Action Input: <the tool's arguments as one JSON object>\n"
        "\n"
        "or, when you know the answer:\n"
        "\n"
        "Thought: <your reasoning>\n"
        "Final Answer: <your answer>"
    )


def test_call_syntax_feedback_rewrites_the_call() -> None:
    error = parse("Action: calculator(expression=2+2)").error
    assert error is not None
    assert error.startswith(
        "Your 'Action:' line wrote the call as 'calculator(expression=2+2)'. "
        "Write the tool's name alone after 'Action:' and its arguments as one JSON object "
        "after 'Action Input:', like this:\n"
        "\n"
        "Action: calculator\n"
        'Action Input: {"expression": "2+2"}\n'
        "\n"
        "Reply in exactly this format:"
    )


def test_json_agent_final_answer_feedback_shows_the_final_answer_line() -> None:
    error = parse('```json\n{"action": "Final Answer", "answer": "4"}\n```').error
    assert error is not None
    assert "When you know the answer, write it after 'Final Answer:'" in error
    assert "like this:\n\nFinal Answer: <your answer>\n\n" in error


def test_a_long_sentence_is_quoted_short() -> None:
    error = parse("Action: " + "I will look it up " * 50).error
    assert error is not None
    assert error.startswith("'I will look it up") and "…' is not the name of a tool" in error
    assert len(error.split("\n")[0]) < 300
