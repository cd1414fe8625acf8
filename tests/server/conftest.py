"""Fixtures of the server tests: an agent on a SQLite file and the app in a test client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page
from starlette.testclient import TestClient

from tests.server.support import REPLIES, TOOLS
from tests.support.chromium import launched
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
def page() -> Iterator[Page]:
    """A tab of a headless system Chromium for this test alone (the module's other tests
    may run their own event loops); skips without Chromium."""
    with launched() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        yield context.new_page()
        context.close()
