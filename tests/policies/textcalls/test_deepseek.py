"""DeepSeek's native tool-call tokens (V3 / R1 and V3.1), as their chat templates write them.

V3 and R1: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`` then the
arguments in a fenced JSON block, ``<｜tool▁call▁end｜>``, …, ``<｜tool▁calls▁end｜>``. V3.1:
``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>``. Some decoders write the
full-width bar and the ▁ as ASCII ``|`` and ``_``.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import Call, Calls, Error, Expected, Final, check
from thinkgraph.policies.react_text import parse
from thinkgraph.policies.textcalls import deepseek
from thinkgraph.policies.textcalls._reasoning import split_reasoning

ROME = Call("get_weather", {"city": "Rome"})
"""The call most cases here expect."""

BEGIN, END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL, CALL_END, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"

V3_ROME = f'{CALL}function{SEP}get_weather\n```json\n{{"city": "Rome"}}\n```{CALL_END}'
V3_TIME = f'{CALL}function{SEP}get_time\n```json\n{{"zone": "CET"}}\n```{CALL_END}'
V31_ROME = f'{CALL}get_weather{SEP}{{"city": "Rome"}}{CALL_END}'
V31_TIME = f'{CALL}get_time{SEP}{{"zone": "CET"}}{CALL_END}'
TIME = Call("get_time", {"zone": "CET"})

CASES = [
    pytest.param(f"{BEGIN}{V3_ROME}{END}", ROME, id="v3-call"),
    pytest.param(f"{BEGIN}{V3_ROME}\n{V3_TIME}{END}", Calls(ROME, TIME), id="v3-several-calls"),
    pytest.param(
        f'{BEGIN}{CALL}function{SEP}get_weather\n{{"city": "Rome"}}{CALL_END}{END}',
        ROME,
        id="v3-unfenced-arguments",
    ),
    pytest.param(f"{BEGIN}{V31_ROME}{END}", ROME, id="v31-call"),
    pytest.param(f"{BEGIN}{V31_ROME}{V31_TIME}{END}", Calls(ROME, TIME), id="v31-several-calls"),
    pytest.param(
        f"{BEGIN}{V31_ROME}{END}<｜end▁of▁sentence｜>", ROME, id="v31-with-end-of-sentence"
    ),
    pytest.param(f'{BEGIN}{CALL}get_weather{SEP}{{"city": "Rome"}}', ROME, id="v31-unclosed"),
    pytest.param(
        '<|tool_calls_begin|><|tool_call_begin|>get_weather<|tool_sep|>{"city": "Rome"}'
        "<|tool_call_end|><|tool_calls_end|>",
        ROME,
        id="ascii-tokens",
    ),
    pytest.param(
        "<|tool▁calls▁begin|><|tool▁call▁begin|>function<|tool▁sep|>get_weather\n```json\n"
        '{"city": "Rome"}\n```<|tool▁call▁end|><|tool▁calls▁end|>',
        ROME,
        id="ascii-bars-with-underscore-blocks",
    ),
    pytest.param(
        f"<think>The user wants the weather in Rome.</think>\n\n{BEGIN}{V3_ROME}{END}",
        ROME,
        id="r1-think-then-call",
    ),
    pytest.param(f"I'll check the weather.{BEGIN}{V31_ROME}{END}", ROME, id="v31-after-preamble"),
    pytest.param(
        f"{BEGIN}{CALL}get_time{SEP}{{}}{CALL_END}{END}", Call("get_time", {}), id="v31-empty-args"
    ),
    # -- never misparsed
    pytest.param(
        f"<think>maybe {BEGIN}{V31_ROME}{END}</think>\nFinal Answer: 4",
        Final("4"),
        id="call-drafted-in-think-not-acted-on",
    ),
    pytest.param(
        f'{BEGIN}{CALL}get_weather{SEP}{{"city": {CALL_END}{END}',
        Error("not one JSON object"),
        id="malformed-arguments",
    ),
    pytest.param(
        f'{BEGIN}{CALL}get the weather{SEP}{{"city": "Rome"}}{CALL_END}{END}',
        Error("not a tool name"),
        id="name-that-is-not-a-tool-name",
    ),
    pytest.param(f"{BEGIN}{END}", Error("no call"), id="empty-block"),
    pytest.param(
        f'{BEGIN}{CALL}get_weather {{"city": "Rome"}}{CALL_END}{END}',
        Error("tool▁sep"),
        id="call-without-separator",
    ),
    pytest.param(
        f'{BEGIN}{CALL}get_weather{SEP}["Rome"]{CALL_END}{END}',
        Error("not one JSON object"),
        id="arguments-that-are-a-list",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_deepseek_replies(text: str, expected: Expected) -> None:
    check(parse(text), expected)


def test_think_text_is_the_thought() -> None:
    decision = parse(f"<think>Rome, then.</think>{BEGIN}{V31_ROME}{END}")
    assert decision.thought == "Rome, then."


def test_preamble_is_the_thought() -> None:
    decision = parse(f"Looking it up.\n{BEGIN}{V31_ROME}{END}")
    assert decision.thought == "Looking it up."


def test_a_json_answer_without_the_tokens_is_not_a_call() -> None:
    assert parse('{"city": "Rome", "temp": 20}').kind != "tool_calls"


def test_other_families_tokens_are_left_to_them() -> None:
    kimi = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Rome"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    assert deepseek.read(split_reasoning(kimi)) is None
    assert deepseek.read(split_reasoning("<|tool_call|>[]")) is None


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(BEGIN + CALL * 10_000, id="many-call-openers"),
        pytest.param(BEGIN + SEP * 20_000, id="many-separators"),
        pytest.param(f"{BEGIN}{CALL}x{SEP}" + "{" * 100_000, id="deep-arguments"),
        pytest.param(
            f"{BEGIN}{CALL}function{SEP}x\n```json\n" + "`" * 100_000 + "{", id="many-backticks"
        ),
        pytest.param(BEGIN + " " * 100_000, id="many-spaces"),
    ],
)
def test_a_hostile_reply_is_read_quickly(text: str) -> None:
    assert parse(text).kind == "error"
