"""The model interface: what think and finalize send to a model and what comes back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol, TypeAlias, runtime_checkable

from thinkgraph.state import LLMCallStep, ToolCall, running_node

__all__ = [
    "AsyncChatModel",
    "CallPosition",
    "ChatModel",
    "Message",
    "ModelReply",
    "ModelRequest",
    "Purpose",
    "call_step",
    "failed_call_step",
]

Message: TypeAlias = dict[str, Any]
"""A chat message in the OpenAI format: {"role": ..., "content": ...}."""

Purpose: TypeAlias = Literal["think", "finalize", "summarize", "critic", "tool"]


class CallPosition(NamedTuple):
    """Where in a graph a model call is made: a replay serves the recorded reply by it."""

    node: str
    """The node that asks."""
    visit: int
    """Which visit of that node, from 1."""
    call: int
    """Which call of that visit, from 1."""

    def __str__(self) -> str:
        return f"{self.node}#{self.visit}" + (f" call {self.call}" if self.call > 1 else "")


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call to a model."""

    messages: list[Message]
    """The projection of the chain made by the policy."""
    tools: list[dict[str, Any]] | None = None
    """Tool schemas in the OpenAI function format, for policies that use native tool calls."""
    turn: int = 0
    """How many model calls the run made before this one. Replay models pick their reply by
    it, so a scripted run resumed in a new process goes on where it stopped."""
    purpose: Purpose = "think"
    position: CallPosition | None = None
    """Where in the graph the call is made, set by `thinkgraph.nodes.ask_model`; a
    `ReplayModel` serves the recorded reply by it. None for a call made elsewhere."""


@dataclass(frozen=True, slots=True)
class ModelReply:
    """What a model answered, with what it cost."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    model: str = ""
    """The model that answered."""
    provider: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    """Cost in USD, or None when unknown."""
    latency_s: float = 0.0
    fallback: bool = False
    """True when a fallback model answered."""


@runtime_checkable
class ChatModel(Protocol):
    """Anything that can answer a `ModelRequest`. Plug in your own by implementing this.

    Raise on failure (network, provider, timeout): think records the error as a step and the
    guards decide what happens next. A model with only `complete` works: runs call it in a
    worker thread. Add `acomplete` (see `AsyncChatModel`) and runs await it instead, so one
    process can wait on a thousand calls at once.
    """

    @property
    def name(self) -> str:
        """A short name for the chain and the CLI, e.g. "openai/gpt-4o-mini"."""
        ...

    def complete(self, request: ModelRequest) -> ModelReply:
        """Answer one request."""
        ...


@runtime_checkable
class AsyncChatModel(ChatModel, Protocol):
    """A `ChatModel` that also answers from async code; runs await `acomplete`."""

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        """Answer one request without blocking the event loop."""
        ...


def call_step(reply: ModelReply, *, purpose: Purpose, node: str = "", **fields: Any) -> LLMCallStep:
    """The chain step that records one model call: what came back and what it cost.

    Args:
        reply: what the model answered.
        purpose: why it was called (think, finalize, summarize, critic).
        node: the node that made the call; when left out, the node running now (the
            purpose's name outside a node).
        fields: other `LLMCallStep` fields to set or override (e.g. a cleaned `text`).
    """
    recorded: dict[str, Any] = {
        "node": node or running_node() or purpose,
        "purpose": purpose,
        "model": reply.model,
        "provider": reply.provider,
        "text": reply.text,
        "tool_calls": list(reply.tool_calls),
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "cost_usd": reply.cost_usd,
        "latency_s": reply.latency_s,
        "fallback": reply.fallback,
    }
    return LLMCallStep(**{**recorded, **fields})


def failed_call_step(
    model: str, exc: BaseException, *, purpose: Purpose, node: str = "", latency_s: float = 0.0
) -> LLMCallStep:
    """The chain step that records a model call that raised; `error` says how it failed."""
    return LLMCallStep(
        node=node or running_node() or purpose,
        purpose=purpose,
        model=model,
        error=f"{type(exc).__name__}: {exc}",
        latency_s=latency_s,
    )
