"""The JSON view: one document with fixed keys; each shown step is its record's own JSON."""

from __future__ import annotations

import json

from pydantic import TypeAdapter

from tests.views._runs import TOOLS, expect, login_run
from thinkgraph.state import Step
from thinkgraph.views import to_json, to_json_dict

KEYS = [
    "format", "thread_id", "status", "stop_reason", "detail", "answer", "audience", "totals",
    "pending", "unknown_tools", "notes", "state", "steps",
]  # fmt: skip


def test_the_document_has_the_runs_status_and_fixed_keys() -> None:
    doc = json.loads(to_json(login_run(), tools=TOOLS))
    assert list(doc) == KEYS
    assert doc["format"] == "thinkgraph.chain/1"
    assert (doc["unknown_tools"], doc["notes"]) == ([], [])  # every called tool is known
    assert doc["state"] == {}  # our graph declares no keys beyond ours
    assert (doc["thread_id"], doc["status"], doc["stop_reason"], doc["answer"]) == (
        "t-views", "done", "final_answer", "42",
    )  # fmt: skip
    assert doc["totals"] == {
        "steps": 24, "think_steps": 5, "model_calls": 5, "tool_calls": 4,
        "prompt_tokens": 0, "completion_tokens": 0, "tokens": 0, "cost_usd": 0.0,
        "model_time_s": 0.625, "tool_time_s": 0.008, "elapsed_s": 0.75,
    }  # fmt: skip


def test_a_shown_step_is_its_records_json_and_loads_back_as_a_step() -> None:
    run = login_run()
    doc = to_json_dict(run, audience="auditor", tools=TOOLS)
    add_call = run.chain[18]
    shown = doc["steps"][18]
    assert shown == {**add_call.model_dump(mode="json"), "visibility": "full"}
    steps = TypeAdapter(list[Step]).validate_python(
        [{k: v for k, v in s.items() if k != "visibility"} for s in doc["steps"]]
    )
    assert [s.number for s in steps] == list(range(24))


def test_a_summarized_call_shows_its_summary_and_never_its_arguments() -> None:
    doc = to_json_dict(login_run(), audience="user", tools=TOOLS)
    (summary,) = [s for s in doc["steps"] if s["visibility"] == "summary"]
    assert summary == {
        "number": 8, "id": "step8", "at": "2025-01-02T03:04:07Z",
        "type": "tool_call", "visibility": "summary", "call_id": "call2",
        "summary": "searched for cats", "ok": True,
    }  # fmt: skip


def test_the_user_document_matches_the_expected_file() -> None:
    expect("login_run.user.json", to_json(login_run(), audience="user", tools=TOOLS) + "\n")
