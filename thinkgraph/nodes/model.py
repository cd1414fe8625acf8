"""Asking the model from a node: the one way every node does it, yours included.

`ask_model` makes one model call the way a run records it: the call is an ``llm_call``
step named after the node that made it, with what the model was sent (`SentRequest`: its
position in the graph, a digest, the messages coded against the node's previous call; see
`thinkgraph.nodes._requests`), it counts in the run's counters (model calls,
tokens, cost: the budgets the guards read), a `ScriptedModel` gets the turn it replies
by, and a failure of the provider becomes steps (the failed ``llm_call`` and an ``error``
step of kind "model"), never an exception. think, finalize's forced answer and the LLM
critic ask the model through it; so should a node of yours.

Example:
    A node that asks the model to reflect, and keeps the reflection as its note::

        from thinkgraph.nodes import ask_model
        from thinkgraph.state import NoteStep

        async def reflect(state, *, deps):
            answer = await ask_model(
                state, deps, [{"role": "user", "content": "What went wrong?"}],
                purpose="reflect",
            )
            notes = [NoteStep(text=answer.text)] if answer.ok else []
            return answer.update(chain=notes)

        graph.add_node("reflect", parts.node("reflect", reflect, deps))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from thinkgraph._sync import run_sync
from thinkgraph.llm.base import (
    CallPosition,
    ChatModel,
    Message,
    ModelReply,
    ModelRequest,
    Purpose,
)
from thinkgraph.llm.call import call_model, count_usage
from thinkgraph.nodes._requests import (
    call_position,
    coded_request,
    remember,
    request_digest,
    sent_messages,
)
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import BaseStep, Counters, ErrorStep, LLMCallStep, running_node

__all__ = [
    "ModelAnswer",
    "ask_model",
    "ask_model_sync",
    "count_usage",
    "counted_update",
    "is_fatal_model_error",
    "request_digest",
    "sent_messages",
]


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    """One model call as the run records it: the steps to write and the counters after it."""

    call: LLMCallStep
    """The ``llm_call`` step; its `error` is set when the call failed."""
    steps: tuple[BaseStep, ...]
    """What to add to the chain: the call, and an ``error`` step (kind "model") when it
    failed."""
    counters: Counters
    """The run's counters with this call counted: write them back as ``"counters"``."""
    reply: ModelReply | None
    """What the model answered; None when the call failed."""
    error: Exception | None = None
    """What the model raised, when it failed."""

    @property
    def ok(self) -> bool:
        """Whether the model answered."""
        return self.reply is not None

    @property
    def text(self) -> str:
        """The reply's text ("" when the call failed)."""
        return self.reply.text if self.reply is not None else ""

    @property
    def fatal(self) -> bool:
        """Whether the failure ends the run: the provider refused the credentials."""
        return self.error is not None and is_fatal_model_error(self.error)

    def update(self, **more: Any) -> dict[str, Any]:
        """The whole update a node returns after this call: its steps, then `more`.

        ``more["chain"]`` (the node's own steps) goes after the call's steps; every other key
        is the node's. The counters are the engine's to keep: a node need not return them
        (the node wrapper counts every ``llm_call`` step a node returns, and a failed call
        as a failure, `counted_update`).

        Example:
            >>> return answer.update(chain=[NoteStep(text=answer.text)])  # doctest: +SKIP
        """
        chain = [*self.steps, *(more.pop("chain", None) or ())]
        return {**more, "chain": chain}


async def ask_model(
    state: Mapping[str, Any],
    deps: Deps | None,
    messages: Sequence[Message],
    *,
    purpose: str = "ask",
    tools: list[dict[str, Any]] | None = None,
    model: ChatModel | None = None,
    counters: Counters | None = None,
    count_time: bool = True,
    position: CallPosition | None = None,
    **fields: Any,
) -> ModelAnswer:
    """Ask the model once from a node; record the call, count it, keep a failure as steps.

    Never raises for the provider's failure (network, refusal, timeout, a script run out):
    `ModelAnswer.ok` is False and its steps say what went wrong.

    Args:
        state: the run's state; its ``counters`` are counted on (unless `counters`).
        deps: the agent's parts; the call goes to ``deps.model`` unless `model` is given.
        messages: the chat messages to send, in the OpenAI format.
        purpose: why the model is asked, recorded on the ``llm_call`` step ("reflect",
            "plan", …); think, finalize, summarize and critic are ours. Only a "think"
            call is shown to the model later as its own earlier reply.
        tools: tool schemas in the OpenAI format, for a native tool-calling reply.
        model: another model than the agent's (e.g. a critic's own).
        counters: the counters to count on, when the node already counted other calls.
        count_time: add the call's time to ``elapsed_s``; off for a node that counts its
            whole time itself.
        position: where in the graph the call is made (node, visit, call); worked out
            from the chain and the running node when left out.
        fields: other `LLMCallStep` fields to record on a successful call.

    Returns:
        The call's steps, the counters after it, and the reply.
    """
    asked = model if model is not None else (deps.model if deps is not None else None)
    if asked is None:
        raise TypeError("ask_model needs the agent's parts (deps) or a model=")
    counted = counters if counters is not None else (state.get("counters") or Counters())
    chain = state.get("chain") or ()
    node = str(fields.get("node") or running_node() or purpose)
    position = position or call_position(chain, node, purpose)
    # What the model is sent is recorded with the call, coded against the node's previous
    # call (see `thinkgraph.nodes._requests`): a replay tells a changed prompt by it.
    sent, keyed = coded_request(chain, position, purpose, messages, tools)
    request = ModelRequest(
        messages=list(messages),
        tools=tools,
        # A ScriptedModel replies by the number of calls the run made before this one.
        turn=counted.model_calls,
        purpose=cast(Purpose, purpose),
        position=position,
    )
    called = await call_model(asked, request, **fields)
    step = called.step.model_copy(update={"request": sent})
    remember(step, keyed)
    counted = count_usage(counted, called.reply, called.elapsed_s if count_time else 0.0)
    steps: tuple[BaseStep, ...] = (step,)
    if called.reply is None:
        fatal = called.error is not None and is_fatal_model_error(called.error)
        failed = ErrorStep(node=step.node, kind="model", message=step.error or "", fatal=fatal)
        steps += (failed,)
    return ModelAnswer(step, steps, counted, called.reply, called.error)


def counted_update(before: Counters, update: dict[str, Any]) -> dict[str, Any]:
    """A node's update with its model calls counted, whatever the node returned.

    The engine owns the counters: every ``llm_call`` step a node returns counts once in
    the budgets and in the turn a `ScriptedModel` replies by, and a failed call (an
    ``error`` step of kind "model") counts as a failure — for a node that returned the
    counters `ask_model` gave it (nothing to add) and for one that dropped them alike.

    Args:
        before: the counters the node was given (the state's, before it ran).
        update: what the node returned.
    """
    steps = update.get("chain") or ()
    calls = [s for s in steps if isinstance(s, LLMCallStep)]
    if not calls:
        return update
    given = update.get("counters")
    counters = given if isinstance(given, Counters) else before
    missing = before.model_calls + len(calls) - counters.model_calls
    # Those the node counted (think, finalize, a node returning ask_model's counters) are
    # not counted again.
    for call in calls[-missing:] if missing > 0 else ():
        counters = count_usage(counters, call if call.error is None else None, call.latency_s)
    failed = any(isinstance(s, ErrorStep) and s.kind == "model" for s in steps)
    uncounted = counters.consecutive_failures <= before.consecutive_failures
    if failed and uncounted and "run" not in update:
        # A node that ends the run (`run` set) has nothing left to fail.
        counters = counters.model_copy(
            update={"consecutive_failures": before.consecutive_failures + 1}
        )
    return update if counters is given else {**update, "counters": counters}


def ask_model_sync(
    state: Mapping[str, Any],
    deps: Deps | None,
    messages: Sequence[Message],
    **options: Any,
) -> ModelAnswer:
    """`ask_model` for a node written as a plain ``def`` (it runs in a worker thread).

    Takes the same arguments and returns the same `ModelAnswer`; the call runs on
    thinkgraph's event loop while the node's thread waits for it.
    """
    # The call runs on another thread: name the node and place the call here, where the
    # running node and its visit are known.
    options.setdefault("node", running_node())
    options.setdefault(
        "position",
        call_position(state.get("chain") or (), options["node"], options.get("purpose", "ask")),
    )
    return run_sync(lambda: ask_model(state, deps, messages, **options))


def is_fatal_model_error(exc: BaseException) -> bool:
    """Whether a model failure ends the run at once: the provider refused the credentials.

    Only a `ModelCallError` that says it is not retryable with status 401 or 403 counts;
    anything else may pass on a later try and is left to the failure guard.
    """
    return getattr(exc, "retryable", True) is False and getattr(exc, "status_code", None) in (
        401,
        403,
    )
