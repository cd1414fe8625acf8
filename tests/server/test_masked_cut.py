"""The server shows no part of a secret that an observation's cut left without its end.

A tool returns a token after 3,880 characters of data; the observation is cut inside the
token. The run's JSON (`GET /runs/T`), the run list and the event stream mask that
visible start, as every view does (see tests/views/test_mask_cut.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.server.conftest import BASE
from tests.views.test_mask_cut import fetch_record
from thinkgraph import Agent, ScriptedModel
from thinkgraph.server import build_app

REPLIES = [
    'Thought: read it\nAction: fetch_record\nAction Input: {"key": "r1"}',
    "Thought: done\nFinal Answer: read",
]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    agent = Agent(ScriptedModel(REPLIES), [fetch_record], store=f"sqlite:///{tmp_path / 'r.db'}")
    with agent, TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as test_client:
        yield test_client


def test_the_run_document_and_the_event_stream_mask_a_cut_token(client: TestClient) -> None:
    assert client.post("/runs", json={"task": "read record r1", "thread_id": "c1"}).is_success
    with client.stream("GET", "/runs/c1/events") as stream:
        streamed = "\n".join(stream.iter_lines())
    document = client.get("/runs/c1").text
    listed = client.get("/runs").text
    assert '"type": "observation"' in streamed  # the cut observation was sent
    for shown in (streamed, document, listed):
        assert "TOKSECRET" not in shown
    (observation,) = [s for s in json.loads(document)["steps"] if s["type"] == "observation"]
    assert '"token": "***\n…' in observation["text"]
