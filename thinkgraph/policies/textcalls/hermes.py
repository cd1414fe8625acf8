"""Hermes / Qwen ``<tool_call>`` tool calls, and the Qwen3-Coder and GLM-4.5 calls in those tags.

The formats, and where they are described:

- **Hermes 2 Pro / Hermes 3, Qwen 2.5, Qwen3** (the NousResearch Hermes model cards and
  Hermes-Function-Calling repository, the Qwen chat templates and Qwen's function-calling
  docs; vLLM's ``hermes`` tool parser)::

      <tool_call>
      {"name": "get_weather", "arguments": {"city": "Rome"}}
      </tool_call>

  One tag per call, several tags for several calls (in order), with or without text before
  them (that text is the thought), after a ``<think>`` block or only its closing ``</think>``
  (Qwen3) or Hermes 3's ``<scratch_pad>`` (both taken out first, and the thought).
  Also read: Python-literal quoting (``{'name': 'x', 'arguments': {'a': 1}}``), arguments as a
  JSON string, OpenAI's ``{"type": "function", "function": {…}}`` wrapper, a call without
  arguments (``{"name": "x"}``), one closing brace too many, and a last ``</tool_call>``
  missing (the stop token cut it) or a closing tag missing before the next ``<tool_call>``.
- **Qwen3-Coder** (its chat template; vLLM's ``qwen3_coder`` tool parser)::

      <tool_call>
      <function=get_weather>
      <parameter=city>
      Rome
      </parameter>
      </function>
      </tool_call>

  A parameter never closed ends at the next parameter or at ``</function>``. The same
  ``<function=…>`` with parameters is read without the ``<tool_call>`` tags too; a
  ``<function=NAME>`` holding a JSON object is read inside the tags (Llama 3.1's form of it,
  outside them, is `thinkgraph.policies.textcalls.llama`'s).
- **GLM-4.5 / 4.6** (its chat template; vLLM's ``glm45`` tool parser)::

      <tool_call>get_weather
      <arg_key>city</arg_key>
      <arg_value>Rome</arg_value>
      </tool_call>

  The tool name, then one key and value per argument; a name alone is a call without
  arguments, and GLM-4's ``NAME`` then a JSON object on the next line is read as well.

Values in Qwen3-Coder and GLM tags follow `xml_invoke.tag_value`: the text (one blank first
and last line dropped, every other newline kept), or the JSON value when the text is wholly a
JSON number, ``true``, ``false``, ``null``, object or array.

What is not read as a call: a ``<tool_call>`` drafted inside a reasoning block (taken out
before any reader runs); a tag named in prose — never closed, with no JSON object, function
or GLM call after it — is left to the other formats (a ReAct ``Final Answer:`` may mention
it), and a closed tag around anything that is not a call is feedback naming ``<tool_call>``,
as is invalid JSON, an object that is data rather than a call, or an argument given twice.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, NamedTuple

from thinkgraph.policies._react_format import quoted
from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls._common import (
    MAX_CALLS,
    NOT_A_VALUE,
    TOOL_NAME,
    Found,
    Reply,
    call_shaped,
    calls,
    error,
    json_prefix,
    load_value,
)
from thinkgraph.policies.textcalls.xml_invoke import tag_value

__all__ = ["read"]

_WHERE = "<tool_call>"

_TAG = re.compile(r"<(/?)tool_call>", re.IGNORECASE)

_CODER = re.compile(r"<(/?)(function|parameter)(?:=([^<>\n]{0,200}+))?+>")
"""Qwen3-Coder's tags: ``<function=NAME>``, ``<parameter=KEY>`` and their closing tags."""

_SPACE = re.compile(r"\s*+")

_GLM = re.compile(r"<(/?)(arg_key|arg_value)>")

_GLM_START = re.compile(r"\s*+[^\s<>]{1,64}+\s*+<arg_key>")
"""The start of a GLM call: a name, then its first argument's key."""

_NAME_LINE = re.compile(r"\s*+([^\s<>{}]{1,64}+)[ \t]*+(?:\r?\n|$)")

_EXPECTED_JSON = (
    'Write one call per tag: <tool_call>{"name": "TOOL", "arguments": {"ARG": "value"}}'
    "</tool_call>."
)

_CODER_FORM = (
    "Write <tool_call><function=TOOL><parameter=ARG>value</parameter></function></tool_call>."
)


class _Bad(Exception):
    """A call that cannot be read; its message is the feedback."""


class _Segment(NamedTuple):
    """What one ``<tool_call>`` holds: the text up to its closing tag or the next tag."""

    start: int
    """Where the opening tag starts."""
    content: str
    closed: bool


def read(reply: Reply) -> Decision | None:
    """The calls in a reply's ``<tool_call>`` tags (or bare Qwen3-Coder call), else None."""
    body = reply.body
    segments = _segments(body)
    if segments:
        thought = reply.reasoning or body[: segments[0].start].strip()
        try:
            found = [one for segment in segments for one in _read_segment(segment)]
        except _Bad as bad:
            return error(str(bad), thought)
        return calls(found, thought, _WHERE)
    return _bare_coder(body, reply.reasoning)


# -- the tags ---------------------------------------------------------------------------------


def _segments(body: str) -> list[_Segment]:
    """Every ``<tool_call>`` that holds a call to read, in order (see `_call_like`)."""
    tags = [(tag.start(), tag.end(), tag.group(1)) for tag in _TAG.finditer(body)]
    tags.append((len(body), len(body), ""))  # the end of the reply closes nothing
    segments: list[_Segment] = []
    for (start, end, close), (following, _, closing) in itertools.pairwise(tags):
        if close or following == end:
            continue  # a closing tag, or an opening tag with nothing in it
        segment = _Segment(start, body[end:following], bool(closing))
        if _call_like(segment):
            segments.append(segment)
    return segments


def _call_like(segment: _Segment) -> bool:
    """Whether a tag holds a call to read: closed around something, or a call's start."""
    stripped = segment.content.strip()
    if not stripped:
        return False
    if segment.closed:
        return True
    return stripped.startswith(("{", "[", "<function=")) or bool(_GLM_START.match(segment.content))


def _read_segment(segment: _Segment) -> list[Found]:
    """The calls one tag holds, or `_Bad` saying why it holds none."""
    content = segment.content.strip()
    if content.startswith(("{", "[")):
        return _json_calls(content, segment.closed)
    if content.startswith("<function="):
        found = _coder_calls(content, _WHERE)
        if not found:
            raise _Bad(f"Your {_WHERE} held {quoted(content)}, which is not a call. " + _CODER_FORM)
        return found
    if "<arg_key>" in content:
        return [_glm_call(content)]
    return [_named_call(content)]


# -- JSON ---------------------------------------------------------------------------------------


def _json_calls(content: str, closed: bool) -> list[Found]:
    """``{"name": …, "arguments": …}`` (or a list of them, or several on their own lines)."""
    values = _json_values(content, closed)
    if values is None:
        raise _Bad(
            f"The call in your {_WHERE} was not valid JSON: {quoted(content)}. " + _EXPECTED_JSON
        )
    found: list[Found] = []
    for value in values:
        shaped = call_shaped(value, strict=True)
        if shaped is None and isinstance(value, dict) and _only_a_name(value):
            shaped = [Found(value["name"], {})]
        if shaped is None:
            raise _Bad(
                f"Your {_WHERE} held {quoted(content)}, which is not a call: it needs a "
                '"name" and "arguments". ' + _EXPECTED_JSON
            )
        found.extend(shaped)
    return found


def _json_values(content: str, closed: bool) -> list[Any] | None:
    """The value the content is (JSON or a Python literal), or the JSON values it lists.

    Several calls may stand one per line in one tag. After the last value, a tag never
    closed may hold anything (the model went on talking); a closed one at most a stray
    closing brace, a slip models make.
    """
    value = load_value(content)
    if value is not NOT_A_VALUE:
        return [value]
    values: list[Any] = []
    pos = 0
    while len(values) <= MAX_CALLS:
        parsed = json_prefix(content, pos)
        if parsed is None:
            break
        values.append(parsed[0])
        pos = _skip_space(content, parsed[1])
        if not content.startswith(("{", "["), pos):
            break
    rest = content[pos:].strip()
    if values and (not closed or not rest.strip("}") or len(values) > MAX_CALLS):
        return values
    return None


def _skip_space(text: str, pos: int) -> int:
    """Where the whitespace at `pos` ends."""
    space = _SPACE.match(text, pos)
    return space.end() if space is not None else pos


def _only_a_name(value: dict[str, Any]) -> bool:
    """``{"name": "x"}``: a call without arguments (and nothing that looks like data)."""
    return "name" in value and not set(value) - {"name", "id", "type"}


# -- Qwen3-Coder --------------------------------------------------------------------------------


def _coder_calls(content: str, where: str) -> list[Found]:
    """Every ``<function=NAME>`` in the content with its ``<parameter=KEY>`` values."""
    tags = list(_CODER.finditer(content))
    found: list[Found] = []
    i = 0
    while i < len(tags):
        tag = tags[i]
        if tag.group(1) or tag.group(2) != "function":
            i += 1
            continue
        end = i + 1
        while end < len(tags) and tags[end].group(2) != "function":
            end += 1
        body_end = tags[end].start() if end < len(tags) else len(content)
        name = (tag.group(3) or "").strip().strip("\"'")
        found.append(Found(name, _coder_arguments(content, tags, i, end, body_end, where)))
        closes = end < len(tags) and bool(tags[end].group(1))
        i = end + 1 if closes else end
    return found


def _coder_arguments(
    content: str, tags: list[re.Match[str]], i: int, end: int, body_end: int, where: str
) -> Any:
    """The arguments of the function at tags[i]: its parameters, else its JSON body."""
    if not any(not tags[k].group(1) for k in range(i + 1, end)):
        return content[tags[i].end() : body_end].strip() or None
    args: dict[str, Any] = {}
    for k in range(i + 1, end):
        tag = tags[k]
        if tag.group(1):
            continue
        key = (tag.group(3) or "").strip().strip("\"'")
        if not key:
            raise _Bad(f"A <parameter> in your {where} had no name. Write <parameter=ARG>.")
        if key in args:
            raise _Bad(_twice(where, key))
        stop = tags[k + 1].start() if k + 1 < end else body_end
        args[key] = tag_value(content[tag.end() : stop])
    return args


def _bare_coder(body: str, reasoning: str) -> Decision | None:
    """Qwen3-Coder's ``<function=NAME><parameter=…>`` written without ``<tool_call>``."""
    start = body.find("<function=")
    if start < 0:
        return None
    tags = _CODER.finditer(body, start)
    first = next(tags, None)
    second = next(tags, None)
    if first is None or first.group(2) != "function" or first.group(1):
        return None
    if second is None or second.group(1) or second.group(2) != "parameter":
        return None  # a JSON body, or none: Llama's form (or prose), not Qwen3-Coder's
    where = "<function=…>"
    thought = reasoning or body[: first.start()].strip()
    try:
        found = _coder_calls(body[first.start() :], where)
    except _Bad as bad:
        return error(str(bad), thought)
    return calls(found, thought, where)


# -- GLM ----------------------------------------------------------------------------------------


def _glm_call(content: str) -> Found:
    """``NAME<arg_key>k</arg_key><arg_value>v</arg_value>…``."""
    tags = list(_GLM.finditer(content))
    name = content[: tags[0].start()]
    args: dict[str, Any] = {}
    i = 0
    while i < len(tags):
        if not _is(tags, i, "", "arg_key") or not _is(tags, i + 1, "/", "arg_key"):
            raise _Bad(_glm_expected())
        key = content[tags[i].end() : tags[i + 1].start()].strip()
        if not _is(tags, i + 2, "", "arg_value"):
            raise _Bad(_glm_expected())
        closes = _is(tags, i + 3, "/", "arg_value")
        stop = tags[i + 3].start() if i + 3 < len(tags) else len(content)
        if key in args:
            raise _Bad(_twice(_WHERE, key))
        args[key] = tag_value(content[tags[i + 2].end() : stop])
        i += 4 if closes else 3
    return Found(name, args)


def _is(tags: list[re.Match[str]], i: int, close: str, tag: str) -> bool:
    return i < len(tags) and tags[i].group(1) == close and tags[i].group(2) == tag


def _glm_expected() -> str:
    return (
        f"Each <arg_key> in your {_WHERE} needs its <arg_value> right after it. Write "
        "<tool_call>TOOL<arg_key>ARG</arg_key><arg_value>value</arg_value></tool_call>."
    )


def _named_call(content: str) -> Found:
    """A tool name alone (a GLM call without arguments), or a name then a JSON object."""
    line = _NAME_LINE.match(content)
    if line is not None and TOOL_NAME.fullmatch(line.group(1)):
        rest = content[line.end() :].strip()
        if not rest:
            return Found(line.group(1), {})
        if rest.startswith("{"):
            return Found(line.group(1), rest)
    raise _Bad(f"Your {_WHERE} held {quoted(content)}, which is not a call. " + _EXPECTED_JSON)


def _twice(where: str, key: str) -> str:
    return f"Your {where} gave the argument {quoted(key)} twice. Give each argument once."
