"""The event stream of a run another process advances (a worker): the server reads only
the steps written since it last looked, never the whole chain again."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.server.conftest import BASE
from tests.server.test_events import _blocks
from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.server import build_app

CYCLES = 12


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _replies() -> list[str]:
    calls = [
        f'Thought: step {i}\nAction: add\nAction Input: {{"a": {i}, "b": 1}}' for i in range(CYCLES)
    ]
    return [*calls, "Thought: done\nFinal Answer: counted"]


def test_a_worker_runs_stream_reads_only_the_new_steps_and_matches_the_store(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_url
    thread = f"w-{uuid.uuid4().hex[:10]}"
    limits = StepLimits(max_steps=CYCLES + 2)
    server_agent = Agent(ScriptedModel(_replies()), [add], limits=limits, store=store)
    gate = threading.Event()

    @tool(timeout_s=None)
    def wait_for_stream(text: str) -> str:
        """Hold the run until the stream is open."""
        gate.wait(timeout=20)
        return text

    first = 'Thought: wait\nAction: wait_for_stream\nAction Input: {"text": "go"}'
    worker = Agent(
        ScriptedModel([first, *_replies()]), [add, wait_for_stream], limits=limits, store=store
    )
    full_reads: list[Any] = []
    graph = server_agent.graph
    aget_state = graph.aget_state

    async def counted(config: Any, **kwargs: Any) -> Any:
        full_reads.append(config)
        return await aget_state(config, **kwargs)

    get_state = graph.get_state

    def counted_sync(config: Any, **kwargs: Any) -> Any:
        full_reads.append(config)
        return get_state(config, **kwargs)

    monkeypatch.setattr(graph, "aget_state", counted)
    monkeypatch.setattr(graph, "get_state", counted_sync)
    with (
        server_agent,
        worker,
        TestClient(build_app(server_agent, poll_s=0.02), base_url=BASE) as client,
    ):
        running = threading.Thread(target=lambda: worker.run("count", thread_id=thread))
        running.start()
        try:
            while worker.checkpoint_id(thread) is None:
                threading.Event().wait(0.01)
            with client.stream("GET", f"/runs/{thread}/events") as stream:
                gate.set()  # the run goes on, in the "worker", while the server streams it
                seen = list(_blocks(stream.iter_lines()))
        finally:
            gate.set()
            running.join(timeout=60)
        chain = worker.chain(thread)
    steps = [block["data"] for block in seen if block["event"] == "step"]
    assert seen[-1]["event"] == "end" and seen[-1]["data"]["status"] == "done"
    assert [(s["number"], s["id"]) for s in steps] == [(s.number, s.id) for s in chain]
    # One whole read when the stream opened; every later look read only what was new.
    assert len(full_reads) == 1


def test_steps_since_any_checkpoint_are_the_rest_of_the_chain(any_store_url: str) -> None:
    thread = f"s-{uuid.uuid4().hex[:10]}"
    limits = StepLimits(max_steps=CYCLES + 2)
    with Agent(ScriptedModel(_replies()), [add], limits=limits, store=any_store_url) as agent:
        chain = agent.run("count", thread_id=thread).chain
        for info in agent.history(thread)[:: max(1, len(agent.history(thread)) // 6)]:
            config = {"configurable": {"thread_id": thread, "checkpoint_id": info.checkpoint_id}}
            held = list(agent.graph.get_state(config).values.get("chain", []))
            tail = asyncio.run(agent.reader.steps_since(thread, info.checkpoint_id, held))
            assert tail is not None
            latest, new = tail
            assert [(s.number, s.id) for s in held + new] == [(s.number, s.id) for s in chain]
            assert latest.values["run"].status == "done" and "chain" not in latest.values
        assert asyncio.run(agent.reader.steps_since(thread, "no-such-checkpoint", [])) is None
