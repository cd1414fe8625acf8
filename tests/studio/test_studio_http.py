"""The studio over HTTP (no browser): the runs list and inbox, a run's page with its graph,
checkpoints and steps, and the forms that answer a pause — each a plain form POST with the
CSRF token and the checkpoint it answers; a stale or double answer is 409 and changes
nothing; a form from elsewhere is refused."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.cli.sample_graphs import REFLECT
from tests.studio.support import BASE, SEND, form_of, send, wait_status
from thinkgraph import Agent, ScriptedModel
from thinkgraph.server import build_app


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    with Agent(ScriptedModel(SEND * 4), [send], store=f"sqlite:///{tmp_path / 'runs.db'}") as a:
        yield a


@pytest.fixture
def client(agent: Agent) -> Iterator[TestClient]:
    with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as made:
        yield made


def _paused(client: TestClient, thread: str, task: str = "send it") -> None:
    assert client.post("/runs", json={"task": task, "thread_id": thread}).status_code == 202
    wait_status(client, thread, "paused")


def test_the_list_shows_runs_and_the_inbox_what_each_waits_for(client: TestClient) -> None:
    _paused(client, "s1")
    page = client.get("/studio")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy  # no inline code
    assert "Waiting for you (1)" in page.text
    assert 'href="/studio/runs/s1"' in page.text
    assert "approval: <code>send(" in page.text
    assert "paused" in page.text


def test_the_list_filters_by_status_and_searches_by_thread(client: TestClient) -> None:
    _paused(client, "alpha-1")
    _paused(client, "beta-2")
    found = client.get("/studio", params={"q": "alpha"}).text
    table = found.split("<tbody>")[1]
    assert "alpha-1" in table and "beta-2" not in table
    none = client.get("/studio", params={"status": "done"}).text.split("<tbody>")[1]
    assert "alpha-1" not in none and "beta-2" not in none


def test_a_run_page_draws_its_graph_with_the_pause_and_lists_its_checkpoints(
    client: TestClient,
) -> None:
    _paused(client, "g1")
    page = client.get("/studio/runs/g1")
    assert page.status_code == 200
    assert "<svg" in page.text and 'class="node' in page.text
    assert re.search(r'class="node[^"]*\bpaused\b', page.text), "the paused node is marked"
    checkpoints = re.findall(r'href="(/studio/runs/g1/at/[^"]+)"', page.text)
    assert len(checkpoints) >= 3
    at = client.get(checkpoints[-1])
    assert at.status_code == 200 and "at checkpoint" in at.text
    assert client.get("/studio/runs/g1/at/nope").status_code == 404
    think = client.get("/studio/runs/g1", params={"node": "think"}).text
    assert "Steps of think" in think
    # Each node of the drawing is a real link to its steps.
    svg = page.text.split("<svg", 1)[1].split("</svg>", 1)[0]
    for node in ("think", "approve"):
        assert f'<a href="/studio/runs/g1?node={node}" aria-label="steps of {node}">' in svg
    assert 'href="/studio/runs/g1?node=__start__"' not in svg


def test_a_checkpoint_page_shows_the_run_as_it_stood_there(
    client: TestClient, agent: Agent
) -> None:
    _paused(client, "tt")
    _answer_approve = form_of(client.get("/studio/runs/tt").text, "Approve")
    client.post("/studio/runs/tt/answer", data=_answer_approve, follow_redirects=False)
    wait_status(client, "tt", "done")
    at = next(h.checkpoint_id for h in agent.history("tt") if h.node == "think")
    page = client.get(f"/studio/runs/tt/at/{at}")
    assert page.status_code == 200
    text = page.text
    # Its steps up to there: the call proposed, not yet its result or the answer.
    steps = text.split("<h2>Steps up to here</h2>", 1)[1]
    assert "send(" in steps and "sent 2 to ops" not in steps and "Final Answer" not in steps
    # The graph as it stood: think visited, the run before approve, act not reached yet.
    svg = text.split("<svg", 1)[1].split("</svg>", 1)[0]
    assert re.search(r'class="node[^"]*\bvisited\b[^"]*" id="node-think"', svg)
    assert re.search(r'class="node[^"]*\bcurrent\b[^"]*" id="node-approve"', svg)
    assert not re.search(r'class="node[^"]*\bvisited\b[^"]*" id="node-act"', svg)
    assert re.search(
        r'class="node[^"]*\bvisited\b[^"]*" id="node-act"', client.get("/studio/runs/tt").text
    )
    # Its status and totals then, and each node a link to the run's steps of that node.
    # This is the checkpoint the run paused at for approval: it says so.
    assert 'then: <span class="status-paused">paused</span>' in text
    assert "waiting for: approval: <code>send(" in text
    assert "answer:" not in text.split("<h2>", 1)[0]  # no answer yet there
    assert 'href="/studio/runs/tt?node=act"' in svg
    # The run's input checkpoint (before any node ran) is shown too.
    first = agent.history("tt")[0].checkpoint_id
    assert client.get(f"/studio/runs/tt/at/{first}").status_code == 200


def test_approve_by_form_runs_the_call_and_a_second_submit_is_409(
    client: TestClient,
) -> None:
    _paused(client, "a1")
    page = client.get("/studio/runs/a1").text
    fields = form_of(page, "Approve")
    done = client.post("/studio/runs/a1/answer", data=fields, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/studio/runs/a1"
    doc = wait_status(client, "a1", "done")
    assert doc["answer"] == "sent"
    again = client.post("/studio/runs/a1/answer", data=fields, follow_redirects=False)
    assert again.status_code == 409
    assert client.get("/runs/a1").json()["status"] == "done"


def test_edit_by_form_changes_an_argument(client: TestClient, agent: Agent) -> None:
    _paused(client, "e1")
    fields = form_of(client.get("/studio/runs/e1").text, "Edit")
    assert fields["arg.to"] == "ops" and fields["arg.count"] == "2"
    fields["arg.count"] = "5"
    done = client.post("/studio/runs/e1/answer", data=fields, follow_redirects=False)
    assert done.status_code == 303
    wait_status(client, "e1", "done")
    results = [s for s in agent.result("e1").chain if s.type == "tool_result"]
    assert "sent 5 to ops" in str(results[-1].model_dump())


def test_a_bad_edit_is_422_and_the_run_stays_paused(client: TestClient) -> None:
    _paused(client, "e2")
    fields = form_of(client.get("/studio/runs/e2").text, "Edit")
    fields["args_json"] = '{"to": "ops", "count": "many"}'
    refused = client.post("/studio/runs/e2/answer", data=fields, follow_redirects=False)
    assert refused.status_code == 422
    assert 'role="alert"' in refused.text
    assert client.get("/runs/e2").json()["status"] == "paused"


def test_reject_with_a_reason_reaches_the_model(client: TestClient, agent: Agent) -> None:
    _paused(client, "r1")
    fields = form_of(client.get("/studio/runs/r1").text, "Reject")
    fields["reason"] = "not today"
    done = client.post("/studio/runs/r1/answer", data=fields, follow_redirects=False)
    assert done.status_code == 303
    wait_status(client, "r1", "done")
    assert "not today" in str([s.model_dump() for s in agent.result("r1").chain])


def test_an_answer_to_a_checkpoint_the_run_left_is_409_and_changes_nothing(
    client: TestClient,
) -> None:
    _paused(client, "st1")
    fields = form_of(client.get("/studio/runs/st1").text, "Approve")
    fields["at"] = "1f000000-0000-6000-8000-000000000000"  # not the pause
    stale = client.post("/studio/runs/st1/answer", data=fields, follow_redirects=False)
    assert stale.status_code == 409
    assert client.get("/runs/st1").json()["status"] == "paused"


def test_a_form_without_the_token_of_its_cookie_is_403(client: TestClient) -> None:
    _paused(client, "c1")
    fields = form_of(client.get("/studio/runs/c1").text, "Approve")
    fields["csrf"] = "0" * 64
    refused = client.post("/studio/runs/c1/answer", data=fields, follow_redirects=False)
    assert refused.status_code == 403
    client.cookies.clear()
    fields = form_of(client.get("/studio/runs/c1").text, "Approve")
    client.cookies.clear()  # the token without the cookie it was made for
    assert client.post("/studio/runs/c1/answer", data=fields).status_code == 403
    assert client.get("/runs/c1").json()["status"] == "paused"


def test_a_cross_site_form_post_is_refused_before_it_is_read(client: TestClient) -> None:
    _paused(client, "x1")
    fields = form_of(client.get("/studio/runs/x1").text, "Approve")
    for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        refused = client.post("/studio/runs/x1/answer", data=fields, headers=headers)
        assert refused.status_code == 403, headers
    # A form is taken only under /studio/: the JSON API still refuses one (415).
    assert client.post("/runs/x1/resume", data={"decisions": "x"}).status_code == 415
    assert client.get("/runs/x1").json()["status"] == "paused"


def test_a_hostile_run_is_shown_as_text(client: TestClient) -> None:
    hostile = '<script>alert(1)</script>"><img src=x onerror=alert(2)>' + "x" * 5000
    _paused(client, "h1", task=hostile)
    for path in ("/studio", "/studio/runs/h1"):
        text = client.get(path).text
        assert "<script>alert" not in text and "<img src=x" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get("/studio/runs/h1").text


def test_a_breakpoint_is_continued_by_form(tmp_path: Path) -> None:
    replies = ["Thought: done\nFinal Answer: 42"]
    store = f"sqlite:///{tmp_path / 'bp.db'}"
    with (
        Agent(ScriptedModel(replies), [send], store=store, breakpoints={"before": ["think"]}) as a,
        TestClient(build_app(a, poll_s=0.05), base_url=BASE) as client,
    ):
        _paused(client, "b1")
        page = client.get("/studio/runs/b1").text
        assert "paused at a breakpoint" in page
        done = client.post(
            "/studio/runs/b1/answer", data=form_of(page, "Continue"), follow_redirects=False
        )
        assert done.status_code == 303
        assert wait_status(client, "b1", "done")["answer"] == "42"


@pytest.mark.parametrize("graph", [None, REFLECT], ids=["ours", "custom"])
def test_the_approval_at_the_checkpoint_of_a_continued_breakpoint_is_answered(
    any_store_url: str, graph: str | None
) -> None:
    # A breakpoint after think and the approval that follows are two pauses at the one
    # checkpoint think wrote: the Continue answers the first; Approve must still answer
    # the second, and a second Continue is refused (409) either way. On our graph and on a
    # user's (think, approve, act, observe, then the user's own "reflect" node).
    thread = f"bp-{uuid.uuid4().hex[:8]}"
    points = {"after": ["think"]}
    with (
        Agent(
            ScriptedModel(SEND), [send], store=any_store_url, breakpoints=points, graph=graph
        ) as a,
        TestClient(build_app(a, poll_s=0.05), base_url=BASE) as client,
    ):
        _paused(client, thread)
        path = f"/studio/runs/{thread}"
        continued = form_of(client.get(path).text, "Continue")
        done = client.post(f"{path}/answer", data=continued, follow_redirects=False)
        assert done.status_code == 303, done.text
        _waits(client, thread, "approval")
        assert a.checkpoint_id(thread) == continued["at"]  # the same checkpoint
        again = client.post(f"{path}/answer", data=continued, follow_redirects=False)
        assert again.status_code == 409, again.text
        approved = client.post(
            f"{path}/answer", data=form_of(client.get(path).text, "Approve"),
            follow_redirects=False,
        )  # fmt: skip
        assert approved.status_code == 303, approved.text
        _waits(client, thread, "breakpoint")  # after think again
        last = form_of(client.get(path).text, "Continue")
        assert client.post(f"{path}/answer", data=last, follow_redirects=False).status_code == 303
        assert wait_status(client, thread, "done")["answer"] == "sent"
        nodes = {s.node for s in a.result(thread).chain}
        assert ("reflect" in nodes) == (graph is not None)


def _waits(client: TestClient, thread: str, kind: str) -> None:
    deadline = time.monotonic() + 20
    while [p["kind"] for p in client.get(f"/runs/{thread}").json().get("pending") or []] != [kind]:
        assert time.monotonic() < deadline, f"thread {thread} never waited for {kind}"
        time.sleep(0.05)


def _post(client: TestClient, page_path: str, button: str, **fields: str) -> Any:
    form = form_of(client.get(page_path).text, button)
    form.update(fields)
    action = re.search(
        rf'<form method="post" action="([^"]+)"[^>]*>(?:(?!</form>).)*>{button}</button>',
        client.get(page_path).text,
        re.S,
    )
    assert action is not None
    return client.post(action.group(1), data=form, follow_redirects=False)


def test_a_run_started_from_the_list_pauses_and_is_listed(client: TestClient) -> None:
    started = _post(client, "/studio", "Start", task="send it", thread_id="n1")
    assert started.status_code == 303 and started.headers["location"] == "/studio/runs/n1"
    wait_status(client, "n1", "paused")
    assert "Waiting for you (1)" in client.get("/studio").text
    no_token = client.post("/studio/runs", data={"task": "x"}, follow_redirects=False)
    assert no_token.status_code == 403


def test_fork_from_a_checkpoint_with_an_edited_argument(client: TestClient, agent: Agent) -> None:
    _paused(client, "f1")
    done = _post(client, "/studio/runs/f1", "Approve")
    assert done.status_code == 303
    wait_status(client, "f1", "done")
    chain = agent.result("f1").chain
    call = next(s for s in chain if s.type == "tool_call")
    at = next(h.checkpoint_id for h in agent.history("f1") if h.node == "think")
    forked = _post(
        client, f"/studio/runs/f1/at/{at}", "Fork from here",
        edit=f'{{"{call.number}": {{"args": {{"to": "audit", "count": 1}}}}}}', new_thread="f2",
    )  # fmt: skip
    assert forked.status_code == 303, forked.text
    assert forked.headers["location"] == "/studio/runs/f2"
    # The fork runs on after the answer: it pauses again, for the edited call.
    assert wait_status(client, "f2", "paused")["pending"][0]["args"] == {"to": "audit", "count": 1}
    assert client.get("/runs/f1").json()["status"] == "done"  # the original is untouched
    bad = _post(client, f"/studio/runs/f1/at/{at}", "Fork from here", edit="{not json")
    assert bad.status_code == 422


def test_replay_leads_to_the_comparison_and_compare_names_both_runs(
    client: TestClient,
) -> None:
    _paused(client, "p1")
    _post(client, "/studio/runs/p1", "Approve")
    wait_status(client, "p1", "done")
    replayed = _post(client, "/studio/runs/p1", "Replay")
    assert replayed.status_code == 303, replayed.text
    where = replayed.headers["location"]
    assert where.startswith("/studio/compare?a=p1&b=replay-p1")
    page = client.get(where)
    for _ in range(400):  # answered at once; the replay ends in a moment
        if "The replay is running" not in page.text:
            break
        time.sleep(0.05)
        page = client.get(where)
    assert page.status_code == 200
    assert "replay: <strong>same</strong>" in page.text and "the same" in page.text
    assert "<svg" in page.text and "shared" in page.text
    _paused(client, "p2")
    other = client.get("/studio/compare", params={"a": "p1", "b": "p2"}).text
    assert "they part at step" in other
    assert re.search(r'class="node[^"]*\bonly-a\b', other)
    assert client.get("/studio/compare", params={"a": "p1", "b": "nope"}).status_code == 404


def test_a_custom_graphs_checkpoint_shows_its_own_nodes_and_state_masked(tmp_path: Path) -> None:
    from tests.cli.state_graphs import PLANNED

    secret = "sk-proj-abcdefghijklmnop1234"
    store = f"sqlite:///{tmp_path / 'c.db'}"
    replies = ["Thought: done\nFinal Answer: 42"] * 4
    with Agent(ScriptedModel(replies), store=store, graph=PLANNED) as agent:
        agent.run("plan it", thread_id="c1")
        at = next(c.checkpoint_id for c in agent.history("c1") if c.node == "planner")
        agent.fork("c1", at, state={"plan": [f"call {secret}", "<b>bold</b>"]}, new_thread_id="c2")
        with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client:
            for thread in ("c1", "c2"):
                points = [h.checkpoint_id for h in agent.history(thread)]
                pages = [client.get(f"/studio/runs/{thread}/at/{p}") for p in points]
                assert all(p.status_code == 200 for p in pages)
                last = pages[-1].text
                assert 'data-node="planner"' in last  # the user's node, from the run's shape
                assert "<td>plan</td>" in last and "<td>score</td>" in last  # its own keys
                assert all(secret not in p.text and "<b>bold" not in p.text for p in pages)
            assert "&lt;b&gt;bold&lt;/b&gt;" in last and "call ***" in last
