"""`diff_runs` and its renderers: two runs from a SQLite store, aligned and compared."""

from __future__ import annotations

import json

import pytest

from tests.views._diff_runs import OTHER_PASSWORD, PASSWORD, TOOLS, record
from tests.views._runs import _call
from thinkgraph import Agent, Approve, Reject, RunResult, ScriptedModel
from thinkgraph.state import (
    BaseStep,
    LLMCallStep,
    TaskStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
    append_steps,
)
from thinkgraph.views.diff import FieldChange, RunDiff, diff_runs, node_visits
from thinkgraph.views.diff_render import (
    diff_to_html,
    diff_to_json,
    diff_to_json_dict,
    diff_to_markdown,
    diff_to_text,
)


def _diff(url: str, a: str, b: str, **kwargs: object) -> RunDiff:
    run_a, run_b = record(url, a, b)
    return diff_runs(run_a.chain, run_b.chain, a=run_a, b=run_b, **kwargs)  # type: ignore[arg-type]


def test_two_runs_of_the_same_script_are_the_same(sqlite_url: str) -> None:
    diff = _diff(sqlite_url, "base", "again")
    assert diff.outcome == "same" and diff.same and diff.divergence is None
    assert {pair.op for pair in diff.pairs} == {"same"} and len(diff.pairs) == 14
    assert diff.describe() == "same: the runs took the same steps"
    assert diff_to_text(diff).startswith("diff base again: same\n")


def test_another_argument_is_an_args_divergence_with_the_field_diff(sqlite_url: str) -> None:
    diff = _diff(sqlite_url, "base", "other-args")
    d = diff.divergence
    assert d is not None and d.kind == "args"
    assert (d.where, d.step_a, d.step_b, d.a, d.b) == ("think#2", 8, 8, "add", "add")
    assert d.changes == (FieldChange(path="args.b", a=40, b=41),)
    assert diff.describe() == (
        "first divergence: args at think#2: add is called with other arguments (args.b) (step #8)"
    )
    call = next(p for p in diff.pairs if p.kind == "tool_call" and p.op == "changed")
    assert call.changes == (FieldChange(path="args.b", a=40, b=41),)


def test_answering_at_once_instead_of_calling_a_tool_is_a_route_divergence(
    sqlite_url: str,
) -> None:
    diff = _diff(sqlite_url, "base", "at-once")
    d = diff.divergence
    assert d is not None and d.kind == "route"
    assert (d.where, d.a, d.step_a, d.b, d.step_b) == ("think#1", "act", 4, "finalize", 3)
    assert diff.path_a == ("start", "think", "act", "observe", "think", "act", "observe",
                           "think", "finalize")  # fmt: skip
    assert diff.path_b == ("start", "think", "finalize")
    # run A's calls have no counterpart in run B; the think steps pair up as changed
    ops = [(p.op, p.kind) for p in diff.pairs]
    assert ops[:3] == [("same", "task"), ("changed", "llm_call"), ("changed", "thought")]
    assert ("deleted", "tool_call") in ops and ops[-1] == ("same", "final")
    assert not any(op == "inserted" for op, _ in ops)


def test_another_tool_is_a_tool_divergence(sqlite_url: str) -> None:
    d = _diff(sqlite_url, "base", "other-tool").divergence
    assert d is not None
    assert (d.kind, d.where, d.a, d.b, d.step_a) == ("tool", "think#2", "add", "search", 8)


def test_another_answer_is_an_answer_divergence(sqlite_url: str) -> None:
    diff = _diff(sqlite_url, "base", "other-answer")
    d = diff.divergence
    assert d is not None
    assert (d.kind, d.where, d.a, d.b, d.step_a) == ("answer", "finalize#1", "42", "43", 13)
    assert diff.describe() == "first divergence: answer at finalize#1: base answers '42', " \
        "other-answer answers '43'"  # fmt: skip


def test_other_wording_alone_changes_steps_but_is_no_divergence(sqlite_url: str) -> None:
    diff = _diff(sqlite_url, "base", "other-words")
    assert diff.divergence is None and diff.outcome == "changed" and not diff.same
    changed = [(p.kind, [c.path for c in p.changes]) for p in diff.pairs if p.op != "same"]
    assert changed == [("llm_call", ["text"]), ("thought", ["text"])]


def test_totals_sit_side_by_side(sqlite_url: str) -> None:
    diff = _diff(sqlite_url, "base", "at-once")
    a, b = diff.a, diff.b
    assert (a.name, a.steps, a.model_calls, a.tool_calls) == ("base", 14, 3, 2)
    assert (b.name, b.steps, b.model_calls, b.tool_calls) == ("at-once", 4, 1, 0)
    assert (a.status, a.stop_reason, a.answer) == ("done", "final_answer", "42")
    rows = diff_to_text(diff).splitlines()
    assert "model calls  3                    1" in rows
    assert diff_to_json_dict(diff)["b"]["tool_calls"] == 0


def test_chains_alone_are_named_a_and_b_and_counted_from_their_model_calls(
    sqlite_url: str,
) -> None:
    run_a, run_b = record(sqlite_url, "base", "at-once")
    diff = diff_runs(run_a.chain, run_b.chain)
    assert (diff.a.name, diff.b.name) == ("A", "B")
    assert (diff.a.model_calls, diff.a.cost_usd, diff.a.status) == (3, 0.0, None)
    assert diff.divergence is not None and diff.divergence.kind == "route"


def test_node_visits_reads_the_path_from_the_steps(sqlite_url: str) -> None:
    (run,) = record(sqlite_url, "at-once")
    assert node_visits(run.chain) == ("start", "think", "finalize")


FORMATS = {
    "text": diff_to_text,
    "md": diff_to_markdown,
    "json": diff_to_json,
    "html": diff_to_html,
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_changed_secret_argument_is_reported_but_never_shown(sqlite_url: str, fmt: str) -> None:
    run_a, run_b = record(sqlite_url, "base", "other-password")
    for tools in (TOOLS, None):  # with the tools, and from what the runs recorded
        diff = diff_runs(run_a.chain, run_b.chain, a=run_a, b=run_b, tools=tools)
        d = diff.divergence
        assert d is not None and d.kind == "args"
        assert d.changes == (FieldChange(path="args.password", a="***", b="***"),)
        shown = FORMATS[fmt](diff)
        assert PASSWORD not in shown and OTHER_PASSWORD not in shown
        assert "args.password" in shown and "***" in shown


def test_a_secret_of_one_run_is_masked_in_the_other(sqlite_url: str) -> None:
    """A value secret in run A, written in the clear by run B's task, is masked there too."""
    (run_a,) = record(sqlite_url, "base")
    leaked = run_a.chain[0].model_copy(update={"text": f"log in with {PASSWORD}"})
    run_b = RunResult.model_validate({**run_a.model_dump(), "thread_id": "b"})
    run_b = run_b.model_copy(update={"chain": [leaked, *run_a.chain[1:]]})
    diff = diff_runs(run_a.chain, run_b.chain, a=run_a, b=run_b)
    assert diff.pairs[0].op == "changed"
    for render in FORMATS.values():
        assert PASSWORD not in render(diff)


def test_json_document_keys(sqlite_url: str) -> None:
    diff = _diff(sqlite_url, "base", "other-args")
    doc = json.loads(diff_to_json(diff))
    assert doc["format"] == "thinkgraph.diff/1" and doc["outcome"] == "diverged"
    assert doc["divergence"]["kind"] == "args" and doc["divergence"]["where"] == "think#2"
    assert doc["divergence"]["changes"] == [{"path": "args.b", "a": 40, "b": 41}]
    ops = [s["op"] for s in doc["steps"]]
    assert len(ops) == 14 and ops.count("same") == 10
    changed = next(
        s for s in doc["steps"] if s["op"] == "changed" and s["a"]["type"] == "tool_call"
    )
    assert changed["a"]["call"]["args"] == {"a": 2, "b": 40}
    assert changed["b"]["call"]["args"] == {"a": 2, "b": 41}


def test_markdown_and_html_escape_run_data(sqlite_url: str) -> None:
    run_a, run_b = record(sqlite_url, "base", "other-words")
    evil = run_a.chain[0].model_copy(update={"text": "<script>alert(1)</script> | `x`"})
    diff = diff_runs([evil, *run_a.chain[1:]], run_b.chain, a=run_a, b=run_b)
    html = diff_to_html(diff, diagram="graph TD;\n\tthink --> act;\n")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "Content-Security-Policy" in html and '<pre class="mermaid">' in html
    md = diff_to_markdown(diff)
    # in a code span, which Markdown shows as text: no tag, no table cell, no closed span
    assert "- `~` **#0 · #0 task** · `` <script>alert(1)</script> | `x` ``" in md
    assert "## Steps" in md and "| status | done \\(final\\_answer\\) |" in md


def _approved_or_rejected(url: str, thread: str, decision: object) -> RunResult:
    script = [_call("add", a=2, b=40), "Thought: done\nFinal Answer: 42"]
    with Agent(ScriptedModel(script), TOOLS, store=url, approve=["add"]) as agent:
        paused = agent.run("add 2 + 40", thread_id=thread)
        return agent.resume(thread, {paused.pending[0].call_id: decision})


def test_a_rejected_call_parts_from_an_approved_one_at_the_approval_gate(
    sqlite_url: str,
) -> None:
    a = _approved_or_rejected(sqlite_url, "yes", Approve())
    b = _approved_or_rejected(sqlite_url, "no", Reject(reason="not now"))
    diff = diff_runs(a.chain, b.chain, a=a, b=b, tools=TOOLS)
    d = diff.divergence
    assert d is not None
    assert (d.kind, d.where, d.a, d.step_a, d.b, d.step_b) == (
        "route", "approve#1", "act", 5, "observe", 6
    )  # fmt: skip
    human = next(p for p in diff.pairs if p.kind == "human")
    assert human.op == "changed"
    assert [(c.path, c.a, c.b) for c in human.changes] == [
        ("kind", "approve", "reject"),
        ("text", "", "not now"),
    ]


def _chain(*calls: str) -> list[BaseStep]:
    """A think visit proposing `calls` (one parallel round), then act's results."""
    steps: list[BaseStep] = [TaskStep(node="start", text="t"), LLMCallStep(node="think")]
    steps += [ToolCallStep(node="think", call=ToolCall(name=n, args={})) for n in calls]
    steps += [ToolResultStep(node="act", call_id="c", tool=n, ok=True) for n in calls]
    return append_steps([], [steps])


def test_one_call_fewer_in_a_parallel_round_is_a_tool_divergence() -> None:
    d = diff_runs(_chain("add", "search"), _chain("add")).divergence
    assert d is not None
    assert (d.kind, d.where, d.a, d.step_a, d.b, d.step_b) == (
        "tool", "think#1", "search", 3, "nothing more", None
    )  # fmt: skip
