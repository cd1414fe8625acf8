"""LangChainModel: any LangChain chat model (ChatOpenAI, ChatAnthropic, …) as the model.

`as_chat_model` wraps a `BaseChatModel` in `LangChainModel`, so `Agent(model=ChatOpenAI())`
works as it is. The request's OpenAI-format messages become LangChain messages, its tool
schemas are bound with `bind_tools`, and the `AIMessage` that comes back becomes a
`ModelReply`: text, tool calls with their ids, tokens from `usage_metadata`. The cost is
unknown (None): LangChain does not report one. What the model raises propagates, so think
records it as the call's error like any other model's failure.

Tools: a model whose `bind_tools` is not implemented (LangChain's fake chat models, some
community models) cannot take a request with tools, i.e. the `NativeTools` policy. That
request raises `ModelConfigError` naming the fix (the `ReActText` policy, which describes
the tools in the prompt) instead of silently dropping the tools: a model that never sees
its tools would only guess.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from thinkgraph.errors import ModelConfigError
from thinkgraph.llm.base import Message, ModelReply, ModelRequest
from thinkgraph.state import ToolCall

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel, LanguageModelInput
    from langchain_core.runnables import Runnable

__all__ = ["LangChainModel", "to_langchain_messages"]


class LangChainModel:
    """A LangChain `BaseChatModel` behind the `AsyncChatModel` protocol.

    Runs await `ainvoke`; `complete` calls `invoke`. LangChain's own settings (retries,
    timeouts, temperature, callbacks) stay on the chat model you pass.

    Args:
        chat_model: The LangChain chat model, e.g. `ChatOpenAI(model="gpt-4o-mini")`.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> chat = GenericFakeChatModel(messages=iter(["Paris"]))
        >>> LangChainModel(chat).complete(
        ...     ModelRequest(messages=[{"role": "user", "content": "Capital of France?"}])
        ... ).text
        'Paris'
    """

    def __init__(self, chat_model: BaseChatModel) -> None:
        self.chat_model = chat_model
        self._bound: dict[str, Runnable[LanguageModelInput, BaseMessage]] = {}

    @property
    def name(self) -> str:
        """The model's name (`model_name` or `model`), else LangChain's type of the model."""
        for attribute in ("model_name", "model"):
            value = getattr(self.chat_model, attribute, None)
            if isinstance(value, str) and value:
                return value
        return str(self.chat_model._llm_type)

    def complete(self, request: ModelRequest) -> ModelReply:
        """Answer one request with the model's `invoke`."""
        runnable = self._runnable(request)
        started = time.perf_counter()
        message = runnable.invoke(to_langchain_messages(request.messages))
        return self._reply(message, started)

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        """Answer one request with the model's `ainvoke`, without blocking the event loop."""
        runnable = self._runnable(request)
        started = time.perf_counter()
        message = await runnable.ainvoke(to_langchain_messages(request.messages))
        return self._reply(message, started)

    def __repr__(self) -> str:
        return f"LangChainModel({type(self.chat_model).__name__}, name={self.name!r})"

    # -- internals -------------------------------------------------------------------------

    def _runnable(self, request: ModelRequest) -> Runnable[LanguageModelInput, BaseMessage]:
        """The chat model, with the request's tools bound when it has any (bound once per set)."""
        if not request.tools:
            return self.chat_model
        key = json.dumps(request.tools, sort_keys=True, default=str)
        bound = self._bound.get(key)
        if bound is None:
            try:
                bound = self.chat_model.bind_tools(request.tools)
            except NotImplementedError:
                raise ModelConfigError(
                    f"the LangChain model {type(self.chat_model).__name__} cannot bind tools "
                    "(its bind_tools is not implemented), so it cannot be used with the "
                    "NativeTools policy; use the ReActText policy, which describes the tools "
                    "in the prompt"
                ) from None
            self._bound[key] = bound
        return bound

    def _reply(self, message: BaseMessage, started: float) -> ModelReply:
        latency = time.perf_counter() - started
        metadata = message.response_metadata or {}
        model = metadata.get("model_name") or metadata.get("model") or self.name
        usage = getattr(message, "usage_metadata", None) or {}
        return ModelReply(
            text=_text(message.content),
            tool_calls=_tool_calls(message) if isinstance(message, AIMessage) else [],
            model=str(model),
            provider=_provider(self.chat_model),
            prompt_tokens=usage.get("input_tokens"),
            completion_tokens=usage.get("output_tokens"),
            cost_usd=None,
            latency_s=latency,
        )


def to_langchain_messages(messages: list[Message]) -> list[BaseMessage]:
    """OpenAI-format messages as LangChain messages, the way the policies write them.

    An assistant message's tool call whose arguments are not a JSON object (the model wrote
    them malformed) goes back as an invalid tool call with its text as written, so the model
    sees what it sent; LangChain's `convert_to_messages` raises on those.
    """
    converted: list[BaseMessage] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content") or ""
        if role == "system":
            converted.append(SystemMessage(content=content))
        elif role == "user":
            converted.append(HumanMessage(content=content))
        elif role == "assistant":
            converted.append(_assistant(content, message.get("tool_calls") or []))
        elif role == "tool":
            converted.append(
                ToolMessage(content=content, tool_call_id=str(message.get("tool_call_id", "")))
            )
        else:
            raise ValueError(f"a message with role {role!r} has no LangChain equivalent")
    return converted


# -- helpers --------------------------------------------------------------------------------


def _assistant(content: Any, calls: list[dict[str, Any]]) -> AIMessage:
    valid: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    for call in calls:
        function = call.get("function") or {}
        name, arguments, call_id = (
            function.get("name", ""),
            function.get("arguments"),
            call.get("id"),
        )
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            args = None
        if isinstance(args, dict):
            valid.append({"name": name, "args": args, "id": call_id, "type": "tool_call"})
        else:
            raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
            invalid.append(
                {
                    "name": name,
                    "args": raw,
                    "id": call_id,
                    "error": None,
                    "type": "invalid_tool_call",
                }
            )
    return AIMessage(content=content, tool_calls=valid, invalid_tool_calls=invalid)


def _tool_calls(message: AIMessage) -> list[ToolCall]:
    """The reply's tool calls; an invalid one keeps its arguments as written in `raw_args`."""
    calls = [
        _call(call["name"], dict(call["args"]), None, call.get("id")) for call in message.tool_calls
    ]
    calls += [
        _call(call.get("name") or "", None, call.get("args") or "", call.get("id"))
        for call in message.invalid_tool_calls
    ]
    return calls


def _call(name: str, args: dict[str, Any] | None, raw: str | None, call_id: str | None) -> ToolCall:
    if call_id:
        return ToolCall(name=name, args=args, raw_args=raw, id=str(call_id))
    return ToolCall(name=name, args=args, raw_args=raw)


def _text(content: str | list[Any]) -> str:
    """The text of a reply; a list of content blocks (Anthropic's) joins its text blocks."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def _provider(chat_model: BaseChatModel) -> str | None:
    """The provider LangChain reports for tracing (`ls_provider`: "openai", "anthropic", …)."""
    try:
        provider = chat_model._get_ls_params().get("ls_provider")
    except Exception:  # a private LangChain hook; a model may not implement it
        return None
    return provider if isinstance(provider, str) and provider else None
