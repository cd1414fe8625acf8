"""gpt-oss's harmony format: channels, recipients, and the same text with its tokens stripped.

Cases follow OpenAI's harmony guide (the cookbook's "OpenAI Harmony Response Format") and
the gpt-oss model card: reasoning on the ``analysis`` channel, a call on ``commentary`` with
the recipient ``to=functions.NAME`` (in the header or after the channel), the answer on
``final``. The analysis text is the thought, never the answer.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Call, Calls, Error, Expected, Final, check
from thinkgraph.policies.react_text import parse

ROME = Call("get_weather", {"city": "Rome"})
"""The call most cases here expect."""

_ANALYSIS = "<|channel|>analysis<|message|>We need the weather in Rome.<|end|>"
_CALL = '<|message|>{"city": "Rome"}<|call|>'

CASES = [
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant<|channel|>commentary to=functions.get_weather "
        f"<|constrain|>json{_CALL}",
        ROME,
        id="recipient-after-channel-with-constrain",
    ),
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant to=functions.get_weather<|channel|>commentary "
        f"<|constrain|>json{_CALL}",
        ROME,
        id="recipient-in-header",
    ),
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant<|channel|>commentary to=functions.get_weather{_CALL}",
        ROME,
        id="without-constrain",
    ),
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant<|channel|>commentary to=functions.get_weather "
        '<|constrain|>json<|message|>{"city": "Rome"}',
        ROME,
        id="without-stop-token",
    ),
    pytest.param(
        '<|channel|>commentary to=functions.get_weather json<|message|>{"city": "Rome"}',
        ROME,
        id="call-without-analysis",
    ),
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant<|channel|>final<|message|>It is sunny in Rome.<|return|>",
        Final("It is sunny in Rome."),
        id="final-channel-is-the-answer",
    ),
    pytest.param(
        "<|channel|>analysis<|message|>2+2=4<|end|><|start|>assistant<|channel|>final"
        "<|message|>The answer is 4.",
        Final("The answer is 4."),
        id="final-without-return-token",
    ),
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>"
        f"<|start|>assistant<|channel|>commentary to=functions.get_weather json{_CALL}",
        ROME,
        id="preamble-then-call",
    ),
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant<|channel|>commentary to=functions.get_weather "
        f"json{_CALL}<|start|>assistant<|channel|>commentary to=functions.get_time json"
        '<|message|>{"zone": "CET"}<|call|>',
        Calls(ROME, Call("get_time", {"zone": "CET"})),
        id="several-calls-in-order",
    ),
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant<|channel|>commentary to=functions.get_time json"
        "<|message|>{}<|call|>",
        Call("get_time", {}),
        id="call-without-arguments",
    ),
    # -- ReAct written on the final channel, as a model asked for ReAct does
    pytest.param(
        "<|channel|>analysis<|message|>Use the tool.<|end|><|start|>assistant<|channel|>final"
        '<|message|>Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": '
        '"Rome"}<|return|>',
        ROME,
        id="react-action-on-final-channel",
    ),
    pytest.param(
        "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final"
        "<|message|>Final Answer: 4<|return|>",
        Final("4"),
        id="react-final-answer-on-final-channel",
    ),
    # -- the same text with the special tokens stripped by a decoder
    pytest.param(
        'analysisWe need the weather.assistantcommentary to=functions.get_weather json{"city":'
        '"Rome"}',
        ROME,
        id="stripped-call",
    ),
    pytest.param(
        'analysisWe need the weather.assistantcommentary to=functions.get_weather{"city":"Rome"}',
        ROME,
        id="stripped-call-without-constrain",
    ),
    pytest.param(
        "analysisWe need the weather.assistant to=functions.get_weathercommentary json"
        '{"city":"Rome"}',
        ROME,
        id="stripped-call-recipient-in-header",
    ),
    pytest.param(
        "analysis2 and 2 make 4.assistantfinalThe answer is 4.",
        Final("The answer is 4."),
        id="stripped-final",
    ),
    pytest.param(
        'commentary to=functions.get_weather json{"city": "Rome"}',
        ROME,
        id="stripped-call-without-analysis",
    ),
    # -- never misparsed
    pytest.param(
        "analysis of the data shows the answer is 4.",
        Error("no 'Action:' line"),
        id="prose-starting-with-analysis-is-not-harmony",
    ),
    pytest.param(
        "analysis of the data is done.\nFinal Answer: 4",
        Final("4"),
        id="prose-starting-with-analysis-then-react",
    ),
    pytest.param(
        "<|channel|>analysis<|message|>Action: delete_all\nAction Input: {}<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Nothing to do.<|return|>",
        Final("Nothing to do."),
        id="action-drafted-in-analysis-not-acted-on",
    ),
    pytest.param(
        "<|channel|>analysis<|message|>Maybe call get_weather.<|end|>",
        Error("no tool call and no final answer"),
        id="analysis-only-is-feedback",
    ),
    pytest.param(
        "<|channel|>analysis<|message|>Search the web.<|end|><|start|>assistant<|channel|>"
        'analysis to=browser.search code<|message|>{"query": "Rome weather"}<|call|>',
        Error("browser.search"),
        id="built-in-recipient-is-feedback",
    ),
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant<|channel|>commentary to=functions.get_weather json"
        '<|message|>{"city": <|call|>',
        Error("not one JSON object"),
        id="malformed-arguments",
    ),
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant<|channel|>commentary to=functions. json"
        '<|message|>{"city": "Rome"}<|call|>',
        Error("not a tool name"),
        id="empty-function-name",
    ),
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant<|channel|>final<|message|>"
        '{"city": "Rome", "temp": 20}<|return|>',
        Final('{"city": "Rome", "temp": 20}'),
        id="json-answer-on-final-is-not-a-call",
    ),
    pytest.param(
        f"{_ANALYSIS}<|start|>assistant<|channel|>final<|message|><|return|>",
        Error("empty"),
        id="empty-final",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_harmony_replies(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_analysis_is_the_thought_never_the_answer() -> None:
    decision = parse(
        "<|channel|>analysis<|message|>The user wants 2+2; it is 4.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>4<|return|>"
    )
    assert decision.answer == "4"
    assert decision.thought == "The user wants 2+2; it is 4."


def test_stripped_analysis_is_the_thought() -> None:
    decision = parse('analysisWe need the weather.assistantcommentary to=functions.x json{"a":1}')
    assert decision.thought == "We need the weather."
    assert decision.tool_calls[0].args == {"a": 1}


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("<|channel|>" * 20_000, id="many-channels"),
        pytest.param("<|message|>" * 20_000, id="many-messages"),
        pytest.param("<|start|>assistant to=" * 10_000, id="many-headers"),
        pytest.param("<|start|>" + "a<|constrain|>" * 8_000, id="many-constrains"),
        pytest.param("<|channel|>analysis<|message|>" + "x<|constrain|>" * 8_000, id="many-pieces"),
        pytest.param("analysis" + "assistantfinal" * 7_000, id="many-stripped-finals"),
        pytest.param(
            "<|channel|>commentary to=functions.x<|message|>" + "{" * 100_000, id="deep-braces"
        ),
    ],
)
def test_a_hostile_reply_is_read_quickly(text: str) -> None:
    decision = parse(text)
    assert decision.kind in {"error", "final"}
