"""A run's `timeout_s` stops a tool that is still running, not only the steps between nodes.

act gives each call at most the run's remaining time; a call stopped by it becomes a
timeout observation and the run goes on to its forced answer (stop_reason "timeout").
Every run here happens in a thread the test waits on for a few seconds only, so a run
that hangs fails the test instead of blocking the suite.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.result import RunResult
from thinkgraph.state import ObservationStep, ToolCall, ToolResultStep
from thinkgraph.tools import ToolContext, ToolRegistry, aexecute_call, execute_call

RUN_LIMIT = "the run's time limit"


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Lets a deliberately stuck tool thread finish once the test is over."""
    event = threading.Event()
    yield event
    event.set()


def call(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


def final(answer: str) -> str:
    return f"Thought: done\nFinal Answer: {answer}"


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """`fn()` run in a thread; fails the test if it has not returned after `seconds`."""
    outcome: list[Any] = []
    worker = threading.Thread(target=lambda: outcome.append(fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    assert outcome, "the run raised (see the thread's traceback above)"
    return outcome[0]


def results(run: RunResult) -> list[ToolResultStep]:
    return [s for s in run.chain if isinstance(s, ToolResultStep)]


def assert_stopped_by_the_run(run: RunResult, tool_name: str) -> ToolResultStep:
    assert (run.status, run.stop_reason, run.answer) == ("done", "timeout", "out of time")
    stopped = results(run)[-1]
    assert (stopped.tool, stopped.ok, stopped.error_kind) == (tool_name, False, "timeout")
    assert stopped.error is not None and RUN_LIMIT in stopped.error
    observation = [s for s in run.chain if isinstance(s, ObservationStep)][-1]
    assert observation.is_error and RUN_LIMIT in observation.text
    return stopped


# -- end to end -------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["run", "arun"])
def test_a_long_async_tool_is_stopped_by_the_run_timeout_and_cancelled(api: str) -> None:
    cancelled = threading.Event()

    @tool  # the tool's own timeout (30 s by default) is far away
    async def crawl(url: str) -> str:
        """Fetch a very slow page."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "page"

    model = ScriptedModel([call("crawl", url="x"), final("out of time")])
    agent = Agent(model, [crawl], limits=StepLimits(timeout_s=0.4), store="memory://")
    started = time.perf_counter()
    if api == "run":
        run = within(5, lambda: agent.run("fetch it"))
    else:
        run = within(5, lambda: asyncio.run(agent.arun("fetch it")))
    assert time.perf_counter() - started < 3
    assert_stopped_by_the_run(run, "crawl")
    assert cancelled.wait(2), "the async tool was left running"


def test_a_blocking_sync_tool_is_stopped_by_the_run_timeout(
    release: threading.Event, sqlite_url: str
) -> None:
    @tool(timeout_s=None)  # no timeout of its own: only the run's limit can stop it
    def wait_forever() -> str:
        """Block until released."""
        release.wait()
        return "released"

    model = ScriptedModel([call("wait_forever"), final("out of time")])
    limits = StepLimits(timeout_s=0.4)
    with Agent(model, [wait_forever], limits=limits, store=sqlite_url) as agent:
        run = within(5, lambda: agent.run("wait"))
    stopped = assert_stopped_by_the_run(run, "wait_forever")
    assert 0.2 < stopped.duration_s < 2
    assert run.counters.elapsed_s >= 0.4


def test_a_call_gets_only_the_time_the_run_has_left(release: threading.Event) -> None:
    @tool(timeout_s=None)
    def nap(seconds: float) -> str:
        """Sleep a while."""
        time.sleep(seconds)
        return "rested"

    @tool(timeout_s=None)
    def wait_forever() -> str:
        """Block until released."""
        release.wait()
        return "released"

    replies = [call("nap", seconds=0.5), call("wait_forever"), final("out of time")]
    limits = StepLimits(timeout_s=1.0)
    agent = Agent(ScriptedModel(replies), [nap, wait_forever], limits=limits, store="memory://")
    run = within(5, lambda: agent.run("nap, then wait"))
    first, second = results(run)
    assert first.ok and first.output == "rested"
    stopped = assert_stopped_by_the_run(run, "wait_forever")
    assert stopped is second and second.duration_s < 0.8  # about 0.5 s was left, not 1.0
    assert "0.5 s" in (second.error or "")


def test_a_tool_timeout_shorter_than_the_time_left_is_the_tools_own(
    release: threading.Event,
) -> None:
    @tool(timeout_s=0.2)
    def wait_forever() -> str:
        """Block until released."""
        release.wait()
        return "released"

    model = ScriptedModel([call("wait_forever"), final("gave up")])
    agent = Agent(model, [wait_forever], limits=StepLimits(timeout_s=30), store="memory://")
    run = within(5, lambda: agent.run("wait"))
    (stopped,) = results(run)
    assert stopped.error == "tool 'wait_forever' did not finish within 0.2 s"
    assert run.stop_reason == "final_answer" and run.answer == "gave up"


# -- the runner -------------------------------------------------------------------------------

CTX = ToolContext.for_call("thread-1", 1, "call-1")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_runner_stops_a_call_at_the_time_left(mode: str, release: threading.Event) -> None:
    @tool(timeout_s=None)
    def wait_forever() -> str:
        """Block until released."""
        release.wait()
        return "released"

    registry, call_ = ToolRegistry([wait_forever]), ToolCall(name="wait_forever")
    if mode == "sync":
        result = within(3, lambda: execute_call(registry, call_, CTX, time_left_s=0.2))
    else:
        result = within(
            3, lambda: asyncio.run(aexecute_call(registry, call_, CTX, time_left_s=0.2))
        )
    assert (result.ok, result.error_kind, result.attempts) == (False, "timeout", 1)
    assert result.error == (
        "tool 'wait_forever' was stopped: the run's time limit ran out while it ran (it had "
        "0.2 s left); no more tool calls can run: answer with what you have"
    )


def test_no_retry_starts_after_the_run_has_run_out_of_time() -> None:
    attempts: list[float] = []

    @tool(retries=3, retry_backoff_s=0.3)
    def flaky() -> str:
        """Fail every time."""
        attempts.append(time.perf_counter())
        raise ConnectionError("down")

    registry = ToolRegistry([flaky])
    result = within(3, lambda: execute_call(registry, ToolCall(name="flaky"), CTX, time_left_s=0.5))
    # The third attempt would start after 0.3 + 0.6 s, past the 0.5 s left: the call ends
    # with the error it had instead of sleeping into the deadline.
    assert (result.ok, result.error_kind, result.error) == (
        False,
        "exception",
        "ConnectionError: down",
    )
    assert len(attempts) == result.attempts == 2
    assert result.duration_s < 0.45
