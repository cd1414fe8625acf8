"""A server reads any run without running code, and continues one only on its own graph.

`thinkgraph serve --graph ADDR` runs the graph its operator named. A run whose recorded
graph address was rewritten in the store (`tests.support.tamper`) to a module that leaves
a file when imported is listed, shown, drawn and streamed like any other, with nothing
imported; asked to resume it, the server compares the recorded address with its own as
text and refuses (4xx, naming the recorded graph) without importing it, and the run stays
as it was. The same holds for a server that hands runs to workers (PostgreSQL).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from tests.cli.sample_graphs import REFLECT
from tests.conftest import POSTGRES_URL
from tests.server.conftest import BASE
from tests.server.support import REPLIES, TOOLS, Served, events
from tests.support.tamper import Marker, retarget, stored
from thinkgraph import Agent, ScriptedModel
from thinkgraph.server import build_app
from thinkgraph.worker import open_jobs

TOKEN = "tampered-graph-test-token"


def _paused_on_reflect(store: str, thread: str) -> dict[str, Any]:
    """Start a run on the user's graph until it waits for approval of `publish`; return
    the approval the server would be asked for."""
    with Agent(ScriptedModel(REPLIES), TOOLS, store=store, graph=REFLECT) as custom:
        paused = custom.run("add then publish", thread_id=thread)
    assert paused.status == "paused"
    return {"decisions": {paused.pending[0].call_id: {"action": "approve"}}}


@pytest.fixture
def marker(tmp_path: Path) -> Marker:
    (tmp_path / "marker").mkdir()
    return Marker.make(tmp_path / "marker")


@pytest.fixture(params=["file", "module"])
def address(request: pytest.FixtureRequest, marker: Marker) -> str:
    """Where the tampered run says its graph is: the marker's file, or its module (on the
    server's PYTHONPATH)."""
    return marker.file_address if request.param == "file" else marker.module_address


@pytest.fixture
def served(tmp_path: Path, marker: Marker, address: str) -> Iterator[tuple[Served, Any]]:
    """`serve --graph REFLECT` on a store holding run "g1" (on REFLECT, paused for
    approval) whose recorded graph now names the marker; yields it and the approval."""
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    answer = _paused_on_reflect(store, "g1")
    retarget(store, "g1", address)
    server = Served(tmp_path, ["--graph", REFLECT], token=TOKEN, pythonpath=[marker.pythonpath])
    try:
        yield server, answer
    finally:
        server.stop()


def _get(server: Served, path: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return httpx.get(server.url + path, headers=headers, timeout=30)


def test_a_served_tampered_run_is_read_without_importing_and_resume_is_refused(
    served: tuple[Served, Any], marker: Marker, address: str, tmp_path: Path
) -> None:
    server, answer = served
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    before = stored(store, "g1")

    listed = _get(server, "/runs")
    assert listed.status_code == 200, listed.text
    assert [(r["thread_id"], r["status"]) for r in listed.json()] == [("g1", "paused")]
    shown = _get(server, "/runs/g1")
    assert shown.status_code == 200, shown.text
    assert shown.json()["status"] == "paused"
    assert shown.json()["pending"][0]["tool"] == "publish"
    assert _get(server, "/").status_code == 200
    drawn = _get(server, "/runs/g1/diagram?format=mermaid")
    assert drawn.status_code == 200 and "reflect" in drawn.text, drawn.text
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.stream("GET", server.url + "/runs/g1/events", headers=headers, timeout=30) as sse:
        assert sse.status_code == 200
        seen = list(events(sse.iter_lines()))
    assert seen[-1][0] == "status" and seen[-1][1]["status"] == "paused", seen
    assert marker.ran() == [], server.output

    bodies: list[dict[str, Any]] = [answer, {}]  # an approval, and a bare "continue it"
    for body in bodies:
        refused = httpx.post(server.url + "/runs/g1/resume", json=body, headers=headers, timeout=30)
        assert 400 <= refused.status_code < 500, refused.text
        assert address in refused.json()["error"], refused.text
    assert marker.ran() == [], server.output
    assert stored(store, "g1") == before
    assert _get(server, "/runs/g1").json()["status"] == "paused"
    assert "Traceback" not in server.output


def test_a_server_handing_runs_to_workers_queues_nothing_for_a_tampered_run(
    thread_id: str, tmp_path: Path
) -> None:
    marker = Marker.make(tmp_path)
    queue = f"srv-{uuid.uuid4().hex[:8]}"
    answer = _paused_on_reflect(POSTGRES_URL, thread_id)
    retarget(POSTGRES_URL, thread_id, marker.file_address)
    before = stored(POSTGRES_URL, thread_id)

    with Agent(ScriptedModel(REPLIES), TOOLS, store=POSTGRES_URL, graph=REFLECT) as agent:
        app = build_app(agent, queue=queue, poll_s=0.05)
        with TestClient(app, base_url=BASE) as client:
            for body in (answer, {}):
                refused = client.post(f"/runs/{thread_id}/resume", json=body)
                assert 400 <= refused.status_code < 500, refused.text
                assert marker.file_address in refused.json()["error"], refused.text
    assert marker.ran() == []
    assert open_jobs(POSTGRES_URL, thread_id) == []
    assert stored(POSTGRES_URL, thread_id) == before
