"""What a fork may change in the run it copies, decided once.

A fork starts a new thread from a checkpoint of a run, optionally with edits. An edit
changes only what a person may change, so the forked chain still records what ran:

- an observation's ``text``: what the model is shown of a result (its tool_result step
  keeps what the tool returned);
- a thought's ``answer``, while it waits to be validated: validate and finalize take the
  edited answer;
- a tool call's ``args``, while the call has neither run nor a person's decision: it runs
  with them, and the approval gate judges them again (a call they make need approval is
  asked again; one they no longer make need it is not).

Anything else is refused with one line that names what may be edited: ids, numbers and
types; what a model replied and what a tool returned (records of what happened); and a
thought's reasoning, because text formats show the model its reply as it wrote it, so an
edited thought would be recorded but never seen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from thinkgraph.errors import ResumeValueError
from thinkgraph.hitl import check_edited_args
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import (
    BaseStep,
    FinalStep,
    HumanStep,
    ObservationStep,
    ThoughtStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
    ValidationStep,
)

__all__ = ["EDITABLE", "edited_state", "fork_edits", "forked_state"]

EDITABLE: dict[str, str] = {"observation": "text", "thought": "answer", "tool_call": "args"}
"""The one field a fork may edit, by step type."""

_WHAT_MAY = "a fork may edit an observation's text, a thought's answer or a tool call's args"
_SHAPE = 'edit maps step numbers to fields and new values, e.g. {5: {"text": "the file is empty"}}'

Edits = dict[int, dict[str, Any]]
"""Step number → field → new value, as `fork_edits` returns it."""


def fork_edits(edit: object) -> Edits:
    """`edit` checked for shape: step numbers (int) to mappings of field names (str).

    Raises:
        ResumeValueError: anything else, naming the shape it should have.
    """
    if edit is None:
        return {}
    if not isinstance(edit, Mapping):
        raise ResumeValueError(f"{_SHAPE}; got a {type(edit).__name__}")
    checked: Edits = {}
    for number, fields in edit.items():
        # bool is an int to Python, never a step number to a person.
        if not isinstance(number, int) or isinstance(number, bool):
            raise ResumeValueError(f"{_SHAPE}; got the key {number!r}")
        if not isinstance(fields, Mapping) or not all(isinstance(f, str) for f in fields):
            raise ResumeValueError(f"{_SHAPE}; got {fields!r} for step {number}")
        checked[number] = dict(fields)
    return checked


def edited_state(values: dict[str, Any], edits: Edits, deps: Deps) -> dict[str, Any]:
    """The state a fork starts from: `values` with `edits` applied where they take effect.

    A refused edit raises before the fork writes anything.

    Raises:
        ResumeValueError: a step that does not exist, or an edit a person may not make
            (see the module docstring), in one line naming what may be edited.
    """
    chain: list[BaseStep] = list(values["chain"])
    state = dict(values)
    edited_calls: set[str] = set()
    for number, fields in sorted(edits.items()):
        if not 0 <= number < len(chain):
            raise ResumeValueError(f"cannot edit step {number}: the chain has {len(chain)} steps")
        step = chain[number]
        kind = str(getattr(step, "type", "?"))
        field = EDITABLE.get(kind)
        article = "an" if kind[:1] in "aeiou" else "a"
        if field is None:
            raise ResumeValueError(f"step {number} is {article} {kind} step; {_WHAT_MAY}")
        wrong = sorted(set(fields) - {field})
        if wrong:
            raise ResumeValueError(
                f"step {number} is {article} {kind} step: a fork may edit its {field} only, "
                f"not {wrong[0]!r} ({_WHAT_MAY})"
            )
        if field not in fields:
            continue
        value = fields[field]
        if isinstance(step, ObservationStep):
            chain[number] = step.model_copy(update={"text": _text(number, field, value)})
        elif isinstance(step, ThoughtStep):
            chain[number] = _edited_answer(step, chain, state, _text(number, field, value))
        elif isinstance(step, ToolCallStep):
            chain[number] = _edited_call(step, chain, state, value, deps)
            edited_calls.add(step.call.id)
    state["chain"] = chain
    # Think's verdict on an edited call was on other args. Dropped, the gate judges the
    # edited args on the way to act: it asks the tools themselves and never trusts this
    # channel alone, so a call the edit makes need a person is asked again.
    needed = state.get("needs_approval") or []
    state["needs_approval"] = [i for i in needed if i not in edited_calls]
    return state


def forked_state(values: dict[str, Any], edits: Edits, deps: Deps, source: str) -> dict[str, Any]:
    """The state a fork of `source` ("thread@checkpoint") starts from: `values` with
    `edits` applied (see `edited_state`) and a human step recording the fork."""
    state = edited_state(values, edits, deps)
    note = f"forked from {source}"
    if edits:
        note += f"; edited steps {', '.join(map(str, sorted(edits)))}"
    state["chain"] = [*state["chain"], HumanStep(node="fork", kind="fork", text=note)]
    return state


def _text(number: int, field: str, value: object) -> str:
    if not isinstance(value, str):
        raise ResumeValueError(f"step {number}'s {field} must be a string, not {value!r}")
    return value


def _edited_answer(
    step: ThoughtStep, chain: Sequence[BaseStep], state: dict[str, Any], answer: str
) -> ThoughtStep:
    """The thought with a new candidate answer, which the state's candidate becomes too."""
    later = chain[step.number + 1 :]
    # Validate clears the candidate when it fails the answer and sets `answer` when it
    # passes it (with no validators, no validation step records that it ran).
    waiting = (
        step.answer is not None
        and state.get("candidate") == step.answer
        and state.get("answer") is None
        and not any(isinstance(s, ThoughtStep | ValidationStep | FinalStep) for s in later)
    )
    if not waiting:
        raise ResumeValueError(
            f"step {step.number}'s answer is not waiting to be validated at this checkpoint "
            "(it was already validated, or the thought proposed none); fork from the "
            "checkpoint after the think step that proposed it"
        )
    state["candidate"] = answer
    return step.model_copy(update={"answer": answer})


def _edited_call(
    step: ToolCallStep, chain: Sequence[BaseStep], state: dict[str, Any], args: object, deps: Deps
) -> ToolCallStep:
    """The tool_call step with new args, which the call waiting to run gets too."""
    number, call = step.number, step.call
    if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
        raise ResumeValueError(
            f'step {number}\'s args must be a JSON object, e.g. {{"path": "notes.txt"}}, '
            f"not {args!r}"
        )
    ran = next((s for s in chain if isinstance(s, ToolResultStep) and s.call_id == call.id), None)
    if ran is not None:
        raise ResumeValueError(
            f"step {number}'s call already ran (step {ran.number} holds its result); "
            "edit its observation instead, or fork from the checkpoint after the think step "
            "that proposed it"
        )
    decided = next((s for s in chain if isinstance(s, HumanStep) and s.call_id == call.id), None)
    if decided is not None:
        raise ResumeValueError(
            f"a person already decided on step {number}'s call ({decided.kind}, step "
            f"{decided.number}); fork from the checkpoint after think, before approve, to "
            "change its args"
        )
    pending: list[ToolCall] = list(state.get("pending_calls") or [])
    if call.id not in {c.id for c in pending}:
        raise ResumeValueError(
            f"step {number}'s call does not wait to run at this checkpoint; fork from the "
            "checkpoint after the think step that proposed it"
        )
    check_edited_args(call.id, call.name, args, deps.tools)
    edited = call.model_copy(update={"args": args, "raw_args": None})
    state["pending_calls"] = [edited if c.id == call.id else c for c in pending]
    return step.model_copy(update={"call": edited})
