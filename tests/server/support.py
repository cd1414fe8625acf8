"""What the server tests share: the agents' tools and replies, waiting for a status, SSE
parsing, real servers.

The run needs approval for `publish`, so a run started with `REPLIES` pauses once; one
started with `SEND` pauses once, for `send`. The served tests run with `TOKEN`.
`Served` is `thinkgraph serve` in a child process (its output kept); `Live` is the app
under a real uvicorn in a thread of the test, for what only a real socket shows.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.types import ASGIApp

from thinkgraph import Agent, tool
from thinkgraph.tools import Tool

REPLIES = [
    'Thought: add\nAction: add\nAction Input: {"a": 1, "b": 2}',
    'Thought: publish\nAction: publish\nAction Input: {"report": "three"}',
    "Thought: done\nFinal Answer: 3",
]
ROOT = Path(__file__).resolve().parents[2]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(requires_approval=True)
def publish(report: str) -> str:
    """Publish a report."""
    return f"published {report}"


TOOLS: list[Tool] = [add, publish]


@tool(requires_approval=True)
def send(to: str, count: int) -> str:
    """Send `count` copies of the report to `to`."""
    return f"sent {count} to {to}"


SEND = [
    'Thought: send it\nAction: send\nAction Input: {"to": "ops", "count": 2}',
    "Thought: done\nFinal Answer: sent",
]
"""A run that pauses once, for approval of `send`, then ends with the answer "sent"."""

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
"""The served tests run with a token, as a server reachable by others would."""


def wait_status(
    get: Callable[[str], Any], thread: str, status: str, within: float = 20
) -> dict[str, Any]:
    """The document of run `thread` once it has `status`, read with `get(path)` (a test
    client's or a real server's); fails after `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        doc: dict[str, Any] = get(f"/runs/{thread}").json()
        if doc.get("status") == status:
            return doc
        time.sleep(0.05)
    raise AssertionError(f"thread {thread} never became {status}")


SECRET = "sk-proj-abcdefghijklmnop1234"
MARKUP = '<img src=x onerror="document.title=1">'


def forked(agent: Agent) -> None:
    """Fork p1 after its first planner as f1, its plan set to a secret and markup (the
    own-state tests: the graph `tests.cli.state_graphs:planned`)."""
    at = next(c.checkpoint_id for c in agent.history("p1") if c.node == "planner")
    agent.fork("p1", at, state={"plan": [f"call {SECRET}", MARKUP]}, new_thread_id="f1")


def events(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    """(event, data) pairs of a server-sent event stream."""
    kind = ""
    for line in lines:
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: "):
            yield kind, json.loads(line[len("data: ") :])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """`thinkgraph serve` on a free loopback port, with this module's tools and replies."""

    def __init__(
        self,
        tmp_path: Path,
        args: Sequence[str] = (),
        token: str | None = None,
        pythonpath: Sequence[Path] = (),
    ) -> None:
        script = tmp_path / "replies.json"
        script.write_text(json.dumps(REPLIES))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k != "THINKGRAPH_TOKEN"}
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (ROOT, *pythonpath))
        if token is not None:
            env["THINKGRAPH_TOKEN"] = token
        command = [
            THINKGRAPH, "serve", "--port", str(self.port),
            "--tools", "tests.server.support:TOOLS", "--script", str(script),
            "--store", f"sqlite:///{tmp_path / 'runs.db'}", *args,
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self._output: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                httpx.get(self.url + "/runs", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError(f"thinkgraph serve did not start:\n{self.output}")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._output.append(line)

    @property
    def output(self) -> str:
        """What the server printed so far (its stdout and stderr)."""
        return "".join(self._output)

    def stop(self) -> str:
        """Stop the server (as Ctrl+C would) and return all it printed."""
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(timeout=30)
        self._reader.join(timeout=10)
        return self.output


class Live:
    """An ASGI app under a real uvicorn on a free loopback port, in a thread of the test."""

    def __init__(self, app: ASGIApp) -> None:
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.host}"
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", timeout_graceful_shutdown=5
        )
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise AssertionError("uvicorn did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=30)
