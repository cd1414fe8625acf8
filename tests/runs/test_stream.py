"""Streaming: steps and typed events as they are written, sync and async, runs and resumes."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from thinkgraph import Agent, Approve, ScriptedModel, tool
from thinkgraph.errors import ThreadExistsError
from thinkgraph.runs import NodeStart, RunEnd, RunStart, StepEvent
from thinkgraph.state import LLMCallStep, ThoughtStep, ToolCall, ToolCallStep, ToolResultStep
from thinkgraph.types import StepLimits


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(timeout_s=None)
def nap(seconds: float) -> str:
    """Sleep a while."""
    time.sleep(seconds)
    return f"slept {seconds}"


@tool(requires_approval=True, side_effects=True)
def send(to: str) -> str:
    """Send a message."""
    return f"sent to {to}"


def call(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


def final(answer: str) -> str:
    return f"Thought: done\nFinal Answer: {answer}"


def _naps_proposed(agent: Agent, thread: str, *seconds: float) -> None:
    """Thread `thread` as a think step leaves it that proposed one nap per `seconds`, at once."""
    calls = [ToolCall(name="nap", args={"seconds": s}) for s in seconds]
    state = agent._start("nap")
    state["chain"] += [
        ThoughtStep(node="think", text="nap"),
        *[ToolCallStep(node="think", call=c, think_step=1) for c in calls],
    ]
    counters = state["counters"].model_copy(update={"steps": 1, "model_calls": 1})
    state.update(pending_calls=calls, counters=counters)
    agent.graph.update_state(agent._config(thread), state, as_node="think")


def test_parallel_calls_stream_with_their_stored_numbers_whatever_order_they_finish() -> None:
    agent = Agent(ScriptedModel(["(planned below)", final("rested")]), [nap], store="memory://")
    # A think step that proposed two calls at once, as a multi-call policy makes: the slow
    # nap comes first, so it finishes (and streams) last.
    _naps_proposed(agent, "par", 0.3, 0)
    streamed = list(agent.stream_resume("par"))
    stored = agent.chain("par")
    results = [s for s in streamed if isinstance(s, ToolResultStep)]
    assert [r.output for r in results] == ["slept 0.0", "slept 0.3"]
    assert [r.number for r in results] == [5, 4]  # numbered in call order, as stored
    assert sorted((s.number, s.id) for s in streamed) == [(s.number, s.id) for s in stored[4:]]


@pytest.mark.parametrize("store", ["memory://", "sqlite"])
def test_a_round_of_calls_is_placed_as_stored_live_and_by_a_reader_of_what_is_new(
    store: str, tmp_path: Path
) -> None:
    # Three calls at once, the slowest first: they finish (and are stored) last to first,
    # while the chain places their results in call order. The stream and a reader holding
    # the chain up to the round (as an event stream of another process does) place them as
    # the stored chain does; no node numbered them.
    url = f"sqlite:///{tmp_path / 'r.db'}" if store == "sqlite" else store
    agent = Agent(ScriptedModel(["(planned below)", final("rested")]), [nap], store=url)
    with agent:
        _naps_proposed(agent, "par3", 0.4, 0.2, 0.0)
        before = agent.checkpoint_id("par3")
        held = agent.chain("par3")
        streamed = list(agent.stream_resume("par3"))
        stored = agent.chain("par3")
        results = [s for s in streamed if isinstance(s, ToolResultStep)]
        assert [r.output for r in results] == ["slept 0.0", "slept 0.2", "slept 0.4"]
        n = len(held)  # where the round begins
        assert [r.number for r in results] == [n + 2, n + 1, n]
        assert [(s.number, s.id) for s in stored[n : n + 3]] == [
            (n + k, r.id) for k, r in enumerate(reversed(results))
        ]
        assert before is not None
        tail = asyncio.run(agent.reader.steps_since("par3", before, held))
        assert tail is not None
        assert [(s.number, s.id) for s in held + tail[1]] == [(s.number, s.id) for s in stored]


def test_events_open_with_run_start_name_each_node_and_close_with_the_result() -> None:
    agent = Agent(ScriptedModel([call("add", a=1, b=1), final("2")]), [add], store="memory://")
    events = list(agent.events("1+1", "ev"))
    assert isinstance(events[0], RunStart) and events[0].limits.max_steps == 12
    assert isinstance(events[-1], RunEnd)
    assert events[-1].result.model_dump() == agent.result("ev").model_dump()
    started = [e.node for e in events if isinstance(e, NodeStart)]
    assert started == ["think", "act", "observe", "think", "validate", "finalize"]
    # each node is announced before the steps it writes
    order = [(e.event, getattr(e, "node", "")) for e in events if not isinstance(e, RunEnd)]
    assert order.index(("node", "act")) < order.index(("step", "act"))


def test_step_events_carry_the_counters_after_the_node_that_wrote_them() -> None:
    agent = Agent(ScriptedModel([call("add", a=1, b=1), final("2")]), [add], store="memory://")
    steps = [e for e in agent.events("1+1", "ct") if isinstance(e, StepEvent)]
    by_number = {e.step.number: e.counters.steps for e in steps}
    assert by_number[0] == 0  # the task, before any think
    assert by_number[1] == 1 and by_number[5] == 1  # first think's call .. its observation
    assert by_number[6] == 2  # second think's model call
    assert steps[-1].node == "finalize" and steps[-1].step.type == "final"  # type: ignore[attr-defined]


def test_a_taken_thread_is_refused_when_the_stream_is_iterated() -> None:
    agent = Agent(ScriptedModel([final("1")]), store="memory://")
    agent.run("x", thread_id="taken")
    stream = agent.stream("y", "taken")  # nothing runs until iterated
    with pytest.raises(ThreadExistsError, match="resume"):
        next(iter(stream))


def test_stream_resume_yields_only_the_new_steps_numbered_after_the_pause(sqlite_url: str) -> None:
    model = ScriptedModel([call("send", to="ops"), final("sent")])
    with Agent(model, [send], store=sqlite_url) as agent:
        paused = agent.run("tell ops", thread_id="pz")
        assert paused.status == "paused"
        decisions = {p.call_id: Approve() for p in paused.pending}
        new = list(agent.stream_resume("pz", decisions))
        chain = agent.chain("pz")
    assert [s.number for s in new] == list(range(len(paused.chain), len(chain)))
    assert [s.id for s in new] == [s.id for s in chain[len(paused.chain) :]]
    assert new[-1].type == "final"  # type: ignore[attr-defined]


def test_resume_events_of_a_finished_run_are_its_start_and_its_end() -> None:
    agent = Agent(ScriptedModel([final("1")]), store="memory://")
    agent.run("x", thread_id="fin")
    events = list(agent.resume_events("fin"))
    assert [type(e) for e in events] == [RunStart, RunEnd]
    assert isinstance(events[0], RunStart) and events[0].resumed
    assert isinstance(events[1], RunEnd) and events[1].result.answer == "1"


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_astream_yields_the_stored_chain(store: str, sqlite_url: str) -> None:
    url = sqlite_url if store == "sqlite" else "memory://"
    model = ScriptedModel([call("add", a=2, b=40), final("42")])

    async def collect() -> list[tuple[int, str]]:
        with Agent(model, [add], store=url) as agent:
            seen = [(s.number, s.id) async for s in agent.astream("2+40", "as")]
            assert seen == [(s.number, s.id) for s in agent.chain("as")]
            return seen

    assert len(asyncio.run(collect())) == 9


def test_astream_leaves_the_event_loop_free_while_a_tool_runs() -> None:
    model = ScriptedModel([call("nap", seconds=0.5), final("rested")])
    agent = Agent(model, [nap], store="memory://")

    async def main() -> tuple[int, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        steps = [s async for s in agent.astream("nap", "free")]
        ticker.cancel()
        return ticks, len(steps)

    ticks, count = asyncio.run(main())
    assert count == 9 and ticks >= 20  # the loop ran on through the half-second nap


def test_leaving_astream_early_stops_after_the_node_in_progress_and_the_run_resumes(
    sqlite_url: str,
) -> None:
    model = ScriptedModel([call("nap", seconds=0.2), final("rested")])

    async def until_first_model_call() -> None:
        with Agent(model, [nap], store=sqlite_url) as agent:
            async for step in agent.astream("nap", "early"):
                if isinstance(step, LLMCallStep):
                    break

    asyncio.run(until_first_model_call())
    with Agent(model, [nap], store=sqlite_url) as agent:
        stopped = agent.result("early")
        assert stopped.status == "running" and stopped.chain[-1].type != "final"  # type: ignore[attr-defined]
        assert agent.resume("early").answer == "rested"


def test_astream_raises_what_the_run_raises() -> None:
    agent = Agent(ScriptedModel([final("1")]), store="memory://")
    agent.run("x", thread_id="dup")

    async def again() -> None:
        async for _ in agent.astream("y", "dup"):
            pass

    with pytest.raises(ThreadExistsError):
        asyncio.run(again())


def test_astream_resume_continues_past_a_breakpoint() -> None:
    model = ScriptedModel([call("add", a=1, b=1), final("2")])
    agent = Agent(model, [add], store="memory://", breakpoints={"before": ["act"]})
    paused = agent.run("1+1", thread_id="bp")
    assert paused.status == "paused"

    async def rest() -> list[str]:
        return [str(s.type) async for s in agent.astream_resume("bp")]  # type: ignore[attr-defined]

    assert asyncio.run(rest()) == [
        "tool_result", "observation", "llm_call", "thought", "final",
    ]  # fmt: skip
    assert agent.result("bp").answer == "2"


def test_events_report_the_runs_own_limits() -> None:
    agent = Agent(ScriptedModel([final("1")]), store="memory://", limits=StepLimits(max_steps=3))
    start = next(iter(agent.events("x", "lim")))
    assert isinstance(start, RunStart) and start.limits.max_steps == 3 and not start.resumed


def _raw_note(state: object) -> dict[str, object]:
    """A user's node added as a plain function: its steps come unnumbered."""
    from thinkgraph.state import HumanStep

    return {"chain": [HumanStep(node="note", kind="guidance", text="be brief")]}


def test_steps_of_a_users_raw_node_stream_with_their_stored_numbers(sqlite_url: str) -> None:
    from tests.graphs.test_compose import with_note

    model = ScriptedModel([call("add", a=2, b=40), final("42")])
    with Agent(
        model,
        [add],
        store=sqlite_url,
        build_graph=lambda deps: with_note(deps, _raw_note),
        breakpoints={"before": ["note"]},
    ) as agent:
        started = list(agent.stream("add", "raw"))
        assert agent.result("raw").status == "paused"
        resumed = list(agent.stream_resume("raw"))
        chain = agent.chain("raw")
    streamed = started + resumed
    assert [(s.number, s.id) for s in streamed] == [(s.number, s.id) for s in chain]
    assert resumed[0].text == "be brief"  # type: ignore[attr-defined]


def test_resuming_a_stream_reads_the_chain_once_for_its_result(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel([call("send", to="ops"), final("sent")])
    with Agent(model, [send], store=sqlite_url) as agent:
        paused = agent.run("tell ops", thread_id="once")
        saver = agent.graph.checkpointer
        reads: list[object] = []
        history = saver.get_delta_channel_history  # type: ignore[union-attr]

        def counted(**kwargs: object) -> object:
            reads.append(kwargs)
            return history(**kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(saver, "get_delta_channel_history", counted)
        decisions = {p.call_id: Approve() for p in paused.pending}
        events = list(agent.resume_events("once", decisions))
    assert isinstance(events[-1], RunEnd) and events[-1].result.answer == "sent"
    # The run's nodes load the paused chain once; the result at the end is built from the
    # values the stream ended with, not read again.
    assert len(reads) == 1


def test_a_reader_orders_a_rounds_stored_writes_as_langgraph_applies_them() -> None:
    # A store may keep a round's writes as they finished: the reader places them as the
    # reducer does, pulled nodes by name, then act tasks in the order of their calls.
    from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint

    from thinkgraph.runs.reader import _as_applied
    from thinkgraph.state import NoteStep

    calls = [ToolCall(name="nap", args={"seconds": s}) for s in (0.4, 0.2, 0.0)]
    results = [
        ToolResultStep(node="act", call_id=c.id, tool="nap", ok=True, output="x") for c in calls
    ]
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"pending_calls": calls}
    writes = [
        ("t-fast", "chain", [results[2]]),
        ("t-user-b", "chain", [NoteStep(node="b", text="b")]),
        ("t-mid", "chain", [results[1]]),
        ("t-user-a", "chain", [NoteStep(node="a", text="a")]),
        ("t-slow", "chain", [results[0]]),
    ]
    tup = CheckpointTuple({"configurable": {}}, checkpoint, {}, None, writes)
    assert [s.node if s.node != "act" else s.call_id for s in _as_applied(tup)] == [
        "a", "b", *[c.id for c in calls],
    ]  # fmt: skip
