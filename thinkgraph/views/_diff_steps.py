"""The step-by-step half of a run diff: which steps pair up, and which of their fields differ.

Two chains are aligned with `difflib.SequenceMatcher` over a key per step (its type and
node; a tool call's tool and arguments; a result's tool; a model call's purpose). Within a
block that differs, steps of one type, node and tool pair up as `changed`; the rest are
`deleted` (run A only) or `inserted` (run B only). Fields are compared on the real values
and shown from the masked copies; ids, clocks and durations are left out of the comparison.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from thinkgraph.state import BaseStep, FinalStep, LLMCallStep, ToolCallStep, ToolResultStep
from thinkgraph.views.redact import MASK, Redactor

__all__ = [
    "MAX_CHANGES",
    "FieldChange",
    "PairOp",
    "StepPair",
    "align",
    "field_changes",
    "step_key",
    "value_changes",
]

PairOp: TypeAlias = Literal["same", "changed", "inserted", "deleted"]

MAX_CHANGES = 50
"""At most this many field changes are listed per step; a count says how many more."""

_IGNORED: dict[str, Any] = {
    # Fresh for every run (ids, clocks) or about the machine, not the run's behaviour.
    "number": True,
    "id": True,
    "at": True,
    "latency_s": True,
    "duration_s": True,
    "llm_call_id": True,
    "call_id": True,
    "idempotency_key": True,
    "cached_from": True,
    "child_thread_id": True,
    "child_chain": True,
    "graph": True,
    # What a model was sent follows from the steps before it and the prompt; a replay
    # reports a changed prompt on its own ("request changed"), not as a changed step.
    "request": True,
    "replay_of": True,  # a replay's provenance, not its behaviour
}
_IGNORED_CALL = {**_IGNORED, "call": {"id"}, "tool_calls": {"__all__": {"id"}}}


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field that differs between two steps, its values masked as the views mask them."""

    path: str
    """Where the field is: `args.city`, `text`, `output.items[2]`."""
    a: Any = None
    """Its value in run A (masked); see `in_a`."""
    b: Any = None
    """Its value in run B (masked); see `in_b`."""
    in_a: bool = True
    """False when run A's step has no such field (an argument only run B passed)."""
    in_b: bool = True
    """False when run B's step has no such field."""


@dataclass(frozen=True, slots=True)
class StepPair:
    """Two aligned steps, or one step only one run has."""

    op: PairOp
    """same, changed, inserted (only in run B) or deleted (only in run A)."""
    a: BaseStep | None
    """Run A's step, masked; None when inserted."""
    b: BaseStep | None
    """Run B's step, masked; None when deleted."""
    changes: tuple[FieldChange, ...] = ()
    """For a changed pair: the fields that differ."""
    more_changes: int = 0
    """Changed fields left out of `changes` (beyond `MAX_CHANGES`)."""

    @property
    def kind(self) -> str:
        """The type of the step(s): task, llm_call, thought, tool_call, …"""
        step = self.a if self.a is not None else self.b
        return str(getattr(step, "type", "?"))


def step_key(step: BaseStep) -> Hashable:
    """What two steps must share to be aligned as the same step."""
    kind = getattr(step, "type", "?")
    if isinstance(step, ToolCallStep):
        return (kind, step.node, step.call.name, _canonical(step.call.args, step.call.raw_args))
    if isinstance(step, ToolResultStep):
        return (kind, step.node, step.tool)
    if isinstance(step, LLMCallStep):
        return (kind, step.node, step.purpose)
    if isinstance(step, FinalStep):
        return (kind, step.node, step.stop_reason)
    return (kind, step.node, getattr(step, "tool", None))


def _loose_key(step: BaseStep) -> Hashable:
    """What two steps must share to be shown as one changed step."""
    name = step.call.name if isinstance(step, ToolCallStep) else getattr(step, "tool", None)
    return (getattr(step, "type", "?"), step.node, name)


def _canonical(args: Any, raw: str | None) -> str:
    return json.dumps(args, sort_keys=True, default=repr) if args is not None else f"raw:{raw}"


def _dump(step: BaseStep) -> dict[str, Any]:
    exclude = _IGNORED_CALL if isinstance(step, ToolCallStep | LLMCallStep) else _IGNORED
    data: dict[str, Any] = step.model_dump(mode="json", exclude=exclude)
    if isinstance(step, ToolCallStep):  # a call's fields read as the call's: `args.city`
        data = {**data.pop("call"), **data}
    return data


_Path = tuple[str | int, ...]


def _differing(a: Any, b: Any, path: _Path, out: list[tuple[_Path, bool, bool]]) -> None:
    """Add the paths where `a` and `b` differ to `out`, with whether each side has it."""
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in dict.fromkeys([*a, *b]):
            if key not in a or key not in b:
                out.append(((*path, key), key in a, key in b))
            else:
                _differing(a[key], b[key], (*path, key), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            _differing(x, y, (*path, index), out)
    else:
        out.append((path, True, True))


def _at(data: Any, path: _Path) -> Any:
    for part in path:
        in_list = isinstance(data, list) and isinstance(part, int) and part < len(data)
        if in_list or (isinstance(data, dict) and part in data):
            data = data[part]
        else:  # masked whole above this field (an unknown tool's value)
            return MASK
    return data


def _path_text(path: _Path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def field_changes(
    raw_a: BaseStep, raw_b: BaseStep, shown_a: BaseStep, shown_b: BaseStep
) -> tuple[tuple[FieldChange, ...], int]:
    """The fields that differ, compared on the real values, shown from the masked ones."""
    return value_changes(_dump(raw_a), _dump(raw_b), _dump(shown_a), _dump(shown_b))


def value_changes(
    raw_a: Any, raw_b: Any, shown_a: Any, shown_b: Any
) -> tuple[tuple[FieldChange, ...], int]:
    """Where two JSON values differ (a step's fields, a run's own state), compared on the
    real values and shown from the masked ones: at most `MAX_CHANGES`, and how many more."""
    found: list[tuple[_Path, bool, bool]] = []
    _differing(raw_a, raw_b, (), found)
    changes = tuple(
        FieldChange(
            path=_path_text(path),
            a=_at(shown_a, path) if in_a else None,
            b=_at(shown_b, path) if in_b else None,
            in_a=in_a,
            in_b=in_b,
        )
        for path, in_a, in_b in found[:MAX_CHANGES]
    )
    return changes, max(0, len(found) - MAX_CHANGES)


class _Aligner:
    def __init__(self, a: Sequence[BaseStep], b: Sequence[BaseStep], redactor: Redactor):
        self.a, self.b = a, b
        self.shown_a = [redactor.step(step) for step in a]
        self.shown_b = [redactor.step(step) for step in b]
        self.pairs: list[StepPair] = []

    def align(self) -> list[StepPair]:
        keys_a, keys_b = [step_key(s) for s in self.a], [step_key(s) for s in self.b]
        matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal":
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                    self._pair(i, j)
            else:
                self._replace(i1, i2, j1, j2)
        return self.pairs

    def _pair(self, i: int, j: int) -> None:
        changes, more = field_changes(self.a[i], self.b[j], self.shown_a[i], self.shown_b[j])
        op: PairOp = "changed" if changes else "same"
        self.pairs.append(StepPair(op, self.shown_a[i], self.shown_b[j], changes, more))

    def _replace(self, i1: int, i2: int, j1: int, j2: int) -> None:
        """A block that differs: steps of one kind, node and tool pair up as changed."""
        loose_a = [_loose_key(s) for s in self.a[i1:i2]]
        loose_b = [_loose_key(s) for s in self.b[j1:j2]]
        matcher = difflib.SequenceMatcher(None, loose_a, loose_b, autojunk=False)
        for op, x1, x2, y1, y2 in matcher.get_opcodes():
            if op == "equal":
                for i, j in zip(range(i1 + x1, i1 + x2), range(j1 + y1, j1 + y2), strict=True):
                    self._pair(i, j)
                continue
            self.pairs += [
                StepPair("deleted", self.shown_a[i], None) for i in range(i1 + x1, i1 + x2)
            ]
            self.pairs += [
                StepPair("inserted", None, self.shown_b[j]) for j in range(j1 + y1, j1 + y2)
            ]


def align(a: Sequence[BaseStep], b: Sequence[BaseStep], redactor: Redactor) -> _Aligner:
    """Both chains aligned (`pairs`), with their masked copies (`shown_a`, `shown_b`)."""
    aligner = _Aligner(a, b, redactor)
    aligner.align()
    return aligner
