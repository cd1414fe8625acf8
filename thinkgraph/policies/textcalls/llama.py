"""Llama 3.1–3.3 JSON tool calls, marked by their special tokens or recognised by the whole reply.

Marked formats (`read_marked`), from Meta's Llama 3.1 prompt-format documentation and vLLM's
``llama3_json`` tool parser:

- ``<|python_tag|>{"name": "get_weather", "parameters": {"city": "Rome"}}<|eom_id|>``: a JSON
  call after the tag, ``"parameters"`` or ``"arguments"``, the stop token (``<|eom_id|>``,
  ``<|eot_id|>``) there or not. Several calls are separated by ``;`` (a repeated tag between
  them is read the same). Python-dict quoting (``{'name': …}``) is read too. After the tag
  the arguments may be left out (a call without any), but an object with other fields
  (``{"name": "Alice", "age": 30}``) is data, not a call: feedback.
- Built-in tools after the tag: ``<|python_tag|>brave_search.call(query="…")`` is a call to
  ``brave_search``; a pythonic list (`thinkgraph.policies.textcalls.pythonic`) is read as well.
  Anything else after the tag — the code interpreter's Python, a malformed object — is
  feedback.
- The custom-tool format ``<function=get_weather>{"city": "Rome"}</function>``, one or several;
  the closing tag may be missing. ``<function=NAME>`` followed by ``<parameter=…>`` is
  Qwen3-Coder's XML, not this format: it is left to its reader.

Text before the first marker is the thought (the reasoning blocks when there is none).

Unmarked shapes (`read_unmarked`), read only when the reply holds no ReAct decision, and only
as the whole reply (stop tokens cut off) or as one fenced block that ends it:

- A bare JSON call ``{"name": …, "parameters"|"arguments": {…}}``; OpenAI's
  ``{"type": "function", "function": {…}}`` wrapper and its flat
  ``{"type": "function", "name": …, "parameters": …}`` form; a JSON list of calls — which is
  also Mistral's ``[{"name", "arguments", "id"}]`` when a decoder dropped ``[TOOL_CALLS]`` —;
  calls separated by ``;`` or new lines; Python-dict quoting.
- A fenced block (`````json`` or a bare ```````) holding such calls, after an optional short
  preamble (the thought), with nothing after the closing fence: a fenced example inside a
  longer answer, or several fences, is not a call.
- Such calls on the last lines of the reply, after a line or two of preamble (the thought):
  "I will check the weather.\n\n{"name": …, "arguments": …}", as Llama 3.1 and Qwen
  write through Ollama without a tool parser.

Every object must be shaped like a call (`_common.call_shaped` with ``strict``: a name, the
arguments, nothing else but ``id`` and ``type``), so a JSON answer such as
``{"name": "Alice", "age": 30}`` is never a call. A reply that starts like a call object
but is not valid JSON is feedback. A ``final_answer`` call is the answer, as in every
format (`_common.calls`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls._common import (
    NOT_A_VALUE,
    Found,
    Reply,
    call_shaped,
    calls,
    error,
    json_prefix,
    load_value,
)
from thinkgraph.policies.textcalls.pythonic import (
    follows_react,
    parse_calls,
    too_dense,
    until_stop,
)

__all__ = ["read_marked", "read_unmarked"]

PYTHON_TAG = "<|python_tag|>"
FUNCTION_CLOSE = "</function>"

# The custom-tool tag; a name is at most 64 characters, so a scan never runs far.
_FUNCTION_TAG = re.compile(r"<function=(?P<name>[^<>\s]{1,64}+)>")

_EXAMPLE = '{"name": "get_weather", "parameters": {"city": "Rome"}}'

_SEPARATORS = re.compile(r"[\s;]*+")

# The start of an object written as a call: `{"name":`, `[{"type":`, `{'function':`.
_CALL_START = re.compile(r"\[?+\s*+\{\s*+[\"']?+(?:name|type|function)[\"']?+\s*+:")

_OBJECT_START = re.compile(r"\[?+\s*+\{")

_FENCE = "```"
_FENCE_LANGUAGES = frozenset({"", "json", "json5", "jsonc"})

_DECODER = json.JSONDecoder(strict=False)


def read_marked(reply: Reply) -> Decision | None:
    """The decision ``<|python_tag|>`` or ``<function=NAME>`` makes of `reply`, else None."""
    body = reply.body
    tag = body.find(PYTHON_TAG)
    function = _FUNCTION_TAG.search(body)
    if tag >= 0 and (function is None or tag < function.start()):
        return None if follows_react(body, tag) else _python_tag(reply, tag)
    if function is not None and not follows_react(body, function.start()):
        return _function_tags(reply, function)
    return None


def read_unmarked(reply: Reply) -> Decision | None:
    """The calls when the whole reply (or its one closing fence) is JSON calls, else None."""
    text = until_stop(reply.body)
    thought = reply.reasoning
    fenced = _closing_fence(text)
    if fenced is not None:
        preamble, text = fenced
        thought = preamble or thought
        text = text.strip()
    if not text.startswith(("{", "[")):
        return _after_preamble(text, thought)
    found = _json_calls(text, _strict) or _literal_calls(text, _strict)
    if found is None:
        if _CALL_START.match(text) and _unreadable(text):
            return error(
                f"Your reply looked like a JSON tool call but could not be read: "
                f"{_json_problem(text)}. Write the call as one JSON object, e.g. {_EXAMPLE}.",
                thought,
            )
        return None
    return calls(found, thought, "JSON tool call")


_LINE_OPENS_JSON = re.compile(r"^[ \t]*+[\[{]", re.MULTILINE)
_PREAMBLE_TRIES = 3
"""Lines opening JSON tried as the start of the calls: a bound, whatever the reply holds."""


def _after_preamble(text: str, thought: str) -> Decision | None:
    """Calls that end the reply after a preamble, read strictly; None when there are none."""
    for tried, opening in enumerate(_LINE_OPENS_JSON.finditer(text)):
        if tried >= _PREAMBLE_TRIES:
            break
        rest = text[opening.start() :].strip()
        found = _json_calls(rest, _strict)
        if found is not None:
            return calls(found, text[: opening.start()].strip() or thought, "JSON tool call")
    return None


# -- <|python_tag|> ---------------------------------------------------------------------------


def _python_tag(reply: Reply, at: int) -> Decision:
    """The calls after ``<|python_tag|>``, or feedback when they cannot be read."""
    body = reply.body
    thought = body[:at].strip() or reply.reasoning
    payload = until_stop(body[at + len(PYTHON_TAG) :].replace(PYTHON_TAG, " "))
    where = f"{PYTHON_TAG} call"
    if not payload:
        return error(f"Your {PYTHON_TAG} was not followed by a call, e.g. {_EXAMPLE}.", thought)
    found = _json_calls(payload, _tagged) or _literal_calls(payload, _tagged)
    if found is not None:
        return calls(found, thought, where)
    pythonic = parse_calls(payload, method="call")
    if isinstance(pythonic, str):
        return error(pythonic, thought)
    if pythonic is not None:
        return calls(pythonic, thought, where)
    problem = f" ({_json_problem(payload)})" if payload.startswith(("{", "[")) else ""
    return error(
        f"Your {where} could not be read{problem}. Write one JSON object with the tool's "
        f"name and its arguments after {PYTHON_TAG}, e.g. {_EXAMPLE}.",
        thought,
    )


# -- <function=NAME>{…}</function> ------------------------------------------------------------


def _function_tags(reply: Reply, first: re.Match[str]) -> Decision | None:
    """The calls in ``<function=NAME>{…}</function>`` tags; None for Qwen3-Coder's XML."""
    body = reply.body
    thought = body[: first.start()].strip() or reply.reasoning
    found: list[Found] = []
    tag: re.Match[str] | None = first
    while tag is not None:
        close = body.find(FUNCTION_CLOSE, tag.end())
        content = until_stop(body[tag.end() : close if close >= 0 else len(body)])
        if content.startswith("<parameter"):
            return None  # Qwen3-Coder's <parameter=KEY> XML: its own format
        found.append(Found(tag.group("name"), content))
        tag = _FUNCTION_TAG.search(body, close) if close >= 0 else None
    return calls(found, thought, "<function=NAME> call")


# -- JSON calls ---------------------------------------------------------------------------------


def _strict(value: Any) -> list[Found] | None:
    """The calls in a JSON value written as the whole reply: name and arguments, no more."""
    return call_shaped(value, strict=True)


def _tagged(value: Any) -> list[Found] | None:
    """The calls in a JSON value after ``<|python_tag|>``: the arguments may be left out.

    An object with other fields (``{"name": "Alice", "age": 30}``) is still data, not a call.
    """
    items = value if isinstance(value, list) else [value]
    return call_shaped([_with_arguments(item) for item in items], strict=True)


def _with_arguments(item: Any) -> Any:
    if isinstance(item, dict) and not {"arguments", "parameters", "function"} & set(item):
        return {**item, "parameters": {}}
    return item


def _json_calls(text: str, shape: Callable[[Any], list[Found] | None]) -> list[Found] | None:
    """The calls when all of `text` is JSON values, each `shape`d as calls, split by ``;``."""
    found: list[Found] = []
    at = 0
    while True:
        at = _SEPARATORS.match(text, at).end()  # type: ignore[union-attr]
        if at >= len(text):
            return found or None
        parsed = json_prefix(text, at)
        if parsed is None:
            return None
        value, at = parsed
        shaped = shape(value)
        if shaped is None:
            return None
        found.extend(shaped)


def _literal_calls(text: str, shape: Callable[[Any], list[Found] | None]) -> list[Found] | None:
    """The calls when `text` is Python-literal calls (``{'name': …}``), whole or ``;``-split."""
    if not _OBJECT_START.match(text) or too_dense(text):
        return None  # not objects (a pythonic list is read by its own reader), or too many
    whole = _shaped(load_value(text), shape)
    if whole is not None or ";" not in text:
        return whole
    found: list[Found] = []
    for part in text.split(";"):
        if not part.strip():
            continue
        shaped = _shaped(load_value(part), shape)
        if shaped is None:
            return None
        found.extend(shaped)
    return found or None


def _shaped(value: Any, shape: Callable[[Any], list[Found] | None]) -> list[Found] | None:
    return None if value is NOT_A_VALUE else shape(value)


def _unreadable(text: str) -> bool:
    """Whether `text` is neither a JSON value nor a Python literal: a call written wrong."""
    if json_prefix(text, 0) is not None:
        return False
    return too_dense(text) or load_value(text) is NOT_A_VALUE


def _json_problem(text: str) -> str:
    """Why `text` is not JSON calls: what the JSON decoder says, or that it is not a call."""
    try:
        _, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError as exc:
        return f"it was not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    except RecursionError:
        return "it was nested too deeply"
    if text[end:].strip():
        return f"there was more text after the JSON value, at character {end + 1}"
    return 'it was JSON, but not an object with the tool\'s "name" and its "parameters"'


# -- fences -----------------------------------------------------------------------------------


def _closing_fence(text: str) -> tuple[str, str] | None:
    """The preamble and content when `text` ends with its only fenced block, a JSON one."""
    if not text.endswith(_FENCE):
        return None
    opening = text.find(_FENCE)
    if opening >= len(text) - len(_FENCE) or (opening > 0 and text[opening - 1] != "\n"):
        return None
    line_end = text.find("\n", opening)
    if line_end < 0:
        return None
    language = text[opening + len(_FENCE) : line_end].strip().lower()
    content = text[line_end + 1 : len(text) - len(_FENCE)]
    if language not in _FENCE_LANGUAGES or _FENCE in content:
        return None
    return text[:opening].strip(), content
