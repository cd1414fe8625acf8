"""Traces out: OpenTelemetry spans and LangChain callbacks for runs, nodes, model and tool calls.

OpenTelemetry is optional (``pip install thinkgraph[otel]``). When it is importable and a
tracer provider is configured (the global one, or one given with `use_tracer_provider`), a
run emits a span tree::

    thinkgraph.run                      thread id, status, stop reason
    └── thinkgraph.node <name>          one per node execution
        ├── chat <model>                GenAI attributes: provider, models, tokens; cost
        └── execute_tool <tool>         tool name, call id, outcome ok/error/timeout

with ``thinkgraph.thread_id`` on every span. With no provider configured (or without
OpenTelemetry) every helper here is a no-op that costs one check.

LangChain callbacks given to the run's config (``Agent(callbacks=...)``, or any graph run
with ``config={"callbacks": ...}``) see each model call as a chat-model run and each tool
call as a tool run, children of the node's run, so LangSmith and Langfuse show them with
token usage. Nodes find the handlers in LangGraph's current config.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import Callbacks
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

if TYPE_CHECKING:
    from langchain_core.callbacks import (
        AsyncCallbackManager,
        AsyncCallbackManagerForToolRun,
    )
    from langchain_core.runnables import RunnableConfig
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from thinkgraph.result import RunResult
    from thinkgraph.state import ToolCall, ToolResultStep

try:
    from opentelemetry import trace as _otel
except ImportError:  # the optional extra is not installed: spans are off
    _otel = None  # type: ignore[assignment]

__all__ = [
    "RUN_SPAN",
    "ToolCallFailed",
    "callback_manager",
    "current_thread_id",
    "end_run",
    "end_tool_run",
    "run_span",
    "set_attributes",
    "set_error",
    "span",
    "start_tool_run",
    "tool_outcome",
    "traced_config",
    "use_tracer_provider",
]

RUN_SPAN = "thinkgraph.run"
"""The name of a run's root span (one per run, resume or fork call)."""

_provider: contextvars.ContextVar[TracerProvider | None] = contextvars.ContextVar(
    "thinkgraph_tracer_provider", default=None
)
_cached: tuple[Any, Tracer] | None = None


@contextlib.contextmanager
def use_tracer_provider(provider: TracerProvider) -> Iterator[None]:
    """Trace the runs started inside the block to `provider` instead of the global one.

    The provider follows the context (tasks started inside inherit it), so a test or one
    part of an application can record spans without setting the process-wide provider.

    Example:
        >>> with use_tracer_provider(provider):  # doctest: +SKIP
        ...     agent.run("What is 2 + 40?")
    """
    token = _provider.set(provider)
    try:
        yield
    finally:
        _provider.reset(token)


def _tracer() -> Tracer | None:
    """The tracer to use now; None when no provider is configured (spans are off)."""
    global _cached
    if _otel is None:
        return None
    provider = _provider.get() or _otel.get_tracer_provider()
    # Nothing configured: the API's proxy (no SDK set yet) or its no-op provider.
    if isinstance(provider, _otel.ProxyTracerProvider | _otel.NoOpTracerProvider):
        return None
    if _cached is None or _cached[0] is not provider:
        _cached = (provider, provider.get_tracer("thinkgraph"))
    return _cached[1]


def current_thread_id(config: RunnableConfig | None = None) -> str:
    """The thread id of the run being executed (from `config` or LangGraph's current one)."""
    config = config or var_child_runnable_config.get()
    if not config:
        return ""
    return str(config.get("configurable", {}).get("thread_id", ""))


@contextlib.contextmanager
def span(
    name: str,
    attributes: dict[str, Any] | None = None,
    *,
    thread_id: str | None = None,
    client: bool = False,
) -> Iterator[Span | None]:
    """A span around the block, current inside it; yields None when tracing is off.

    The thread id (of the current run when not given) is set on it. An exception ending
    the block marks the span as failed, except LangGraph's interrupts: a pause is not a
    failure. Set outcomes on the yielded span with `set_error` and `set_attributes`.
    """
    tracer = _tracer()
    if tracer is None:
        yield None
        return
    kind = _otel.SpanKind.CLIENT if client else _otel.SpanKind.INTERNAL
    with tracer.start_as_current_span(
        name, kind=kind, record_exception=False, set_status_on_exception=False
    ) as current:
        current.set_attribute(
            "thinkgraph.thread_id", current_thread_id() if thread_id is None else thread_id
        )
        if attributes:
            set_attributes(current, attributes)
        try:
            yield current
        except BaseException as exc:
            if _is_interrupt(exc):
                current.set_attribute("thinkgraph.interrupted", True)
            else:
                current.record_exception(exc)
                set_error(current, exc)
            raise


def run_span(thread_id: str, *, resumed: bool = False) -> contextlib.AbstractContextManager[Any]:
    """The root span of one run, resume or fork call; end it with `end_run`."""
    return span(RUN_SPAN, {"thinkgraph.resumed": resumed}, thread_id=thread_id)


def end_run(current: Span | None, result: RunResult) -> None:
    """Record how the run stood when the call returned: status and stop reason."""
    if current is None:
        return
    set_attributes(
        current,
        {
            "thinkgraph.status": result.status,
            "thinkgraph.stop_reason": result.stop_reason,
            "thinkgraph.model_calls": result.counters.model_calls,
            "gen_ai.usage.input_tokens": result.counters.prompt_tokens,
            "gen_ai.usage.output_tokens": result.counters.completion_tokens,
        },
    )
    if result.status == "failed":
        set_error(current, result.detail or str(result.stop_reason))


def set_attributes(current: Span | None, attributes: dict[str, Any]) -> None:
    """Set the attributes that have a value (None is left out, as OpenTelemetry wants)."""
    if current is None:
        return
    for key, value in attributes.items():
        if value is not None:
            current.set_attribute(key, value)


def set_error(current: Span | None, error: BaseException | str) -> None:
    """Mark the span as failed with a short description."""
    if current is None or _otel is None:
        return
    description = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    current.set_status(_otel.Status(_otel.StatusCode.ERROR, description))
    if not isinstance(error, str):
        current.set_attribute("error.type", type(error).__qualname__)


def _is_interrupt(exc: BaseException) -> bool:
    """A pause (LangGraph's interrupt), or a run its caller stopped: no failure of the run.

    A stream left early closes its generator (GeneratorExit); a cancelled task or Ctrl-C
    raises CancelledError or KeyboardInterrupt through it. The run stays resumable.
    """
    import asyncio

    from langgraph.errors import GraphBubbleUp

    return isinstance(
        exc, GraphBubbleUp | GeneratorExit | asyncio.CancelledError | KeyboardInterrupt
    )


def callback_manager() -> AsyncCallbackManager | None:
    """The callback manager of the node running now; None when it has no handlers.

    Its runs are children of the node's run and carry the run's tags and metadata. Without
    handlers (the common case) nothing is built, so callbacks cost nothing when unused.
    """
    config = var_child_runnable_config.get()
    if not config:
        return None
    callbacks = config.get("callbacks")
    if not callbacks or not getattr(callbacks, "handlers", callbacks):
        return None
    from langchain_core.runnables.config import get_async_callback_manager_for_config

    return get_async_callback_manager_for_config(config)


# -- what model and tool calls look like to callbacks and spans ----------------------------


class ToolCallFailed(Exception):
    """A tool call's failure as LangChain callbacks see it (`on_tool_error`).

    Only handlers receive it: a failed call is a step of the run, never raised.
    """


def tool_attributes(call: ToolCall) -> dict[str, Any]:
    """The GenAI attributes of a tool call's span."""
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
    }


def answered_call(call: ToolCall, result: ToolResultStep, outcome: str) -> None:
    """The span of a call a person answered instead of letting it run (approve node).

    The same name and attributes as a call that ran, with outcome "rejected" (an error
    status, as the model sees an error) or "responded"; no time was spent in the tool.
    """
    with span(f"execute_tool {call.name}", tool_attributes(call)) as current:
        if current is not None:
            current.set_attribute("thinkgraph.tool.outcome", outcome)
            current.set_attribute("thinkgraph.tool.attempts", 0)
            if not result.ok:
                set_error(current, result.error or outcome)


def tool_outcome(result: ToolResultStep) -> str:
    """A tool call's outcome for its span: ok, error, timeout or rejected."""
    if result.ok:
        return "ok"
    return result.error_kind if result.error_kind in ("timeout", "rejected") else "error"


async def start_tool_run(
    manager: AsyncCallbackManager, call: ToolCall, description: str
) -> AsyncCallbackManagerForToolRun:
    """Tell the handlers a tool call starts, with the model's input."""
    inputs = call.args if call.args is not None else None
    text = json.dumps(call.args) if call.args is not None else (call.raw_args or "")
    return await manager.on_tool_start(
        {"name": call.name, "description": description},
        text,
        name=call.name,
        inputs=inputs,
        tool_call_id=call.id,
    )


async def end_tool_run(run: AsyncCallbackManagerForToolRun, result: ToolResultStep) -> None:
    """Tell the handlers how a tool call ended."""
    if result.ok:
        await run.on_tool_end(result.output, name=result.tool)
    else:
        await run.on_tool_error(ToolCallFailed(result.error or "the tool failed"))


def traced_config(
    callbacks: Callbacks,
    tags: Sequence[str],
    metadata: Mapping[str, Any] | None,
    run_name: str | None,
) -> RunnableConfig:
    """The LangChain tracing config every graph call of an agent carries (only what is set)."""
    traced: RunnableConfig = {}
    if callbacks:
        traced["callbacks"] = callbacks
    if tags:
        traced["tags"] = list(tags)
    if metadata:
        traced["metadata"] = dict(metadata)
    if run_name:
        traced["run_name"] = run_name
    return traced
