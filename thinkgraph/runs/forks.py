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

A fork may also set a key of the graph's own state (declared beyond `AgentState`) to a
new value, checked against the type the state declares for it (`fork_values`): the run
goes on from the checkpoint as if its nodes had left that value, so a router that reads
the key may take another route. Our keys are never set: the steps decide them. A key
with a reducer takes the value as given, not folded into what the key held
(`as_written`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, cast, get_args, get_origin

from langgraph.channels import BinaryOperatorAggregate, DeltaChannel
from langgraph.channels.base import BaseChannel
from langgraph.types import Overwrite
from pydantic import (
    ConfigDict,
    PydanticSchemaGenerationError,
    PydanticUserError,
    TypeAdapter,
    ValidationError,
)

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
    is_own_key,
)
from thinkgraph.values import problem

__all__ = [
    "EDITABLE",
    "as_written",
    "editable_steps",
    "edited_state",
    "fork_edits",
    "fork_values",
    "forked_state",
    "own_key_types",
    "own_starts",
]

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


def editable_steps(values: Mapping[str, Any], deps: Deps) -> dict[int, str]:
    """The steps a fork from the state `values` may edit, each with the field it may edit
    (`EDITABLE`): those whose edit to the value they hold `edited_state` takes, so a form
    offers what a fork would take and nothing it would refuse (a call that already ran, an
    answer already validated)."""
    found: dict[int, str] = {}
    state = dict(values)
    for step in values.get("chain") or ():
        field = EDITABLE.get(str(getattr(step, "type", "")))
        if field is None:
            continue
        held = step.call.args if isinstance(step, ToolCallStep) else getattr(step, field, None)
        if held is None:
            continue  # a thought that proposed no answer; a call whose args never parsed
        try:
            edited_state(state, {step.number: {field: held}}, deps)
        except ResumeValueError:
            continue
        found[step.number] = field
    return found


def own_key_types(channels: Mapping[str, BaseChannel[Any, Any, Any]]) -> dict[str, Any]:
    """The keys a graph's state declares beyond `AgentState`, each with its declared type.

    `channels` are the compiled graph's (``graph.builder.channels``), which hold each key's
    annotation as LangGraph read it. A reducer is not part of the type:
    ``Annotated[list[str], operator.add]`` gives ``list[str]``; other metadata stays
    (``Annotated[int, Field(ge=0)]`` is checked for both).
    """
    return {key: _declared(channel) for key, channel in channels.items() if is_own_key(key)}


def own_starts(channels: Mapping[str, BaseChannel[Any, Any, Any]]) -> dict[str, Any]:
    """The keys of a graph's own state that hold a value before any node writes them (a key
    with a reducer starts from its type's empty value, ``int()`` or ``list()``), each as
    `Overwrite` of that value: what a new run writes in its first checkpoint.

    Stored from the start, such a key reads the same on the run's own graph (where LangGraph
    shows the start) and in every view that reads the checkpoints alone (`history`, `show`
    in another process); `Overwrite` keeps the reducer from folding the start into itself.
    """
    return {
        key: Overwrite(copy.deepcopy(channel.get()))
        for key, channel in channels.items()
        if is_own_key(key)
        and isinstance(channel, BinaryOperatorAggregate)
        and channel.is_available()
    }


def _declared(channel: BaseChannel[Any, Any, Any]) -> Any:
    declared = channel.ValueType
    if get_origin(declared) is not Annotated:
        return declared
    reducer = getattr(channel, "operator", None)  # a BinaryOperatorAggregate's
    kept = [
        m
        for m in declared.__metadata__
        if m is not reducer
        and not isinstance(m, BaseChannel)
        and not (isinstance(m, type) and issubclass(m, BaseChannel))
    ]
    base = get_args(declared)[0]
    return cast(Any, Annotated)[(base, *kept)] if kept else base


def fork_values(given: object, declared: Mapping[str, Any]) -> dict[str, Any]:
    """`given` (key → new value) checked against the graph's own state, as it is stored.

    `declared` is the state's own keys with their types (`own_key_types`). Each value is
    validated (pydantic, lax: JSON's ``20`` is an int, ``"20"`` too) and stored validated.

    Raises:
        ResumeValueError: one line naming the key and the fix: not a mapping of key names;
            a key of `AgentState`; a key the state does not declare (the declared ones
            named); a value a run cannot hold, or not of the declared type (named).
    """
    if given is None:
        return {}
    if not isinstance(given, Mapping) or not all(isinstance(k, str) for k in given):
        raise ResumeValueError(
            f'state maps keys of the graph\'s own state to values, e.g. {{"score": 20}}; '
            f"got {given!r}"
        )
    mine = f"its own keys: {', '.join(sorted(declared))}" if declared else "none of its own"
    checked: dict[str, Any] = {}
    for key, value in given.items():
        if not is_own_key(key):
            raise ResumeValueError(
                f"cannot set {key!r}: it is one of AgentState's keys, which the run's steps "
                f"decide; a fork sets the graph's own keys ({mine}), and changes a step by "
                "editing it"
            )
        if key not in declared:
            raise ResumeValueError(
                f"cannot set {key!r}: the graph's state does not declare it ({mine}); set a "
                f"declared key, or declare it in the graph's state class, "
                f"class MyState(AgentState): {key}: ..., built with state=MyState"
            )
        checked[key] = _valid(key, value, declared[key])
    return checked


def _valid(key: str, value: Any, declared: Any) -> Any:
    """`value` validated as the type `declared` for `key`, or a refusal naming the type."""
    wrong = problem(value, f"the value of {key!r}")
    if wrong is not None:
        raise ResumeValueError(f"cannot set {key!r}: {wrong}")
    try:
        adapter = _adapter(declared)
    except PydanticUserError as exc:
        raise ResumeValueError(
            f"cannot set {key!r}: pydantic cannot check a value against its declared type "
            f"{_type_name(declared)} ({exc.code}); set it from a node of the graph instead"
        ) from exc
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        why = f"{where}: {first['msg']}" if where else first["msg"]
        raise ResumeValueError(
            f"cannot set {key!r} to {_short(value)}: the graph's state declares it "
            f"{_type_name(declared)} ({why}); give a value of that type"
        ) from exc


def _adapter(declared: Any) -> TypeAdapter[Any]:
    try:
        return TypeAdapter(declared)
    except PydanticSchemaGenerationError:
        # A class of the user's pydantic knows nothing of is checked by isinstance: a value
        # made from JSON is never one, so it is refused rather than stored unchecked.
        return TypeAdapter(declared, config=ConfigDict(arbitrary_types_allowed=True))


def _type_name(declared: Any) -> str:
    if get_origin(declared) is Annotated:  # its constraints are named by pydantic's message
        return _type_name(get_args(declared)[0])
    if isinstance(declared, type) and not get_args(declared):
        return declared.__name__
    return repr(declared).replace("typing.", "")


def _short(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def forked_state(
    values: dict[str, Any],
    edits: Edits,
    deps: Deps,
    source: str,
    setting: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The state a fork of `source` ("thread@checkpoint") starts from: `values` with
    `edits` applied (see `edited_state`), the keys of its own state in `setting` (checked
    by `fork_values`) set, and a human step recording the fork."""
    state = edited_state(values, edits, deps)
    state.update(setting or {})
    note = f"forked from {source}"
    if edits:
        note += f"; edited steps {', '.join(map(str, sorted(edits)))}"
    if setting:
        note += f"; set {', '.join(sorted(setting))}"
    state["chain"] = [*state["chain"], HumanStep(node="fork", kind="fork", text=note)]
    return state


def as_written(
    state: Mapping[str, Any], channels: Mapping[str, BaseChannel[Any, Any, Any]]
) -> dict[str, Any]:
    """`state` as a fork writes it to its new thread: each own key holds its value as is.

    LangGraph writes a state through each key's reducer, and a new thread's reducer key
    starts from its type's empty value (``int()``, ``list()``): ``min(0, 7)`` would turn a
    7 into 0. So a key with a reducer and such a start is written as LangGraph's
    `Overwrite`, which the channel stores unfolded (a `DeltaChannel` always folds into an
    empty value, so its keys always are). One with no empty value takes its first write as
    it is, where an `Overwrite` would be stored as the value itself.
    """
    written = dict(state)
    for key, value in state.items():
        channel = channels.get(key)
        if not is_own_key(key):
            continue
        folds = isinstance(channel, BinaryOperatorAggregate) and channel.is_available()
        if folds or isinstance(channel, DeltaChannel):
            written[key] = Overwrite(value)
    return written


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
