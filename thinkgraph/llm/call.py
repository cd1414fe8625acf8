"""One model call as a run records it: the reply, the chain step, and what it cost.

Every node that asks a model — think, finalize, the summarizer of the context policy, the
LLM critic — goes through `call_model`, so a call is awaited the same way, timed the same
way, and a provider's failure becomes the same `llm_call` step with its error instead of
an exception. `count_usage` adds a call to the run's counters (and to the turn a
`ScriptedModel` replies by).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Protocol

from thinkgraph import metrics, tracing
from thinkgraph.llm._spans import llm_result, model_attributes, reply_attributes, start_model_run
from thinkgraph.llm.base import (
    AsyncChatModel,
    ChatModel,
    ModelReply,
    ModelRequest,
    call_step,
    failed_call_step,
)
from thinkgraph.state import Counters, LLMCallStep

__all__ = ["ModelCall", "Usage", "acomplete", "call_model", "count_usage"]


@dataclass(frozen=True, slots=True)
class ModelCall:
    """A finished model call: what came back, or how it failed."""

    step: LLMCallStep
    """The `llm_call` step for the chain; its `error` is set when the call failed."""
    reply: ModelReply | None
    """The reply; None when the call raised."""
    error: Exception | None
    """What the model raised, for callers that decide by its kind (e.g. a refused key)."""
    elapsed_s: float
    """Wall time of the call, retries and fallbacks included."""

    @property
    def ok(self) -> bool:
        return self.reply is not None


async def acomplete(model: ChatModel, request: ModelRequest) -> ModelReply:
    """`model`'s answer from async code: awaited, or in a worker thread for a sync model."""
    if isinstance(model, AsyncChatModel):
        return await model.acomplete(request)
    return await asyncio.to_thread(model.complete, request)


async def call_model(
    model: ChatModel, request: ModelRequest, *, node: str = "", **fields: Any
) -> ModelCall:
    """Ask `model` once and record the call; never raises for the provider's failure.

    An `AsyncChatModel` is awaited; a model with only `complete` runs in a worker thread,
    so the event loop never waits on it. The call is traced here (see `thinkgraph.tracing`):
    a "chat" span with the GenAI attributes, and a chat-model run for LangChain callbacks;
    and counted (`thinkgraph.metrics`).

    Args:
        model: the model to ask.
        request: what to ask; its `purpose` names the step.
        node: the node making the call (the purpose's name when left out).
        fields: other `LLMCallStep` fields for a successful call (e.g. a cleaned `text`).
    """
    callbacks = tracing.callback_manager()
    run = None if callbacks is None else await start_model_run(callbacks, model.name, request)
    attributes = model_attributes(model.name, request)
    with tracing.span(f"chat {model.name}", attributes, client=True) as span:
        started = time.perf_counter()
        try:
            reply = await acomplete(model, request)
        except Exception as exc:  # the provider's failure is the run's data, not our crash
            elapsed = time.perf_counter() - started
            metrics.count_model_call(model.name, False, elapsed)
            tracing.set_error(span, exc)
            if run is not None:
                await run.on_llm_error(exc)
            step = failed_call_step(
                model.name, exc, purpose=request.purpose, node=node, latency_s=elapsed
            )
            return ModelCall(step, None, exc, elapsed)
        elapsed = time.perf_counter() - started
        metrics.count_model_call(model.name, True, elapsed)
        tracing.set_attributes(span, reply_attributes(reply))
        if run is not None:
            await run.on_llm_end(llm_result(reply))
    step = call_step(reply, purpose=request.purpose, node=node, **fields)
    return ModelCall(step, reply, None, elapsed)


class Usage(Protocol):
    """What a call used: a model's reply, or the ``llm_call`` step that records one."""

    @property
    def prompt_tokens(self) -> int | None: ...
    @property
    def completion_tokens(self) -> int | None: ...
    @property
    def cost_usd(self) -> float | None: ...


def count_usage(counters: Counters, reply: Usage | None, elapsed: float) -> Counters:
    """Counters after one model call (reply None when the call failed).

    Nodes of yours that call a model should count the call here: it then counts in the
    budgets (tokens, cost) and in the turn a `ScriptedModel` replies by.
    """
    update: dict[str, Any] = {
        "model_calls": counters.model_calls + 1,
        "elapsed_s": counters.elapsed_s + elapsed,
    }
    if reply is not None:
        update["prompt_tokens"] = counters.prompt_tokens + (reply.prompt_tokens or 0)
        update["completion_tokens"] = counters.completion_tokens + (reply.completion_tokens or 0)
        if reply.cost_usd is None:
            update["cost_known"] = False
        else:
            update["cost_usd"] = counters.cost_usd + reply.cost_usd
    return counters.model_copy(update=update)
