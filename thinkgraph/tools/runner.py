"""Run one tool call and record what happened as a `ToolResultStep`.

Whatever the model asked for, the result is a step, never an exception: an unknown tool,
arguments that do not fit, a tool that raised or one that took too long each become a
failed `ToolResultStep` whose `error` tells the model what went wrong and what is
expected, so it can correct itself on the next step.

Order of a call: look the tool up, turn the model's input into arguments and validate
them, then run the tool, retrying `tool.retries` times after an exception with a
doubling pause. Invalid arguments are never retried (the same input fails the same way),
nor is a timeout (a timed-out sync tool may still be running, and a retry would run it
twice at once).

Timeouts: a call gets at most the tool's `timeout_s` and, when the run has a time limit,
at most the run's time left (`time_left_s`, given by act); whichever is shorter is the
call's deadline, and the error says which one stopped it. Retries never start past the
run's deadline. A sync tool with a deadline runs in a shared daemon worker thread and the
caller stops waiting at the deadline. A Python thread cannot be killed, so the tool itself
runs on until it returns; its result is then dropped, and its daemon thread never keeps
the process from exiting. An async tool runs as a task of its own, which the caller stops
waiting for at the deadline, from `aexecute_call` and from `execute_call` alike (there it
runs on its own loop in the worker thread, under the same deadline): it is cancelled, and
one that ignores that for `CANCEL_GRACE_S` is abandoned (closed where it waits, so it
never resumes). An async tool that blocks the event loop cannot be stopped while it
blocks; what it returns after its deadline is discarded and recorded as a timeout.

What a tool returns is made JSON (`thinkgraph.tools.result_json`) within the attempt:
in the worker thread and under the deadline of a sync tool, off the event loop under the
deadline of an async one. A result too large is cut with a note; an iterator that had not
ended within a result's bounds fails the call (never retried); one read past the deadline
is a timeout.

A tool may return a `ToolOutput` to record model usage or a sub-agent's chain beside the
value the model sees; the runner moves those into the `ToolResultStep`. While a tool runs,
`current_registry()` is the registry it was called from, so a delegating tool knows which
agent is calling it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import difflib
import logging
import time
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from thinkgraph import metrics, tracing
from thinkgraph.state import ToolCall, ToolResultStep
from thinkgraph.tools._threads import submit_to_worker
from thinkgraph.tools.base import Tool, ToolContext
from thinkgraph.tools.guard import stand_in
from thinkgraph.tools.output import ToolOutput
from thinkgraph.tools.registry import ToolRegistry, calling_registry
from thinkgraph.tools.result_json import ResultLate, ResultRefused, to_json

__all__ = ["aexecute_call", "execute_call", "validate_args"]

_ErrorKind = Literal["unknown_tool", "invalid_args", "timeout", "exception"]

_MAX_FIELD_ERRORS = 8
_MAX_INPUT_REPR = 80

CANCEL_GRACE_S = 0.5
"""How long an async tool cancelled at its deadline may take to wind down before it is
abandoned (closed where it waits, never to resume)."""

logger = logging.getLogger("thinkgraph.tools")


class _TimedOut(Exception):
    """Internal: the tool did not finish in time (told apart from a TimeoutError it raised)."""

    def __init__(self, late: bool = False) -> None:
        super().__init__()
        self.late = late
        """Whether the tool did return, but after its deadline (it blocked the loop)."""


def execute_call(
    registry: ToolRegistry, call: ToolCall, ctx: ToolContext, *, time_left_s: float | None = None
) -> ToolResultStep:
    """Run one tool call from sync code. Never raises for a problem of the tool or model.

    Args:
        registry: the tools the model may call.
        call: the call the model proposed.
        ctx: the call's context, passed to the tool.
        time_left_s: the run's time left (its `StepLimits.timeout_s` minus the time
            counted so far); the call, retries included, gets no more. None: no run limit.

    Returns:
        The result: `ok=True` with the JSON-safe `output`, or `ok=False` with an `error`
        worded for the model and an `error_kind`. `attempts` counts runs of the tool (0
        when it never ran); `duration_s` covers the whole call, retries included. A
        run's guard (a replay's) may answer instead, and the tool does not run
        (`thinkgraph.tools.guard`).
    """
    instead = stand_in(registry, call, ctx)
    if instead is not None:
        return instead
    tries = _Tries.prepare(registry, call, ctx, time_left_s)
    if isinstance(tries, ToolResultStep):
        return tries
    for pause in tries.pauses():
        if pause:
            time.sleep(pause)
        try:
            with calling_registry(registry):
                output = _invoke(tries.tool, tries.args, ctx, tries.limit())
        except Exception as exc:
            tries.failed(exc)
        else:
            return tries.succeeded(output)
    return tries.result()


async def aexecute_call(
    registry: ToolRegistry, call: ToolCall, ctx: ToolContext, *, time_left_s: float | None = None
) -> ToolResultStep:
    """Run one tool call from async code; the same contract as `execute_call`.

    Async tools run on the caller's loop and are cancelled at their deadline; sync tools
    run in a worker thread so they never block the loop. The call is traced here (see
    `thinkgraph.tracing`): an "execute_tool" span and a tool run for LangChain callbacks;
    and counted (`thinkgraph.metrics`).
    """
    instead = stand_in(registry, call, ctx)  # a replay's guard: the tool does not run
    if instead is not None:
        return instead
    callbacks = tracing.callback_manager()
    run = None
    if callbacks is not None:
        tool = registry.get(call.name)
        description = "" if tool is None else tool.description
        run = await tracing.start_tool_run(callbacks, call, description)
    with tracing.span(f"execute_tool {call.name}", tracing.tool_attributes(call)) as span:
        result = await _aexecute(registry, call, ctx, time_left_s)
        outcome = tracing.tool_outcome(result)
        metrics.count_tool_call(call.name, outcome, result.duration_s)
        if span is not None:
            span.set_attribute("thinkgraph.tool.outcome", outcome)
            span.set_attribute("thinkgraph.tool.attempts", result.attempts)
            if outcome != "ok":
                tracing.set_error(span, result.error or outcome)
    if run is not None:
        await tracing.end_tool_run(run, result)
    return result


async def _aexecute(
    registry: ToolRegistry, call: ToolCall, ctx: ToolContext, time_left_s: float | None
) -> ToolResultStep:
    tries = _Tries.prepare(registry, call, ctx, time_left_s)
    if isinstance(tries, ToolResultStep):
        return tries
    for pause in tries.pauses():
        if pause:
            await asyncio.sleep(pause)
        try:
            with calling_registry(registry):
                output = await _ainvoke(tries.tool, tries.args, ctx, tries.limit())
        except Exception as exc:
            tries.failed(exc)
        else:
            return tries.succeeded(output)
    return tries.result()


# -- running --------------------------------------------------------------------------------


class _Deadline:
    """When a call must end: the tool's own `timeout_s` per attempt, the run's for all."""

    def __init__(self, tool: Tool, started: float, time_left_s: float | None) -> None:
        self.tool_s = tool.timeout_s
        self.time_left_s = time_left_s
        self.run_ends = None if time_left_s is None else started + time_left_s
        self.run_stopped = False
        """Whether the run's time, not the tool's timeout, bounded the latest attempt."""

    def limit(self) -> float | None:
        """Seconds the next attempt may take; None for no limit."""
        if self.run_ends is None:
            return self.tool_s
        left = self.run_ends - time.perf_counter()
        self.run_stopped = self.tool_s is None or left < self.tool_s
        return left if self.run_stopped else self.tool_s

    def fits(self, pause: float) -> bool:
        """Whether a retry after `pause` would still start within the run's time."""
        return self.run_ends is None or time.perf_counter() + pause < self.run_ends


class _Tries:
    """The attempts of one call, shared by the sync and async runners.

    The runner sleeps each pause `pauses()` yields, runs the tool once under `limit()`
    and reports back (`failed` or `succeeded`); `result()` is the outcome when no attempt
    succeeded.
    """

    def __init__(
        self,
        call: ToolCall,
        ctx: ToolContext,
        started: float,
        prepared: tuple[Tool, BaseModel],
        time_left_s: float | None,
    ) -> None:
        self.call, self.ctx, self.started = call, ctx, started
        self.tool, self.args = prepared
        self.clock = _Deadline(self.tool, started, time_left_s)
        self.attempt = 0
        """How many times the tool has been started."""
        self.error: Exception | None = None
        self.timed_out: ToolResultStep | None = None
        self.refused = False
        """Whether the tool's result could not be kept (never retried: the same tool
        returns the same kind of value)."""

    @classmethod
    def prepare(
        cls, registry: ToolRegistry, call: ToolCall, ctx: ToolContext, time_left_s: float | None
    ) -> _Tries | ToolResultStep:
        """The attempts to come, or the failed result when the call cannot run at all."""
        started = time.perf_counter()
        prepared = _prepare(registry, call, ctx, started)
        if isinstance(prepared, ToolResultStep):
            return prepared
        return cls(call, ctx, started, prepared, time_left_s)

    def pauses(self) -> Iterator[float]:
        """The pause before each attempt: 0 before the first, then a doubling backoff.

        Stops after `tool.retries` retries, at a timeout, or when a retry would not start
        within the run's time.
        """
        for attempt in range(1, max(self.tool.retries, 0) + 2):
            pause = 0.0 if attempt == 1 else _backoff(self.tool, attempt)
            if self.timed_out is not None or self.refused:
                return
            if attempt > 1 and not self.clock.fits(pause):
                return
            self.attempt = attempt
            yield pause

    def limit(self) -> float | None:
        """Seconds this attempt may take (None: no limit); raises `_TimedOut` when the run
        is out of time before the first attempt."""
        limit = self.clock.limit()
        if self.attempt == 1 and limit is not None and limit <= 0:
            self.attempt = 0  # the run is out of time: the tool never ran
            raise _TimedOut
        return limit

    def failed(self, exc: Exception) -> None:
        """Record an attempt that raised; a timeout ends the call (it is never retried)."""
        if isinstance(exc, _TimedOut):
            self.timed_out = _timed_out(
                self.tool,
                self.call,
                self.ctx,
                self.started,
                self.attempt,
                self.clock,
                late=exc.late,
            )
        else:
            self.error = exc
            self.refused = isinstance(exc, ResultRefused)

    def succeeded(self, output: Any) -> ToolResultStep:
        """The result of the attempt that returned `output`."""
        return _succeeded(self.call, self.ctx, self.started, output, self.attempt)

    def result(self) -> ToolResultStep:
        """The outcome once no attempt succeeded: the timeout, or the last exception."""
        if self.timed_out is not None:
            return self.timed_out
        refused = f"tool {self.tool.name!r} {self.error}"
        error = refused if self.refused else _describe(self.error)
        return _failed(self.call, self.ctx, self.started, "exception", error, self.attempt)


def _with_deadline(ctx: ToolContext, limit: float) -> ToolContext:
    return dataclasses.replace(ctx, deadline=time.monotonic() + limit)


def _raise_if_late(ctx: ToolContext) -> None:
    """A tool that failed once its deadline had passed was stopped by it: a timeout.

    (`sql_query`, say, tells SQLite to give up at the deadline and reports that: the
    runner would have stopped waiting at that very moment.)
    """
    if ctx.deadline is not None and time.monotonic() >= ctx.deadline:
        raise _TimedOut from None


def _invoke(tool: Tool, args: BaseModel, ctx: ToolContext, limit: float | None) -> Any:
    """The tool's result, converted (`_converted`) within the attempt's time."""
    if limit is None:
        return _converted(tool.run(args, ctx), ctx)  # no deadline: no thread hop either
    ctx = _with_deadline(ctx, limit)
    if tool.is_async:
        # On its own loop in the worker, under the same deadline: cancelled, not orphaned.
        future = submit_to_worker(_run_until, tool, args, ctx, limit)
    else:
        future = submit_to_worker(_run_converted, tool, args, ctx)
    try:
        try:
            return future.result(timeout=limit)
        except TimeoutError:
            if not future.done():
                future.cancel()  # stops it only if it has not started yet
                raise _TimedOut from None
            # It finished meanwhile, or raised a TimeoutError of its own: report that.
            return future.result()
    except _TimedOut:
        raise
    except Exception:
        _raise_if_late(ctx)
        raise


def _run_converted(tool: Tool, args: BaseModel, ctx: ToolContext) -> Any:
    return _converted(tool.run(args, ctx), ctx)


def _converted(output: Any, ctx: ToolContext) -> Any:
    """What the tool returned, as JSON within a result's bounds and the attempt's deadline
    (see `thinkgraph.tools.result_json`); a `ToolOutput` keeps its other fields.

    Here, where the tool ran (its worker thread, under its deadline), not after the caller
    stopped waiting: an endless iterator is then refused (`ResultRefused`) or stopped at
    the deadline (`_TimedOut`), never read without end.
    """
    try:
        if isinstance(output, ToolOutput):
            value = to_json(output.value, deadline=ctx.deadline)
            usage = to_json(dict(output.usage), deadline=ctx.deadline) if output.usage else None
            return dataclasses.replace(output, value=value, usage=usage)
        return to_json(output, deadline=ctx.deadline)
    except ResultLate:
        raise _TimedOut from None


async def _aconverted(output: Any, ctx: ToolContext) -> Any:
    """`_converted` from async code: off the event loop (reading a generator may take up
    to the deadline), waited for no longer than the deadline."""
    if output is None or type(output) in (str, int, float, bool) or ctx.deadline is None:
        return _converted(output, ctx)  # nothing to walk, or no deadline to keep
    converting = asyncio.wrap_future(submit_to_worker(_converted, output, ctx))
    done, _ = await asyncio.wait({converting}, timeout=max(ctx.deadline - time.monotonic(), 0))
    if not done:
        converting.add_done_callback(_forget)  # it stops at the deadline on its own
        raise _TimedOut
    return converting.result()


def _run_until(tool: Tool, args: BaseModel, ctx: ToolContext, limit: float) -> Any:
    return asyncio.run(_ainvoke(tool, args, ctx, limit))


async def _ainvoke(tool: Tool, args: BaseModel, ctx: ToolContext, limit: float | None) -> Any:
    if limit is None:
        return _converted(await tool.arun(args, ctx), ctx)
    if ctx.deadline is None:
        ctx = _with_deadline(ctx, limit)
    # A task of its own, waited for with `asyncio.wait`: waiting ends at the deadline even
    # when the tool ignores being cancelled, which `asyncio.timeout` (it awaits the
    # cancelled tool to the end) cannot promise.
    running = asyncio.ensure_future(tool.arun(args, ctx))
    try:
        done, _ = await asyncio.wait({running}, timeout=limit)
    except BaseException:  # our own caller was cancelled (Ctrl-C, a sibling call failed)
        await _stop(tool, running)
        raise
    if not done:
        await _stop(tool, running)
        raise _TimedOut
    if ctx.deadline is not None and time.monotonic() >= ctx.deadline:
        # It returned, but only after its deadline: it held the event loop (a blocking call
        # in an async tool), so nothing could stop it in time. The run has moved on.
        _forget(running)
        raise _TimedOut(late=True)
    try:
        output = running.result()
    except Exception:
        _raise_if_late(ctx)
        raise
    return await _aconverted(output, ctx)


async def _stop(tool: Tool, running: asyncio.Future[Any]) -> None:
    """Cancel the tool's task; abandon it if it has not ended `CANCEL_GRACE_S` later."""
    running.cancel()
    done, _ = await asyncio.wait({running}, timeout=CANCEL_GRACE_S)
    if done:
        _forget(running)
        return
    logger.warning(
        "tool %r ignored its cancellation for %g s; abandoned (it will not resume)",
        tool.name,
        CANCEL_GRACE_S,
    )
    running.add_done_callback(_forget)
    coro = running.get_coro() if isinstance(running, asyncio.Task) else None
    close = getattr(coro, "close", None)
    if callable(close):
        # Throws GeneratorExit where the tool waits: its `finally` blocks run and it never
        # resumes, so it acts no more for a run that has moved on, and `asyncio.run` does
        # not wait on it at exit. (RuntimeError: it awaited again while closing; it is then
        # left to its loop, which nothing waits on.)
        with contextlib.suppress(RuntimeError):
            close()
    # The task itself still waits on what the tool awaited: cancelling it again ends it now.
    running.cancel()


def _forget(running: asyncio.Future[Any]) -> None:
    """Retrieve a finished task's outcome, so asyncio does not log it as never retrieved."""
    if running.done() and not running.cancelled():
        running.exception()


def _backoff(tool: Tool, attempt: int) -> float:
    """The pause before `attempt` (2, 3, …): retry_backoff_s, then doubling."""
    return float(tool.retry_backoff_s * 2 ** (attempt - 2))


# -- arguments ------------------------------------------------------------------------------


def validate_args(tool: Tool, call: ToolCall) -> BaseModel | None:
    """The call's validated arguments for `tool`, or None when they do not fit.

    The same mapping of the model's input as a real call, so the cache compares calls the
    way the tool would see them (`{"a": 1}` and `{"a": 1, "b": 2}` match when b defaults
    to 2).
    """
    raw = _raw_input(tool, call)
    if raw is None:
        return None
    try:
        return tool.args_model.model_validate(raw)
    except ValidationError:
        return None


def _raw_input(tool: Tool, call: ToolCall) -> dict[str, Any] | None:
    """The model's input as an arguments object; None for text the tool cannot take."""
    if call.args is not None:
        return call.args
    if call.raw_args is None:
        return {}  # no input at all: fine for a tool without required parameters
    param = tool.single_str_param()
    return None if param is None else {param: call.raw_args}


def _prepare(
    registry: ToolRegistry, call: ToolCall, ctx: ToolContext, started: float
) -> tuple[Tool, BaseModel] | ToolResultStep:
    """The tool and its validated arguments, or the failed result that says why not."""
    tool = registry.get(call.name)
    if tool is None:
        return _failed(call, ctx, started, "unknown_tool", _unknown_tool(registry, call.name), 0)
    raw = _raw_input(tool, call)
    if raw is None:
        return _failed(call, ctx, started, "invalid_args", _not_an_object(tool, call), 0)
    try:
        return tool, tool.args_model.model_validate(raw)
    except ValidationError as exc:
        return _failed(call, ctx, started, "invalid_args", _invalid_args(tool, exc), 0)


def _unknown_tool(registry: ToolRegistry, name: str) -> str:
    names = registry.names
    if not names:
        return f"unknown tool {name!r}: no tools are available; answer without calling a tool"
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"unknown tool {name!r}.{hint} Available tools: {', '.join(names)}."


def _not_an_object(tool: Tool, call: ToolCall) -> str:
    raw = _short(call.raw_args)
    return (
        f"tool {tool.name!r} takes a JSON object like {_example(tool)}, not plain text "
        f"({raw}); send the arguments as a JSON object"
    )


def _invalid_args(tool: Tool, exc: ValidationError) -> str:
    lines = [f"invalid arguments for tool {tool.name!r}:"]
    errors = exc.errors(include_url=False)
    for err in errors[:_MAX_FIELD_ERRORS]:
        where = ".".join(str(part) for part in err["loc"]) or "(arguments)"
        if err["type"] == "missing":
            lines.append(f"- {where}: missing (required)")
        elif err["type"] == "extra_forbidden":
            lines.append(f"- {where}: unexpected argument (the tool has no such parameter)")
        else:
            lines.append(f"- {where}: {err['msg']} (got {_short(err['input'])})")
    if len(errors) > _MAX_FIELD_ERRORS:
        lines.append(f"- … and {len(errors) - _MAX_FIELD_ERRORS} more")
    lines.append(f"expected a JSON object like {_example(tool)}")
    return "\n".join(lines)


def _example(tool: Tool) -> str:
    """A compact picture of the arguments, e.g. {"a": <integer>, "b": <integer, optional>}."""
    schema = tool.json_schema()
    required = set(schema.get("required", []))
    parts = []
    for name, prop in schema.get("properties", {}).items():
        optional = "" if name in required else ", optional"
        parts.append(f'"{name}": <{_type_label(prop)}{optional}>')
    return "{" + ", ".join(parts) + "}"


def _type_label(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return "one of " + ", ".join(repr(value) for value in prop["enum"])
    if "const" in prop:
        return repr(prop["const"])
    if "type" in prop:
        return str(prop["type"])
    if "anyOf" in prop:
        return " or ".join(_type_label(option) for option in prop["anyOf"])
    return "object" if "$ref" in prop else "value"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_INPUT_REPR else text[: _MAX_INPUT_REPR - 1] + "…"


# -- results --------------------------------------------------------------------------------


def _describe(exc: Exception | None) -> str:
    if exc is None:
        return "the tool failed"
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _succeeded(
    call: ToolCall, ctx: ToolContext, started: float, output: Any, attempts: int
) -> ToolResultStep:
    extra: dict[str, Any] = {}
    if isinstance(output, ToolOutput):
        extra = {
            "usage": output.usage or None,
            "child_thread_id": output.child_thread_id,
            "child_chain": output.child_chain,
        }
        output = output.value
    return ToolResultStep(
        call_id=call.id,
        tool=call.name,
        ok=True,
        output=output,
        duration_s=time.perf_counter() - started,
        attempts=attempts,
        idempotency_key=ctx.idempotency_key,
        **extra,
    )


def _failed(
    call: ToolCall, ctx: ToolContext, started: float, kind: _ErrorKind, error: str, attempts: int
) -> ToolResultStep:
    return ToolResultStep(
        call_id=call.id,
        tool=call.name,
        ok=False,
        error=error,
        error_kind=kind,
        duration_s=time.perf_counter() - started,
        attempts=attempts,
        idempotency_key=ctx.idempotency_key,
    )


def _timed_out(
    tool: Tool,
    call: ToolCall,
    ctx: ToolContext,
    started: float,
    attempt: int,
    clock: _Deadline,
    *,
    late: bool = False,
) -> ToolResultStep:
    if late and not clock.run_stopped:
        error = (
            f"tool {tool.name!r} returned after its {tool.timeout_s:g} s timeout; its result "
            "was discarded"
        )
    elif late:
        error = (
            f"tool {tool.name!r} returned after the run's time limit ran out (it had "
            f"{clock.time_left_s:.1f} s left); its result was discarded; no more tool calls "
            "can run: answer with what you have"
        )
    elif not clock.run_stopped:
        error = f"tool {tool.name!r} did not finish within {tool.timeout_s:g} s"
    elif attempt == 0:
        error = (
            f"tool {tool.name!r} did not run: the run's time limit has run out; no more tool "
            "calls can run: answer with what you have"
        )
    else:
        error = (
            f"tool {tool.name!r} was stopped: the run's time limit ran out while it ran (it "
            f"had {clock.time_left_s:.1f} s left); no more tool calls can run: answer with "
            "what you have"
        )
    return _failed(call, ctx, started, "timeout", error, attempt)
