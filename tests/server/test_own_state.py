"""A run's own state over HTTP: in the run's document and in its stream's status events,
masked as every view masks it (on the page: test_own_state_browser.py).

The graph (`tests.cli.state_graphs:planned`) declares a plan (appended by a reducer) and a
score; a fork sets the plan to a text with a credential and markup in it.
"""

from __future__ import annotations

import json

from starlette.testclient import TestClient

from tests.server.conftest import BASE
from tests.server.support import MARKUP, SECRET, events, forked, wait_status
from thinkgraph import Agent
from thinkgraph.server import build_app


def test_the_run_document_and_its_status_events_carry_its_own_state_masked(
    planner: Agent,
) -> None:
    with TestClient(build_app(planner, poll_s=0.05), base_url=BASE) as client:
        assert client.post("/runs", json={"task": "plan it", "thread_id": "p1"}).is_success
        doc = wait_status(client.get, "p1", "done", within=30)
        assert doc["state"] == {"plan": ["step 1", "step 2"], "score": 20}

        forked(planner)
        shown = client.get("/runs/f1")
        assert shown.json()["state"] == {"plan": ["call ***", MARKUP], "score": 20}
        with client.stream("GET", "/runs/f1/events") as stream:
            seen = list(events(stream.iter_lines()))
        statuses = [data for kind, data in seen if kind == "status"]
        assert statuses[-1]["state"] == {"plan": ["call ***", MARKUP], "score": 20}
        assert SECRET not in shown.text and all(SECRET not in json.dumps(d) for _, d in seen)
