"""Fork and replay from the studio over HTTP (no browser): a checkpoint's fork form offers
the editable parts as fields, a refused edit is 422 with nothing forked, the POST starts
the new run and answers at once, and the comparison of a replay shows its report (its
verdict, a changed request's prompt diff as marked lines)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.studio.support import BASE, SEND, form_of, send, wait_status
from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.policies import ReActText
from thinkgraph.server import build_app

GATE = threading.Event()
"""Open: `slow` and `held` go on at once; closed: they wait until it opens (20 s at most)."""

SLOW = [
    'Thought: look it up\nAction: slow\nAction Input: {"x": 1, "label": "first"}',
    "Thought: done\nFinal Answer: ok",
]
"""A run that calls `slow` once (no approval), then ends with the answer "ok"."""


async def _gate() -> None:
    deadline = time.monotonic() + 20
    while not GATE.is_set() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


@tool
async def slow(x: int, label: str = "") -> str:
    """Look `x` up, waiting for the gate."""
    await _gate()
    return f"looked up {x} {label}".strip()


async def held(answer: str, state: Any) -> bool:
    """A validator that waits for the gate: a replay runs it too."""
    await _gate()
    return True


@pytest.fixture(autouse=True)
def gate_open() -> Iterator[None]:
    GATE.set()
    yield
    GATE.set()


def _agent(tmp_path: Path, replies: list[str], **options: Any) -> Agent:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    return Agent(ScriptedModel(replies), [send, slow], store=store, **options)


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    with _agent(tmp_path, SEND * 4) as made:
        yield made


@pytest.fixture
def client(agent: Agent) -> Iterator[TestClient]:
    with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as made:
        yield made


def _after_think(agent: Agent, thread: str) -> str:
    return next(h.checkpoint_id for h in agent.history(thread) if h.node == "think")


def _fork(client: TestClient, thread: str, at: str, **fields: str) -> Any:
    page = client.get(f"/studio/runs/{thread}/at/{at}")
    assert page.status_code == 200, page.text
    form = form_of(page.text, "Fork from here")
    form.update(fields)
    return client.post(f"/studio/runs/{thread}/fork", data=form, follow_redirects=False)


def _done_run(client: TestClient, agent: Agent, thread: str) -> None:
    agent.run("send it", thread_id=thread)
    call = agent.result(thread).pending[0].call_id
    assert call is not None
    agent.resume(thread, {call: {"action": "approve"}})
    wait_status(client, thread, "done")


def test_the_fork_form_offers_a_field_per_argument_and_the_observation(
    client: TestClient, agent: Agent
) -> None:
    _done_run(client, agent, "o1")
    at = _after_think(agent, "o1")
    page = client.get(f"/studio/runs/o1/at/{at}").text
    call = next(s for s in agent.result("o1").chain if s.type == "tool_call")
    assert f'name="edit.{call.number}.arg.to" value="ops"' in page
    assert f'name="edit.{call.number}.arg.count" value="2"' in page
    last = agent.history("o1")[-1].checkpoint_id
    late = client.get(f"/studio/runs/o1/at/{last}").text
    seen = next(s for s in agent.result("o1").chain if s.type == "observation")
    assert re.search(
        rf'<textarea[^>]*name="edit\.{seen.number}\.text"[^>]*>\n?sent 2 to ops<', late
    )
    # The call ran by then: its arguments are no longer offered.
    assert f'name="edit.{call.number}.arg.to"' not in late
    assert "steps to edit, as JSON" in late  # the raw JSON stays, as an alternative


def test_fork_with_an_argument_edited_in_its_field(client: TestClient, agent: Agent) -> None:
    _done_run(client, agent, "f1")
    at = _after_think(agent, "f1")
    call = next(s for s in agent.result("f1").chain if s.type == "tool_call")
    forked = _fork(client, "f1", at, **{f"edit.{call.number}.arg.count": "5"}, new_thread="f2")
    assert forked.status_code == 303, forked.text
    assert forked.headers["location"] == "/studio/runs/f2"
    doc = wait_status(client, "f2", "paused")
    assert doc["pending"][0]["args"] == {"to": "ops", "count": 5}
    assert client.get("/runs/f1").json()["status"] == "done"  # the original is untouched


def test_fork_with_an_observation_edited_in_its_field(client: TestClient, agent: Agent) -> None:
    _done_run(client, agent, "t1")
    seen = next(s for s in agent.result("t1").chain if s.type == "observation")
    at = next(h.checkpoint_id for h in agent.history("t1") if h.node == "observe")
    forked = _fork(client, "t1", at, **{f"edit.{seen.number}.text": "bounced"}, new_thread="t2")
    assert forked.status_code == 303, forked.text
    wait_status(client, "t2", "done")
    assert agent.result("t2").chain[seen.number].text == "bounced"  # type: ignore[attr-defined]


def test_a_refused_edit_is_422_and_nothing_is_forked(client: TestClient, agent: Agent) -> None:
    _done_run(client, agent, "r1")
    at = _after_think(agent, "r1")
    call = next(s for s in agent.result("r1").chain if s.type == "tool_call")
    bad_arg = _fork(client, "r1", at, **{f"edit.{call.number}.arg.count": "many"}, new_thread="r2")
    assert bad_arg.status_code == 422
    assert "count" in bad_arg.text and 'role="alert"' in bad_arg.text
    bad_json = _fork(client, "r1", at, edit="{not json", new_thread="r2")
    assert bad_json.status_code == 422 and "JSON" in bad_json.text
    not_editable = _fork(client, "r1", at, edit='{"0": {"text": "other task"}}', new_thread="r2")
    assert not_editable.status_code == 422 and "a fork may edit" in not_editable.text
    assert client.get("/runs/r2").status_code == 404
    taken = _fork(client, "r1", at, **{f"edit.{call.number}.arg.count": "3"}, new_thread="r1")
    assert taken.status_code == 409 and "already holds a run" in taken.text


def test_a_state_key_is_a_field_checked_against_its_declared_type(tmp_path: Path) -> None:
    from tests.cli.state_graphs import PLANNED

    replies = ["Thought: done\nFinal Answer: 42"] * 4
    with _agent(tmp_path, replies, graph=PLANNED) as agent:
        agent.run("plan it", thread_id="c1")
        at = next(c.checkpoint_id for c in agent.history("c1") if c.node == "critic")
        with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client:
            page = client.get(f"/studio/runs/c1/at/{at}").text
            assert 'name="state.score" value="10"' in page
            refused = _fork(client, "c1", at, **{"state.score": '"lots"'}, new_thread="c2")
            assert refused.status_code == 422 and "score" in refused.text
            assert client.get("/runs/c2").status_code == 404
            forked = _fork(client, "c1", at, **{"state.score": "20"}, new_thread="c3")
            assert forked.status_code == 303, forked.text
            wait_status(client, "c3", "done")
            assert agent.result("c3").state["score"] == 20


def test_fork_answers_at_once_and_its_run_goes_on_after(tmp_path: Path) -> None:
    with _agent(tmp_path, [*SLOW, SLOW[1]]) as agent:
        agent.run("look it up", thread_id="s1")
        at = _after_think(agent, "s1")
        call = next(s for s in agent.result("s1").chain if s.type == "tool_call")
        with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client:
            GATE.clear()
            forked = _fork(client, "s1", at, **{f"edit.{call.number}.arg.x": "2"}, new_thread="s2")
            assert forked.status_code == 303, forked.text
            # Answered while the tool still waits at the gate: the POST did not wait for it.
            assert client.get("/runs/s2").json()["status"] == "running"
            page = client.get("/studio/runs/s2")
            assert page.status_code == 200 and 'data-status="running"' in page.text
            GATE.set()
            wait_status(client, "s2", "done")
            ran = next(s for s in agent.result("s2").chain if s.type == "tool_call")
            assert ran.call.args == {"x": 2, "label": "first"}  # type: ignore[attr-defined]


def test_a_fork_from_no_checkpoint_is_404_at_once(client: TestClient, agent: Agent) -> None:
    _done_run(client, agent, "n1")
    page = client.get(f"/studio/runs/n1/at/{_after_think(agent, 'n1')}").text
    form = form_of(page, "Fork from here") | {"checkpoint": "nope", "new_thread": "n2"}
    refused = client.post("/studio/runs/n1/fork", data=form, follow_redirects=False)
    assert refused.status_code == 404 and "no checkpoint" in refused.text


def _replay(client: TestClient, thread: str) -> str:
    form = form_of(client.get(f"/studio/runs/{thread}").text, "Replay")
    replayed = client.post(f"/studio/runs/{thread}/replay", data=form, follow_redirects=False)
    assert replayed.status_code == 303, replayed.text
    return str(replayed.headers["location"])


def _report(client: TestClient, where: str) -> str:
    deadline = time.monotonic() + 20
    while "The replay is running" in (page := client.get(where)).text:
        assert page.status_code == 200 and page.headers.get("refresh")
        assert time.monotonic() < deadline, "the replay never ended"
        time.sleep(0.05)
    assert page.status_code == 200, page.text
    return page.text


def test_replay_answers_at_once_and_its_report_reads_same(tmp_path: Path) -> None:
    with _agent(tmp_path, SLOW, validators=[held]) as agent:
        agent.run("look it up", thread_id="p1")
        with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client:
            GATE.clear()
            where = _replay(client, "p1")
            assert where == "/studio/compare?a=p1&b=replay-p1"
            # Answered while the replay's validator still waits at the gate.
            running = client.get(where)
            assert running.status_code == 200 and "The replay is running" in running.text
            GATE.set()
            page = _report(client, where)
    assert 'aria-label="replay report"' in page
    assert "replay: <strong>same</strong>" in page
    assert 'class="diff-line' not in page


def test_a_replay_on_a_changed_prompt_shows_the_prompt_diff(tmp_path: Path) -> None:
    with _agent(tmp_path, SLOW) as agent:
        agent.run("look it up", thread_id="q1")
    policy = ReActText(intro="You are a careful <b>clerk</b>.")
    with (
        _agent(tmp_path, [], policy=policy) as agent,
        TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client,
    ):
        page = _report(client, _replay(client, "q1"))
    assert "replay: <strong>request changed</strong>" in page
    assert "request changed at think#1" in page
    removed = '<span class="diff-line del">-You are an agent that solves a task step by step.'
    assert removed in page
    added = '<span class="diff-line add">+You are a careful &lt;b&gt;clerk&lt;/b&gt;. You can'
    assert added in page and "<b>clerk" not in page


def test_a_comparison_of_runs_that_are_not_a_replay_shows_no_report(
    client: TestClient, agent: Agent
) -> None:
    _done_run(client, agent, "x1")
    _done_run(client, agent, "x2")
    page = client.get("/studio/compare", params={"a": "x1", "b": "x2"}).text
    assert 'aria-label="replay report"' not in page


def test_a_replay_that_diverges_names_the_first_divergence(tmp_path: Path) -> None:
    from tests.cli.state_graphs import ANSWER, DOUBLED, SCORED, TOKEN

    with _agent(tmp_path, [ANSWER], graph=SCORED) as agent:
        agent.run("plan it", thread_id="d1")
    with (
        _agent(tmp_path, [], graph=DOUBLED) as agent,
        TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client,
    ):
        page = _report(client, _replay(client, "d1"))
    assert "replay: <strong>diverged</strong>" in page
    assert "first divergence: state at critic#1: score is 10 in d1, 20 in replay-d1" in page
    assert "<li>score: 10 → 20</li>" in page and TOKEN not in page


def test_a_masked_argument_left_as_shown_keeps_its_real_value(tmp_path: Path) -> None:
    from tests.studio.test_studio_list import LOGIN, login

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with Agent(ScriptedModel(LOGIN * 2), [login], store=store) as agent:
        agent.run("log in", thread_id="w1")
        at = _after_think(agent, "w1")
        call = next(s for s in agent.result("w1").chain if s.type == "tool_call")
        with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client:
            page = client.get(f"/studio/runs/w1/at/{at}").text
            assert f'name="edit.{call.number}.arg.password" value="***"' in page
            assert "hunter2" not in page
            forked = _fork(client, "w1", at, **{f"edit.{call.number}.arg.user": "bob"})
            assert forked.status_code == 303, forked.text
            thread = forked.headers["location"].rsplit("/", 1)[-1]
            wait_status(client, thread, "paused")
        edited = next(s for s in agent.result(thread).chain if s.type == "tool_call")
        assert edited.call.args == {"user": "bob", "password": "hunter2"}  # type: ignore[attr-defined]


def test_fork_with_a_thoughts_answer_edited_in_its_field(tmp_path: Path) -> None:
    with _agent(tmp_path, SLOW) as agent:
        agent.run("look it up", thread_id="a1")
        at = [h.checkpoint_id for h in agent.history("a1") if h.node == "think"][-1]
        thought = [s for s in agent.result("a1").chain if s.type == "thought"][-1]
        with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client:
            page = client.get(f"/studio/runs/a1/at/{at}").text
            assert f'name="edit.{thought.number}.answer" value="ok"' in page
            edit = {f"edit.{thought.number}.answer": "forty-two"}
            forked = _fork(client, "a1", at, **edit, new_thread="a2")
            assert forked.status_code == 303, forked.text
            assert wait_status(client, "a2", "done")["answer"] == "forty-two"
