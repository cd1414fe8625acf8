"""The server bounds what it takes: request bodies, tasks, open event streams.

Large bodies go over a real socket to a real uvicorn, declared far larger than what is
sent: an answer before the body's end shows the server did not wait to read it all.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from tests.server.support import Live, events
from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.server import build_app

MiB = 1 << 20
JSON = "Content-Type: application/json"


@pytest.fixture
def live(agent: Agent) -> Iterator[Live]:
    server = Live(build_app(agent, poll_s=0.05))
    try:
        yield server
    finally:
        server.stop()


def _head(live: Live, lines: list[str]) -> bytes:
    return ("\r\n".join([*lines, f"Host: {live.host}", "", ""])).encode()


def _answer(sock: socket.socket, timeout: float = 10.0, whole: bool = False) -> bytes:
    """What the server says within `timeout` seconds: its head, or all until it closes."""
    sock.settimeout(timeout)
    got = b""
    try:
        while whole or b"\r\n\r\n" not in got:
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return got


def _send_some(sock: socket.socket, data: bytes, pieces: int) -> None:
    """Send `pieces` copies of `data`, stopping quietly when the server stops reading."""
    sock.settimeout(2.0)
    try:
        for _ in range(pieces):
            sock.sendall(data)
    except OSError:
        pass  # the server answered and closed, or stopped reading: both are the point


def test_a_huge_declared_body_is_refused_before_it_is_read(live: Live, agent: Agent) -> None:
    with socket.create_connection(("127.0.0.1", live.port)) as sock:
        declared = f"Content-Length: {300 * 1000 * 1000}"  # 300 MB
        sock.sendall(_head(live, ["POST /runs HTTP/1.1", JSON, declared]))
        _send_some(sock, b'{"task": "' + b"x" * (MiB - 10), pieces=2)  # 2 MB of 300 MB
        answer = _answer(sock, whole=True)  # the server closes the connection after it
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"--max-body-bytes" in answer
    assert agent.runs() == []


def test_a_huge_chunked_body_is_refused_while_it_streams(live: Live, agent: Agent) -> None:
    chunk = b"x" * (64 * 1024)
    piece = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    with socket.create_connection(("127.0.0.1", live.port)) as sock:
        sock.sendall(_head(live, ["POST /runs HTTP/1.1", JSON, "Transfer-Encoding: chunked"]))
        _send_some(sock, piece, pieces=48)  # 3 MiB, and the body never ends
        answer = _answer(sock, whole=True)  # the server closes the connection after it
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"--max-body-bytes" in answer
    assert agent.runs() == []


def test_a_body_over_the_limit_gets_413_with_one_line(client: TestClient, agent: Agent) -> None:
    big = {"task": "t", "thread_id": "b1", "padding": "x" * (2 * MiB)}
    refused = client.post("/runs", json=big)
    assert refused.status_code == 413
    assert "\n" not in refused.text.strip() and "bytes" in refused.json()["error"]
    assert agent.runs() == []


def test_a_task_over_the_limit_gets_413_and_is_not_stored(client: TestClient, agent: Agent) -> None:
    refused = client.post("/runs", json={"task": "x" * (100 * 1024), "thread_id": "t1"})
    assert refused.status_code == 413 and "task" in refused.json()["error"]
    assert agent.runs() == []
    assert client.post("/runs", json={"task": "x" * 1000, "thread_id": "t2"}).status_code == 202


def test_the_limits_are_options(agent: Agent) -> None:
    app = build_app(agent, max_body_bytes=2000, max_task_bytes=100)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.post("/runs", json={"task": "x" * 101}).status_code == 413
        assert client.post("/runs", json={"task": "x" * 2000}).status_code == 413
        assert client.post("/runs", json={"task": "x" * 100}).status_code == 202


def test_a_paused_runs_stream_reports_the_pause_and_closes(live: Live, agent: Agent) -> None:
    started = httpx.post(live.url + "/runs", json={"task": "add then publish", "thread_id": "p1"})
    assert started.status_code == 202
    deadline = time.monotonic() + 20
    while agent.result("p1").status != "paused":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with httpx.stream("GET", live.url + "/runs/p1/events", timeout=5) as stream:
        seen = list(events(stream.iter_lines()))  # a read timeout fails the test
    assert seen[-1][0] == "status" and seen[-1][1]["status"] == "paused"
    assert seen[-1][1]["pending"][0]["tool"] == "publish"
    # An ended run's stream ends too.
    call_id = seen[-1][1]["pending"][0]["call_id"]
    answer = {"decisions": {call_id: {"action": "approve"}}}
    assert httpx.post(live.url + "/runs/p1/resume", json=answer).status_code == 202
    with httpx.stream("GET", live.url + "/runs/p1/events", timeout=5) as stream:
        seen = list(events(stream.iter_lines()))
    assert seen[-1][0] == "end" and seen[-1][1]["answer"] == "3"


def test_open_event_streams_are_capped(tmp_path: Path) -> None:
    release = threading.Event()

    @tool
    def slow(text: str) -> str:
        """Wait until the test lets it go."""
        release.wait(timeout=30)
        return text

    replies = ['Thought: wait\nAction: slow\nAction Input: {"text": "x"}', "Final Answer: x"]
    agent = Agent(ScriptedModel(replies), [slow], store=f"sqlite:///{tmp_path / 's.db'}")
    with agent:
        live = Live(build_app(agent, poll_s=0.05))
        sockets: list[socket.socket] = []
        try:
            assert httpx.post(live.url + "/runs", json={"task": "t", "thread_id": "r1"}).is_success
            request = _head(live, ["GET /runs/r1/events HTTP/1.1"])
            for _ in range(32):  # the default cap: each stays open, the run goes on
                sock = socket.create_connection(("127.0.0.1", live.port))
                sockets.append(sock)
                sock.sendall(request)
                assert _answer(sock).startswith(b"HTTP/1.1 200")
            over = httpx.get(live.url + "/runs/r1/events", timeout=5)
            assert over.status_code == 429
            assert "\n" not in over.text.strip() and "streams" in over.json()["error"]
            for sock in sockets[:2]:
                sock.close()
            time.sleep(0.5)  # the server sees them go at its next look at the store
            with httpx.stream("GET", live.url + "/runs/r1/events", timeout=5) as stream:
                assert stream.status_code == 200
        finally:
            release.set()
            for sock in sockets:
                sock.close()
            live.stop()


def test_the_stream_cap_is_an_option(agent: Agent) -> None:
    app = build_app(agent, max_streams=0)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        client.post("/runs", content=json.dumps({"task": "t", "thread_id": "c1"}),
                    headers={"content-type": "application/json"})  # fmt: skip
        assert client.get("/runs/c1/events").status_code == 429
        assert client.get("/runs").status_code == 200
