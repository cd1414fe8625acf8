"""Shared fixtures: stores (parametrized over every backend), tools, scripted models."""

from __future__ import annotations

import functools
import os
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from thinkgraph import Agent
from thinkgraph.storage import close_checkpointer, open_checkpointer

pytest_plugins = ["tests.support.fixtures", "tests.support.chromium"]

POSTGRES_URL = os.environ.get(
    "THINKGRAPH_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)


def _store_url(kind: str, tmp_path: Path) -> str:
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return POSTGRES_URL


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL for each durable backend: a SQLite file and the local PostgreSQL."""
    return _store_url(str(request.param), tmp_path)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL for every backend, the in-memory one included."""
    return _store_url(str(request.param), tmp_path)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return _store_url("sqlite", tmp_path)


@pytest.fixture
def saver(store_url: str) -> Iterator[Any]:
    saver = open_checkpointer(store_url)
    yield saver
    close_checkpointer(saver)


@pytest.fixture
def thread_id() -> str:
    """A thread id no other test uses (PostgreSQL is shared between tests)."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(autouse=True)
def _agents_closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Close, after each test, the agents it made and left open.

    An open agent on PostgreSQL holds pooled connections until it is collected; the suite
    shares one server (100 connections) between its workers, so tests that drop their
    agents unclosed would starve the others ("too many clients already").
    """
    made: weakref.WeakSet[Agent] = weakref.WeakSet()
    original = Agent.__init__

    @functools.wraps(original)
    def init(self: Agent, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.add(self)

    monkeypatch.setattr(Agent, "__init__", init)
    yield
    for agent in list(made):
        agent.close()
