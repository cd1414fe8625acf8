"""StructuredStep: structured reasoning steps, their NextAction and the confidence gate."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.openai_server import OpenAIServer
from thinkgraph import Agent, NextAction, Verdict, tool
from thinkgraph.graphs.routes import after_think
from thinkgraph.llm import LiteLLMModel, ScriptedModel
from thinkgraph.nodes.think import gate_confidence
from thinkgraph.policies import Policy, StructuredStep
from thinkgraph.state import Counters, ResetStep, ThoughtStep, ToolResultStep, ValidationStep
from thinkgraph.types import StepLimits


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def step(next_action: str, *, confidence: float = 0.9, **fields: Any) -> str:
    reply = {"title": "Adding", "reasoning": "sum them", "next_action": next_action}
    return json.dumps({**reply, "confidence": confidence, **fields})


ADD = {"tool": "add", "args": {"a": 2, "b": 40}}


def loopback(server: OpenAIServer) -> LiteLLMModel:
    return LiteLLMModel("openai/test-model", api_base=server.url + "/v1", api_key="sk-test")


# -- parse ----------------------------------------------------------------------------------


def test_structured_step_is_a_policy_with_tools_in_the_prompt() -> None:
    policy = StructuredStep()
    assert isinstance(policy, Policy) and policy.tool_schemas([add]) is None
    assert '"next_action": "continue" | "validate"' in policy.to_messages([], [add])[0]["content"]


def test_continue_with_a_tool_action_is_a_tool_call_with_its_confidence() -> None:
    decision = StructuredStep().parse(step("continue", action=ADD, confidence=0.7))
    assert decision.kind == "tool_calls" and decision.next_action == NextAction.CONTINUE
    assert [(c.name, c.args) for c in decision.tool_calls] == [("add", {"a": 2, "b": 40})]
    assert (decision.thought, decision.confidence) == ("Adding: sum them", 0.7)


def test_continue_without_a_tool_is_a_reasoning_step() -> None:
    decision = StructuredStep().parse(step("continue", action="think it over"))
    assert (decision.kind, decision.tool_calls, decision.answer) == ("tool_calls", [], None)


@pytest.mark.parametrize(
    ("word", "action"),
    [("final_answer", NextAction.FINAL_ANSWER), ("validate", NextAction.VALIDATE)],
)
def test_final_answer_and_validate_carry_the_result_as_the_answer(
    word: str, action: NextAction
) -> None:
    decision = StructuredStep().parse(step(word, result="42"))
    assert (decision.kind, decision.answer, decision.next_action) == ("final", "42", action)


def test_a_result_that_is_an_object_is_kept_as_json_text() -> None:
    decision = StructuredStep().parse(step("final_answer", result={"total": 42}))
    assert decision.answer == '{"total": 42}'


def test_reset_asks_for_a_reset() -> None:
    decision = StructuredStep().parse(step("reset"))
    assert decision.next_action == NextAction.RESET and not decision.tool_calls


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("Let me think.", "no JSON object"),
        (step("stop"), "'next_action'"),
        (step("continue", confidence=1.5), "'confidence'"),
        (json.dumps({"title": "t", "next_action": "continue", "confidence": 1}), "'reasoning'"),
        (step("final_answer"), '"result" is empty'),
    ],
    ids=["prose", "unknown next_action", "confidence above 1", "missing reasoning", "no result"],
)
def test_a_reply_that_does_not_fit_is_feedback_naming_the_problem(text: str, says: str) -> None:
    decision = StructuredStep().parse(text)
    assert decision.kind == "error" and decision.answer is None
    assert says in (decision.error or "")


# -- the confidence gate --------------------------------------------------------------------


def test_a_low_confidence_final_answer_becomes_validate() -> None:
    decision = StructuredStep().parse(step("final_answer", result="42", confidence=0.3))
    gated = gate_confidence(decision, 0.6)
    assert (gated.kind, gated.next_action, gated.answer) == ("final", NextAction.VALIDATE, "42")
    assert gate_confidence(decision, 0.2) is decision
    assert gate_confidence(decision, None) is decision


def test_a_low_confidence_continue_with_a_result_is_validated_but_tool_calls_still_run() -> None:
    musing = StructuredStep().parse(step("continue", result="41", confidence=0.2))
    assert gate_confidence(musing, 0.5).next_action == NextAction.VALIDATE
    calling = StructuredStep().parse(step("continue", action=ADD, result="41", confidence=0.2))
    assert gate_confidence(calling, 0.5) is calling


def test_the_router_sends_a_gated_answer_to_validate() -> None:
    state = {"next_action": NextAction.VALIDATE, "candidate": "42", "counters": Counters(steps=1)}
    assert after_think(state, StepLimits()) == "validate"


def test_a_low_confidence_answer_is_checked_by_the_validators_through_litellm(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply_text(step("continue", action=ADD))
    openai_server.reply_text(step("final_answer", result="41", confidence=0.4))
    openai_server.reply_text(step("final_answer", result="42", confidence=0.95))
    checked: list[str] = []

    def is_42(answer: str, state: object) -> Verdict:
        checked.append(answer)
        return Verdict(passed=answer == "42", reason="recheck the sum")

    agent = Agent(
        loopback(openai_server),
        [add],
        policy=StructuredStep(),
        validators=[is_42],
        confidence_threshold=0.6,
        store="memory://",
    )
    result = agent.run("What is 2 + 40?")

    assert (result.status, result.answer) == ("done", "42")
    thoughts = [s for s in result.chain if isinstance(s, ThoughtStep)]
    assert [(t.next_action, t.confidence) for t in thoughts] == [
        (NextAction.CONTINUE, 0.9),
        (NextAction.VALIDATE, 0.4),
        (NextAction.FINAL_ANSWER, 0.95),
    ]
    assert [s.output for s in result.chain if isinstance(s, ToolResultStep)] == [42]
    assert checked == ["41", "42"]
    assert [v.passed for v in result.chain if isinstance(v, ValidationStep)] == [False, True]
    third = openai_server.bodies[2]
    assert third is not None and "recheck the sum" in third["messages"][-1]["content"]


def test_a_reset_step_starts_the_reasoning_over() -> None:
    replies = [step("reset"), step("final_answer", result="42")]
    agent = Agent(ScriptedModel(replies), policy=StructuredStep(), store="memory://")
    result = agent.run("x")
    assert result.answer == "42"
    assert sum(isinstance(s, ResetStep) for s in result.chain) == 1


def test_a_run_stopped_by_max_steps_is_asked_for_a_final_answer_in_result() -> None:
    seen: list[str] = []

    def model(messages: list[dict[str, Any]]) -> str:
        seen.append(messages[-1]["content"])
        return step("continue", action=ADD) if len(seen) == 1 else step("validate", result="42")

    agent = Agent(
        ScriptedModel(model),
        [add],
        policy=StructuredStep(),
        limits=StepLimits(max_steps=1),
        store="memory://",
    )
    result = agent.run("x")
    assert (result.stop_reason, result.answer) == ("max_steps", "42")
    assert '"next_action": "final_answer"' in seen[-1]
