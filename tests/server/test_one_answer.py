"""Two conflicting answers through HTTP at the same moment: one 202, one 409 naming it.

Two servers on one store (two processes' worth: two agents, two apps), each asked to
answer the same pause, the requests released together by a barrier. The run then goes on
with the acknowledged answer only: `publish` ran iff it was the approval.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from tests.conftest import POSTGRES_URL
from tests.server.conftest import BASE
from tests.server.support import REPLIES, TOOLS
from thinkgraph import Agent, ScriptedModel, StepLimits
from thinkgraph.server import build_app
from thinkgraph.state import ToolResultStep
from thinkgraph.worker import run_worker

ROUNDS = 3
REFUSED = re.compile(
    r"^the pause of thread '[^']+' at checkpoint \S+ was already answered: "
    r"(?P<what>approved|rejected) by .+ at .+ UTC; nothing changed$"
)


@pytest.fixture
def queue() -> Iterator[str]:
    """A queue of the test's own; its jobs are deleted afterwards (the database is shared)."""
    name = f"q-{uuid.uuid4().hex[:10]}"
    yield name
    with psycopg.connect(POSTGRES_URL) as conn:
        conn.execute("DELETE FROM procrastinate_jobs WHERE queue_name = %s", (name,))


def _agent(store: str) -> Agent:
    return Agent(ScriptedModel(REPLIES), TOOLS, limits=StepLimits(max_steps=5), store=store)


def _race(clients: list[TestClient], thread: str, call: str) -> list[Any]:
    bodies = [
        {"decisions": {call: {"action": "approve"}}},
        {"decisions": {call: {"action": "reject", "reason": "no"}}},
    ]
    barrier = threading.Barrier(2)
    answers: list[Any] = [None, None]

    def post(n: int) -> None:
        barrier.wait(timeout=10)
        answers[n] = clients[n].post(f"/runs/{thread}/resume", json=bodies[n])

    threads = [threading.Thread(target=post, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return answers


def _published(agent: Agent, thread: str) -> bool:
    steps = [s for s in agent.chain(thread) if isinstance(s, ToolResultStep)]
    return any(s.tool == "publish" and "published" in str(s.output) for s in steps)


def _settled(agent: Agent, thread: str) -> str:
    deadline = time.monotonic() + 20
    while (status := agent.result(thread).status) not in ("done", "failed"):
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    return status


def _check(answers: list[Any], agent: Agent, thread: str) -> None:
    codes = sorted(a.status_code for a in answers)
    assert codes == [202, 409], [(a.status_code, a.text) for a in answers]
    won = "approved" if answers[0].status_code == 202 else "rejected"
    loser = answers[1] if won == "approved" else answers[0]
    found = REFUSED.match(loser.json()["error"])
    assert found is not None, loser.text
    assert found["what"] == won
    assert _settled(agent, thread) == "done"
    assert _published(agent, thread) == (won == "approved")


def test_two_servers_on_one_store_acknowledge_one_answer(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with _agent(store) as one, _agent(store) as two:
        apps = [build_app(one, poll_s=0.05), build_app(two, poll_s=0.05)]
        with TestClient(apps[0], base_url=BASE) as a, TestClient(apps[1], base_url=BASE) as b:
            for _ in range(ROUNDS):
                thread = f"h-{uuid.uuid4().hex[:10]}"
                paused = one.run("add and publish", thread_id=thread)
                assert paused.status == "paused"
                answers = _race([a, b], thread, str(paused.pending[0].call_id))
                _check(answers, one, thread)


def test_two_servers_handing_answers_to_workers_acknowledge_one(queue: str) -> None:
    with _agent(POSTGRES_URL) as one, _agent(POSTGRES_URL) as two:
        apps = [build_app(one, queue=queue), build_app(two, queue=queue)]
        with TestClient(apps[0], base_url=BASE) as a, TestClient(apps[1], base_url=BASE) as b:
            for _ in range(ROUNDS):
                thread = f"h-{uuid.uuid4().hex[:10]}"
                paused = one.run("add and publish", thread_id=thread)
                assert paused.status == "paused"
                answers = _race([a, b], thread, str(paused.pending[0].call_id))
                with _agent(POSTGRES_URL) as worker:
                    run_worker(worker, queue=queue, wait=False, install_signal_handlers=False)
                _check(answers, one, thread)
