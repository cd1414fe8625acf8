"""The server bounds slow clients before they reach the app (and its token check).

Slow connections ("slowloris": a request head sent in part, or a byte at a time) are
closed once their head has taken `--header-timeout`; past `--max-connections` a new
connection closes the one that has waited longest for its head, so a flood neither holds
the server nor uses up its open files, and real requests are served all along. A head
that never ends is cut at its size limit, and a JSON body nested past the depth limit is
a 400 that says so.

Every attack is on 127.0.0.1, bounded in count and time, and closes its sockets itself;
`thinkgraph serve` runs in a child process that each test stops.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from tests.server.support import ROOT, THINKGRAPH, Served, free_port

SLOW = 1200


def room_for_sockets(count: int) -> None:
    """Let this process open `count` more sockets, or skip the test saying why."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + 256
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"this process may open {hard} files at most; the test needs {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def slow_connections(port: int, count: int) -> list[socket.socket]:
    """`count` connections that each send part of a request head, and no more."""
    head = f"GET /runs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode()
    opened = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(head)
        opened.append(sock)
    return opened


def closed_by_the_server(socks: list[socket.socket], within: float) -> list[socket.socket]:
    """Those of `socks` the server closes within `within` seconds (what it sent is read)."""
    closed: list[socket.socket] = []
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
        deadline = time.monotonic() + within
        while len(closed) < len(socks) and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=max(0.0, deadline - time.monotonic())):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(65536)
                except (ConnectionResetError, BrokenPipeError):
                    data = b""
                if not data:
                    selector.unregister(sock)
                    closed.append(sock)
    return closed


def still_open(socks: list[socket.socket]) -> list[socket.socket]:
    """Those of `socks` the server has not closed (nothing to read, no end)."""
    found = []
    for sock in socks:
        sock.setblocking(False)
        try:
            if sock.recv(1, socket.MSG_PEEK):
                continue
        except BlockingIOError:
            found.append(sock)
        except OSError:
            continue
    return found


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    """Sockets a test opened; all closed when it ends."""
    opened: list[socket.socket] = []
    yield opened
    for sock in opened:
        sock.close()


def served_within(url: str, seconds: float = 10) -> int:
    """The status of a real request, which must be answered within `seconds`."""
    return httpx.get(url + "/runs", timeout=seconds).status_code


@pytest.mark.timeout(120)
def test_real_requests_are_served_while_1200_slow_connections_are_open(
    tmp_path: Path, sockets: list[socket.socket]
) -> None:
    room_for_sockets(SLOW + 20)
    served = Served(tmp_path, ["--no-token"])  # the defaults: a 10 s head timeout
    try:
        sockets += slow_connections(served.port, SLOW)
        trickle = threading.Event()
        tricklers = slow_connections(served.port, 10)
        sockets += tricklers

        def drip() -> None:  # a byte every half second: never idle, never done
            while not trickle.wait(0.5):
                for sock in tricklers:
                    with contextlib.suppress(OSError):
                        sock.send(b"x")

        dripping = threading.Thread(target=drip, daemon=True)
        dripping.start()
        try:
            assert [served_within(served.url) for _ in range(3)] == [200, 200, 200]
            closed = closed_by_the_server(sockets, within=10 + 15)
        finally:
            trickle.set()
            dripping.join(5)
        assert len(closed) == SLOW + 10  # every slow one, however it trickled
        assert served_within(served.url) == 200
    finally:
        served.stop()


@pytest.mark.timeout(120)
def test_past_the_cap_the_longest_waiting_connection_makes_room(
    tmp_path: Path, sockets: list[socket.socket]
) -> None:
    room_for_sockets(400)
    args = ["--no-token", "--max-connections", "100", "--header-timeout", "60"]
    served = Served(tmp_path, args)
    try:
        before = open_files(served.process.pid)
        sockets += slow_connections(served.port, 400)
        assert served_within(served.url) == 200
        # The real request took the place of the oldest slow one still open.
        assert len(closed_by_the_server(sockets[:301], within=10)) == 301
        assert len(still_open(sockets[301:])) == 99
        assert open_files(served.process.pid) <= before + 100
    finally:
        served.stop()


class LimitedServe:
    """`thinkgraph serve --no-token` in a process that may open `files` files at most."""

    def __init__(self, tmp_path: Path, files: int) -> None:
        script = tmp_path / "replies.json"
        script.write_text('["Thought: done\\nFinal Answer: 3"]')
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

        env = {k: v for k, v in os.environ.items() if k != "THINKGRAPH_TOKEN"}
        command = [
            THINKGRAPH, "serve", "--no-token", "--port", str(self.port), "--tools",
            "calculator", "--script", str(script), "--store", f"sqlite:///{tmp_path / 'r.db'}",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, preexec_fn=limit,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url + "/runs", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError("thinkgraph serve did not start")

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
        out, _ = self.process.communicate(timeout=30)
        return out


@pytest.mark.timeout(120)
def test_a_flood_of_connections_cannot_use_up_the_servers_open_files(
    tmp_path: Path, sockets: list[socket.socket]
) -> None:
    room_for_sockets(600)
    served = LimitedServe(tmp_path, files=300)
    try:
        sockets += slow_connections(served.port, 600)  # twice what the process may open
        assert open_files(served.process.pid) < 300
        assert [served_within(served.url) for _ in range(3)] == [200, 200, 200]
    finally:
        printed = served.stop()
    assert "note: this process may open 300 files, so it takes 172 connections" in printed


@pytest.mark.timeout(60)
def test_a_head_trickled_past_the_timeout_gets_408_and_is_closed(tmp_path: Path) -> None:
    served = Served(tmp_path, ["--no-token", "--header-timeout", "1"])
    try:
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
            sock.sendall(f"GET /runs HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n".encode())
            answer = b""
            started = time.monotonic()
            sock.settimeout(0.3)
            while time.monotonic() - started < 10:
                try:
                    sock.send(b"X")  # a header name, one byte at a time
                    chunk = sock.recv(4096)
                except TimeoutError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b"took over 1 s to arrive" in answer
        assert time.monotonic() - started < 5
    finally:
        served.stop()


@pytest.mark.timeout(60)
def test_a_head_that_never_ends_is_cut_at_its_size_limit(tmp_path: Path) -> None:
    served = Served(tmp_path, ["--no-token"])
    try:
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
            sock.sendall(f"GET /runs HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n".encode())
            line = b"X-Pad: " + b"a" * 1000 + b"\r\n"
            try:
                for _ in range(1000):  # 1 MB of headers, never ended
                    sock.sendall(line)
            except OSError:
                pass  # the server answered and closed
            sock.settimeout(10)
            answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert b"over 65536 bytes" in answer
    finally:
        served.stop()


# -- JSON bodies ----------------------------------------------------------------------------------


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


DEEP = "the body nests arrays or objects more than 64 deep; send a flatter JSON object"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/runs", "[" * 100_000),  # not even closed: the parser's own recursion limit
        ("/runs", nested(100_000)),
        ("/runs", '{"task": "add", "thread_id": ' + nested(65) + "}"),
        (
            "/runs/t1/resume",
            '{"decisions": {"c1": {"action": "edit", "args": ' + nested(900) + "}}}",
        ),
    ],
    ids=["unclosed", "100000-deep", "65-deep", "resume-900-deep"],
)
def test_a_body_nested_too_deep_is_a_400_that_says_so(
    client: TestClient, path: str, body: str
) -> None:
    answer = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert (answer.status_code, answer.json()) == (400, {"error": DEEP})


def test_a_body_nested_to_the_limit_is_taken(client: TestClient) -> None:
    body = '{"task": "add", "thread_id": "t1", "note": ' + nested(63) + "}"
    answer = client.post("/runs", content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 202, answer.text


def test_the_server_limits_are_serve_options() -> None:
    from typer.testing import CliRunner

    from thinkgraph.cli import app

    shown = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    for option in ("--max-connections", "--header-timeout"):
        assert option in shown.output
