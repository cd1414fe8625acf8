"""Steps read back from the store are revived as stored; every step made is made storable.

A step is made from the nearest storable form of what it is given (see `BaseStep`), so a
stored step already is: reviving it does not walk its values again, which was most of the
cost of loading a long run. What a store may hold that a run cannot (a non-finite float,
stored by a step changed with `model_copy`) is still made storable when it is read back.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from thinkgraph.result import RunResult
from thinkgraph.state import (
    BaseStep,
    LLMCallStep,
    ThoughtStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
    append_steps,
    as_step,
    revive_steps,
)
from thinkgraph.storage import serializer
from thinkgraph.values import storable

HOSTILE: dict[str, Any] = {"s": "a\ud800b", "n": 2**64, "f": float("nan"), "l": [float("inf")]}
FITTED: dict[str, Any] = {"s": "a\ufffdb", "n": str(2**64), "f": None, "l": [None]}


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every value the steps' storable pass is given, while the test runs."""
    seen: list[Any] = []

    def counted(value: Any) -> Any:
        seen.append(value)
        return storable(value)

    monkeypatch.setattr("thinkgraph.state.steps.storable", counted)
    yield seen


def _steps() -> list[BaseStep]:
    return [
        ThoughtStep(text="t", confidence=0.5, number=0),
        ToolCallStep(call=ToolCall(name="add", args={"a": 1, "b": [1, 2]}), number=1),
        ToolResultStep(call_id="c", tool="add", ok=True, output={"rows": [[1, "x"]]}, number=2),
        LLMCallStep(model="m", text="reply", cost_usd=None, number=3),
    ]


def _dumped(steps: list[Any]) -> list[dict[str, Any]]:
    return [s.model_dump() for s in steps]


def test_a_stored_chain_write_revives_without_the_storable_pass(walks: list[Any]) -> None:
    serde = serializer()
    steps = _steps()
    item = serde.dumps_typed(steps)
    walks.clear()
    assert _dumped(serde.loads_typed(item)) == _dumped(steps)
    assert _dumped(serde.loads_many([item, item])[1]) == _dumped(steps)  # type: ignore[attr-defined]
    snapshot = serde.dumps_typed({"channel_values": {"chain": _DeltaSnapshot(steps)}})
    assert _dumped(serde.loads_typed(snapshot)["channel_values"]["chain"].value) == _dumped(steps)
    assert walks == []


def test_a_revived_step_keeps_the_node_it_was_stored_with() -> None:
    stored = ThoughtStep(text="t").model_dump()  # made outside any node
    token = var_child_runnable_config.set({"metadata": {"langgraph_node": "act"}})
    try:
        made = ThoughtStep(text="t")
        (revived,) = revive_steps([stored])
    finally:
        var_child_runnable_config.reset(token)
    assert made.node == "act"  # a step made in a node names it
    assert revived.node == ""  # a stored step keeps what it was stored with


@pytest.mark.parametrize(
    "make",
    [
        lambda: ToolResultStep(call_id="c", tool="t", ok=True, output=HOSTILE),
        lambda: ToolResultStep.model_validate(
            {"call_id": "c", "tool": "t", "ok": True, "output": HOSTILE}
        ),
        lambda: as_step({"type": "tool_result", "call_id": "c", "tool": "t", "ok": True,
                         "output": HOSTILE}),
        lambda: append_steps([], [[{"type": "tool_result", "call_id": "c", "tool": "t",  # type: ignore[list-item]
                                    "ok": True, "output": HOSTILE}]])[0],
        lambda: RunResult.model_validate(
            {"thread_id": "t", "status": "done",
             "chain": [{"type": "tool_result", "call_id": "c", "tool": "t", "ok": True,
                        "output": HOSTILE}]}
        ).chain[0],
    ],
    ids=["constructor", "model_validate", "as_step", "chain reducer", "RunResult"],
)  # fmt: skip
def test_every_step_made_is_made_storable(make: Any) -> None:
    step = make()
    assert isinstance(step, ToolResultStep) and step.output == FITTED


def test_a_caller_dict_is_left_as_it_was() -> None:
    given = {"type": "thought", "text": "a\ud800b"}
    assert as_step(given).text == "a\ufffdb"  # type: ignore[attr-defined]
    assert given == {"type": "thought", "text": "a\ud800b"}


def _changed() -> list[BaseStep]:
    """Steps changed after they were made: `model_copy` skips the storable pass."""
    return [
        ThoughtStep(text="t", number=0).model_copy(update={"confidence": float("nan")}),
        ToolResultStep(call_id="c", tool="t", ok=True, number=1).model_copy(
            update={"output": {"up": float("inf"), "down": [float("-inf")], "ok": 1.5}}
        ),
    ]


def _check_fitted(steps: list[Any]) -> None:
    thought, result = steps
    assert thought.confidence is None
    assert result.output == {"up": None, "down": [None], "ok": 1.5}
    json.loads(json.dumps(_dumped(steps), default=str), parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON")


def test_a_non_finite_float_a_changed_step_stored_reads_back_as_none() -> None:
    serde = serializer()
    steps = _changed()
    item = serde.dumps_typed(steps)
    _check_fitted(serde.loads_typed(item))
    _check_fitted(serde.loads_many([item])[0])  # type: ignore[attr-defined]
    snapshot = serde.dumps_typed({"channel_values": {"chain": _DeltaSnapshot(steps)}})
    _check_fitted(serde.loads_typed(snapshot)["channel_values"]["chain"].value)


def test_bytes_that_read_as_a_non_finite_float_cost_a_walk_and_change_nothing() -> None:
    serde = serializer()
    looks_like_nan = b"\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00"
    step = ToolResultStep(call_id="c", tool="t", ok=True, output=looks_like_nan, number=0)
    (revived,) = serde.loads_typed(serde.dumps_typed([step]))
    assert revived.output == looks_like_nan and revived == step


def test_nesting_a_changed_step_stored_reads_back_and_every_reader_takes_it() -> None:
    deep: list[Any] = []
    for _ in range(200):
        deep = [deep]
    step = ToolResultStep(call_id="c", tool="t", ok=True, number=0).model_copy(
        update={"output": deep}
    )
    serde = serializer()
    (revived,) = serde.loads_typed(serde.dumps_typed([step]))
    assert revived.output == deep
    json.loads(revived.model_dump_json())
    serde.dumps_typed([revived])  # written again (a chain snapshot) without a fault


def test_finite_floats_are_not_taken_for_non_finite_ones() -> None:
    values = [1.5, -0.0, 1e308, -1e308, 5e-324, math.pi, 2.0**1023]
    serde = serializer()
    step = ToolResultStep(call_id="c", tool="t", ok=True, output=values, number=0)
    (revived,) = serde.loads_typed(serde.dumps_typed([step]))
    assert revived.output == values
