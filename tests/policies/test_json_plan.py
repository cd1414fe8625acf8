"""JsonPlan: the iterative-consultation reply, parsed, projected and run through litellm."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.openai_server import OpenAIServer
from thinkgraph import Agent, StepLimits, tool
from thinkgraph.llm import LiteLLMModel
from thinkgraph.policies import JsonPlan, Policy
from thinkgraph.state import ErrorStep, ToolResultStep


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def plan(
    *actions: dict[str, Any], complete: bool = False, response: str | None = None, **extra: Any
) -> str:
    reply = {
        "understanding": "add two numbers",
        "task_complete": complete,
        "reasoning": "the tool adds",
        "actions": list(actions),
        "response": response,
        **extra,
    }
    return json.dumps(reply)


ADD = {"tool": "add", "args": {"a": 2, "b": 40}}


def test_json_plan_is_a_policy_with_tools_in_the_prompt() -> None:
    policy = JsonPlan()
    assert isinstance(policy, Policy) and policy.native_tools is False
    assert policy.tool_schemas([add]) is None
    system = policy.to_messages([], [add])[0]["content"]
    assert "add(a: integer, b: integer)" in system and '"task_complete"' in system


def test_one_action_is_one_tool_call_and_the_thought_joins_understanding_and_reasoning() -> None:
    decision = JsonPlan().parse(plan(ADD))
    assert decision.kind == "tool_calls"
    assert [(c.name, c.args) for c in decision.tool_calls] == [("add", {"a": 2, "b": 40})]
    assert decision.thought == "add two numbers\nthe tool adds"


def test_a_complete_task_is_a_final_answer_from_response() -> None:
    decision = JsonPlan().parse(plan(complete=True, response="42"))
    assert (decision.kind, decision.answer) == ("final", "42")


@pytest.mark.parametrize(
    "text",
    [
        "```json\n" + plan(ADD) + "\n```",
        "Here is my plan:\n" + plan(ADD) + "\nI hope this helps.",
        "<think>{not json}</think>" + plan(ADD),
    ],
    ids=["code fence", "prose around", "think block"],
)
def test_fences_prose_and_think_blocks_around_the_object_are_tolerated(text: str) -> None:
    assert JsonPlan().parse(text).tool_calls[0].name == "add"


def test_string_args_are_kept_as_raw_args() -> None:
    decision = JsonPlan().parse(plan({"tool": "add", "args": "2 and 40"}))
    assert (decision.tool_calls[0].args, decision.tool_calls[0].raw_args) == (None, "2 and 40")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("I will add them.", "no JSON object"),
        ('{"understanding": "x", "task_complete": fal', "not valid JSON"),
        (json.dumps({"understanding": "x", "actions": []}), "'task_complete' is missing"),
        (plan(ADD, ADD), "has 2 actions"),
        (plan(), "has no action"),
        (plan(complete=True), '"response" is empty'),
        (plan({"tool": "", "args": {}}), "'actions.0.tool'"),
        ("", "empty"),
    ],
    ids=[
        "prose only",
        "broken json",
        "missing field",
        "two actions",
        "no action",
        "complete without response",
        "empty tool name",
        "empty reply",
    ],
)
def test_a_reply_that_does_not_fit_is_feedback_naming_the_problem(text: str, says: str) -> None:
    decision = JsonPlan().parse(text)
    assert decision.kind == "error" and decision.answer is None and not decision.tool_calls
    assert says in (decision.error or "")


def test_feedback_on_an_unreadable_reply_shows_the_expected_format() -> None:
    assert '"task_complete": false' in (JsonPlan().parse("no").error or "")


def test_a_run_through_litellm_calls_a_tool_then_answers(openai_server: OpenAIServer) -> None:
    openai_server.reply_text("```json\n" + plan(ADD) + "\n```")
    openai_server.reply_text(plan(ADD, ADD))  # fed back: one action at a time
    openai_server.reply_text(plan(complete=True, response="42"))
    model = LiteLLMModel("openai/test-model", api_base=openai_server.url + "/v1", api_key="sk-test")
    agent = Agent(model, [add], policy=JsonPlan(), store="memory://")

    result = agent.run("What is 2 + 40?")

    assert (result.status, result.answer) == ("done", "42")
    assert [s.output for s in result.chain if isinstance(s, ToolResultStep)] == [42]
    errors = [s for s in result.chain if isinstance(s, ErrorStep)]
    assert len(errors) == 1 and "exactly one action" in errors[0].feedback
    second, third = openai_server.bodies[1], openai_server.bodies[2]
    assert second is not None and third is not None
    assert "Result of add (returned): 42" in second["messages"][-1]["content"]
    assert "exactly one action" in third["messages"][-1]["content"]


def test_replies_that_never_fit_end_the_run_on_the_failure_guard(
    openai_server: OpenAIServer,
) -> None:
    for _ in range(2):
        openai_server.reply_text("The answer is 42.")
    model = LiteLLMModel("openai/test-model", api_base=openai_server.url + "/v1", api_key="sk-test")
    limits = StepLimits(max_consecutive_failures=2)
    agent = Agent(model, [add], policy=JsonPlan(), limits=limits, store="memory://")

    result = agent.run("x")

    assert (result.status, result.stop_reason, result.answer) == (
        "failed",
        "consecutive_failures",
        None,
    )
