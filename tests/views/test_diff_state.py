"""`diff_runs` compares the keys of the runs' own state: node by node from their checkpoints
(a `state` divergence at the first node that leaves other values), and at the end (a
"state at the end" section in every format), masked as every value of a run is."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cli.state_graphs import ANSWER, DOUBLED, PLANNED, SCORED, TOKEN, add, adding, tallied
from thinkgraph import Agent, RunResult, ScriptedModel
from thinkgraph.runs.reader import CheckpointInfo
from thinkgraph.views.diff import FieldChange, RunDiff, diff_runs
from thinkgraph.views.diff_render import (
    diff_to_html,
    diff_to_json,
    diff_to_json_dict,
    diff_to_markdown,
    diff_to_text,
)

Run = tuple[RunResult, list[CheckpointInfo]]


def record(url: str, thread: str, graph: Any, script: list[str] | None = None) -> Run:
    """A run of `graph` (an address or a builder), read back with its checkpoints."""
    where = {"graph": graph} if isinstance(graph, str) else {"build_graph": graph}
    with Agent(ScriptedModel(script or [ANSWER]), [add], store=url, **where) as agent:
        agent.run("plan it", thread_id=thread)
    with Agent(ScriptedModel([]), store=url) as reader:
        return reader.result(thread), reader.history(thread)


def compared(a: Run, b: Run, *, nodes: bool = True) -> RunDiff:
    (run_a, history_a), (run_b, history_b) = a, b
    if not nodes:
        return diff_runs(run_a.chain, run_b.chain, a=run_a, b=run_b)
    return diff_runs(
        run_a.chain, run_b.chain, a=run_a, b=run_b, history_a=history_a, history_b=history_b
    )


def test_a_node_that_leaves_other_state_is_a_state_divergence_there(sqlite_url: str) -> None:
    diff = compared(record(sqlite_url, "ten", SCORED), record(sqlite_url, "twenty", DOUBLED))

    assert all(pair.op == "same" for pair in diff.pairs)  # the same steps
    d = diff.divergence
    assert d is not None and (d.kind, d.where, d.a, d.b) == ("state", "critic#1", "10", "20")
    assert (d.step_a, d.step_b) == (None, None)  # the critic writes no step
    assert d.changes == (
        FieldChange(path="score", a=10, b=20),
        FieldChange(path="session_token", a="***", b="***"),
    )
    assert diff.describe() == (
        "first divergence: state at critic#1: score is 10 in ten, 20 in twenty (and 1 more field)"
    )
    assert (diff.outcome, diff.same) == ("diverged", False)


def test_the_same_graph_twice_is_the_same_own_state_and_all(sqlite_url: str) -> None:
    diff = compared(record(sqlite_url, "one", SCORED), record(sqlite_url, "two", SCORED))

    assert (diff.outcome, diff.same, diff.state, diff.divergence) == ("same", True, (), None)


def test_without_checkpoints_the_state_at_the_end_is_a_change(sqlite_url: str) -> None:
    diff = compared(
        record(sqlite_url, "ten", SCORED), record(sqlite_url, "twenty", DOUBLED), nodes=False
    )

    assert diff.divergence is None and (diff.outcome, diff.same) == ("changed", False)
    assert [change.path for change in diff.state] == ["score", "session_token"]
    assert diff.describe() == (
        "changed: same route, tools, arguments and answer; their own state differs at the "
        "end (score, session_token)"
    )


def test_a_key_only_one_run_has_is_named_added(sqlite_url: str) -> None:
    # `planned` plans twice and keeps no token; `scored` plans once and keeps one.
    diff = compared(record(sqlite_url, "p", PLANNED), record(sqlite_url, "s", SCORED))

    assert diff.state == (
        FieldChange(path="plan", a=["step 1", "step 2"], b=["step 1"]),
        FieldChange(path="score", a=20, b=10),
        FieldChange(path="session_token", a=None, b="***", in_a=False),
    )
    d = diff.divergence  # both plan, then score: the critics part at once
    assert d is not None and (d.kind, d.where, d.a, d.b) == ("state", "critic#1", "absent", '"***"')
    assert d.changes == (FieldChange(path="session_token", a=None, b="***", in_a=False),)


def test_a_chain_divergence_before_the_state_one_is_the_first(sqlite_url: str) -> None:
    a = record(sqlite_url, "a", tallied(1), adding(40))
    b = record(sqlite_url, "b", tallied(2), adding(41))

    diff = compared(a, b)

    d = diff.divergence  # other arguments at think#1, before tally#1 leaves 2 for 1
    assert d is not None and (d.kind, d.where) == ("args", "think#1")
    assert diff.state == (FieldChange(path="tally", a=1, b=2),)


def test_a_state_divergence_before_the_chain_one_is_the_first(sqlite_url: str) -> None:
    a = record(sqlite_url, "a", SCORED, [ANSWER])
    b = record(sqlite_url, "b", DOUBLED, ["Thought: done\nFinal Answer: 43"])

    d = compared(a, b).divergence  # critic#1 comes before the answer at finalize#1

    assert d is not None and (d.kind, d.where) == ("state", "critic#1")


FORMATS = {"text": diff_to_text, "md": diff_to_markdown, "json": diff_to_json, "html": diff_to_html}


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_names_the_state_keys_and_masks_the_token(sqlite_url: str, fmt: str) -> None:
    diff = compared(record(sqlite_url, "ten", SCORED), record(sqlite_url, "twenty", DOUBLED))

    shown = FORMATS[fmt](diff)

    assert TOKEN not in shown
    assert "state at critic" in shown and "session_token" in shown and "***" in shown
    expected = {
        "text": ["state at the end:\n  score: 10 → 20\n"],
        "md": ["## State at the end\n\n- `score`: `10` → `20`\n"],
        "html": ['<section id="state"><h2>State at the end</h2>', "<code>score</code>"],
        "json": ['"path": "score"'],
    }
    for text in expected[fmt]:
        assert text in shown


def test_the_json_document_holds_the_state_changes(sqlite_url: str) -> None:
    diff = compared(record(sqlite_url, "ten", SCORED), record(sqlite_url, "twenty", DOUBLED))

    doc = diff_to_json_dict(diff)

    assert doc["state"] == [
        {"path": "score", "a": 10, "b": 20},
        {"path": "session_token", "a": "***", "b": "***"},
    ]
    assert doc["more_state"] == 0 and doc["same"] is False
    assert doc["divergence"]["kind"] == "state" and doc["divergence"]["where"] == "critic#1"
    json.dumps(doc)  # all of it is JSON
