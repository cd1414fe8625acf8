"""Fixtures of the server tests: agents on a SQLite file (pausing for `publish`, for
`send`, or planning with state of their own), the app in a test client, `thinkgraph serve`
in a child process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.cli.state_graphs import PLANNED
from tests.server.support import REPLIES, SEND, TOKEN, TOOLS, Served, send
from thinkgraph import Agent, ScriptedModel, StepLimits
from thinkgraph.server import build_app

BASE = "http://127.0.0.1:8000"
"""Where the test client says the server is: a loopback address, as `serve` binds."""


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    """An agent whose run pauses once, for approval of `publish`."""
    made = Agent(
        ScriptedModel(REPLIES), TOOLS, limits=StepLimits(max_steps=5),
        store=f"sqlite:///{tmp_path / 'runs.db'}",
    )  # fmt: skip
    with made:
        yield made


@pytest.fixture
def client(agent: Agent) -> Iterator[TestClient]:
    with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as test_client:
        yield test_client


@pytest.fixture
def sender(tmp_path: Path) -> Iterator[Agent]:
    """An agent whose runs pause once, for approval of `send`."""
    made = Agent(ScriptedModel(SEND), [send], store=f"sqlite:///{tmp_path / 'runs.db'}")
    with made:
        yield made


@pytest.fixture
def planner(tmp_path: Path) -> Iterator[Agent]:
    """An agent on the graph `tests.cli.state_graphs:planned`: a plan and a score of its own."""
    made = Agent(ScriptedModel(["Thought: done\nFinal Answer: 42"] * 4),
                 store=f"sqlite:///{tmp_path / 'runs.db'}", graph=PLANNED)  # fmt: skip
    with made:
        yield made


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`thinkgraph serve` in a child process, with the tests' tools and replies and `TOKEN`."""
    server = Served(tmp_path, token=TOKEN)
    try:
        yield server.url
    finally:
        server.stop()
