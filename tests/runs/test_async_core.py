"""The async core: many runs at once in one process, the sync API over it, cancelling."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.support.meeting import REPLIES, meeting
from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.llm.base import ModelReply, ModelRequest
from thinkgraph.state import ToolResultStep

DONE = "Thought: done\nFinal Answer: met"


def test_runs_gathered_in_one_loop_wait_side_by_side(sqlite_url: str) -> None:
    # Every run's tool waits for all the others: only runs that advance at once get there.
    runs = 20

    async def main() -> list[Any]:
        with Agent(ScriptedModel(REPLIES), [meeting(runs)], store=sqlite_url) as agent:
            return await asyncio.gather(*(agent.arun("meet", f"g{i}") for i in range(runs)))

    results = asyncio.run(main())
    assert [r.status for r in results] == ["done"] * runs
    outputs = {s.output for r in results for s in r.chain if isinstance(s, ToolResultStep)}
    assert outputs == {"together"}


def test_the_sync_methods_work_inside_a_running_event_loop(sqlite_url: str) -> None:
    # As in a notebook cell: sync code called while the thread's loop runs.
    async def cell() -> tuple[str, str | None]:
        agent = Agent(ScriptedModel([DONE]), store=sqlite_url)
        with agent:
            result = agent.run("hi", thread_id="nb")
            return result.status, agent.result("nb").answer

    assert asyncio.run(cell()) == ("done", "met")


def test_a_cancelled_arun_stops_at_a_checkpoint_and_resume_finishes_it(sqlite_url: str) -> None:
    entered = threading.Event()
    calls: list[str] = []

    @tool
    async def slow(name: str) -> str:
        """Take a long time (the first time)."""
        calls.append(name)
        if len(calls) == 1:
            entered.set()
            await asyncio.sleep(60)
        return "slept"

    replies = ['Thought: wait\nAction: slow\nAction Input: {"name": "x"}', DONE]
    agent = Agent(ScriptedModel(replies), [slow], store=sqlite_url)

    async def start_then_cancel() -> None:
        task = asyncio.create_task(agent.arun("wait", thread_id="c1"))
        while not entered.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with agent:
        asyncio.run(start_then_cancel())
        stopped = agent.result("c1")
        assert stopped.status == "running"  # unfinished: resumable
        assert not any(isinstance(s, ToolResultStep) for s in stopped.chain)
        finished = agent.resume("c1")
    assert (finished.status, finished.answer) == ("done", "met")
    assert calls == ["x", "x"]  # the call in flight ran again; nothing else did


class SyncOnlyModel:
    """A user's model with only `complete`: runs call it in a worker thread."""

    name = "sync-only"

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def complete(self, request: ModelRequest) -> ModelReply:
        self.threads.add(threading.current_thread().name)
        return ModelReply(text=DONE, model=self.name)


def test_a_chat_model_with_only_complete_still_works(sqlite_url: str) -> None:
    model = SyncOnlyModel()
    with Agent(model, store=sqlite_url) as agent:
        result = asyncio.run(agent.arun("hi", thread_id="s1"))
        again = agent.run("hi", thread_id="s2")
    assert result.answer == again.answer == "met"
    assert threading.main_thread().name not in model.threads
