"""Projection: which steps of the chain a model sees, and how ReActText words them."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from thinkgraph.policies.base import BaseTextPolicy, Policy
from thinkgraph.policies.json_plan import JsonPlan
from thinkgraph.policies.projection import (
    AssistantTurn,
    FeedbackTurn,
    GuidanceTurn,
    LessonTurn,
    ObservationTurn,
    RejectionTurn,
    TaskTurn,
    UnparsedTurn,
    project,
)
from thinkgraph.policies.react_text import ReActText, parse
from thinkgraph.policies.structured_step import StructuredStep
from thinkgraph.state import (
    BaseStep,
    ErrorStep,
    FinalStep,
    HumanStep,
    LLMCallStep,
    ObservationStep,
    ResetStep,
    TaskStep,
    ThoughtStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
    ValidationStep,
    Verdict,
)
from thinkgraph.tools import tool
from thinkgraph.types import NextAction

# -- tools ------------------------------------------------------------------------------------


@tool
def calculator(expression: str) -> float:
    """Evaluate an arithmetic expression.

    Args:
        expression: The expression, e.g. "2 * (3 + 4)".
    """
    return 0.0


class Point(BaseModel):
    x: float
    y: float


@tool
def search(
    query: str,
    limit: int = 5,
    lang: Literal["en", "fr"] = "en",
    tags: list[str] | None = None,
) -> list[str]:
    """Search the web."""
    return []


@tool
def plot(where: Point) -> None:
    """Mark a point on the map."""


# -- chain builders -----------------------------------------------------------------------------

TASK = TaskStep(text="What is 2 + 2?")


def acting(thought: str, call: ToolCall, text: str = "") -> list[BaseStep]:
    """One think step that called a tool: llm_call, thought, tool_call."""
    llm = LLMCallStep(text=text or f"Thought: {thought}\nAction: {call.name}")
    return [
        llm,
        ThoughtStep(text=thought, llm_call_id=llm.id),
        ToolCallStep(call=call, think_step=1),
    ]


def answering(thought: str, answer: str) -> list[BaseStep]:
    """One think step that gave a candidate answer."""
    llm = LLMCallStep(text=f"Thought: {thought}\nFinal Answer: {answer}")
    return [
        llm,
        ThoughtStep(
            text=thought, next_action=NextAction.FINAL_ANSWER, answer=answer, llm_call_id=llm.id
        ),
    ]


def observed(call: ToolCall, text: str, *, ok: bool = True) -> list[BaseStep]:
    """A tool's result and what the model is shown of it."""
    return [
        ToolResultStep(call_id=call.id, tool=call.name, ok=ok, output=text),
        ObservationStep(call_id=call.id, tool=call.name, text=text, is_error=not ok),
    ]


ADD = ToolCall(name="calculator", args={"expression": "2+2"}, id="c1")


# -- project ----------------------------------------------------------------------------------


def test_a_new_run_is_just_the_task() -> None:
    assert project([TASK]) == [TaskTurn("What is 2 + 2?")]


def test_a_think_step_is_one_assistant_turn_with_its_calls() -> None:
    turns = project([TASK, *acting("add", ADD, text="**Action:** calculator"), *observed(ADD, "4")])
    assert turns == [
        TaskTurn("What is 2 + 2?"),
        AssistantTurn(thought="add", calls=(ADD,), text="**Action:** calculator"),
        ObservationTurn(call_id="c1", tool="calculator", text="4"),
    ]


def test_a_final_thought_carries_its_answer() -> None:
    (turn,) = project(answering("easy", "4"))
    assert isinstance(turn, AssistantTurn)
    assert (turn.answer, turn.next_action, turn.calls) == ("4", NextAction.FINAL_ANSWER, ())


def test_an_unparsed_reply_is_its_raw_text_and_the_feedback() -> None:
    llm = LLMCallStep(text="The answer is 4.")
    error = ErrorStep(kind="parse", message="no action", feedback="Use the format.")
    assert project([llm, error]) == [UnparsedTurn("The answer is 4.", "Use the format.")]


def test_a_parse_error_without_its_llm_call_is_still_fed_back() -> None:
    error = ErrorStep(kind="parse", message="no action")
    assert project([error]) == [FeedbackTurn("no action", kind="parse")]


def test_a_failed_model_call_is_not_shown() -> None:
    chain = [
        TASK,
        LLMCallStep(error="TimeoutError: slow"),
        ErrorStep(kind="model", message="TimeoutError: slow"),
    ]
    assert project(chain) == [TaskTurn("What is 2 + 2?")]


def test_an_llm_call_without_a_recorded_decision_is_not_shown() -> None:
    assert project([TASK, LLMCallStep(text="Thought: half")]) == [TaskTurn("What is 2 + 2?")]


def test_bookkeeping_steps_are_not_shown() -> None:
    chain = [
        TASK,
        TaskStep(text="a duplicate task"),
        LLMCallStep(purpose="critic", text="looks fine"),
        ToolResultStep(call_id="c1", tool="calculator", ok=True, output=4),
        HumanStep(kind="approve", call_id="c1"),
        ValidationStep(answer="4", passed=True, verdicts=[Verdict(passed=True)]),
        FinalStep(answer="4", stop_reason="final_answer"),
    ]
    assert project(chain) == [TaskTurn("What is 2 + 2?")]


def test_only_steps_after_the_last_reset_are_shown_with_every_lesson() -> None:
    chain = [
        TASK,
        *acting("guess", ADD),
        ResetStep(lesson="Do not guess."),
        *answering("maybe", "5"),
        ResetStep(lesson="Check with the calculator."),
        *answering("checked", "4"),
    ]
    assert project(chain) == [
        TaskTurn("What is 2 + 2?"),
        LessonTurn(("Do not guess.", "Check with the calculator.")),
        AssistantTurn(
            thought="checked",
            answer="4",
            next_action=NextAction.FINAL_ANSWER,
            text="Thought: checked\nFinal Answer: 4",
        ),
    ]


def test_a_rejected_answer_carries_the_failed_verdicts_reasons() -> None:
    step = ValidationStep(
        answer="5",
        passed=False,
        verdicts=[
            Verdict(passed=True, reason="is a number"),
            Verdict(passed=False, reason="2 + 2 is not 5"),
            Verdict(passed=False),
        ],
    )
    assert project([step]) == [RejectionTurn("5", ("2 + 2 is not 5",))]


def test_refused_actions_and_validation_errors_are_fed_back() -> None:
    chain = [
        ErrorStep(kind="refused_action", message="min_steps", feedback="Too early."),
        ErrorStep(kind="validation", message="bad args"),
    ]
    assert project(chain) == [
        FeedbackTurn("Too early.", kind="refused_action"),
        FeedbackTurn("bad args", kind="validation"),
    ]


def test_guidance_from_a_person_is_shown_and_approvals_are_not() -> None:
    chain = [
        HumanStep(kind="guidance", text=" Use the calculator. "),
        HumanStep(kind="reject", text="no", call_id="c1"),
        HumanStep(kind="guidance", text=""),
        HumanStep(kind="retry", text="try once more"),
        HumanStep(kind="abort"),
    ]
    assert project(chain) == [GuidanceTurn("Use the calculator."), GuidanceTurn("try once more")]


# -- ReActText prompts --------------------------------------------------------------------------

SYSTEM_WITH_TOOLS = """\
You are an agent that solves a task step by step. You can use these tools:

- calculator(expression: string) — Evaluate an arithmetic expression. Returns: float
    expression: The expression, e.g. "2 * (3 + 4)".
- search(query: string, limit: integer = 5, lang: "en" | "fr" = "en", \
tags: array[string] | null = null) — Search the web. Returns: list[str]

To use a tool, reply in exactly this format:

Thought: <your reasoning about what to do next>
Action: <the name of one tool>
Action Input: <the tool's arguments as one JSON object>

Then stop: the tool's result comes back to you as "Observation: ...". \
Never write "Observation:" yourself. Use one tool per reply, and write \
Action Input: {} for a tool without arguments.

When you know the answer, reply in exactly this format:

Thought: <your reasoning>
Final Answer: <your answer>"""

SYSTEM_WITHOUT_TOOLS = """\
You are an agent that solves a task step by step. You have no tools: answer directly.

Reply in exactly this format:

Thought: <your reasoning>
Final Answer: <your answer>"""


def test_system_prompt_lists_tool_signatures_and_the_format() -> None:
    messages = ReActText().to_messages([TASK], [calculator, search])
    assert messages == [
        {"role": "system", "content": SYSTEM_WITH_TOOLS},
        {"role": "user", "content": "Task: What is 2 + 2?"},
    ]


def test_without_tools_the_model_is_told_to_answer_directly() -> None:
    assert ReActText().to_messages([TASK], [])[0]["content"] == SYSTEM_WITHOUT_TOOLS


def test_nested_argument_models_add_their_json_schema() -> None:
    assert ReActText().system_prompt([plot]).splitlines()[2:4] == [
        "- plot(where: Point) — Mark a point on the map.",
        '    JSON schema: {"$defs":{"Point":{"properties":{"x":{"type":"number"},'
        '"y":{"type":"number"}},"required":["x","y"],"type":"object"}},'
        '"additionalProperties":false,"properties":{"where":{"$ref":"#/$defs/Point"}},"required":["where"],"type":"object"}',
    ]


def test_the_intro_can_be_replaced() -> None:
    prompt = ReActText(intro="You are a careful accountant.").system_prompt([])
    assert prompt.startswith("You are a careful accountant. You have no tools")


def test_a_whole_run_reads_as_a_react_transcript() -> None:
    raw = ToolCall(name="calculator", raw_args="3*3", id="c2")
    chain = [
        TASK,
        *acting(
            "add", ADD, text='**Action:** `calculator`\n**Action Input:** {"expression":"2+2"}'
        ),
        *observed(ADD, "4"),
        LLMCallStep(text="It is 4."),
        ErrorStep(kind="parse", message="no action", feedback="Use the format."),
        HumanStep(kind="guidance", text="Also square 3."),
        *acting("", raw),
        *observed(raw, "9"),
        *answering("done", "4 and 9"),
        ValidationStep(
            answer="4 and 9", passed=False, verdicts=[Verdict(passed=False, reason="say 4")]
        ),
    ]
    assert ReActText().to_messages(chain, [calculator])[1:] == [
        {"role": "user", "content": "Task: What is 2 + 2?"},
        {
            "role": "assistant",
            "content": 'Thought: add\nAction: calculator\nAction Input: {"expression": "2+2"}',
        },
        {"role": "user", "content": "Observation: 4"},
        {"role": "assistant", "content": "It is 4."},
        {"role": "user", "content": "Use the format.\n\nGuidance from a person: Also square 3."},
        {"role": "assistant", "content": "Action: calculator\nAction Input: 3*3"},
        {"role": "user", "content": "Observation: 9"},
        {"role": "assistant", "content": "Thought: done\nFinal Answer: 4 and 9"},
        {
            "role": "user",
            "content": "Your answer was not accepted: say 4. Revise it and reply again.",
        },
    ]


def test_lessons_follow_the_task() -> None:
    one = [TASK, ResetStep(lesson="Use the calculator.")]
    two = [TASK, ResetStep(lesson="a"), ResetStep(lesson="b")]
    none = [TASK, ResetStep()]
    assert ReActText().to_messages(one, [])[1:] == [
        {
            "role": "user",
            "content": "Task: What is 2 + 2?\n\n"
            "An earlier attempt was abandoned. Lesson: Use the calculator.",
        }
    ]
    assert (
        ReActText()
        .to_messages(two, [])[1]["content"]
        .endswith("Earlier attempts were abandoned. Lessons:\n- a\n- b")
    )
    assert (
        ReActText()
        .to_messages(none, [])[1]["content"]
        .endswith("An earlier attempt was abandoned. Start again from the task.")
    )


def test_observations_in_a_row_are_one_user_message() -> None:
    other = ToolCall(name="search", args={"query": "x"}, id="c2")
    chain = [TASK, *acting("both", ADD), *observed(ADD, "4"), *observed(other, "none", ok=False)]
    assert ReActText().to_messages(chain, [])[-1] == {
        "role": "user",
        "content": "Observation: 4\n\nObservation: none",
    }


def test_an_empty_unparsed_reply_is_still_a_message() -> None:
    chain = [TASK, LLMCallStep(text=""), ErrorStep(kind="parse", message="empty", feedback="F")]
    assert ReActText().to_messages(chain, [])[2:] == [
        {"role": "assistant", "content": "(empty reply)"},
        {"role": "user", "content": "F"},
    ]


def test_final_demands_an_answer_after_the_last_assistant_message() -> None:
    chain = [TASK, *acting("add", ADD)]
    assert ReActText().to_messages(chain, [calculator], final=True)[-1] == {
        "role": "user",
        "content": "Stop using tools now. Give your final answer in exactly this format:\n\n"
        "Thought: <your reasoning>\nFinal Answer: <your answer>",
    }


def test_final_is_merged_into_a_trailing_user_message() -> None:
    messages = ReActText().to_messages(
        [TASK, *acting("add", ADD), *observed(ADD, "4")], [], final=True
    )
    assert messages[-1]["content"].startswith("Observation: 4\n\nStop using tools now.")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]


def test_every_message_is_an_openai_chat_message() -> None:
    chain = [TASK, *acting("add", ADD), *observed(ADD, "4"), *answering("ok", "4")]
    for message in ReActText().to_messages(chain, [calculator], final=True):
        assert set(message) == {"role", "content"}
        assert message["role"] in ("system", "user", "assistant")
        assert isinstance(message["content"], str) and message["content"]


def test_rendered_replies_parse_back_to_the_same_decision() -> None:
    calls = [ADD, ToolCall(name="calculator", raw_args="3*3"), ToolCall(name="clock", args={})]
    for call in calls:
        rendered = ReActText().to_messages([*acting("why", call)], [])[-1]["content"]
        (parsed,) = parse(rendered).tool_calls
        assert (parsed.name, parsed.args, parsed.raw_args) == (call.name, call.args, call.raw_args)
    final = ReActText().to_messages(answering("why", "line 1\nline 2"), [])[-1]["content"]
    assert parse(final).answer == "line 1\nline 2"


# -- the policy interface -----------------------------------------------------------------------


def test_react_text_is_a_policy_without_native_tools() -> None:
    policy = ReActText()
    assert isinstance(policy, Policy)
    assert policy.native_tools is False
    assert policy.tool_schemas([calculator]) is None


@pytest.mark.parametrize("policy", [ReActText, JsonPlan, StructuredStep])
def test_each_text_policy_has_its_own_intro_unless_given_one(policy: type[BaseTextPolicy]) -> None:
    assert policy().intro == policy.default_intro
    assert policy().system_prompt([]).startswith(policy.default_intro)
    assert policy(intro="You are a careful accountant.").intro == "You are a careful accountant."
