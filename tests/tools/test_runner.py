"""execute_call / aexecute_call: every outcome of a tool call becomes a ToolResultStep."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from tests.tools.conftest import CTX, Runner
from thinkgraph.state import ToolCall, ToolResultStep
from thinkgraph.tools import (
    Tool,
    ToolContext,
    ToolRegistry,
    aexecute_call,
    execute_call,
    tool,
)


class NoArgs(BaseModel):
    """Arguments of a tool without parameters."""


REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Lets a deliberately stuck tool thread finish once the test is over."""
    event = threading.Event()
    yield event
    event.set()


@tool
def add(a: int, b: int = 2) -> int:
    """Add two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@tool
def fail(message: str) -> None:
    """Always fail."""
    raise ValueError(message)


REGISTRY = ToolRegistry([add, shout, fail])


def call(name: str, args: dict[str, Any] | None = None, raw: str | None = None) -> ToolCall:
    return ToolCall(name=name, args=args, raw_args=raw, id="call-1")


# -- success ---------------------------------------------------------------------------------


def test_success_records_output_and_the_call(run_call: Runner) -> None:
    result = run_call(REGISTRY, call("add", {"a": 1, "b": 4}))
    assert result.ok is True
    assert result.output == 5
    assert (result.error, result.error_kind) == (None, None)
    assert (result.call_id, result.tool, result.attempts) == ("call-1", "add", 1)
    assert result.idempotency_key == "thread-1:2:call-1"


@tool
def nap(seconds: float) -> str:
    """Sleep, then say so."""
    time.sleep(seconds)
    return "rested"


def test_the_duration_is_the_calls_own_time(run_call: Runner) -> None:
    result = run_call(ToolRegistry([nap]), call("nap", {"seconds": 0.2}))
    assert result.ok and result.output == "rested"
    assert 0.2 <= result.duration_s < 10  # the tool's sleep, measured; not a constant


def test_output_is_made_json_safe(run_call: Runner) -> None:
    class Point(BaseModel):
        x: int

    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    @tool
    def mixed() -> Any:
        """Return odd things."""
        return {"point": Point(x=1), "pair": (1, 2), "thing": Opaque(), "nan": float("nan")}

    result = run_call(ToolRegistry([mixed]), call("mixed"))
    assert result.output == {"point": {"x": 1}, "pair": [1, 2], "thing": "<opaque>", "nan": None}


def test_call_without_any_input_uses_an_empty_object(run_call: Runner) -> None:
    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    assert run_call(ToolRegistry([ping]), call("ping")).output == "pong"


def test_context_is_passed_to_a_ctx_parameter(run_call: Runner) -> None:
    @tool
    def whoami(ctx: ToolContext) -> str:
        """Report the idempotency key."""
        return ctx.idempotency_key

    assert run_call(ToolRegistry([whoami]), call("whoami")).output == "thread-1:2:call-1"


# -- unknown tool ----------------------------------------------------------------------------


def test_unknown_tool_suggests_a_close_match_and_lists_the_tools(run_call: Runner) -> None:
    result = run_call(REGISTRY, call("ad", {"a": 1}))
    assert (result.ok, result.error_kind, result.attempts) == (False, "unknown_tool", 0)
    assert (
        result.error == "unknown tool 'ad'. Did you mean 'add'? Available tools: add, shout, fail."
    )


def test_unknown_tool_without_a_close_match_lists_the_tools(run_call: Runner) -> None:
    result = run_call(REGISTRY, call("weather"))
    assert result.error == "unknown tool 'weather'. Available tools: add, shout, fail."


def test_unknown_tool_with_no_tools_says_to_answer_without(run_call: Runner) -> None:
    result = run_call(ToolRegistry([]), call("add"))
    assert result.error_kind == "unknown_tool"
    assert result.error is not None and "no tools are available" in result.error


# -- arguments -------------------------------------------------------------------------------


def test_raw_text_goes_to_the_only_string_parameter(run_call: Runner) -> None:
    result = run_call(REGISTRY, call("shout", raw="hello there"))
    assert (result.ok, result.output) == (True, "HELLO THERE")


def test_raw_text_for_a_tool_with_other_parameters_explains_the_json_form(
    run_call: Runner,
) -> None:
    result = run_call(REGISTRY, call("add", raw="1 and 2"))
    assert (result.ok, result.error_kind, result.attempts) == (False, "invalid_args", 0)
    assert result.error == (
        "tool 'add' takes a JSON object like "
        '{"a": <integer>, "b": <integer, optional>}, not plain text '
        "('1 and 2'); send the arguments as a JSON object"
    )


def test_invalid_args_list_each_field_error_and_the_expected_object(run_call: Runner) -> None:
    result = run_call(REGISTRY, call("add", {"a": "one", "c": 3}))
    assert result.error_kind == "invalid_args"
    assert result.error == (
        "invalid arguments for tool 'add':\n"
        "- a: Input should be a valid integer, unable to parse string as an integer "
        "(got 'one')\n"
        "- c: unexpected argument (the tool has no such parameter)\n"
        'expected a JSON object like {"a": <integer>, "b": <integer, optional>}'
    )


def test_missing_argument_is_named(run_call: Runner) -> None:
    result = run_call(REGISTRY, call("add", {"b": 1}))
    assert result.error is not None and "- a: missing (required)" in result.error


def test_invalid_args_are_never_retried(run_call: Runner) -> None:
    runs = []

    @tool(retries=3, retry_backoff_s=0)
    def count(n: int) -> int:
        """Count."""
        runs.append(n)
        return n

    result = run_call(ToolRegistry([count]), call("count", {"n": "many"}))
    assert (result.error_kind, result.attempts, runs) == ("invalid_args", 0, [])


# -- exceptions and retries ------------------------------------------------------------------


def test_exception_becomes_type_and_message(run_call: Runner) -> None:
    result = run_call(REGISTRY, call("fail", {"message": "disk full"}))
    assert (result.ok, result.error_kind, result.attempts) == (False, "exception", 1)
    assert result.error == "ValueError: disk full"


def test_exception_without_a_message_shows_its_type(run_call: Runner) -> None:
    @tool
    def boom() -> None:
        """Explode."""
        raise RuntimeError

    assert run_call(ToolRegistry([boom]), call("boom")).error == "RuntimeError"


def test_retries_until_success_and_counts_attempts(run_call: Runner) -> None:
    failures = iter([ConnectionError("reset"), ConnectionError("reset again")])

    @tool(retries=2, retry_backoff_s=0.01)
    def flaky() -> str:
        """Fail twice, then work."""
        error = next(failures, None)
        if error is not None:
            raise error
        return "ok"

    result = run_call(ToolRegistry([flaky]), call("flaky"))
    assert (result.ok, result.output, result.attempts) == (True, "ok", 3)


def test_retries_exhausted_report_the_last_error_and_all_attempts(run_call: Runner) -> None:
    attempts = []

    @tool(retries=2, retry_backoff_s=0.01)
    def broken() -> None:
        """Always fail."""
        attempts.append(1)
        raise ConnectionError(f"try {len(attempts)}")

    result = run_call(ToolRegistry([broken]), call("broken"))
    assert (result.error_kind, result.attempts) == ("exception", 3)
    assert result.error == "ConnectionError: try 3"
    assert result.duration_s >= 0.01 + 0.02  # the backoff doubled between attempts


def test_subclass_without_run_reports_the_missing_method(run_call: Runner) -> None:
    class Unfinished(Tool):
        name = "unfinished"
        description = "Not written yet."
        args_model = NoArgs

    result = run_call(ToolRegistry([Unfinished()]), call("unfinished"))
    assert result.error_kind == "exception"
    assert result.error == "NotImplementedError: Unfinished must implement run() or arun()"


def test_the_pause_between_retries_starts_at_the_backoff_and_doubles(
    run_call: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    pauses: list[float] = []

    async def no_async_wait(seconds: float) -> None:
        pauses.append(seconds)

    # Record the pauses instead of waiting them out: timing belongs in bench/, not here.
    monkeypatch.setattr("thinkgraph.tools.runner.time.sleep", pauses.append)
    monkeypatch.setattr("thinkgraph.tools.runner.asyncio.sleep", no_async_wait)

    @tool(retries=3, retry_backoff_s=0.5, timeout_s=None)
    def down() -> None:
        """Always fail."""
        raise ConnectionError("refused")

    result = run_call(ToolRegistry([down]), call("down"))
    assert (result.attempts, result.error) == (4, "ConnectionError: refused")
    assert pauses == [0.5, 1.0, 2.0]


# -- timeouts --------------------------------------------------------------------------------


def test_sync_tool_over_its_timeout_is_reported_and_not_retried(
    run_call: Runner, release: threading.Event
) -> None:
    runs = []

    @tool(timeout_s=0.2, retries=2)
    def stuck() -> None:
        """Hang."""
        runs.append(1)
        release.wait(5)

    result = run_call(ToolRegistry([stuck]), call("stuck"))
    assert (result.ok, result.error_kind, result.attempts) == (False, "timeout", 1)
    assert result.error == "tool 'stuck' did not finish within 0.2 s"
    assert runs == [1]


def test_async_tool_over_its_timeout_is_cancelled() -> None:
    cancelled = threading.Event()

    @tool(timeout_s=0.2)
    async def slow() -> None:
        """Wait a long time."""
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    result = asyncio.run(aexecute_call(ToolRegistry([slow]), call("slow"), CTX))
    assert (result.error_kind, result.error) == (
        "timeout",
        "tool 'slow' did not finish within 0.2 s",
    )
    assert cancelled.is_set()


def test_timeout_error_raised_by_the_tool_is_an_exception(run_call: Runner) -> None:
    @tool(timeout_s=5)
    def upstream() -> None:
        """Call a slow service."""
        raise TimeoutError("upstream took too long")

    result = run_call(ToolRegistry([upstream]), call("upstream"))
    assert (result.error_kind, result.error) == (
        "exception",
        "TimeoutError: upstream took too long",
    )


def test_tool_without_timeout_runs_in_the_calling_thread() -> None:
    @tool(timeout_s=None)
    def where() -> int:
        """Report the thread."""
        return threading.get_ident()

    assert execute_call(ToolRegistry([where]), call("where"), CTX).output == threading.get_ident()


def test_tool_with_timeout_runs_in_a_worker_that_sees_the_callers_context() -> None:
    @tool(timeout_s=5)
    def where() -> list[Any]:
        """Report the thread and the request id."""
        return [threading.get_ident(), REQUEST_ID.get()]

    token = REQUEST_ID.set("req-42")
    try:
        result = execute_call(ToolRegistry([where]), call("where"), CTX)
    finally:
        REQUEST_ID.reset(token)
    thread_id, request_id = result.output
    assert thread_id != threading.get_ident()
    assert request_id == "req-42"


# -- async tools -----------------------------------------------------------------------------


@tool
async def fetch(url: str, ctx: ToolContext) -> str:
    """Pretend to fetch a page."""
    await asyncio.sleep(0)
    return f"{url} for {ctx.call_id}"


def test_async_tool_runs_from_both_runners(run_call: Runner) -> None:
    result = run_call(ToolRegistry([fetch]), call("fetch", raw="https://example.org"))
    assert (result.ok, result.output) == (True, "https://example.org for call-1")


def test_async_tool_runs_from_sync_code_inside_a_running_loop() -> None:
    async def main() -> ToolResultStep:
        # A sync caller inside a loop (a sync node in an async graph) must still work.
        return execute_call(ToolRegistry([fetch]), call("fetch", {"url": "u"}), CTX)

    assert asyncio.run(main()).output == "u for call-1"


def test_async_tool_retries_count_attempts() -> None:
    attempts = []

    @tool(retries=1, retry_backoff_s=0.01)
    async def flaky() -> int:
        """Fail once."""
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("first try fails")
        return len(attempts)

    result = asyncio.run(aexecute_call(ToolRegistry([flaky]), call("flaky"), CTX))
    assert (result.ok, result.output, result.attempts) == (True, 2, 2)


def test_async_only_subclass_runs_from_sync_code() -> None:
    class Remote(Tool):
        name = "remote"
        description = "Ask a remote service."
        args_model = NoArgs

        async def arun(self, args: BaseModel, ctx: ToolContext) -> Any:
            return "remote answer"

    result = execute_call(ToolRegistry([Remote()]), call("remote"), CTX)
    assert result.output == "remote answer"
