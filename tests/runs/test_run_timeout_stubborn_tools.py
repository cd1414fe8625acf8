"""A run's `timeout_s` ends the run even when a tool does not let itself be stopped.

An `async def` tool that catches its cancellation and goes on is abandoned at the
deadline: the call is recorded as stopped by the run's time limit, the run goes on to its
forced answer, and the tool never resumes. One that blocks the event loop cannot be
stopped while it blocks, but what it returns after the deadline is discarded and recorded
as a timeout. And a process whose tool is stuck (cancellation ignored, or a sync tool
blocked in its thread) still exits once its run is over.

Each run here happens in a thread the test waits on for a few seconds only, and each
process under a timeout, so a hang fails the test instead of blocking the suite.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.runs.test_run_timeout import (
    assert_stopped_by_the_run,
    call,
    final,
    results,
    within,
)
from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.state import ToolCall
from thinkgraph.tools import ToolContext, ToolRegistry, aexecute_call

ROOT = Path(__file__).resolve().parents[2]
CTX = ToolContext.for_call("thread-1", 1, "call-1")


class Stubborn:
    """An async tool body that swallows every cancellation and keeps on working."""

    def __init__(self) -> None:
        self.cancels = 0
        self.ticks = 0
        self.finished = threading.Event()
        """Set when the tool's frame is left (by whatever means)."""

    async def __call__(self) -> str:
        try:
            while True:
                try:
                    await asyncio.sleep(0.05)
                    self.ticks += 1
                except asyncio.CancelledError:
                    self.cancels += 1  # "not now": goes on regardless
        finally:
            self.finished.set()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("api", ["run", "arun"])
def test_an_async_tool_that_ignores_cancellation_is_abandoned_at_the_run_timeout(
    api: str,
) -> None:
    body = Stubborn()

    @tool(timeout_s=None)  # only the run's limit can stop it
    async def crawl() -> str:
        """Crawl forever."""
        return await body()

    model = ScriptedModel([call("crawl"), final("out of time")])
    agent = Agent(model, [crawl], limits=StepLimits(timeout_s=0.4), store="memory://")
    if api == "run":
        run = within(5, lambda: agent.run("crawl"))
    else:
        run = within(5, lambda: asyncio.run(agent.arun("crawl")))
    stopped = assert_stopped_by_the_run(run, "crawl")
    assert stopped.output is None and stopped.duration_s < 3
    assert body.cancels >= 1  # it was asked to stop first
    assert body.finished.wait(2), "the abandoned tool is still running"
    ticks = body.ticks
    time.sleep(0.3)
    assert body.ticks == ticks  # and it never resumes


@pytest.mark.timeout(30)
def test_a_tool_that_ignores_cancellation_is_abandoned_at_its_own_timeout() -> None:
    body = Stubborn()

    @tool(timeout_s=0.2)
    async def crawl() -> str:
        """Crawl forever."""
        return await body()

    registry = ToolRegistry([crawl])
    result = within(5, lambda: asyncio.run(aexecute_call(registry, ToolCall(name="crawl"), CTX)))
    assert (result.ok, result.error_kind, result.attempts) == (False, "timeout", 1)
    assert result.error == "tool 'crawl' did not finish within 0.2 s"
    assert body.finished.wait(2)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("api", ["run", "arun"])
def test_an_async_tool_that_blocks_the_loop_past_the_run_timeout_has_its_result_discarded(
    api: str,
) -> None:
    @tool(timeout_s=None)
    async def hog() -> str:
        """Block the event loop for a second (a sync call inside an async tool)."""
        time.sleep(1.0)
        return "late result"

    model = ScriptedModel([call("hog"), final("out of time")])
    agent = Agent(model, [hog], limits=StepLimits(timeout_s=0.3), store="memory://")
    if api == "run":
        run = within(10, lambda: agent.run("hog"))
    else:
        run = within(10, lambda: asyncio.run(agent.arun("hog")))
    stopped = assert_stopped_by_the_run(run, "hog")
    assert stopped.output is None
    assert stopped.error == (
        "tool 'hog' returned after the run's time limit ran out (it had 0.3 s left); its "
        "result was discarded; no more tool calls can run: answer with what you have"
    )
    assert all("late result" not in str(r.output) for r in results(run))


@pytest.mark.timeout(30)
def test_an_async_tool_that_blocks_the_loop_past_its_own_timeout_has_its_result_discarded() -> None:
    @tool(timeout_s=0.2)
    async def hog() -> str:
        """Block the event loop."""
        time.sleep(0.6)
        return "late result"

    registry = ToolRegistry([hog])
    result = within(5, lambda: asyncio.run(aexecute_call(registry, ToolCall(name="hog"), CTX)))
    assert (result.ok, result.error_kind, result.output) == (False, "timeout", None)
    assert result.error == "tool 'hog' returned after its 0.2 s timeout; its result was discarded"


# -- the process exits ---------------------------------------------------------------------------

EXITS = textwrap.dedent(
    """
    import asyncio, sys, threading
    from thinkgraph import Agent, ScriptedModel, StepLimits, tool

    mode = sys.argv[1]

    @tool(timeout_s=None)
    async def deaf() -> str:
        '''Ignore every cancellation, forever.'''
        while True:
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                pass

    @tool(timeout_s=None)
    def stuck() -> str:
        '''Block a worker thread forever.'''
        threading.Event().wait()
        return "never"

    name = "stuck" if mode == "sync-tool" else "deaf"
    replies = [
        f"Thought: go\\nAction: {name}\\nAction Input: {{}}",
        "Thought: done\\nFinal Answer: out of time",
    ]
    agent = Agent(ScriptedModel(replies), [deaf, stuck], limits=StepLimits(timeout_s=0.5),
                  store="memory://")
    if mode == "async-api":
        run = asyncio.run(agent.arun("go"))
    else:
        run = agent.run("go")
    print(run.status, run.stop_reason, flush=True)
    """
)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["async-api", "sync-api", "sync-tool"])
def test_a_process_whose_tool_will_not_stop_still_exits(mode: str) -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", EXITS, mode],
            cwd=ROOT, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the process did not exit ({mode})") from exc
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["done timeout"], done.stderr
