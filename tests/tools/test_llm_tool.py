"""llm_tool(model): the model as a tool; its usage is recorded and counted, not shown."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.support.openai_server import OpenAIServer
from thinkgraph import Agent, ScriptedModel
from thinkgraph.errors import ModelConfigError
from thinkgraph.llm import LiteLLMModel
from thinkgraph.llm.base import Message
from thinkgraph.state import ObservationStep, ToolCall, ToolResultStep
from thinkgraph.tools import ToolContext, ToolRegistry, aexecute_call, execute_call
from thinkgraph.tools.builtin import llm_tool

CTX = ToolContext.for_call("t", 1, "c1")


def echo_model(seen: list[list[Message]]) -> ScriptedModel:
    def answer(messages: list[Message]) -> str:
        seen.append(messages)
        return f"you said: {messages[-1]['content']}"

    return ScriptedModel(answer, name="helper")


def test_the_prompt_and_system_reach_the_model_and_its_text_comes_back() -> None:
    seen: list[list[Message]] = []
    registry = ToolRegistry([llm_tool(echo_model(seen), system="Be brief.")])
    call = ToolCall(name="llm", args={"prompt": "hi", "system": "Shout."}, id="c1")
    result = execute_call(registry, call, CTX)
    assert (result.ok, result.output) == (True, "you said: hi")
    assert seen == [[{"role": "system", "content": "Shout."}, {"role": "user", "content": "hi"}]]
    assert result.usage == {
        "model": "helper",
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "model_calls": 1,
    }


def test_bare_text_is_the_prompt_and_the_default_system_is_used() -> None:
    seen: list[list[Message]] = []
    registry = ToolRegistry([llm_tool(echo_model(seen), system="Be brief.")])
    result = asyncio.run(aexecute_call(registry, ToolCall(name="llm", raw_args="hello"), CTX))
    assert result.output == "you said: hello"
    assert seen[0][0] == {"role": "system", "content": "Be brief."}


def test_the_tool_describes_itself_as_an_llm_tool() -> None:
    summarize = llm_tool(ScriptedModel(["ok"], name="small"), name="summarize")
    assert (summarize.name, summarize.kind) == ("summarize", "llm")
    assert "small" in summarize.description
    assert list(summarize.json_schema()["properties"]) == ["prompt", "system"]


def test_a_failing_model_becomes_an_error_observation() -> None:
    def broken(messages: list[Message]) -> str:
        raise ConnectionError("provider down")

    registry = ToolRegistry([llm_tool(ScriptedModel(broken))])
    result = execute_call(registry, ToolCall(name="llm", args={"prompt": "x"}), CTX)
    assert (result.ok, result.error) == (False, "ConnectionError: provider down")


def test_an_unknown_model_string_fails_when_the_tool_is_made() -> None:
    with pytest.raises(ModelConfigError, match="unknown"):
        llm_tool("no-such-provider/nothing")


def test_usage_through_litellm_is_recorded_and_added_to_the_run(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply_text("a short summary", prompt_tokens=30, completion_tokens=5)
    inner = LiteLLMModel("openai/test-model", api_base=openai_server.url + "/v1", api_key="sk")
    args = json.dumps({"prompt": "summarize the report"})
    outer = ScriptedModel(
        [
            f"Thought: delegate\nAction: summarize\nAction Input: {args}",
            "Thought: done\nFinal Answer: a short summary",
        ]
    )
    with Agent(outer, [llm_tool(inner, name="summarize")], store="memory://") as agent:
        result = agent.run("summarize")
    step = next(s for s in result.chain if isinstance(s, ToolResultStep))
    observation = next(s for s in result.chain if isinstance(s, ObservationStep))
    assert observation.text == "a short summary"  # the usage is not shown to the model
    assert step.usage is not None
    assert (step.usage["prompt_tokens"], step.usage["completion_tokens"]) == (30, 5)
    assert step.usage["cost_usd"] is None  # a model litellm has no price for
    assert (result.counters.prompt_tokens, result.counters.completion_tokens) == (30, 5)
    assert result.counters.cost_known is False
    assert result.counters.model_calls == 2  # the tool's call is not a turn of the agent
    body = openai_server.bodies[0]
    assert body is not None and body["messages"][-1]["content"] == "summarize the report"
