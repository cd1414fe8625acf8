"""Hermes / Qwen ``<tool_call>`` replies: JSON, Qwen3-Coder XML and GLM-4.5 inside the tags.

Shapes from the Hermes 2 Pro / Hermes 3 and Qwen 2.5 / Qwen3 model cards and chat templates,
Qwen3-Coder's chat template and GLM-4.5's, as vLLM's ``hermes``, ``qwen3_coder`` and
``glm45`` tool parsers read them.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Call, Calls, Error, Expected, Final, check
from thinkgraph.policies.react_text import parse
from thinkgraph.policies.textcalls import hermes
from thinkgraph.policies.textcalls._reasoning import split_reasoning

ROME = Call("get_weather", {"city": "Rome"})
"""The call most cases expect."""

_ROME_JSON = '{"name": "get_weather", "arguments": {"city": "Rome"}}'

JSON_CASES = [
    pytest.param(f"<tool_call>\n{_ROME_JSON}\n</tool_call>", ROME, id="one-call"),
    pytest.param(f"<tool_call>{_ROME_JSON}</tool_call>", ROME, id="one-call-on-one-line"),
    pytest.param(
        f"I'll look up the weather first.\n<tool_call>\n{_ROME_JSON}\n</tool_call>",
        ROME,
        id="preamble-then-call",
    ),
    pytest.param(
        f"<think>\nThe user wants Rome's weather.\n</think>\n\n<tool_call>\n{_ROME_JSON}\n"
        "</tool_call>",
        ROME,
        id="qwen3-think-then-call",
    ),
    pytest.param(
        f"The user wants Rome's weather.\n</think>\n\n<tool_call>\n{_ROME_JSON}\n</tool_call>",
        ROME,
        id="only-closing-think",
    ),
    pytest.param(
        "<scratch_pad>\nGoal: Rome's weather. Action: call get_weather.\n</scratch_pad>\n"
        f"<tool_call>\n{_ROME_JSON}\n</tool_call>",
        ROME,
        id="hermes3-scratch-pad",
    ),
    pytest.param(
        f"<tool_call>\n{_ROME_JSON}\n</tool_call>\n<tool_call>\n"
        '{"name": "get_time", "arguments": {"zone": "CET"}}\n</tool_call>',
        Calls(ROME, Call("get_time", {"zone": "CET"})),
        id="two-calls-in-order",
    ),
    pytest.param(
        "<tool_call>\n{'name': 'get_weather', 'arguments': {'city': 'Rome', 'days': 3, "
        "'metric': True}}\n</tool_call>",
        Call("get_weather", {"city": "Rome", "days": 3, "metric": True}),
        id="python-dict-quoting",
    ),
    pytest.param(f"<tool_call>\n{_ROME_JSON}\n", ROME, id="closing-tag-missing-at-end"),
    pytest.param(
        f"<tool_call>\n{_ROME_JSON}\n</tool_call><|im_end|>", ROME, id="end-of-turn-token-after"
    ),
    pytest.param(
        f"<tool_call>\n{_ROME_JSON}\n<tool_call>\n"
        '{"name": "get_time", "arguments": {}}\n</tool_call>',
        Calls(ROME, Call("get_time", {})),
        id="first-closing-tag-missing",
    ),
    pytest.param(
        '<tool_call>\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}\n'
        "</tool_call>",
        ROME,
        id="arguments-as-a-json-string",
    ),
    pytest.param(
        f'<tool_call>\n{_ROME_JSON}\n{{"name": "get_time", "arguments": {{"zone": "CET"}}}}\n'
        "</tool_call>",
        Calls(ROME, Call("get_time", {"zone": "CET"})),
        id="two-calls-on-their-own-lines-in-one-tag",
    ),
    pytest.param(
        '<tool_call>\n{"type": "function", "function": {"name": "get_weather", '
        '"arguments": {"city": "Rome"}}}\n</tool_call>',
        ROME,
        id="openai-function-wrapper",
    ),
    pytest.param(
        '<tool_call>\n{"name": "get_time"}\n</tool_call>', Call("get_time", {}), id="no-arguments"
    ),
    pytest.param(
        f"<tool_call>\n{_ROME_JSON}}}\n</tool_call>", ROME, id="one-closing-brace-too-many"
    ),
]

QWEN3_CODER_CASES = [
    pytest.param(
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n"
        "</function>\n</tool_call>",
        ROME,
        id="qwen3-coder-one-parameter",
    ),
    pytest.param(
        "Let me check.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n"
        "</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=hourly>\nfalse\n"
        "</parameter>\n</function>\n</tool_call>",
        Call("get_weather", {"city": "Rome", "days": 3, "hourly": False}),
        id="qwen3-coder-json-scalars",
    ),
    pytest.param(
        "<tool_call>\n<function=write_file>\n<parameter=path>\nmain.py\n</parameter>\n"
        "<parameter=content>\ndef main():\n    print('hi')\n\n</parameter>\n"
        "</function>\n</tool_call>",
        Call("write_file", {"path": "main.py", "content": "def main():\n    print('hi')\n"}),
        id="qwen3-coder-multi-line-value-keeps-newlines",
    ),
    pytest.param(
        '<tool_call>\n<function=search>\n<parameter=filters>\n{"lang": "en"}\n</parameter>\n'
        '<parameter=tags>\n["a", "b"]\n</parameter>\n<parameter=query>\n"quoted"\n'
        "</parameter>\n</function>\n</tool_call>",
        Call("search", {"filters": {"lang": "en"}, "tags": ["a", "b"], "query": '"quoted"'}),
        id="qwen3-coder-json-object-and-array-quoted-string-stays-text",
    ),
    pytest.param(
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n"
        "</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
        Calls(ROME, Call("get_time", {})),
        id="qwen3-coder-two-calls",
    ),
    pytest.param(
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n",
        ROME,
        id="qwen3-coder-closing-tag-missing",
    ),
    pytest.param(
        "<tool_call>\n<function=get_weather>\n<parameter=city>Rome\n</function>\n</tool_call>",
        ROME,
        id="qwen3-coder-parameter-not-closed",
    ),
    pytest.param(
        "<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>",
        ROME,
        id="qwen3-coder-without-tool-call-tags",
    ),
    pytest.param(
        '<tool_call>\n<function=get_weather>{"city": "Rome"}</function>\n</tool_call>',
        ROME,
        id="function-tag-with-json-body",
    ),
]

GLM_CASES = [
    pytest.param(
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n"
        "</tool_call>",
        ROME,
        id="glm-one-argument",
    ),
    pytest.param(
        "I will check.\n<tool_call>get_weather<arg_key>city</arg_key><arg_value>Rome"
        "</arg_value><arg_key>days</arg_key><arg_value>3</arg_value><arg_key>opts</arg_key>"
        '<arg_value>{"metric": true}</arg_value></tool_call>',
        Call("get_weather", {"city": "Rome", "days": 3, "opts": {"metric": True}}),
        id="glm-json-values",
    ),
    pytest.param(
        "<tool_call>get_time\n</tool_call>", Call("get_time", {}), id="glm-without-arguments"
    ),
    pytest.param(
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n"
        "</tool_call>\n<tool_call>get_time\n<arg_key>zone</arg_key>\n<arg_value>CET"
        "</arg_value>\n</tool_call>",
        Calls(ROME, Call("get_time", {"zone": "CET"})),
        id="glm-two-calls",
    ),
    pytest.param(
        '<tool_call>get_weather\n{"city": "Rome"}\n</tool_call>',
        ROME,
        id="glm4-name-then-json-object",
    ),
]

NEGATIVE_CASES = [
    pytest.param(
        f"<think>\nMaybe <tool_call>\n{_ROME_JSON}\n</tool_call>\n</think>\nFinal Answer: 21C",
        Final("21C"),
        id="drafted-call-in-think-not-acted-on",
    ),
    pytest.param(
        f"<think>\n<tool_call>\n{_ROME_JSON}\n</tool_call>\n</think>\nIt is sunny in Rome.",
        Error("no 'Action:' line"),
        id="drafted-call-in-think-only",
    ),
    pytest.param(
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"\n</tool_call>',
        Error("<tool_call>"),
        id="invalid-json-names-the-tag",
    ),
    pytest.param(
        '<tool_call>\n{"name": "get weather now", "arguments": {"city": "Rome"}}\n</tool_call>',
        Error("not a tool name"),
        id="name-with-spaces",
    ),
    pytest.param(
        "<tool_call>get weather now<arg_key>city</arg_key><arg_value>Rome</arg_value></tool_call>",
        Error("not a tool name"),
        id="glm-name-with-spaces",
    ),
    pytest.param(
        '<tool_call>\n{"name": "Alice", "age": 3}\n</tool_call>',
        Error("<tool_call>"),
        id="data-object-in-tags-is-not-a-call",
    ),
    pytest.param(
        '<tool_call>\n{"name": "get_weather", "arguments": ["Rome"]}\n</tool_call>',
        Error("not one JSON object"),
        id="arguments-not-an-object",
    ),
    pytest.param(
        "<tool_call>\nI should look up the weather in Rome.\n</tool_call>",
        Error("<tool_call>"),
        id="prose-in-closed-tags",
    ),
    pytest.param(
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n"
        "</function>\n<function=get time>\n</function>\n</tool_call>",
        Error("not a tool name"),
        id="qwen3-coder-bad-second-name",
    ),
    pytest.param(
        "<tool_call>get_weather<arg_key>city</arg_key>Rome</tool_call>",
        Error("<arg_value>"),
        id="glm-key-without-value",
    ),
    pytest.param(
        "Thought: the format puts a call in a <tool_call> tag, as the docs say.\n"
        "Final Answer: Wrap it in <tool_call> tags.",
        Final("Wrap it in <tool_call> tags."),
        id="prose-mention-with-final-answer",
    ),
    pytest.param(
        "You asked how to call a tool: write <tool_call> and then the call.",
        Error("no 'Action:' line"),
        id="prose-mention-only-is-feedback",
    ),
]

CASES = JSON_CASES + QWEN3_CODER_CASES + GLM_CASES + NEGATIVE_CASES


@pytest.mark.parametrize(("reply", "expected"), CASES)
def test_hermes_reply(reply: str, expected: Expected) -> None:
    check(parse(reply), expected)


def test_preamble_is_the_thought() -> None:
    decision = parse(f"I'll look up the weather first.\n<tool_call>\n{_ROME_JSON}\n</tool_call>")
    assert decision.thought == "I'll look up the weather first."


def test_scratch_pad_is_the_thought_not_an_argument() -> None:
    decision = parse(
        "<scratch_pad>\nGoal: Rome's weather.\n</scratch_pad>\n"
        f"<tool_call>\n{_ROME_JSON}\n</tool_call>"
    )
    assert decision.thought == "Goal: Rome's weather."
    assert decision.tool_calls[0].args == {"city": "Rome"}


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param('{"city": "Rome", "temp": 20}', id="json-answer"),
        pytest.param('{"name": "Alice", "age": 3}', id="json-answer-with-a-name-key"),
        pytest.param(_ROME_JSON, id="bare-call-json-is-another-format"),
        pytest.param("Rome is sunny today.", id="plain-answer"),
    ],
)
def test_replies_without_tags_are_not_hermes(reply: str) -> None:
    assert hermes.read(split_reasoning(reply)) is None


def test_json_answer_without_tags_is_not_a_call() -> None:
    assert parse('{"city": "Rome", "temp": 20}').kind != "tool_calls"


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param("<tool_call>" * 9_100, id="openers"),
        pytest.param("<tool_call>" + "[" * 100_000, id="brackets"),
        pytest.param("<tool_call>" + "{" * 100_000, id="braces"),
        pytest.param("<tool_call>" + "{}" * 50_000 + "</tool_call>", id="empty-objects"),
        pytest.param(
            "<tool_call>" + '{"name": "a", "arguments": {}}' * 3_400 + "</tool_call>",
            id="runaway-objects-in-one-tag",
        ),
        pytest.param("<tool_call>" + " " * 100_000 + "x", id="spaces"),
        pytest.param("<tool_call><function=a>" + "<parameter=x>" * 7_700, id="parameters"),
        pytest.param("<tool_call>a" + "<arg_key>k</arg_key>" * 5_000, id="arg-keys"),
        pytest.param("<function=" * 10_000, id="function-openers"),
        pytest.param('<tool_call>{"name": "a"}</tool_call>' * 2_800, id="runaway-calls"),
        pytest.param("<tool_call>a</tool_call>" * 4_200, id="runaway-glm-calls"),
    ],
)
def test_hostile_reply_is_read_without_a_call(reply: str) -> None:
    assert len(reply) >= 100_000
    assert parse(reply).kind != "tool_calls"
