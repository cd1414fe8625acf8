"""What a studio form says, read as the answer `ServerRuns.resume` takes.

The forms are the ones `pages` renders; each names its action in the pressed button
(``action``) and the pause it answers (``at``, read by the route). A form that answers one
call names it (``call_id``) and holds ``reason``, ``text``, ``tool``, ``args_json`` and
one ``arg.NAME`` per argument; the form of several calls holds ``decide.CALL`` (approve,
edit, respond or reject) and the same fields with the call's id in their names
(``reason.CALL``, ``arg.CALL.NAME``).

An edited argument's field is read by its own schema in the tool's JSON schema
(`arg_schema`, which follows the ``$ref`` of an enum or a model; `field_value`): text where
the schema says string, JSON where it says number, boolean, array or object, and an empty
field of an argument the schema does not require is left out, so its default applies. Raw
JSON, when given, is taken as it is. The server checks the result against the schema
either way (the gate's one decision schema); this only reads the fields as typed. A
response or guidance with no text is refused: it would give the model nothing.

The fork form (`fork_of`) is read the same way: an edited call's arguments by the tool's
schema, and only the fields a person changed from what the page showed; the fork itself
decides what it takes (`thinkgraph.runs.forks`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from thinkgraph.errors import ResumeValueError

__all__ = [
    "LEFT_OUT",
    "answer_of",
    "arg_schema",
    "field_value",
    "fork_of",
    "schema_types",
    "tool_schemas",
]

LEFT_OUT: Any = object()
"""What `field_value` gives for a field to leave out of the arguments."""

_JSON_TYPES: dict[type, tuple[str, ...]] = {
    bool: ("boolean",),
    int: ("integer", "number"),
    float: ("number",),
    str: ("string",),
    list: ("array",),
    dict: ("object",),
    type(None): ("null",),
}


def tool_schemas(tools: Iterable[Any]) -> dict[str, Mapping[str, Any]]:
    """Each tool's JSON schema of its arguments, by name ({} when it gives none)."""
    schemas: dict[str, Mapping[str, Any]] = {}
    for tool in tools:
        schema = getattr(tool, "json_schema", None)
        if callable(schema):
            try:
                schema = schema()
            except Exception:  # a schema that cannot be made: plain fields
                schema = None
        schemas[str(getattr(tool, "name", ""))] = schema if isinstance(schema, Mapping) else {}
    return schemas


def arg_schema(schema: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The schema of the argument `name` of a tool's `schema`, with the types it refers to
    (``$ref`` to ``#/$defs/…``, as pydantic writes an enum or a model) put in place, at
    its top and in its ``anyOf`` / ``oneOf``; {} when the schema does not name it."""
    props = schema.get("properties")
    prop = props.get(name) if isinstance(props, Mapping) else None
    defs = schema.get("$defs") or schema.get("definitions") or {}
    return _resolved(prop, defs if isinstance(defs, Mapping) else {}, 0)


def _resolved(prop: object, defs: Mapping[str, Any], depth: int) -> Mapping[str, Any]:
    """`prop` with its ``$ref`` replaced by what it names, and its alternatives' too (to a
    bounded depth: a recursive model stops there)."""
    if not isinstance(prop, Mapping) or depth > 8:
        return {}
    ref = prop.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1])
        own = {k: v for k, v in prop.items() if k != "$ref"}
        return _resolved(
            {**(target if isinstance(target, Mapping) else {}), **own}, defs, depth + 1
        )
    alts = {
        key: [_resolved(alt, defs, depth + 1) for alt in prop[key]]
        for key in ("anyOf", "oneOf")
        if isinstance(prop.get(key), list)
    }
    return {**prop, **alts}


def schema_types(prop: object) -> tuple[str, ...]:
    """The JSON types an argument's schema allows (``type``, a list of them, or the
    alternatives of ``anyOf`` / ``oneOf``), in order; () when it names none."""
    if not isinstance(prop, Mapping):
        return ()
    kind = prop.get("type")
    found = [kind] if isinstance(kind, str) else [k for k in kind or () if isinstance(k, str)]
    for alt in prop.get("anyOf") or prop.get("oneOf") or ():
        found += schema_types(alt)
    return tuple(dict.fromkeys(found))


def field_value(text: str, prop: object, required: bool) -> Any:
    """A form field's text as the argument's value, by its schema `prop`: `LEFT_OUT` when
    it is empty and the argument not `required`; the text where only a string (or null)
    is allowed; else the text read as JSON when that gives an allowed type, the text
    otherwise (the server's check then says what is wrong with it).

    Example:
        >>> field_value("007", {"anyOf": [{"type": "string"}, {"type": "null"}]}, False)
        '007'
        >>> field_value("3", {"type": "integer"}, True)
        3
    """
    types = schema_types(prop)
    if text == "" and not required:
        return LEFT_OUT
    if types and set(types) <= {"string", "null"}:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if types and not set(_JSON_TYPES.get(type(value), ())) & set(types):
        return text
    return value


def answer_of(form: Mapping[str, str], schemas: Mapping[str, Mapping[str, Any]]) -> Any:
    """The answer a form gives, as `ServerRuns.resume` takes it.

    Raises:
        ResumeValueError: the form is not one the studio renders, or raw arguments that
            are not JSON.
    """
    action = form.get("action", "")
    call = form.get("call_id", "")
    if action == "continue":
        return None
    if action in ("retry", "abort"):
        return action
    if action == "guidance":
        text = form.get("text", "")
        if not text.strip():
            raise ResumeValueError("write the guidance for the model first")
        return {"action": "guidance", "text": text}
    if action == "decide":
        return {
            key[len("decide.") :]: _decision(form, chosen, key[len("decide.") :], schemas)
            for key, chosen in form.items()
            if key.startswith("decide.")
        }
    if not call:
        raise ResumeValueError("the form names no call")
    return {call: _decision(form, action, "", schemas)}


def _decision(
    form: Mapping[str, str], action: str, call: str, schemas: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """One call's decision from its fields (`call` empty: the form answers one call)."""

    def field(name: str) -> str:
        return form.get(f"{name}.{call}" if call else name, "")

    if action == "approve":
        return {"action": "approve"}
    if action == "reject":
        return {"action": "reject", "reason": field("reason").strip() or "rejected by a person"}
    if action == "respond":
        if not field("text").strip():
            raise ResumeValueError("write the result to give instead of the call first")
        return {"action": "respond", "text": field("text")}
    if action != "edit":
        raise ResumeValueError(f"unknown action {action!r}")
    raw = field("args_json").strip()
    if raw:
        try:
            return {"action": "edit", "args": json.loads(raw)}
        except ValueError as exc:
            raise ResumeValueError(f"the arguments are not JSON: {exc}") from None
    schema = schemas.get(field("tool")) or {}
    return {"action": "edit", "args": _args(form, f"arg.{call}." if call else "arg.", schema)}


def _args(form: Mapping[str, str], prefix: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments the fields named `prefix` + an argument's name give, each read by its
    schema in the tool's `schema` (`field_value`)."""
    props = schema.get("properties") or {}
    # Without a schema, no argument is known to be optional: every field is sent.
    required = set(schema.get("required") or ()) if props else None
    args = {}
    for key, text in form.items():
        if key.startswith(prefix):
            name = key[len(prefix) :]
            needed = required is None or name in required
            value = field_value(text, arg_schema(schema, name), needed)
            if value is not LEFT_OUT:
                args[name] = value
    return args


def fork_of(
    form: Mapping[str, str],
    steps: Mapping[int, Mapping[str, Any]],
    state: Mapping[str, Any],
    schemas: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[int, dict[str, Any]], dict[str, Any]]:
    """The step edits and the state keys a fork form gives, as `Agent.afork` takes them.

    The form holds a field per editable part of the checkpoint (`steps`, the steps as the
    page showed them, by number; `state`, its own state keys as shown): ``edit.N.text``
    (an observation), ``edit.N.answer`` (a thought's answer), ``edit.N.tool`` and
    ``edit.N.arg.NAME`` (a call's arguments, read by the tool's schema as the Edit form's
    are) and ``state.KEY`` (JSON). A field left as shown is no edit: only what a person
    changed is sent. The steps' raw JSON (``edit``: ``{"N": {"FIELD": VALUE}}``), when
    given, is taken as the step edits instead of their fields.

    Raises:
        ResumeValueError: raw edits or a state key's value that are not JSON, or raw
            edits that do not map step numbers to fields.
    """
    raw = form.get("edit", "").strip()
    edits = _raw_edits(raw) if raw else _field_edits(form, steps, schemas)
    keys: dict[str, Any] = {}
    for name, text in form.items():
        if not name.startswith("state."):
            continue
        key = name[len("state.") :]
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ResumeValueError(
                f"state key {key!r} is not JSON ({exc}): {text[:80]!r}"
            ) from None
        if key not in state or value != state[key]:
            keys[key] = value
    return edits, keys


def _raw_edits(raw: str) -> dict[int, dict[str, Any]]:
    try:
        given = json.loads(raw)
        return {int(number): fields for number, fields in given.items()}
    except (ValueError, AttributeError, TypeError) as exc:
        raise ResumeValueError(
            f'the steps to edit are not JSON of the shape {{"STEP": {{"FIELD": VALUE}}}}: {exc}'
        ) from None


def _field_edits(
    form: Mapping[str, str],
    steps: Mapping[int, Mapping[str, Any]],
    schemas: Mapping[str, Mapping[str, Any]],
) -> dict[int, dict[str, Any]]:
    """The step edits the fields give: those that differ from the step as shown."""
    edits: dict[int, dict[str, Any]] = {}
    for number, shown in steps.items():
        kind = shown.get("type")
        if kind == "observation" and f"edit.{number}.text" in form:
            # A browser sends a text area's line ends as CRLF.
            text = form[f"edit.{number}.text"].replace("\r\n", "\n")
            if text != shown.get("text"):
                edits[number] = {"text": text}
        elif kind == "thought" and f"edit.{number}.answer" in form:
            answer = form[f"edit.{number}.answer"]
            if answer != shown.get("answer"):
                edits[number] = {"answer": answer}
        elif kind == "tool_call" and f"edit.{number}.tool" in form:
            schema = schemas.get(form[f"edit.{number}.tool"]) or {}
            args = _args(form, f"edit.{number}.arg.", schema)
            if args != (shown.get("call") or {}).get("args"):
                edits[number] = {"args": args}
    return edits
