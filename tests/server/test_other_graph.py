"""The server continues a run only on the graph it recorded, and leaves any other as it was.

A run started on a user's graph (`tests.cli.sample_graphs:build`, which adds a "reflect"
node) records its address; a server whose agent runs our graph refuses to resume or
approve it with one line naming the run's graph, and writes nothing: no checkpoint, no
job. The refusal is the run driver's (`check_continues_on_its_graph`), whether the server
advances runs itself or hands them to workers.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from tests.cli.sample_graphs import REFLECT
from tests.conftest import POSTGRES_URL
from tests.server.conftest import BASE
from tests.server.support import REPLIES, TOOLS
from thinkgraph import Agent, ScriptedModel
from thinkgraph.server import build_app
from thinkgraph.worker import open_jobs


def _refusal(thread: str) -> str:
    return (
        f"thread {thread!r} runs on {REFLECT}, not on this agent's graph (the built-in one); "
        f"continue it with an agent on its graph (a worker started with --graph {REFLECT}, "
        "on a queue of its own)"
    )


def _paused_on_reflect(store: str, thread: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Start a run on the user's graph until it waits for approval of `publish`; return
    the approval the server is asked for, and the run as it is stored."""
    with Agent(ScriptedModel(REPLIES), TOOLS, store=store, graph=REFLECT) as custom:
        paused = custom.run("add then publish", thread_id=thread)
        assert paused.status == "paused"
        answer = {"decisions": {paused.pending[0].call_id: {"action": "approve"}}}
        return answer, _as_stored(custom, thread)


def _as_stored(agent: Agent, thread: str) -> dict[str, Any]:
    """All of a run the store holds: every checkpoint of its history, and its state."""
    saver: Any = agent.graph.checkpointer
    checkpoints = [c.checkpoint["id"] for c in saver.list({"configurable": {"thread_id": thread}})]
    return {
        "checkpoints": checkpoints,
        "history": [c.checkpoint_id for c in agent.history(thread)],
        "result": agent.result(thread).model_dump(mode="json"),
    }


def _stored(store: str, thread: str) -> dict[str, Any]:
    """The run read back on its own graph."""
    with Agent(ScriptedModel([]), TOOLS, store=store, graph=REFLECT) as custom:
        return _as_stored(custom, thread)


def _refuses_and_leaves_the_run(client: TestClient, thread: str, answer: dict[str, Any]) -> None:
    for body in (answer, {}):  # an approval, and a bare "continue it"
        refused = client.post(f"/runs/{thread}/resume", json=body)
        assert refused.status_code == 400, refused.text
        assert refused.json() == {"error": _refusal(thread)}


def test_a_server_on_another_graph_refuses_to_resume_a_run_and_leaves_it(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    answer, before = _paused_on_reflect(store, "g1")
    assert before["result"]["status"] == "paused"

    with Agent(ScriptedModel(REPLIES), TOOLS, store=store) as ours:
        with TestClient(build_app(ours, poll_s=0.05), base_url=BASE) as client:
            _refuses_and_leaves_the_run(client, "g1", answer)
        assert ours.checkpoint_id("g1") == before["checkpoints"][0]
    assert _stored(store, "g1") == before


def test_a_server_handing_runs_to_workers_queues_nothing_for_another_graph(
    thread_id: str,
) -> None:
    queue = f"srv-{uuid.uuid4().hex[:8]}"
    answer, before = _paused_on_reflect(POSTGRES_URL, thread_id)

    with Agent(ScriptedModel(REPLIES), TOOLS, store=POSTGRES_URL) as ours:
        app = build_app(ours, queue=queue, poll_s=0.05)
        with TestClient(app, base_url=BASE) as client:
            _refuses_and_leaves_the_run(client, thread_id, answer)
    assert open_jobs(POSTGRES_URL, thread_id) == []
    assert _stored(POSTGRES_URL, thread_id) == before
