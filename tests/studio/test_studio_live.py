"""A run's page over HTTP, as its script follows it: the steer section on its own (the
forms a pause needs, with the token and checkpoint that answer it), the tokens and cost
the run spent in each node, and the lineage of forks and replays."""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.studio.support import BASE, SEND, form_of, send, wait_status
from thinkgraph import Agent, ScriptedModel
from thinkgraph.llm.base import ModelReply, ModelRequest
from thinkgraph.server import build_app


class Metered(ScriptedModel):
    """A scripted model that reports 10 prompt and 5 completion tokens and $0.25 a call."""

    def complete(self, request: ModelRequest) -> ModelReply:
        reply = super().complete(request)
        return dataclasses.replace(reply, prompt_tokens=10, completion_tokens=5, cost_usd=0.25)


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    with Agent(Metered(SEND * 4), [send], store=f"sqlite:///{tmp_path / 'runs.db'}") as a:
        yield a


@pytest.fixture
def client(agent: Agent) -> Iterator[TestClient]:
    with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as made:
        yield made


def _paused(client: TestClient, thread: str) -> None:
    assert client.post("/runs", json={"task": "send it", "thread_id": thread}).status_code == 202
    wait_status(client, thread, "paused")


def test_the_steer_section_alone_holds_the_forms_that_answer_the_pause(
    client: TestClient, agent: Agent
) -> None:
    _paused(client, "s1")
    page = client.get("/studio/runs/s1").text
    section = client.get("/studio/runs/s1/steer")
    assert section.status_code == 200
    assert section.headers["content-type"].startswith("text/html")
    assert section.headers["cache-control"] == "no-store"
    assert "<html" not in section.text  # a part of the page, not a page
    at = agent.checkpoint_id("s1")
    assert f'data-at="{at}"' in section.text
    # the same section the page holds, the same forms with the same token and checkpoint
    assert section.text in page
    fields = form_of(section.text, "Approve")
    assert fields["at"] == at and fields["action"] == "approve"
    assert fields["csrf"] == form_of(page, "Approve")["csrf"]
    # a press of the fetched form answers the pause
    pressed = client.post("/studio/runs/s1/answer", data=fields, follow_redirects=False)
    assert pressed.status_code == 303
    wait_status(client, "s1", "done")
    done = client.get("/studio/runs/s1/steer").text
    assert "<form" not in done and " hidden" in done  # nothing waits: the section is empty


def test_the_live_read_names_the_checkpoint_so_the_script_knows_a_new_pause(
    client: TestClient, agent: Agent
) -> None:
    _paused(client, "s2")
    live = client.get("/studio/runs/s2/live").json()
    assert live["status"] == "paused"
    assert live["at"] == agent.checkpoint_id("s2")


def test_the_steer_section_of_no_run_is_404(client: TestClient) -> None:
    assert client.get("/studio/runs/nope/steer").status_code == 404


def test_tokens_and_cost_per_node_on_the_page_in_the_steps_panel_and_live(
    client: TestClient,
) -> None:
    _paused(client, "u1")
    client.post(
        "/studio/runs/u1/answer", data=form_of(client.get("/studio/runs/u1").text, "Approve")
    )
    wait_status(client, "u1", "done")
    page = client.get("/studio/runs/u1").text
    # two model calls, both in think: 2 x 15 tokens, 2 x $0.25
    table = page.split('aria-label="tokens and cost per node"')[1].split("</table>")[0]
    row = re.search(r'<tr data-node="think">(.*?)</tr>', table, re.S)
    assert row is not None, table
    assert "30" in row.group(1) and "$0.5000" in row.group(1) and ">2<" in row.group(1)
    assert 'data-node="act"' not in table  # a node that called no model spent nothing
    panel = client.get("/studio/runs/u1", params={"node": "think"}).text
    assert "think spent 30 tokens · $0.5000 in 2 model calls" in panel
    live = client.get("/studio/runs/u1/live").json()
    assert live["usage"]["think"] == {"tokens": 30, "cost_usd": 0.5, "calls": 2}


def test_a_fork_names_its_source_and_the_source_lists_its_forks(
    client: TestClient, agent: Agent
) -> None:
    _paused(client, "src")
    at = agent.history("src")[1].checkpoint_id
    agent.fork("src", at, new_thread_id="child")
    agent.fork("src", at, new_thread_id="child2")
    forked = client.get("/studio/runs/child").text
    lineage = forked.split('aria-label="lineage"')[1].split("</section>")[0]
    assert "forked from" in lineage
    assert 'href="/studio/runs/src"' in lineage
    assert f'href="/studio/runs/src/at/{at}"' in lineage
    source = client.get("/studio/runs/src").text
    listed = source.split('aria-label="lineage"')[1].split("</section>")[0]
    assert 'href="/studio/runs/child"' in listed and 'href="/studio/runs/child2"' in listed
    assert "forked from" not in listed  # the source was started, not forked


def test_the_forks_and_replays_of_a_run_are_read_from_checkpoint_metadata(
    any_store_url: str,
) -> None:
    a, b = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    with Agent(Metered(SEND * 4), [send], store=any_store_url) as agent:
        agent.run("send it", thread_id=a)
        agent.run("send it", thread_id=b)
        at = agent.history(a)[1].checkpoint_id
        agent.fork(a, at, new_thread_id=f"{a}-fork")
        assert agent.reader.forks(a) == [(f"{a}-fork", at)]
        assert agent.reader.forks(b) == []
        assert agent.reader.fork_of(f"{a}-fork") == (a, at)
        assert agent.reader.fork_of(a) is None
        assert agent.reader.replays(a) == []
        agent.resume(b, {c.call_id: {"action": "approve"} for c in agent.result(b).pending})
        replayed = agent.replay(b).replay.thread_id
        assert agent.reader.replays(b) == [replayed]
        assert agent.reader.forks(b) == [] and agent.reader.fork_of(replayed) is None


def test_a_replay_names_the_run_it_replays(client: TestClient, agent: Agent) -> None:
    agent.run("send it", thread_id="orig")
    agent.resume("orig", {c.call_id: {"action": "approve"} for c in agent.result("orig").pending})
    report = agent.replay("orig")
    page = client.get(f"/studio/runs/{report.replay.thread_id}").text
    lineage = page.split('aria-label="lineage"')[1].split("</section>")[0]
    assert "replay of" in lineage and 'href="/studio/runs/orig"' in lineage
    source = client.get("/studio/runs/orig").text
    listed = source.split('aria-label="lineage"')[1].split("</section>")[0]
    assert "Replays of this run" in listed
    assert f'href="/studio/runs/{report.replay.thread_id}"' in listed
    assert agent.reader.replays("orig") == [report.replay.thread_id]
