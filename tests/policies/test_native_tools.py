"""NativeTools: provider tool calling, parsed and projected, and run through litellm."""

from __future__ import annotations

import json
from typing import Any

from tests.support.openai_server import OpenAIServer
from thinkgraph import Agent, StepLimits, tool
from thinkgraph.llm import LiteLLMModel, ModelReply
from thinkgraph.policies import NativeTools, Policy
from thinkgraph.state import (
    LLMCallStep,
    ObservationStep,
    TaskStep,
    ThoughtStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def model_on(server: OpenAIServer) -> LiteLLMModel:
    return LiteLLMModel("openai/test-model", api_base=server.url + "/v1", api_key="sk-test")


# -- parse ----------------------------------------------------------------------------------


def test_native_tools_is_a_policy_that_sends_each_tools_openai_schema() -> None:
    policy = NativeTools()
    assert isinstance(policy, Policy) and policy.native_tools is True
    assert policy.tool_schemas([add]) == [add.openai_schema()]
    assert policy.tool_schemas([]) is None


def test_tool_calls_in_a_reply_become_one_decision_with_every_call() -> None:
    calls = [ToolCall(name="add", args={"a": 1, "b": 2}, id="c1"), ToolCall(name="shout", id="c2")]
    decision = NativeTools().parse_reply(ModelReply(text="Both at once.", tool_calls=calls))
    assert decision.kind == "tool_calls"
    assert decision.tool_calls == calls and decision.thought == "Both at once."


def test_arguments_that_are_not_a_json_object_keep_their_raw_text() -> None:
    call = ToolCall(name="shout", raw_args="hello there", id="c1")
    decision = NativeTools().parse_reply(ModelReply(tool_calls=[call]))
    assert decision.tool_calls[0].raw_args == "hello there"


def test_text_without_tool_calls_is_the_final_answer() -> None:
    decision = NativeTools().parse_reply(ModelReply(text="<think>easy</think>\n42\n"))
    assert (decision.kind, decision.answer) == ("final", "42")


def test_an_empty_reply_is_feedback_not_an_answer() -> None:
    decision = NativeTools().parse_reply(ModelReply(text="  "))
    assert decision.kind == "error" and decision.answer is None
    assert "empty" in (decision.error or "") and "plain text" in (decision.error or "")


def test_a_tool_call_without_a_name_is_feedback() -> None:
    decision = NativeTools().parse_reply(ModelReply(tool_calls=[ToolCall(name="", id="c1")]))
    assert decision.kind == "error" and "no function name" in (decision.error or "")


# -- projection -----------------------------------------------------------------------------


def test_calls_and_observations_are_projected_in_the_openai_format() -> None:
    chain = [
        TaskStep(text="add and shout"),
        LLMCallStep(text=""),
        ThoughtStep(text="two things"),
        ToolCallStep(call=ToolCall(name="add", args={"a": 1, "b": 2}, id="c1")),
        ToolCallStep(call=ToolCall(name="shout", raw_args="hi", id="c2")),
        ObservationStep(call_id="c1", tool="add", text="3"),
        ObservationStep(call_id="c2", tool="shout", text="HI"),
    ]
    messages = NativeTools().to_messages(chain, [add, shout])
    add_args = '{"a": 1, "b": 2}'
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert messages[1]["content"] == "Task: add and shout"
    assert messages[2] == {
        "role": "assistant",
        "content": "two things",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": add_args}},
            {"id": "c2", "type": "function", "function": {"name": "shout", "arguments": "hi"}},
        ],
    }  # fmt: skip
    assert messages[3:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "3"},
        {"role": "tool", "tool_call_id": "c2", "content": "HI"},
    ]


def test_a_call_that_never_ran_still_gets_a_tool_message_and_the_demand_follows() -> None:
    chain = [
        TaskStep(text="x"),
        ThoughtStep(text=""),
        ToolCallStep(call=ToolCall(name="add", args={}, id="c1")),
    ]
    messages = NativeTools().to_messages(chain, [add], final=True)
    assert messages[2]["content"] is None  # no thought: content is null, as OpenAI sends it
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "This call was not run.",
    }
    assert messages[4]["role"] == "user" and "final answer" in messages[4]["content"]


# -- end to end through litellm -------------------------------------------------------------


def test_two_calls_in_one_reply_run_in_the_same_round(openai_server: OpenAIServer) -> None:
    openai_server.reply_tool_calls(
        ("add", {"a": 2, "b": 40}, "call_add"), ("shout", {"text": "ok"}, "call_shout")
    )
    openai_server.reply_text("42, OK")
    agent = Agent(model_on(openai_server), [add, shout], policy=NativeTools(), store="memory://")

    result = agent.run("add 2 and 40, shout ok")

    assert (result.status, result.answer) == ("done", "42, OK")
    types = [s.type for s in result.chain]  # type: ignore[attr-defined]
    assert types.count("llm_call") == 2  # both results came back before the next think
    outputs = {s.call_id: s.output for s in result.chain if isinstance(s, ToolResultStep)}
    assert outputs == {"call_add": 42, "call_shout": "OK"}
    second = openai_server.bodies[1]
    assert second is not None
    assert second["tools"] == [add.openai_schema(), shout.openai_schema()]
    sent = second["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert [c["id"] for c in sent[2]["tool_calls"]] == ["call_add", "call_shout"]
    assert {m["tool_call_id"]: m["content"] for m in sent[3:]} == {
        "call_add": "42",
        "call_shout": "OK",
    }


def test_malformed_arguments_reach_a_single_string_tool_as_raw_args(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply_tool_calls(("shout", "hello", "call_1"))
    openai_server.reply_text("HELLO")
    agent = Agent(model_on(openai_server), [shout], policy=NativeTools(), store="memory://")

    result = agent.run("shout hello")

    (step,) = [s for s in result.chain if isinstance(s, ToolResultStep)]
    assert (step.ok, step.output) == (True, "HELLO")
    body: dict[str, Any] | None = openai_server.bodies[1]
    assert body is not None
    assert body["messages"][2]["tool_calls"][0]["function"]["arguments"] == "hello"


def test_an_empty_reply_is_fed_back_and_the_model_recovers(openai_server: OpenAIServer) -> None:
    openai_server.reply_text("")
    openai_server.reply_text("done")
    agent = Agent(
        model_on(openai_server),
        [add],
        policy=NativeTools(),
        limits=StepLimits(max_consecutive_failures=2),
        store="memory://",
    )

    result = agent.run("x")

    assert result.answer == "done"
    second = openai_server.bodies[1]
    assert second is not None
    assert "reply was empty" in json.dumps(second["messages"])
