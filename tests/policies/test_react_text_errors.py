"""The ReAct text parser on failure: exact feedback, and no input that makes it raise."""

from __future__ import annotations

import random
import string

import pytest

from tests.policies._expect import assert_consistent
from thinkgraph.policies.react_text import parse

# -- feedback ---------------------------------------------------------------------------------


def test_feedback_shows_the_expected_format() -> None:
    error = parse("I am not sure.").error
    assert error is not None
    assert "Thought:" in error and "Action: <" in error and "Action Input:" in error
    assert "Final Answer: <your answer>" in error


def test_invalid_json_feedback_names_the_tool_and_position() -> None:
    error = parse('Action: search\nAction Input: {"q": "x" "n": 1}').error
    assert error == (
        "Your 'Action Input:' for 'search' is not valid JSON: Expecting ',' delimiter at "
        "line 1, column 11. Write the arguments as one JSON object, with double-quoted keys "
        'and strings, e.g. Action Input: {"name": "value"}.\n'
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


def test_no_decision_feedback_is_exact() -> None:
    assert parse("The answer is 4.").error == (
        "Your reply had no 'Action:' line and no 'Final Answer:' line. "
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


# -- robustness ---------------------------------------------------------------------------------


_FRAGMENTS = [
    "Thought:",
    "Action:",
    "Action Input:",
    "Final Answer:",
    "FINAL_ANSWER:",
    "Observation:",
    "**Action:**",
    "- ",
    "1. ",
    "<think>",
    "</think>",
    "<thinking>",
    "```json",
    "```",
    "`",
    "{",
    "}",
    '"',
    "[",
    "]",
    ":",
    "()",
    "\n",
    "\n",
    "  ",
    "calculator",
    '{"a": 1}',
    "\\",
    "\x00",
    "é✓",
]


def _random_reply(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 200)))
    return "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(0, 40)))


def test_random_replies_never_raise_and_stay_consistent() -> None:
    rng = random.Random(20240611)
    kinds = set()
    for _ in range(3000):
        decision = parse(_random_reply(rng))
        assert_consistent(decision)
        kinds.add(decision.kind)
    assert kinds == {"tool_calls", "final", "error"}  # the generator reaches every outcome


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(" " * 1_000_000, id="a-million-spaces"),
        pytest.param("Action: x\nAction Input: " + "[" * 100_000, id="deep-json-array"),
        pytest.param("Action: x\nAction Input: " + '{"a":' * 100_000, id="deep-json-object"),
        pytest.param("<think>" * 100_000, id="many-open-think-tags"),
        pytest.param("Thought: a\n" * 100_000 + "Final Answer: 4", id="many-thoughts"),
        pytest.param("*" * 200_000 + ":", id="many-stars"),
        pytest.param("Final Answer: " + "x" * 2_000_000, id="huge-answer"),
        pytest.param("```\nThought: a\n" * 50_000 + "Final Answer: 4", id="many-fences"),
        pytest.param("Action: x\nAction Input: " + "a=b, " * 100_000 + "!", id="many-pairs"),
        pytest.param("Action: x\nAction Input: " + "**" * 100_000 + "{}", id="many-stars-input"),
        pytest.param("Action: " + "[`*" * 100_000 + "x", id="many-decorations"),
        pytest.param("Action: a" + " " * 100_000 + "x", id="spaces-inside-a-name"),
        pytest.param("Action: a" + " (" * 100_000 + "x", id="many-descriptions"),
        pytest.param("Action: x(" + "(" * 100_000 + ")", id="many-parentheses"),
        pytest.param('Action: x\nAction Input: "' + "\\" * 100_000, id="many-backslashes"),
    ],
)
def test_hostile_replies_parse_quickly_without_raising(text: str) -> None:
    assert_consistent(parse(text))


def test_non_string_input_is_an_error_not_a_crash() -> None:
    decision = parse(None)  # type: ignore[arg-type]
    assert decision.kind == "error"


def test_the_tool_list_follows_a_tool_whose_description_changed() -> None:
    from thinkgraph import tool
    from thinkgraph.policies.react_text import describe_tools

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    first = describe_tools([lookup])
    assert describe_tools([lookup]) == first  # rendered once, then reused
    lookup.description = "Look a key up in the archive."
    assert "in the archive" in describe_tools([lookup])
    assert "in the archive" not in first
