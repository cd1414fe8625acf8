"""The ReAct text parser, as a specification: each case is a reply a model could write.

The shapes of an Action Input are in test_react_text_input.py, failures and hostile
input in test_react_text_errors.py.
"""

from __future__ import annotations

import pytest

from tests.policies._expect import CALC, Call, Error, Expected, Final, check
from thinkgraph.llm.base import ModelReply
from thinkgraph.policies.react_text import ReActText, parse

CASES = [
    # -- the canonical format
    pytest.param(
        'Thought: add them\nAction: calculator\nAction Input: {"expression": "2+2"}',
        CALC,
        id="canonical-action",
    ),
    pytest.param("Thought: I know it\nFinal Answer: 4", Final("4"), id="canonical-final"),
    pytest.param("FINAL_ANSWER: 4", Final("4"), id="final-answer-underscore-token"),
    pytest.param("final answer: 4", Final("4"), id="final-answer-lower-case"),
    pytest.param("FINAL ANSWER: 4", Final("4"), id="final-answer-upper-case"),
    pytest.param(
        'ACTION: calculator\nACTION INPUT: {"expression": "2+2"}', CALC, id="keys-upper-case"
    ),
    pytest.param(
        'action: calculator\naction input: {"expression": "2+2"}', CALC, id="keys-lower-case"
    ),
    pytest.param(
        'Action: calculator\nAction_Input: {"expression": "2+2"}',
        CALC,
        id="action-input-underscore",
    ),
    # -- markdown around keys
    pytest.param(
        '**Thought:** add\n**Action:** calculator\n**Action Input:** {"expression": "2+2"}',
        CALC,
        id="bold-keys-colon-inside",
    ),
    pytest.param(
        '**Action**: calculator\n**Action Input**: {"expression": "2+2"}',
        CALC,
        id="bold-keys-colon-outside",
    ),
    pytest.param("**Final Answer:** 4", Final("4"), id="bold-final-answer"),
    pytest.param("__Final Answer__: 4", Final("4"), id="underscore-bold-final-answer"),
    pytest.param("*Final Answer:* 4", Final("4"), id="italic-final-answer"),
    pytest.param("Final Answer: **4**", Final("**4**"), id="bold-inside-answer-is-kept"),
    pytest.param("### Final Answer: 4", Final("4"), id="heading-final-answer"),
    pytest.param(
        '1. Thought: add\n2. Action: calculator\n3. Action Input: {"expression": "2+2"}',
        CALC,
        id="numbered-list-keys",
    ),
    pytest.param(
        '- Action: calculator\n- Action Input: {"expression": "2+2"}', CALC, id="dash-bullet-keys"
    ),
    pytest.param(
        '* **Action:** calculator\n* **Action Input:** {"expression": "2+2"}',
        CALC,
        id="star-bullet-and-bold-keys",
    ),
    pytest.param(
        '   Action: calculator\n\tAction Input: {"expression": "2+2"}', CALC, id="indented-keys"
    ),
    pytest.param(
        'Thought 1: add\nAction 1: calculator\nAction Input 1: {"expression": "2+2"}',
        CALC,
        id="react-paper-numbered-keys",
    ),
    pytest.param(
        'I will add.\nAction: calculator\nAction Input: {"expression": "2+2"}',
        CALC,
        id="prose-before-action",
    ),
    # -- keys only count at the start of a line
    pytest.param(
        "The next Action: is not needed.\nFinal Answer: 4", Final("4"), id="mid-line-action-ignored"
    ),
    pytest.param(
        "I think the Final Answer: 4 is right.",
        Error("no 'Action:' line and no 'Final Answer:' line"),
        id="mid-line-final-answer-is-not-an-answer",
    ),
    # -- the action name
    pytest.param(
        'Action: `calculator`\nAction Input: {"expression": "2+2"}', CALC, id="name-in-backticks"
    ),
    pytest.param(
        'Action: calculator()\nAction Input: {"expression": "2+2"}', CALC, id="name-with-parens"
    ),
    pytest.param(
        'Action: `calculator()`\nAction Input: {"expression": "2+2"}',
        CALC,
        id="name-in-backticks-with-parens",
    ),
    pytest.param(
        'Action: **calculator**\nAction Input: {"expression": "2+2"}', CALC, id="name-in-bold"
    ),
    pytest.param(
        'Action: "calculator"\nAction Input: {"expression": "2+2"}', CALC, id="name-in-quotes"
    ),
    pytest.param(
        '**Action:**\ncalculator\n**Action Input:** {"expression": "2+2"}',
        CALC,
        id="name-on-the-next-line",
    ),
    pytest.param(
        'Action: \nAction Input: {"expression": "2+2"}',
        Error("'Action:' line had no tool name"),
        id="empty-name-is-an-error",
    ),
    pytest.param(
        "Action: ``",
        Error("'Action:' line had no tool name"),
        id="empty-backticks-name-is-an-error",
    ),
    pytest.param(
        "Action: _lookup\nAction Input: {}", Call("_lookup", {}), id="underscore-name-kept"
    ),
    pytest.param(
        'Action: no_such_tool\nAction Input: {"x": 1}',
        Call("no_such_tool", {"x": 1}),
        id="unknown-tool-is-parsed-act-decides",
    ),
    # -- think blocks
    pytest.param(
        "<think>2 and 2 make 4</think>\nFinal Answer: 4", Final("4"), id="think-block-removed"
    ),
    pytest.param(
        "<thinking>maybe Final Answer: 5</thinking>\nFinal Answer: 4",
        Final("4"),
        id="keys-inside-thinking-block-ignored",
    ),
    pytest.param(
        "<think>\nFinal Answer: 5\n</think>\nAction: calculator\n"
        'Action Input: {"expression": "2+2"}',
        CALC,
        id="line-start-key-inside-think-ignored",
    ),
    pytest.param("<THINK>hm</THINK>Final Answer: 4", Final("4"), id="think-tags-any-case"),
    pytest.param(
        "reasoning the template opened\n</think>\nFinal Answer: 4",
        Final("4"),
        id="closing-think-without-opening",
    ),
    pytest.param(
        '<think>I should add\nAction: calculator\nAction Input: {"expression": "2+2"}',
        CALC,
        id="unclosed-think-with-action-still-acts",
    ),
    pytest.param(
        "<think>still reasoning about it",
        Error("unclosed <think> block"),
        id="unclosed-think-without-action-is-an-error",
    ),
    pytest.param(
        "<think>all of it</think>",
        Error("only a reasoning block"),
        id="only-a-think-block-is-feedback-saying-so",
    ),
    # -- hallucinated observations
    pytest.param(
        'Action: calculator\nAction Input: {"expression": "2+2"}\nObservation: 4\n'
        "Thought: done\nFinal Answer: 4",
        CALC,
        id="hallucinated-observation-and-answer-ignored",
    ),
    pytest.param(
        'Action: calculator\nAction Input: {"expression": "2+2"}\n**Observation:** 4',
        CALC,
        id="bold-hallucinated-observation-ignored",
    ),
    pytest.param(
        'Action: calculator\nObservation: 4\nAction Input: {"expression": "9"}',
        Error("no 'Action Input:' for 'calculator'"),
        id="input-after-observation-ignored",
    ),
    pytest.param(
        "Final Answer: 4\nObservation: the user is happy",
        Final("4"),
        id="observation-after-final-answer-ignored",
    ),
    # -- action and final answer in one reply: the first wins
    pytest.param(
        'Action: calculator\nAction Input: {"expression": "2+2"}\nFinal Answer: 4',
        CALC,
        id="action-before-final-answer-wins",
    ),
    pytest.param(
        'Final Answer: 4\nAction: calculator\nAction Input: {"expression": "2+2"}',
        Final("4"),
        id="final-answer-before-action-wins",
    ),
    pytest.param(
        'Action: calculator\nAction Input: {"expression": "2+2"}\n'
        'Action: search\nAction Input: {"query": "x"}',
        CALC,
        id="only-the-first-action-is-taken",
    ),
    pytest.param(
        'Action: calculator\nAction: search\nAction Input: {"query": "x"}',
        Error("no 'Action Input:' for 'calculator'"),
        id="input-of-a-later-action-not-borrowed",
    ),
    # -- the final answer's extent
    pytest.param(
        "Final Answer: Paris\nis the capital.\n\nIt has 2M people.",
        Final("Paris\nis the capital.\n\nIt has 2M people."),
        id="final-answer-spans-lines-to-the-end",
    ),
    pytest.param(
        "Final Answer:\n\n- one\n- two", Final("- one\n- two"), id="final-answer-on-next-lines"
    ),
    pytest.param(
        "Final Answer: 4\nThought: that was easy", Final("4"), id="final-answer-ends-at-thought"
    ),
    pytest.param("Final Answer: 4\nFinal Answer: 5", Final("4"), id="first-of-two-final-answers"),
    pytest.param(
        'Final Answer: ```json\n{"a": 1}\n```',
        Final('```json\n{"a": 1}\n```'),
        id="final-answer-fence-kept-verbatim",
    ),
    pytest.param(
        "Thought: hmm\nFinal Answer:   ",
        Error("'Final Answer:' line was empty"),
        id="empty-final-answer-is-an-error",
    ),
    # -- neither action nor final answer
    pytest.param(
        "The answer is 4.",
        Error("Your reply had no 'Action:' line and no 'Final Answer:' line"),
        id="plain-prose-is-never-a-silent-answer",
    ),
    pytest.param(
        "Thought: I need to think more.",
        Error("Reply in exactly this format"),
        id="thought-only-is-an-error",
    ),
    pytest.param(
        'Action Input: {"expression": "2+2"}',
        Error("no 'Action:' line"),
        id="input-without-action-is-an-error",
    ),
    pytest.param("Observation: 4", Error("no 'Action:' line"), id="observation-only-is-an-error"),
    pytest.param("", Error("Your reply was empty"), id="empty-string"),
    pytest.param("   \n\t\n", Error("Your reply was empty"), id="whitespace-only"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_parse(text: str, expected: Expected) -> None:
    check(parse(text), expected)


# -- the thought ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "thought"),
    [
        pytest.param("Thought: add them\nAction: calc", "add them", id="thought-key"),
        pytest.param(
            "Thought: first\nI should add.\nAction: calc",
            "first\nI should add.",
            id="thought-runs-to-next-key",
        ),
        pytest.param("I will add.\n\nAction: calc", "I will add.", id="text-before-first-key"),
        pytest.param(
            "Preamble.\nThought: real\nAction: calc", "real", id="thought-key-beats-preamble"
        ),
        pytest.param(
            "<think>deep</think>\nAction: calc", "deep", id="think-block-when-no-thought-key"
        ),
        pytest.param(
            "<think>deep</think>\nThought: stated\nAction: calc",
            "stated",
            id="thought-key-beats-think-block",
        ),
        pytest.param("**Thought:** bold\n**Final Answer:** 4", "bold", id="bold-thought-key"),
        pytest.param(
            "Final Answer: 4\nThought: after", "", id="thought-after-the-decision-ignored"
        ),
        pytest.param("just prose", "just prose", id="error-keeps-what-the-model-said"),
    ],
)
def test_thought(text: str, thought: str) -> None:
    assert parse(text).thought == thought


# -- the policy methods -----------------------------------------------------------------------


def test_parse_reply_reads_the_reply_text() -> None:
    reply = ModelReply(text='Action: calculator\nAction Input: {"expression": "2+2"}')
    check(ReActText().parse_reply(reply), CALC)


def test_method_and_module_parse_agree() -> None:
    text = "Thought: t\nFinal Answer: 4"
    assert ReActText().parse(text).model_dump() == parse(text).model_dump()


def test_each_call_gets_its_own_id() -> None:
    text = "Action: clock\nAction Input: {}"
    assert parse(text).tool_calls[0].id != parse(text).tool_calls[0].id
