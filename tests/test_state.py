"""The state: records round-trip through the checkpoint serializer; the chain is a delta."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.state import (
    STEP_TYPES,
    Counters,
    ErrorStep,
    FinalStep,
    HumanStep,
    LLMCallStep,
    NoteStep,
    ObservationStep,
    ResetStep,
    RunInfo,
    TaskStep,
    ThoughtStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
    ValidationStep,
    Verdict,
    append_steps,
)
from thinkgraph.storage import serializer
from thinkgraph.types import NextAction

ONE_OF_EACH = [
    TaskStep(text="task"),
    LLMCallStep(model="m", text="reply", prompt_tokens=3, completion_tokens=4, cost_usd=None),
    ThoughtStep(text="t", next_action=NextAction.FINAL_ANSWER, answer="a", confidence=0.5),
    ToolCallStep(call=ToolCall(name="add", args={"a": 1}), think_step=1),
    ToolCallStep(call=ToolCall(name="echo", raw_args="hi")),
    ToolResultStep(call_id="c", tool="add", ok=True, output={"rows": [[1, "x"]]}),
    ToolResultStep(call_id="c", tool="add", ok=False, error="boom", error_kind="exception"),
    ObservationStep(call_id="c", tool="add", text="2"),
    ErrorStep(kind="parse", message="no action", feedback="use Action:"),
    ValidationStep(answer="a", verdicts=[Verdict(passed=False, reason="r")], passed=False),
    ResetStep(lesson="l"),
    HumanStep(kind="guidance", text="g"),
    NoteStep(text="n", for_model=False),
    FinalStep(answer="a", stop_reason="max_steps", forced=True),
]


class Intruder(BaseModel):
    """A pydantic model that is not one of thinkgraph's records."""

    command: str


def test_one_of_each_step_type_is_covered() -> None:
    assert {type(s) for s in ONE_OF_EACH} == set(STEP_TYPES)


@pytest.mark.parametrize("record", [*ONE_OF_EACH, Counters(steps=3), RunInfo(status="done")])
def test_records_round_trip_through_the_checkpoint_serializer(record: object) -> None:
    serde = serializer()
    assert serde.loads_typed(serde.dumps_typed(record)) == record


def test_a_type_that_is_not_ours_is_not_revived() -> None:
    serde = serializer()

    blob = serde.dumps_typed(Path("/tmp"))
    assert serde.loads_typed(blob) == Path("/tmp")  # a safe built-in type still works
    revived = serde.loads_typed(serde.dumps_typed(Intruder(command="rm -rf /")))
    assert not isinstance(revived, Intruder)


def test_the_reducer_numbers_steps_in_write_order() -> None:
    pair = [
        ObservationStep(call_id="1", tool="t", text="x"),
        ObservationStep(call_id="2", tool="t", text="y"),
    ]
    chain = append_steps([], [[TaskStep(text="a")], pair])
    assert [s.number for s in chain] == [0, 1, 2]


def test_the_reducer_is_batching_invariant() -> None:
    writes = [[TaskStep(text=str(i))] for i in range(6)]
    once = append_steps([], writes)
    twice = append_steps(append_steps([], writes[:2]), writes[2:])
    assert [(s.number, s.id) for s in once] == [(s.number, s.id) for s in twice]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _stored_bytes(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        row = conn.execute(
            "SELECT (SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0)"
            " FROM checkpoints) + (SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes)"
        ).fetchone()
    return int(row[0])


def _cycles(path: Path, cycles: int) -> int:
    replies = [
        f"Thought: step {i}\nAction: add\nAction Input: {json.dumps({'a': i, 'b': 1})}"
        for i in range(cycles)
    ] + ["Thought: done\nFinal Answer: done"]
    limits = StepLimits(max_steps=cycles + 1)
    with Agent(ScriptedModel(replies), [add], limits=limits, store=f"sqlite:///{path}") as agent:
        assert agent.run("count", thread_id="t").status == "done"
    return _stored_bytes(path)


def test_checkpoint_storage_grows_linearly_with_steps(tmp_path: Path) -> None:
    small = _cycles(tmp_path / "small.db", 40) / 40
    large = _cycles(tmp_path / "large.db", 160) / 160
    # A chain re-serialized at every checkpoint would cost ~4x more per cycle at 4x the length.
    assert large < 1.3 * small, (small, large)
    assert large < 8 * 1024, large


def test_the_chain_reducer_takes_steps_as_plain_dicts_from_a_json_client() -> None:
    from pydantic import ValidationError

    from thinkgraph.state import TaskStep, ThoughtStep, append_steps

    chain = append_steps([], [[{"type": "task", "text": "add 2 and 40"}]])
    chain = append_steps(chain, [[{"type": "thought", "node": "think", "text": "add"}]])
    assert [type(s) for s in chain] == [TaskStep, ThoughtStep]
    assert [s.number for s in chain] == [0, 1] and chain[0].text == "add 2 and 40"
    with pytest.raises(ValidationError, match="type"):
        append_steps(chain, [[{"type": "nonsense"}]])


# -- numbering and stamping: the reducer numbers, the running node names -------------------


def test_the_reducer_numbers_fresh_steps_in_place_and_copies_none() -> None:
    fresh = [ObservationStep(call_id="1", tool="t", text="x"), ResetStep(lesson="l")]
    assert [s.number for s in fresh] == [-1, -1]  # a node emits its steps unnumbered
    chain = append_steps([TaskStep(text="a", number=0)], [fresh])
    assert [s.number for s in chain] == [0, 1, 2]
    assert chain[1] is fresh[0] and chain[2] is fresh[1]


def test_the_reducer_keeps_the_numbers_of_steps_stored_before() -> None:
    # A run stored before the reducer numbered alone: its steps carry their numbers.
    old = [TaskStep(text="a", number=0), ThoughtStep(text="t", number=1)]
    chain = append_steps([], [old])
    assert [s.number for s in chain] == [0, 1] and chain[1] is old[1]


def test_a_step_appended_twice_gets_two_numbers_without_changing_the_first() -> None:
    step = ObservationStep(call_id="1", tool="t", text="x")
    chain = append_steps([], [[step], [step]])
    assert [s.number for s in chain] == [0, 1]
    assert chain[0] is step and chain[1] is not step and step.number == 0


def test_a_step_made_outside_a_node_names_no_node() -> None:
    assert ThoughtStep(text="t").node == ""
    assert ThoughtStep(text="t", node="fork").node == "fork"


def _renamed_think(deps: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    from thinkgraph.graphs import parts
    from thinkgraph.state import AgentState

    graph: Any = StateGraph(AgentState)
    graph.add_node("plan", parts.think_node(deps))  # our think, under the user's name
    graph.add_node("act", parts.act_node(deps))
    for name in ("observe", "validate", "reset", "finalize"):
        graph.add_node(name, getattr(parts, f"{name}_node")(deps))
    graph.add_edge(START, "plan")
    back = {"think": "plan", "act": "act", "validate": "validate", "reset": "reset"}
    graph.add_conditional_edges("plan", parts.think_router(deps), {**back, "finalize": "finalize"})
    graph.add_edge("act", "observe")
    graph.add_conditional_edges(
        "observe", parts.observe_router(deps), {"think": "plan", "finalize": "finalize"}
    )
    graph.add_conditional_edges(
        "validate",
        parts.validate_router(deps),
        {"think": "plan", "reset": "reset", "finalize": "finalize"},
    )
    graph.add_edge("reset", "plan")
    graph.add_edge("finalize", END)
    return graph


def test_our_think_node_added_as_plan_stamps_its_steps_plan(
    sqlite_url: str, thread_id: str
) -> None:
    replies = ['Thought: add\nAction: add\nAction Input: {"a": 2, "b": 40}', "Final Answer: 42"]
    with Agent(
        ScriptedModel(replies), [add], build_graph=_renamed_think, store=sqlite_url
    ) as agent:
        result = agent.run("add", thread_id=thread_id)
        history = [c.node for c in agent.history(thread_id)]
    assert result.status == "done"
    by_type = {(s.type, s.node) for s in result.chain if s.type in ("llm_call", "thought")}
    assert by_type == {("llm_call", "plan"), ("thought", "plan")}
    calls = [s for s in result.chain if s.type == "tool_call"]
    assert calls and {s.node for s in calls} == {"plan"}
    assert [s.number for s in result.chain] == list(range(len(result.chain)))
    # The run's history names the node as the graph does, too.
    assert "plan" in history and "think" not in history


def test_stored_classes_keep_the_module_name_their_checkpoints_hold() -> None:
    """A checkpoint names each stored class by module, and the store revives only the
    classes it allows by that name: split into files by idea, the state's classes still
    answer to ``thinkgraph.state``, so runs stored before the split read after it."""
    import thinkgraph.state as state

    stored = (*state.STEP_TYPES, state.ToolCall, state.Verdict, state.SentRequest,
              state.PackedSteps, state.Counters, state.RunInfo)  # fmt: skip
    assert {cls.__module__ for cls in stored} == {"thinkgraph.state"}
    assert {getattr(state, cls.__qualname__) for cls in stored} == set(stored)
