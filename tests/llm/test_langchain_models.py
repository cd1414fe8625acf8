"""LangChain chat models as the model: LangChain's fake chat models drive real runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from thinkgraph import Agent, StepLimits, tool
from thinkgraph.errors import ModelConfigError
from thinkgraph.llm import LangChainModel, ModelRequest, as_chat_model
from thinkgraph.policies import NativeTools
from thinkgraph.state import LLMCallStep


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class RecordingChat(GenericFakeChatModel):
    """LangChain's generic fake chat model, recording what it was sent and can bind tools."""

    received: list[list[BaseMessage]] = Field(default_factory=list)
    """The messages of each call, as LangChain messages."""
    call_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    """The keyword arguments of each call (the bound tools among them)."""
    model_name: str = "fake-gpt"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.received.append(list(messages))
        self.call_kwargs.append(dict(kwargs))
        return super()._generate(messages, stop, run_manager, **kwargs)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


class BrokenChat(GenericFakeChatModel):
    """A LangChain chat model whose provider is unreachable."""

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        raise ConnectionError("provider unreachable")


def react(*replies: str) -> RecordingChat:
    return RecordingChat(messages=iter(replies))


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": prompt + completion,
    }


def test_a_base_chat_model_is_taken_as_it_is() -> None:
    chat = react("hi")
    model = as_chat_model(chat)
    assert isinstance(model, LangChainModel) and model.chat_model is chat
    assert model.name == "fake-gpt"


def test_a_langchain_model_drives_a_react_text_run_to_its_answer(sqlite_url: str) -> None:
    chat = react(
        'Thought: add them\nAction: add\nAction Input: {"a": 2, "b": 40}',
        "Thought: done\nFinal Answer: 42",
    )
    with Agent(chat, [add], store=sqlite_url) as agent:
        result = agent.run("What is 2 + 40?", thread_id="lc-react")
    assert (result.status, result.answer) == ("done", "42")
    assert isinstance(chat.received[0][0], SystemMessage)
    assert isinstance(chat.received[0][1], HumanMessage)
    assert "What is 2 + 40?" in str(chat.received[0][1].content)
    # ReActText describes the tools in the prompt: nothing is bound.
    assert "tools" not in chat.call_kwargs[0]
    calls = [s for s in result.chain if isinstance(s, LLMCallStep)]
    assert [c.model for c in calls] == ["fake-gpt", "fake-gpt"]
    assert all(c.cost_usd is None and c.error is None for c in calls)


def test_native_tools_bind_the_schemas_and_send_calls_back_as_tool_messages(
    sqlite_url: str,
) -> None:
    chat = RecordingChat(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[{"name": "add", "args": {"a": 2, "b": 40}, "id": "call_1"}],
                    usage_metadata=usage(30, 7),  # type: ignore[arg-type]
                    response_metadata={"model_name": "fake-gpt-2024"},
                ),
                AIMessage(content="42", usage_metadata=usage(45, 2)),  # type: ignore[arg-type]
            ]
        )
    )
    with Agent(chat, [add], policy=NativeTools(), store=sqlite_url) as agent:
        result = agent.run("What is 2 + 40?", thread_id="lc-native")
    assert (result.status, result.answer) == ("done", "42")

    bound = chat.call_kwargs[0]["tools"]
    assert [t["function"]["name"] for t in bound] == ["add"]
    second = chat.received[1]
    assert [type(m) for m in second] == [SystemMessage, HumanMessage, AIMessage, ToolMessage]
    assistant, observation = second[2], second[3]
    assert isinstance(assistant, AIMessage) and isinstance(observation, ToolMessage)
    assert assistant.tool_calls == [
        {"name": "add", "args": {"a": 2, "b": 40}, "id": "call_1", "type": "tool_call"}
    ]
    assert (observation.tool_call_id, observation.content) == ("call_1", "42")

    calls = [s for s in result.chain if isinstance(s, LLMCallStep)]
    assert [(c.prompt_tokens, c.completion_tokens) for c in calls] == [(30, 7), (45, 2)]
    assert calls[0].model == "fake-gpt-2024" and calls[1].model == "fake-gpt"
    assert calls[0].tool_calls[0].id == "call_1"
    assert calls[0].tool_calls[0].args == {"a": 2, "b": 40}
    assert result.counters.prompt_tokens == 75


def test_a_langchain_model_that_raises_is_recorded_as_the_calls_error(sqlite_url: str) -> None:
    limits = StepLimits(max_consecutive_failures=2)
    with Agent(BrokenChat(messages=iter([])), limits=limits, store=sqlite_url) as agent:
        result = agent.run("x", thread_id="lc-broken")
    assert result.stop_reason == "consecutive_failures"
    failed = [s for s in result.chain if isinstance(s, LLMCallStep) and s.error]
    assert len(failed) == 2 and "ConnectionError: provider unreachable" in str(failed[0].error)


def test_tools_for_a_model_that_cannot_bind_them_name_the_policy_to_use() -> None:
    model = LangChainModel(GenericFakeChatModel(messages=iter(["hi"])))
    request = ModelRequest(
        messages=[{"role": "user", "content": "hi"}], tools=[add.openai_schema()]
    )
    with pytest.raises(ModelConfigError, match="ReActText"):
        model.complete(request)
    # Without tools the same model answers.
    assert model.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}])).text == "hi"


def test_acomplete_awaits_the_model_and_keeps_malformed_arguments() -> None:
    chat = RecordingChat(
        messages=iter(
            [
                AIMessage(
                    content="",
                    invalid_tool_calls=[
                        {
                            "type": "invalid_tool_call",
                            "name": "add",
                            "args": "{a: 2",
                            "id": "call_9",
                            "error": None,
                        }
                    ],
                )
            ]
        )
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "add"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "oops"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "bad arguments"},
    ]
    request = ModelRequest(messages=messages, tools=[add.openai_schema()])
    reply = asyncio.run(LangChainModel(chat).acomplete(request))
    (call,) = reply.tool_calls
    assert (call.name, call.args, call.raw_args, call.id) == ("add", None, "{a: 2", "call_9")
    assert reply.prompt_tokens is None and reply.cost_usd is None
    sent = chat.received[0][2]
    assert isinstance(sent, AIMessage) and sent.invalid_tool_calls[0]["args"] == "oops"
    assert json.dumps(sent.tool_calls) == "[]"
