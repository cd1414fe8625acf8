"""Replaying a run of a graph with state of its own compares the replay's keys with the
run's at each node: the same graph replays `same`; a node that now leaves other values is a
`state` divergence naming the node, the keys and both values, masked. On SQLite and
PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

from tests.cli.state_graphs import ANSWER, DOUBLED, SCORED, TOKEN, add, adding, tallied
from thinkgraph import Agent, ScriptedModel
from thinkgraph.hitl import Approve
from thinkgraph.testing.regress import fixture_of, replay_fixture


def record(url: str, thread: str, **graph: Any) -> None:
    with Agent(ScriptedModel([ANSWER]), store=url, **graph) as agent:
        assert agent.run("plan it", thread_id=thread).status == "done"


def test_the_same_graph_with_its_own_state_replays_same(store_url: str, thread_id: str) -> None:
    record(store_url, thread_id, graph=SCORED)

    with Agent(ScriptedModel([]), store=store_url, graph=SCORED) as agent:
        report = agent.replay(thread_id)

    assert (report.outcome, report.exit_code) == ("same", 0), report.to_text()
    assert (
        report.replay.state
        == report.source.state
        == {
            "plan": ["step 1"],
            "score": 10,
            "session_token": f"{TOKEN}-10",
        }
    )


def test_a_node_that_leaves_other_state_is_a_state_divergence_naming_node_and_key(
    store_url: str, thread_id: str
) -> None:
    record(store_url, thread_id, graph=SCORED)

    with Agent(ScriptedModel([]), store=store_url, graph=DOUBLED) as agent:
        report = agent.replay(thread_id)

    d = report.diff.divergence
    assert d is not None and (d.kind, d.where, d.a, d.b) == ("state", "critic#1", "10", "20")
    assert (report.outcome, report.exit_code) == ("diverged", 1)
    replay = f"replay-{thread_id}"
    assert report.to_text().splitlines()[:3] == [
        f"replay {replay} of {thread_id}: first divergence: state at critic#1: score is 10 "
        f"in {thread_id}, 20 in {replay} (and 1 more field)",
        "  score: 10 → 20",
        '  session_token: "***" → "***"',
    ]
    assert report.stopped == ""  # the record still served every reply: it ran to its end
    assert report.replay.answer == "42"
    doc = report.to_dict()
    assert doc["divergence"]["kind"] == "state"
    assert doc["divergence"]["changes"][0] == {"path": "score", "source": 10, "replay": 20}
    assert doc["state"][0] == {"path": "score", "source": 10, "replay": 20}
    assert TOKEN not in json.dumps(doc) + report.to_text()


def test_a_paused_run_with_its_own_state_replays_same_and_a_change_after_a_tool_is_seen(
    sqlite_url: str,
) -> None:
    with Agent(
        ScriptedModel(adding(40)), [add], approve=["add"], build_graph=tallied(1), store=sqlite_url
    ) as agent:
        paused = agent.run("add them", thread_id="t")
        done = agent.resume("t", {p.call_id: Approve() for p in paused.pending})
    assert done.status == "done" and done.state == {"tally": 1}

    for weight, thread in ((1, "same"), (3, "other")):
        with Agent(
            ScriptedModel([]), [add], approve=["add"], build_graph=tallied(weight),
            store=sqlite_url,
        ) as agent:  # fmt: skip
            report = agent.replay("t", new_thread_id=thread)
        if weight == 1:
            assert report.outcome == "same", report.to_text()
            assert report.served_decisions == 1
        else:
            d = report.diff.divergence
            assert d is not None and (d.kind, d.where, d.a, d.b) == ("state", "tally#1", "1", "3")


def test_a_fixture_compares_the_keys_at_the_end_only(sqlite_url: str) -> None:
    record(sqlite_url, "f", graph=SCORED)
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        fixture = fixture_of(agent.result("f"), graph=SCORED)

    same, other = (replay_fixture(fixture, graph=graph) for graph in (SCORED, DOUBLED))

    assert same.outcome == "same", same.to_text()
    # A fixture holds the run's end, not its checkpoints: no node to name, a change.
    assert (other.outcome, other.diff.divergence) == ("changed", None)
    # The fixture holds the run masked: its secret key never reaches the file, and is
    # compared masked on both sides (a fixture cannot know the secret to check it).
    assert fixture.source.state["session_token"] == "***"
    assert TOKEN not in fixture.source.model_dump_json()
    assert [change.path for change in other.diff.state] == ["score"]
