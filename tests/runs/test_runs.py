"""The run driver and the reader of runs, apart from the `Agent` facade over them."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path

import pytest

import thinkgraph.agent
from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.errors import ResumeValueError, ThreadNotFoundError
from thinkgraph.runs import RunReader
from thinkgraph.runs.driver import Driver
from thinkgraph.runs.events import RunEnd, RunStart, StepEvent
from thinkgraph.storage.lease import athread_lease


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(side_effects=True)
def send(to: str) -> str:
    """Send a message."""
    return f"sent to {to}"


def call(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


def final(answer: str) -> str:
    return f"Thought: done\nFinal Answer: {answer}"


SYNC_TWINS = {
    "run": "arun",
    "events": "aevents",
    "stream": "astream",
    "resume": "aresume",
    "resume_events": "aresume_events",
    "stream_resume": "astream_resume",
    "check_resume": "acheck_resume",
    "fork": "afork",
    "result": "aresult",
    "chain": "achain",
    "checkpoint_id": "acheckpoint_id",
}


def test_the_file_that_defines_agent_stays_a_small_facade() -> None:
    lines = Path(inspect.getfile(thinkgraph.agent)).read_text().count("\n")
    assert lines <= 300, f"agent.py has {lines} lines"


@pytest.mark.parametrize(("sync", "async_"), sorted(SYNC_TWINS.items()))
def test_every_sync_method_is_made_from_its_async_twin(sync: str, async_: str) -> None:
    made = getattr(Agent, sync)
    assert made.__wrapped__ is getattr(Agent, async_)  # made by `thinkgraph._sync`, not by hand
    assert made.__name__ == sync and not inspect.iscoroutinefunction(made)
    assert made.__doc__.endswith(getattr(Agent, async_).__doc__)


def test_a_reader_reads_a_run_from_a_store_and_a_graph_with_no_agent() -> None:
    agent = Agent(ScriptedModel([call("add", a=2, b=40), final("42")]), [add], store="memory://")
    agent.run("add", thread_id="t")
    reader = RunReader(agent.graph.checkpointer, agent.graph)  # type: ignore[arg-type]
    result = reader.result("t")
    assert (result.status, result.answer) == ("done", "42")
    assert reader.history("t")[-1].node == "finalize"
    assert reader.checkpoint_id("t") == agent.checkpoint_id("t")
    assert [r.thread_id for r in reader.runs()] == ["t"]
    with pytest.raises(ThreadNotFoundError):
        reader.result("nope")


def test_the_driver_runs_a_compiled_graph_and_its_events_end_with_the_result() -> None:
    agent = Agent(ScriptedModel([call("add", a=2, b=40), final("42")]), [add], store="memory://")
    driver = Driver(agent.graph, agent.deps, limits=agent.limits)

    async def collect() -> list[object]:
        return [e async for e in driver.start("add", "d1")]

    events = asyncio.run(collect())
    assert isinstance(events[0], RunStart) and isinstance(events[-1], RunEnd)
    steps = [e.step for e in events if isinstance(e, StepEvent)]
    assert [s.number for s in steps] == list(range(len(steps)))
    assert events[-1].result.chain == steps
    assert events[-1].result.answer == "42"


def test_without_detail_the_driver_yields_the_start_and_the_end_with_the_same_result() -> None:
    replies = [call("add", a=2, b=40), final("42")]
    detailed = Agent(ScriptedModel(replies), [add], store="memory://")
    folded = Agent(ScriptedModel(replies), [add], store="memory://")
    driver = Driver(folded.graph, folded.deps, limits=folded.limits)

    async def collect() -> list[object]:
        return [e async for e in driver.start("add", "d1", detail=False)]

    events = asyncio.run(collect())
    assert [type(e) for e in events] == [RunStart, RunEnd]
    expected = detailed.run("add", thread_id="d1")
    result = events[-1].result  # type: ignore[attr-defined]
    assert [(s.number, s.type, s.node) for s in result.chain] == [
        (s.number, s.type, s.node) for s in expected.chain
    ]
    assert (result.status, result.answer) == ("done", "42")


def test_check_resume_is_async_and_refuses_a_bad_answer_without_moving_the_run() -> None:
    agent = Agent(
        ScriptedModel([call("send", to="bob"), final("sent")]),
        [send],
        store="memory://",
        approve="side_effects",
    )
    paused = agent.run("send it", thread_id="p")
    assert paused.status == "paused"
    assert inspect.iscoroutinefunction(Agent.acheck_resume)
    with pytest.raises(ResumeValueError):
        asyncio.run(agent.acheck_resume("p", {"no-such-call": "approve"}))
    call_id = paused.pending[0].call_id
    assert asyncio.run(agent.acheck_resume("p", {call_id: "approve"})) == agent.checkpoint_id("p")
    assert agent.result("p").status == "paused"


@pytest.mark.parametrize("way", ["run", "fork", "resume"])
def test_a_run_has_let_go_of_its_thread_when_its_result_is_returned(
    sqlite_url: str, way: str
) -> None:
    model = ScriptedModel([call("add", a=1, b=2), final("3"), final("3")])

    async def advance(agent: Agent) -> None:
        result = await agent.arun("add", thread_id="held")
        if way == "fork":
            first = agent.history("held")[1].checkpoint_id
            result = await agent.afork("held", first, new_thread_id="held-fork")
        elif way == "resume":
            result = await agent.aresume("held")
        # At once, with no turn of the loop in between: nothing may still hold the thread.
        async with athread_lease(agent.driver.saver, result.thread_id, nested=False):
            assert result.status == "done"

    with Agent(model, [add], store=sqlite_url) as agent:
        asyncio.run(advance(agent))


@pytest.mark.parametrize("store", ["memory://", "sqlite"])
def test_a_reader_tells_a_runs_task_from_its_first_checkpoint(store: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}" if store == "sqlite" else store
    with Agent(ScriptedModel([call("add", a=2, b=40), final("42")] * 2), [add], store=url) as agent:
        agent.run("add two numbers", thread_id="t")
        at = next(h.checkpoint_id for h in agent.history("t") if h.node == "think")
        agent.fork("t", at, new_thread_id="f")
        assert agent.reader.task("t") == "add two numbers"
        assert agent.reader.task("f") == "add two numbers"  # a fork has no input of its own
        assert agent.reader.task("nope") is None


def test_the_reader_reads_a_run_as_it_stood_at_each_checkpoint(
    any_store_url: str, thread_id: str
) -> None:
    with Agent(
        ScriptedModel([call("add", a=2, b=40), final("42")]), [add], store=any_store_url
    ) as agent:
        agent.run("add", thread_id=thread_id)
        points = agent.history(thread_id)
        stood = [agent.reader.at_checkpoint(thread_id, p.checkpoint_id)[1] for p in points]
        lengths = [len(r.chain) for r in stood]
        assert lengths[0] == 0  # the input, not applied yet
        assert lengths == sorted(lengths) and lengths[-1] == len(agent.result(thread_id).chain)
        assert stood[-1].answer == "42" and stood[1].answer is None
        with pytest.raises(ThreadNotFoundError, match="has no checkpoint"):
            agent.reader.at_checkpoint(thread_id, "1f000000-0000-6000-8000-000000000000")
        with pytest.raises(ThreadNotFoundError):
            agent.reader.at_checkpoint(f"{thread_id}-none", points[0].checkpoint_id)
