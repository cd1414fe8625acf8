"""The event stream's ids and keep-alives: a client that reconnects gets only what it missed.

Each `step` event carries the step's number as its id; `Last-Event-ID: N` (which an
EventSource sends itself on reconnect) or `?after=N` skips the steps up to N. A stream
open a long time without news carries keep-alive comments (`: ping …`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from tests.server.support import Live
from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.server import build_app


def _blocks(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """Each event of a server-sent event stream as its fields; comments under ":"."""
    block: dict[str, Any] = {}
    for line in lines:
        if not line:
            if block:
                yield block
            block = {}
            continue
        name, _, value = line.partition(":")
        block[name] = json.loads(value[1:]) if name == "data" else value.removeprefix(" ")
    if block:
        yield block


def _paused(client: TestClient, thread: str) -> list[dict[str, Any]]:
    """Start a run of `thread` and return its stream's events until the pause."""
    assert client.post("/runs", json={"task": "add then publish", "thread_id": thread}).is_success
    with client.stream("GET", f"/runs/{thread}/events") as stream:
        seen = list(_blocks(stream.iter_lines()))
    assert seen[-1]["event"] == "status" and seen[-1]["data"]["status"] == "paused"
    return seen


def test_each_step_event_has_the_steps_number_as_its_id(client: TestClient) -> None:
    seen = _paused(client, "i1")
    steps = [block for block in seen if block["event"] == "step"]
    assert len(steps) >= 5
    assert [block["id"] for block in steps] == [str(block["data"]["number"]) for block in steps]
    assert all("id" not in block for block in seen if block["event"] != "step")


@pytest.mark.parametrize("how", ["header", "query"])
def test_a_reconnecting_client_gets_only_the_steps_after_its_last_id(
    client: TestClient, how: str
) -> None:
    seen = _paused(client, f"r-{how}")
    numbers = [block["data"]["number"] for block in seen if block["event"] == "step"]
    after = numbers[len(numbers) // 2]
    url, headers = "/runs/r-" + how + "/events", {}
    if how == "header":
        headers["Last-Event-ID"] = str(after)
    else:
        url += f"?after={after}"
    with client.stream("GET", url, headers=headers) as stream:
        again = list(_blocks(stream.iter_lines()))
    later = [block["data"]["number"] for block in again if block["event"] == "step"]
    assert later == [n for n in numbers if n > after] and later
    assert again[-1] == seen[-1]  # then the current status


def test_after_must_be_a_step_number(client: TestClient) -> None:
    _paused(client, "b1")
    refused = client.get("/runs/b1/events?after=x")
    assert refused.status_code == 400 and "after" in refused.json()["error"]


def test_a_long_open_stream_carries_keep_alive_pings(tmp_path: Path) -> None:
    release = threading.Event()

    @tool
    def slow(text: str) -> str:
        """Wait until the test lets it go."""
        release.wait(timeout=30)
        return text

    replies = ['Thought: wait\nAction: slow\nAction Input: {"text": "x"}', "Final Answer: x"]
    agent = Agent(ScriptedModel(replies), [slow], store=f"sqlite:///{tmp_path / 's.db'}")
    with agent:
        live = Live(build_app(agent, poll_s=0.05, ping_s=0.2))
        try:
            assert httpx.post(live.url + "/runs", json={"task": "t", "thread_id": "k1"}).is_success
            deadline = time.monotonic() + 10
            with httpx.stream("GET", live.url + "/runs/k1/events", timeout=5) as stream:
                lines = stream.iter_lines()
                for line in lines:
                    assert time.monotonic() < deadline, "no ping within 10 s"
                    if line.startswith(": ping"):
                        break
                release.set()
                kinds = [block.get("event") for block in _blocks(lines)]
            assert kinds[-1] == "end"  # the run went on to its end meanwhile
        finally:
            release.set()
            live.stop()
