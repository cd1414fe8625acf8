"""ScriptedModel: a deterministic model for tests, demos and replay."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from thinkgraph.llm.base import Message, ModelReply, ModelRequest

__all__ = ["ScriptExhaustedError", "ScriptedModel"]


class ScriptExhaustedError(RuntimeError):
    """The script has no reply for this turn."""


class ScriptedModel:
    """A model that answers from a script instead of a provider.

    Give it a list of replies, used in turn, or a callable that receives the messages and
    returns the reply. The list is indexed by the run's model-call count (`request.turn`),
    not by an in-memory counter, so a scripted run resumed in another process continues
    with the right reply. It reports zero tokens and no cost, and calls itself "scripted":
    it is never presented as a real model.

    Example:
        >>> model = ScriptedModel(["Thought: easy\\nFinal Answer: 42"])
        >>> model.complete(ModelRequest(messages=[])).text
        'Thought: easy\\nFinal Answer: 42'
    """

    def __init__(
        self,
        replies: Sequence[str] | Callable[[list[Message]], str],
        *,
        name: str = "scripted",
    ) -> None:
        if isinstance(replies, str):
            raise TypeError("ScriptedModel takes a list of replies or a callable, not one string")
        self._replies: Sequence[str] | None = None if callable(replies) else list(replies)
        self._fn: Callable[[list[Message]], str] | None = replies if callable(replies) else None
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def complete(self, request: ModelRequest) -> ModelReply:
        started = time.perf_counter()
        if self._fn is not None:
            text = self._fn(request.messages)
            if not isinstance(text, str):
                raise TypeError(
                    f"the ScriptedModel callable returned {type(text).__name__}; return a str"
                )
        else:
            assert self._replies is not None
            if request.turn >= len(self._replies):
                raise ScriptExhaustedError(
                    f"the script has {len(self._replies)} replies and turn {request.turn + 1} "
                    "asked for another; add replies or use a callable"
                )
            text = self._replies[request.turn]
        return ModelReply(
            text=text,
            model=self._name,
            provider="scripted",
            prompt_tokens=0,
            completion_tokens=0,
            cost_usd=0.0,
            latency_s=time.perf_counter() - started,
        )

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        return self.complete(request)

    def __repr__(self) -> str:
        size = "callable" if self._fn is not None else f"{len(self._replies or [])} replies"
        return f"ScriptedModel({size})"
