"""Reading a ReAct ``Action Input:`` into a tool's arguments.

Shapes handled, after markdown is peeled off (a code fence, backticks, ``**bold**`` or a
stray ``**`` after the key):

- A JSON object → ``args``, read leniently: raw newlines and tabs inside its strings are
  kept as written, and prose after the object is the model talking and is ignored.
- A JSON string → ``raw_args`` holds the decoded string; a string that wraps an object
  (``"{\\"city\\": \\"Oslo\\"}"``) → that object as ``args``. A string the model never
  closed (``"weather in Oslo``) → ``raw_args`` without the quote, and so does a
  single-quoted one (``'Oslo'``).
- Other text (``2+2``, ``capital of France``, code) → ``raw_args`` as written: tools with
  one text parameter take it.
- Errors, each with feedback for the model: nothing, a placeholder (``None``, ``N/A``) or
  an empty string (write ``{}`` for a tool without arguments); a list; ``key=value``
  pairs (the feedback shows them as JSON); text that starts like JSON but is not valid
  (the feedback names the line and column); LangChain's JSON-agent blob.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from thinkgraph.policies._react_format import feedback, json_agent_feedback, quoted

__all__ = ["Input", "key_value_args", "missing_input", "read_input", "unfence"]


@dataclass(frozen=True, slots=True)
class Input:
    """An Action Input, read: exactly one of the three is set."""

    args: dict[str, Any] | None = None
    raw_args: str | None = None
    error: str | None = None
    """Feedback for the model, with the expected format."""


_FENCE_OPEN = re.compile(r"```(?:[A-Za-z][\w+.-]*(?=\s))?")

# `**{"a": 1}**`, `*{…}*`, `__{…}__`: emphasis around the input, not part of it.
_EMPHASIS = re.compile(r"^(\*{1,2}|_{1,2})(?=[\s{\[\"`])|(?<=[\s}\]\"`])(\*{1,2}|_{1,2})$")

_PEEL_LAYERS = 4
"""Markdown around an input is a layer or two deep; a bound keeps hostile input linear."""

_PLACEHOLDERS = frozenset(
    {"none", "null", "nil", "n/a", "na", "nothing", "no input", "(none)", "empty", "-", "''"}
)

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_QUOTED = r"\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'"
# `name=value` with no space before `=` (a sentence like "a = b is …" is text), or any
# spacing when the value is quoted; values run to the next comma.
_PAIR = rf"{_IDENT}(?:\s*=\s*(?:{_QUOTED})|=(?![=\s])[^,\n]*)"
_PAIRS = re.compile(rf"\s*{_PAIR}(?:\s*,\s*{_PAIR})*\s*,?\s*")
_ONE_PAIR = re.compile(rf"(?P<key>{_IDENT})\s*=\s*(?P<value>{_QUOTED}|[^,\n]*)")

_DECODER = json.JSONDecoder(strict=False)  # raw newlines and tabs inside strings are fine


def read_input(text: str, tool: str) -> Input:
    """Read the text after ``Action Input:`` for the tool named `tool`."""
    text = _peel(text)
    if not text or text.lower() in _PLACEHOLDERS:
        return Input(error=missing_input(tool, given=text))
    if text.startswith("{"):
        return _read_object(text, tool)
    if text.startswith('"'):
        return _read_string(text, tool)
    if text.startswith("[") and (text.endswith("]") or _decodes(text)):
        return Input(error=_list_error(tool))
    if len(text) > 2 and text[0] == text[-1] == "'" and text.count("'") == 2:
        return Input(raw_args=text[1:-1])  # 'Oslo': a Python-style string
    pairs = key_value_args(text)
    if pairs is not None:
        return Input(error=_key_value_error(tool, pairs))
    return Input(raw_args=text)


def missing_input(tool: str, given: str | None = None) -> str:
    """Feedback for an Action Input that is absent (`given` None), empty or a placeholder."""
    if given is None:
        what = f"Your reply had no 'Action Input:' for '{tool}'."
    elif not given or given == '""':
        what = f"Your 'Action Input:' for '{tool}' was empty."
    else:
        what = f"Your 'Action Input:' for '{tool}' was {quoted(given)}, not a JSON object."
    return feedback(
        f"{what} Write the tool's arguments as one JSON object after 'Action Input:'; "
        "for a tool without arguments, write Action Input: {}"
    )


def key_value_args(text: str) -> dict[str, Any] | None:
    """`query="Oslo", limit=3` → ``{"query": "Oslo", "limit": 3}``; None if not that shape."""
    if "\n" in text.strip() or not _PAIRS.fullmatch(text):
        return None
    return {m["key"]: _value(m["value"].strip()) for m in _ONE_PAIR.finditer(text)}


def unfence(text: str) -> str:
    """The contents of a ```fenced``` or `backticked` text, or the text unchanged."""
    if text.startswith("```"):
        opening = _FENCE_OPEN.match(text)
        start = opening.end() if opening else 3
        close = text.find("```", start)
        return (text[start:] if close < 0 else text[start:close]).strip()
    if len(text) >= 2 and text[0] == "`" and text[-1] == "`":
        return text.strip("`").strip()
    return text


# -- the shapes -------------------------------------------------------------------------------


def _peel(text: str) -> str:
    """The input without the markdown around it: fences, backticks, emphasis."""
    text = text.strip()
    for _ in range(_PEEL_LAYERS):
        previous = text
        if len(text) > 4 and text.startswith("**") and text.endswith("**"):
            text = text[2:-2].strip()
        text = unfence(_EMPHASIS.sub("", text).strip())
        if text == previous:
            break
    return text


def _read_object(text: str, tool: str) -> Input:
    try:
        value, _ = _DECODER.raw_decode(text)
    except json.JSONDecodeError as exc:
        return Input(error=_json_error(tool, f"{exc.msg} at line {exc.lineno}, column {exc.colno}"))
    except RecursionError:  # absurdly deep nesting: not something a tool can use
        return Input(error=_json_error(tool, "the JSON is nested too deeply"))
    if "action_input" in value:
        return Input(error=json_agent_feedback(value))
    return Input(args=value)  # prose after the object is the model talking: ignore it


def _read_string(text: str, tool: str) -> Input:
    try:
        value, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError:
        if text.count('"') == 1:  # the model never closed the string
            return Input(raw_args=text[1:].strip())
        return Input(raw_args=text)
    if text[end:].strip():
        return Input(raw_args=text)  # `"hello" and "bye"`: more than one string, keep it all
    inner = value.strip()
    if not inner:
        return Input(error=missing_input(tool, given=""))
    if inner.startswith("{"):
        return _read_object(inner, tool)  # a JSON string that wraps the object
    return Input(raw_args=value)


def _decodes(text: str) -> bool:
    try:
        _DECODER.raw_decode(text)
    except (json.JSONDecodeError, RecursionError):
        return False
    return True


def _value(text: str) -> Any:
    """A `key=value` value: quoted → the string, JSON scalar → it, else the bare text."""
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return text


# -- feedback ---------------------------------------------------------------------------------


def _json_error(tool: str, error: str) -> str:
    return feedback(
        f"Your 'Action Input:' for '{tool}' is not valid JSON: {error}. "
        "Write the arguments as one JSON object, with double-quoted keys and strings, "
        'e.g. Action Input: {"name": "value"}.'
    )


def _list_error(tool: str) -> str:
    return feedback(
        f"Your 'Action Input:' for '{tool}' was a list. Write the arguments as one JSON "
        'object that names each one, e.g. Action Input: {"name": "value"}.'
    )


def _key_value_error(tool: str, pairs: dict[str, Any]) -> str:
    as_json = json.dumps(pairs, ensure_ascii=False)
    return feedback(
        f"Your 'Action Input:' for '{tool}' was written as key=value text. Write the "
        f"arguments as one JSON object instead: Action Input: {as_json}"
    )
