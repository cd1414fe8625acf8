"""Human in the loop: approval decisions, what a paused run waits for, and their checks.

A paused run says what it waits for as `Pending` entries (`RunResult.pending`). Answer an
approval pause with one decision per call id:

    agent.resume("t1", decisions={
        "call-1": Approve(),
        "call-2": Edit(args={"to": "ops@example.com"}),
        "call-3": Reject(reason="never email the CEO"),
        "call-4": Respond(text="the file has 42 lines"),
    })

Decisions are checked before the run moves on: a partial answer, an unknown call id or an
edit whose arguments fail the tool's schema is refused with the reason, and the run stays
paused exactly as it was. The check lives in the graph itself (`approval_answer`, the
`response_schema` of the approval interrupt), so it holds for every door: `Agent.resume`,
the CLI, HTTP, a worker, or a raw `graph.invoke(Command(resume=...))` from any LangGraph
client. The shorthand "approve" (or "yes") for `Approve()` is accepted by all of them.

LangChain's HITL answer (what `HumanInTheLoopMiddleware` takes, and what Studio and Agent
Chat UI send) is accepted by all of them too: ``{"decisions": [{"type": "approve"},
{"type": "edit", "edited_action": {"name": ..., "args": {...}}}, {"type": "reject",
"message": ...}]}``, one decision per waiting call in the order of the pause's
``action_requests``. It becomes the decisions above and is checked the same way; an edit
may change the arguments, never the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeAlias

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)

from thinkgraph.errors import ResumeValueError
from thinkgraph.values import problem

if TYPE_CHECKING:
    from thinkgraph.state import ToolCall

__all__ = [
    "CONTINUED",
    "LANGCHAIN_DECISIONS",
    "ApprovalDecision",
    "Approve",
    "Edit",
    "Pending",
    "Reject",
    "Respond",
    "ToolArgs",
    "approval_answer",
    "check_approvals",
    "check_edited_args",
    "describe_answer",
]


class _ArgsOf(Protocol):
    args_model: type[BaseModel]


class ToolArgs(Protocol):
    """The tools an edit is checked against, by name (a `ToolRegistry` is one).

    A protocol, not the registry, so these decisions sit below the tools package.
    """

    def get(self, name: str, /) -> _ArgsOf | None:
        """The tool named `name` (its `args_model` checks edited arguments), or None."""
        ...


class Approve(BaseModel):
    """Run the call as proposed."""

    model_config = ConfigDict(frozen=True)
    action: Literal["approve"] = "approve"


class Edit(BaseModel):
    """Run the call with these arguments instead (checked against the tool's schema)."""

    model_config = ConfigDict(frozen=True)
    action: Literal["edit"] = "edit"
    args: dict[str, Any]


class Reject(BaseModel):
    """Do not run the call; the reason becomes the observation the model sees."""

    model_config = ConfigDict(frozen=True)
    action: Literal["reject"] = "reject"
    reason: str = "rejected by a person"


class Respond(BaseModel):
    """Do not run the call; the person's text becomes its observation."""

    model_config = ConfigDict(frozen=True)
    action: Literal["respond"] = "respond"
    text: str


ApprovalDecision: TypeAlias = Annotated[
    Approve | Edit | Reject | Respond, Field(discriminator="action")
]
"""One answer to one call waiting for approval."""

_DECISION = TypeAdapter(ApprovalDecision)


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema with its `$defs` written in place (it is embedded in another one)."""
    defs = schema.pop("$defs", {})
    schema.pop("discriminator", None)  # its mapping names the $defs; oneOf says the same

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                return resolve(defs[ref.rsplit("/", 1)[-1]])
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    return dict(resolve(schema))


_DECISION_SCHEMA = _inlined(_DECISION.json_schema())
"""One decision as JSON schema: what a generic client renders for each waiting call."""


LANGCHAIN_DECISIONS = ["approve", "edit", "reject"]
"""The decision types a LangChain HITL review config offers ("respond" is accepted too)."""


class Pending(BaseModel):
    """One thing a paused run waits for."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["approval", "ask_human", "breakpoint"]
    """approval: a tool call needs a decision; ask_human: repeated failures need a person;
    breakpoint: a debugging stop at a node boundary."""
    call_id: str | None = None
    """For approvals: the call to answer, as the key of `resume(decisions=...)`."""
    tool: str | None = None
    args: dict[str, Any] | None = None
    raw_args: str | None = None
    thought: str = ""
    """What the model was thinking when it proposed the call."""
    step: int = 0
    """The think step that proposed the call (or that the run is at)."""
    node: str | None = None
    """For breakpoints: the node the run stopped before or after."""
    when: Literal["before", "after"] | None = None
    question: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    """Anything else the pause carries (for ask_human: what was done and what failed)."""

    @classmethod
    def approval(cls, call: ToolCall, *, thought: str = "", step: int = 0) -> Pending:
        """What a proposed `call` waits for at the gate: a person's decision."""
        return cls(kind="approval", call_id=call.id, tool=call.name, args=call.args,
                   raw_args=call.raw_args, thought=thought, step=step)  # fmt: skip


def _from_langchain(waiting: dict[str, Pending], answer: Any) -> Any:
    """LangChain's ``{"decisions": [...]}`` as ``{call_id: decision}``; anything else as is."""
    if not (isinstance(answer, Mapping) and set(answer) == {"decisions"}) or (
        "decisions" in waiting
    ):
        return answer
    listed = answer["decisions"]
    if not isinstance(listed, list) or len(listed) != len(waiting):
        count = len(listed) if isinstance(listed, list) else "no list of"
        raise ResumeValueError(
            f"a LangChain HITL answer needs one decision per action request, in their "
            f"order: {len(waiting)} waiting, {count} decisions given"
        )
    return {
        call_id: _langchain_decision(request, item)
        for (call_id, request), item in zip(waiting.items(), listed, strict=True)
    }


def _langchain_decision(request: Pending, item: Any) -> Approve | Edit | Reject | Respond:
    kind = item.get("type") if isinstance(item, Mapping) else None
    message = item.get("message") if isinstance(item, Mapping) else None
    if kind == "approve":
        return Approve()
    if kind == "reject":
        return Reject(reason=message) if isinstance(message, str) and message else Reject()
    if kind == "respond" and isinstance(message, str):
        return Respond(text=message)
    if kind == "edit" and isinstance(item, Mapping):
        action = item.get("edited_action")
        if not (isinstance(action, Mapping) and isinstance(action.get("args"), dict)):
            raise ResumeValueError(
                f"edit decision for call {request.call_id!r} needs "
                '"edited_action": {"name": ..., "args": {...}}'
            )
        if action.get("name", request.tool) != request.tool:
            raise ResumeValueError(
                f"edit decision for call {request.call_id!r} renames {request.tool!r} to "
                f"{action.get('name')!r}; an edit may change the arguments, not the tool"
            )
        return Edit(args=dict(action["args"]))
    raise ResumeValueError(
        f"decision for call {request.call_id!r} ({request.tool}) is not "
        '{"type": "approve"}, {"type": "edit", "edited_action": {...}}, '
        '{"type": "reject", "message": ...} or {"type": "respond", "message": ...}'
    )


def _as_decision(call_id: str, value: Any) -> Approve | Edit | Reject | Respond:
    if isinstance(value, Approve | Edit | Reject | Respond):
        return value
    if isinstance(value, str) and value.lower() in ("approve", "approved", "yes", "y"):
        return Approve()
    try:
        return _DECISION.validate_python(value)
    except ValidationError as exc:
        raise ResumeValueError(
            f"decision for call {call_id!r} is not Approve(), Edit(args=...), "
            f"Reject(reason=...) or Respond(text=...): {exc.errors()[0]['msg']}"
        ) from exc


def check_approvals(
    requests: list[Pending], decisions: Any, tools: ToolArgs
) -> dict[str, dict[str, Any]]:
    """Check decisions against the calls waiting for them; return them in stored form.

    Every refusal ends with what waits, so whoever answered (a person, a script, a generic
    LangGraph client) can correct the answer.

    Decisions come as ``{call_id: decision}`` or in LangChain's HITL shape,
    ``{"decisions": [...]}`` in the order of the requests.

    Raises:
        ResumeValueError: decisions is not a mapping, misses a call, names an unknown call,
            holds a malformed decision, or edits arguments that fail the tool's schema.
    """
    waiting = {r.call_id: r for r in requests if r.call_id is not None}
    try:
        return _checked(waiting, _from_langchain(waiting, decisions), tools)
    except ResumeValueError as exc:
        listed = ", ".join(f"{i} ({r.tool})" for i, r in sorted(waiting.items()))
        raise ResumeValueError(f"{exc}; the run is still paused; waiting: {listed}") from None


def _checked(
    waiting: dict[str, Pending], decisions: Any, tools: ToolArgs
) -> dict[str, dict[str, Any]]:
    if not isinstance(decisions, Mapping) or not decisions:
        raise ResumeValueError(
            "this run waits for tool-call approvals; answer with one decision per call id, "
            "{call_id: Approve() | Edit(args=...) | Reject(reason=...) | Respond(text=...)} "
            '(over JSON: {call_id: {"action": "approve" | "edit" | "reject" | "respond", '
            "...}})"
        )
    unknown = sorted(set(map(str, decisions)) - set(waiting))
    if unknown:
        raise ResumeValueError(f"no call {unknown[0]!r} waits for approval")
    missing = sorted(set(waiting) - set(map(str, decisions)))
    if missing:
        raise ResumeValueError(
            f"every waiting call needs a decision; missing: {', '.join(missing)} "
            "(nothing runs until all are answered)"
        )
    stored: dict[str, dict[str, Any]] = {}
    for call_id, value in decisions.items():
        decision = _as_decision(str(call_id), value)
        if isinstance(decision, Edit):
            _check_edit(waiting[str(call_id)], decision, tools)
        stored[str(call_id)] = decision.model_dump()
    return stored


def check_edited_args(call_id: str, tool: str, args: dict[str, Any], tools: ToolArgs) -> None:
    """Refuse a person's new arguments for a call when they fail the tool's schema.

    One check for every way a person edits a call: an `Edit` decision, a fork's edit.

    Raises:
        ResumeValueError: naming each field that is wrong.
    """
    _check_edit(Pending(kind="approval", call_id=call_id, tool=tool), Edit(args=args), tools)


def _check_edit(request: Pending, edit: Edit, tools: ToolArgs) -> None:
    # The edited arguments are stored as given (the tool gets them validated), so they must
    # be what a run can hold even where the tool's model would convert them (2**70 to a
    # float, say), and whether or not the tool is known.
    found = problem(edit.args)
    if found is not None:
        raise ResumeValueError(
            f"edited arguments for call {request.call_id!r} ({request.tool}) are invalid: {found}"
        )
    tool = tools.get(request.tool or "")
    if tool is None:
        return  # act reports the unknown tool to the model, edited or not
    try:
        tool.args_model.model_validate(edit.args)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors()
        )
        raise ResumeValueError(
            f"edited arguments for call {request.call_id!r} ({request.tool}) are invalid: "
            f"{problems}"
        ) from exc


_DONE = {"approve": "approved", "edit": "edited", "reject": "rejected", "respond": "responded"}


CONTINUED = "continued"
"""What a Continue (an answer of None, to a breakpoint) is described as."""


def describe_answer(decisions: Any) -> str:
    """What an answer to a pause decided, in a few words for a message ("approved",
    "rejected", "answered: approved c1, rejected c2", "answered retry", "continued" for
    None: a breakpoint's Continue); never its text."""
    if decisions is None:
        return CONTINUED
    if isinstance(decisions, Mapping):
        items = decisions.get("decisions") if set(decisions) == {"decisions"} else None
        if isinstance(items, list):  # LangChain's answer: one decision per request, in order
            actions = [str(i.get("type")) if isinstance(i, Mapping) else "?" for i in items]
            return _described(actions, [str(n + 1) for n in range(len(actions))])
        actions = []
        for value in decisions.values():
            action = value.get("action") if isinstance(value, Mapping) else None
            actions.append(str(getattr(value, "action", None) or action or "?"))
        return _described(actions, [str(call_id) for call_id in decisions])
    if isinstance(decisions, str) and decisions.strip().lower() in ("retry", "abort"):
        return f"answered {decisions.strip().lower()}"
    return "answered with guidance"


def _described(actions: list[str], names: list[str]) -> str:
    kinds = set(actions)
    if len(kinds) == 1 and actions[0] in _DONE:
        return _DONE[actions[0]]
    parts = [f"{_DONE.get(a, a)} {n}" for a, n in zip(actions, names, strict=True)]
    return f"answered: {', '.join(parts)}"


def approval_answer(requests: list[Pending], tools: ToolArgs) -> Any:
    """The type of the answer to an approval pause, for `interrupt(response_schema=...)`.

    Validating a resume value against it runs `check_approvals`, so a bad answer is refused
    with `ResumeValueError` *before* LangGraph records it: the run stays paused as it was,
    and a later valid answer is taken. Its JSON schema names every waiting call, so a
    generic LangGraph client can render the form.
    """

    def check(value: Any) -> dict[str, dict[str, Any]]:
        return check_approvals(requests, value, tools)

    ids = [r.call_id for r in requests if r.call_id is not None]
    ours = {
        "type": "object",
        "properties": {call_id: _DECISION_SCHEMA for call_id in ids},
        "required": ids,
        "additionalProperties": False,
    }
    langchain = {
        "type": "object",
        "description": "LangChain's human-in-the-loop answer: one decision per action "
        "request, in their order",
        "properties": {
            "decisions": {
                "type": "array",
                "minItems": len(ids),
                "maxItems": len(ids),
                "items": _LANGCHAIN_DECISION_SCHEMA,
            }
        },
        "required": ["decisions"],
        "additionalProperties": False,
    }
    schema = {"anyOf": [ours, langchain]}
    return Annotated[dict[str, ApprovalDecision], BeforeValidator(check), WithJsonSchema(schema)]


_LANGCHAIN_DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"enum": ["approve", "edit", "reject", "respond"]},
        "message": {"type": "string"},
        "edited_action": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "args": {"type": "object"}},
            "required": ["args"],
        },
    },
    "required": ["type"],
}
"""One decision of LangChain's HITL answer, as `_langchain_decision` reads it."""
