"""XML invoke replies: ``<function_calls><invoke name=…>``, MiniMax-M2, legacy ``<tool_name>``.

Shapes from Anthropic's legacy tool-use documentation (``<function_calls>`` / ``<invoke>``,
and the older ``<tool_name>`` / ``<parameters>``), MiniMax-M2's tool-calling guide and vLLM's
``minimax_m2`` tool parser.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Call, Calls, Error, Expected, Final, check
from thinkgraph.policies.react_text import parse
from thinkgraph.policies.textcalls import xml_invoke
from thinkgraph.policies.textcalls._reasoning import split_reasoning

ROME = Call("get_weather", {"city": "Rome"})
"""The call most cases expect."""

_INVOKE = '<invoke name="get_weather">\n<parameter name="city">Rome</parameter>\n</invoke>'
_TIME = '<invoke name="get_time">\n<parameter name="zone">CET</parameter>\n</invoke>'


def _ns(text: str, prefix: str = "x") -> str:
    """The same reply with every tag in the `prefix` namespace."""
    return text.replace("</", "\0").replace("<", f"<{prefix}:").replace("\0", f"</{prefix}:")


INVOKE_CASES = [
    pytest.param(f"<function_calls>\n{_INVOKE}\n</function_calls>", ROME, id="one-invoke"),
    pytest.param(
        f"Let me check the weather.\n\n<function_calls>\n{_INVOKE}\n</function_calls>",
        ROME,
        id="preamble-then-invoke",
    ),
    pytest.param(
        f"<function_calls>\n{_INVOKE}\n{_TIME}\n</function_calls>",
        Calls(ROME, Call("get_time", {"zone": "CET"})),
        id="two-invokes-in-order",
    ),
    pytest.param(
        f"<function_calls>\n{_INVOKE}\n</function_calls>\n<function_calls>\n{_TIME}\n"
        "</function_calls>",
        Calls(ROME, Call("get_time", {"zone": "CET"})),
        id="two-blocks",
    ),
    pytest.param(
        _ns(f"<function_calls>\n{_INVOKE}\n{_TIME}\n</function_calls>"),
        Calls(ROME, Call("get_time", {"zone": "CET"})),
        id="namespaced-tags",
    ),
    pytest.param(f"<function_calls>\n{_INVOKE}\n", ROME, id="closing-tag-cut-by-the-stop-sequence"),
    pytest.param(
        "<function_calls>\n<invoke name='get_weather'>\n<parameter name='city'>Rome"
        "</parameter>\n</invoke>\n</function_calls>",
        ROME,
        id="single-quoted-attributes",
    ),
    pytest.param(
        '<function_calls>\n<invoke name="get_weather">\n<parameter name="city">Rome'
        '</parameter>\n<parameter name="days">3</parameter>\n<parameter name="hourly">true'
        '</parameter>\n<parameter name="opts">{"metric": false}</parameter>\n'
        '<parameter name="tags">["a", "b"]</parameter>\n</invoke>\n</function_calls>',
        Call(
            "get_weather",
            {
                "city": "Rome",
                "days": 3,
                "hourly": True,
                "opts": {"metric": False},
                "tags": ["a", "b"],
            },
        ),
        id="json-values",
    ),
    pytest.param(
        '<function_calls>\n<invoke name="write_file">\n<parameter name="content">\n'
        'line one\n  line two\n</parameter>\n<parameter name="path">01.txt</parameter>\n'
        "</invoke>\n</function_calls>",
        Call("write_file", {"content": "line one\n  line two", "path": "01.txt"}),
        id="multi-line-value-keeps-its-newlines",
    ),
    pytest.param(
        '<function_calls>\n<invoke name="get_time">\n</invoke>\n</function_calls>',
        Call("get_time", {}),
        id="invoke-without-parameters",
    ),
]

MINIMAX_CASES = [
    pytest.param(
        f"<minimax:tool_call>\n{_INVOKE}\n</minimax:tool_call>", ROME, id="minimax-one-invoke"
    ),
    pytest.param(
        "<think>\nThe user wants Rome's weather.\n</think>\n\n"
        f"<minimax:tool_call>\n{_INVOKE}\n{_TIME}\n</minimax:tool_call>",
        Calls(ROME, Call("get_time", {"zone": "CET"})),
        id="minimax-think-then-two-invokes",
    ),
    pytest.param(f"<minimax:tool_call>\n{_INVOKE}\n", ROME, id="minimax-closing-tag-missing"),
]

LEGACY_CASES = [
    pytest.param(
        '<tool_name>get_weather</tool_name>\n<parameters>{"city": "Rome"}</parameters>',
        ROME,
        id="legacy-json-parameters",
    ),
    pytest.param(
        "<tool_name>get_weather</tool_name>\n<parameters>\n<city>Rome</city>\n<days>3</days>\n"
        "</parameters>",
        Call("get_weather", {"city": "Rome", "days": 3}),
        id="legacy-child-tag-parameters",
    ),
    pytest.param(
        "<function_calls>\n<invoke>\n<tool_name>get_weather</tool_name>\n<parameters>\n"
        "<city>Rome</city>\n</parameters>\n</invoke>\n</function_calls>",
        ROME,
        id="legacy-inside-invoke",
    ),
    pytest.param(
        "<tool_name>get_time</tool_name>", Call("get_time", {}), id="legacy-without-parameters"
    ),
    pytest.param(
        "<function_calls>\n<invoke>\n<tool_name>get_weather</tool_name>\n<parameters>\n"
        "<city>Rome</city>\n</parameters>\n</invoke>\n<invoke>\n<tool_name>get_time</tool_name>\n"
        "<parameters>\n<zone>CET</zone>\n</parameters>\n</invoke>\n</function_calls>",
        Calls(ROME, Call("get_time", {"zone": "CET"})),
        id="legacy-two-invokes",
    ),
]

NEGATIVE_CASES = [
    pytest.param(
        f"<think>\n<function_calls>\n{_INVOKE}\n</function_calls>\n</think>\nFinal Answer: 21C",
        Final("21C"),
        id="drafted-invoke-in-think-not-acted-on",
    ),
    pytest.param(
        '<function_calls>\n<invoke name="get weather now">\n<parameter name="city">Rome'
        "</parameter>\n</invoke>\n</function_calls>",
        Error("not a tool name"),
        id="name-with-spaces",
    ),
    pytest.param(
        '<function_calls>\n<invoke>\n<parameter name="city">Rome</parameter>\n</invoke>\n'
        "</function_calls>",
        Error("<invoke>"),
        id="invoke-without-a-name",
    ),
    pytest.param(
        '<tool_name>get_weather</tool_name>\n<parameters>{"city": "Rome"</parameters>',
        Error("<parameters>"),
        id="legacy-invalid-json-names-the-tag",
    ),
    pytest.param(
        "<tool_name>get_weather</tool_name>\n<parameters>the city of Rome</parameters>",
        Error("<parameters>"),
        id="legacy-prose-parameters",
    ),
    pytest.param(
        '<function_calls>\n<invoke name="get_weather">\n<parameter name="city">Rome'
        '</parameter>\n<parameter name="city">Paris</parameter>\n</invoke>\n</function_calls>',
        Error("twice"),
        id="same-parameter-twice",
    ),
    pytest.param(
        "<function_calls>\nget_weather Rome\n</function_calls>",
        Error("<function_calls>"),
        id="block-without-an-invoke",
    ),
    pytest.param(
        "<tool_name>get weather</tool_name>", Error("not a tool name"), id="legacy-name-spaces"
    ),
    pytest.param(
        "Thought: the old format puts the tool in a <tool_name> tag and calls in an <invoke>.\n"
        "Final Answer: Use <tool_name> inside <invoke>, in <function_calls>.",
        Final("Use <tool_name> inside <invoke>, in <function_calls>."),
        id="prose-mention-with-final-answer",
    ),
    pytest.param(
        "<function_calls>\n<invoke>\n<tool_name>get_weather\n</invoke>\n</function_calls>",
        Error("<tool_name>"),
        id="legacy-tool-name-not-closed",
    ),
]

CASES = INVOKE_CASES + MINIMAX_CASES + LEGACY_CASES + NEGATIVE_CASES


@pytest.mark.parametrize(("reply", "expected"), CASES)
def test_xml_invoke_reply(reply: str, expected: Expected) -> None:
    check(parse(reply), expected)


def test_preamble_is_the_thought() -> None:
    decision = parse(f"Let me check the weather.\n\n<function_calls>\n{_INVOKE}\n</function_calls>")
    assert decision.thought == "Let me check the weather."


def test_think_block_is_the_thought() -> None:
    decision = parse(f"<think>\nRome, then.\n</think>\n<minimax:tool_call>\n{_INVOKE}\n")
    assert decision.thought == "Rome, then."


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param('{"city": "Rome", "temp": 20}', id="json-answer"),
        pytest.param('{"name": "Alice", "age": 3}', id="json-answer-with-a-name-key"),
        pytest.param("<city>Rome</city> is sunny.", id="other-tags"),
        pytest.param('<tool_call>{"name": "a", "arguments": {}}</tool_call>', id="hermes-tags"),
        pytest.param("Rome is sunny today.", id="plain-answer"),
    ],
)
def test_replies_without_its_tags_are_not_xml_invoke(reply: str) -> None:
    assert xml_invoke.read(split_reasoning(reply)) is None


def test_json_answer_without_tags_is_not_a_call() -> None:
    assert parse('{"city": "Rome", "temp": 20}').kind != "tool_calls"


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param("<function_calls>" * 6_300, id="openers"),
        pytest.param('<invoke name="' * 7_200, id="unclosed-attributes"),
        pytest.param('<invoke name="a">' + '<parameter name="x">' * 5_000, id="parameters"),
        pytest.param("<tool_name>a</tool_name><parameters>" + "<p>" * 33_400, id="children"),
        pytest.param("<function_calls>" + "[" * 100_000, id="brackets"),
        pytest.param('<invoke name="a"></invoke>' * 4_000, id="runaway-invokes"),
        pytest.param("<tool_name>a</tool_name>" * 4_200, id="runaway-legacy-calls"),
        pytest.param("<tool_name>a</tool_name><parameters>" + " " * 100_000, id="spaces"),
    ],
)
def test_hostile_reply_is_read_without_a_call(reply: str) -> None:
    assert len(reply) >= 100_000
    assert parse(reply).kind != "tool_calls"
