"""ReplayModel: answers from a recorded run, by where in the graph each call is made.

A replay serves each model call the reply the recorded run got at the same position:
the same node, the same visit of it, the same call of that visit (`CallPosition`, set on
the request by `thinkgraph.nodes.ask_model`). Not by the exact request: a prompt edited
since the run was recorded still gets its reply, and the replay reports the edit instead
(see `thinkgraph.runs.replay`). A call made outside `ask_model` (a summary of the context
policy) has no position and is served by its order among the calls of its node and
purpose.

A position the record does not have is a miss: `ReplayMissError`, unless the model is
`live`, when the call goes to the real model it was given: at most `max_live_calls`
requests are sent, retries included (counted where they are sent, `llm.retry`; a model
that sends its own counts one per call).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from thinkgraph.llm.base import CallPosition, ChatModel, ModelReply, ModelRequest
from thinkgraph.llm.call import acomplete
from thinkgraph.llm.retry import RequestBudget, RequestBudgetSpent, spending
from thinkgraph.state import BaseStep, LLMCallStep, running_node

__all__ = ["RecordedModelError", "ReplayMissError", "ReplayModel", "position_of"]


class ReplayMissError(RuntimeError):
    """The recorded run made no model call at this position."""


class RecordedModelError(Exception):
    """The recorded call failed; replayed, it fails with the same message."""


_Key = tuple[str, int, int] | tuple[str, str, str, int]


def _failure(error: str) -> Exception:
    """An exception recorded as `error` ("Kind: message") by `call_model` again."""
    kind, sep, message = error.partition(": ")
    if not sep or not kind.isidentifier():
        kind, message = "RecordedModelError", error
    failure: Exception = type(kind, (RecordedModelError,), {})(message)
    return failure


class ReplayModel:
    """A `ChatModel` that serves a recorded run's replies by graph position.

    Args:
        chain: the recorded run's chain; its ``llm_call`` steps are the replies.
        live: the real model to ask once the replay goes live (see `go_live`).
        max_live_calls: at most this many requests go to `live`, retries included; after
            that a call fails.
        on_miss: called with the position of a call the record does not have.
        name: the model's name in the chain; the recorded model's name when left out.

    Example:
        >>> from thinkgraph import Agent, ScriptedModel
        >>> with Agent(ScriptedModel(["Final Answer: 4"]), store="memory://") as a:
        ...     chain = a.run("2 + 2?", "t").chain
        ...     again = Agent(ReplayModel(chain), store="memory://").run("2 + 2?", "r")
        >>> again.answer
        '4'
    """

    def __init__(
        self,
        chain: Sequence[BaseStep],
        *,
        live: ChatModel | None = None,
        max_live_calls: int = 0,
        on_miss: Callable[[str], None] | None = None,
        name: str | None = None,
    ) -> None:
        self._recorded: dict[_Key, LLMCallStep] = {}
        counts: dict[tuple[str, str], int] = {}
        for step in chain:
            if not isinstance(step, LLMCallStep):
                continue
            if step.request is not None:
                self._recorded[(step.node, step.request.visit, step.request.call)] = step
            else:
                key = (step.node, step.purpose)
                counts[key] = counts.get(key, 0) + 1
                self._recorded[("~", step.node, step.purpose, counts[key])] = step
        first = next(iter(self._recorded.values()), None)
        self._name = name or (first.model if first is not None and first.model else "replay")
        self._unplaced: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self.live_model = live
        self.max_live_calls = max_live_calls
        self.on_miss = on_miss
        self.live = False
        """Whether calls go to the real model now (set by `go_live`)."""
        self.served = 0
        """Replies served from the record."""
        self.live_calls = 0
        """Calls that went to the real model."""
        self.requests = RequestBudget(max_live_calls)
        """The requests those calls sent (retries included), against `max_live_calls`."""
        self.misses: list[str] = []
        """The positions asked for that the record does not have, in order."""
        self.refused = False
        """Whether a live call or request was refused: `max_live_calls` were sent."""

    @property
    def name(self) -> str:
        return self._name

    def go_live(self) -> None:
        """From now on, ask the real model (at most `max_live_calls` times)."""
        self.live = True

    def _key(self, request: ModelRequest) -> tuple[_Key, str]:
        if request.position is not None:
            node, visit, call = request.position
            return (node, visit, call), str(request.position)
        node = running_node() or request.purpose
        with self._lock:
            count = self._unplaced.get((node, request.purpose), 0) + 1
            self._unplaced[(node, request.purpose)] = count
        return ("~", node, request.purpose, count), f"{node} {request.purpose} call {count}"

    def _recorded_reply(self, request: ModelRequest) -> tuple[ModelReply | None, str]:
        key, where = self._key(request)
        step = None if self.live else self._recorded.get(key)
        if step is None:
            if not self.live:
                self.misses.append(where)
                if self.on_miss is not None:
                    self.on_miss(where)
            return None, where
        self.served += 1
        if step.error is not None:
            raise _failure(step.error)
        return ModelReply(
            text=step.text,
            tool_calls=list(step.tool_calls),
            model=step.model,
            provider=step.provider,
            prompt_tokens=step.prompt_tokens,
            completion_tokens=step.completion_tokens,
            cost_usd=step.cost_usd,
            fallback=step.fallback,
        ), where

    def _live_model(self, where: str) -> ChatModel:
        if not self.live or self.live_model is None:
            raise ReplayMissError(
                f"the recorded run made no model call at {where}; replay "
                "with live_from_divergence and max_calls to ask the real model from here"
            )
        with self._lock:
            if self.requests.sent >= self.max_live_calls:
                raise self._spent()
            self.live_calls += 1
        return self.live_model

    def _spent(self) -> ReplayMissError:
        self.refused = True
        return ReplayMissError(
            f"the replay sent its {self.max_live_calls} real model requests "
            "(max_calls); raise max_calls to go further"
        )

    def _sent(self, before: int) -> None:
        # A model that sends its requests itself (not through `llm.retry`) counts one.
        with self._lock:
            if self.requests.sent == before:
                self.requests.sent += 1

    def complete(self, request: ModelRequest) -> ModelReply:
        reply, where = self._recorded_reply(request)
        if reply is not None:
            return reply
        model, before = self._live_model(where), self.requests.sent
        try:
            with spending(self.requests):
                return model.complete(request)
        except RequestBudgetSpent:
            raise self._spent() from None
        finally:
            self._sent(before)

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        reply, where = self._recorded_reply(request)
        if reply is not None:
            return reply
        model, before = self._live_model(where), self.requests.sent
        try:
            with spending(self.requests):
                return await acomplete(model, request)
        except RequestBudgetSpent:
            raise self._spent() from None
        finally:
            self._sent(before)

    def __repr__(self) -> str:
        return f"ReplayModel({len(self._recorded)} recorded calls)"


def position_of(step: LLMCallStep) -> CallPosition | None:
    """Where a recorded call was made, when its request was recorded."""
    if step.request is None:
        return None
    return CallPosition(step.node, step.request.visit, step.request.call)
