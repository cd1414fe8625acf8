"""Reading the tool name of a ReAct ``Action:`` line.

The name is the first non-empty line after ``Action:``. Decorations models put around it
are dropped, in any combination:

- backticks, quotes (straight or curly), ``**bold**``, ``[brackets]``, ``<angle
  brackets>``, a trailing ``.`` or ``:``;
- empty parentheses (``search()``) and a parenthesised description
  (``search (searches the web)``).

What is left must be a tool name, ``^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$``. Anything else is
an error whose feedback says what to write instead, never a call to a tool named like
the line:

- call syntax: ``search({"q": "x"})``, ``search ({...})``, ``calc(expression="2+2")``,
  ``Search[query]`` (the feedback rewrites it as Action / Action Input when it can);
- a placeholder or a sentence: ``None``, ``N/A``, ``Use weather_tool``, ``I will search``;
- ``Final Answer`` as the action, or ``Action: Final Answer: …`` (``final_answer``
  alone is left alone: it may be a user's tool);
- JSON instead of a name, such as LangChain's ``{"action": …, "action_input": …}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from thinkgraph.policies._react_format import feedback, json_agent_feedback, quoted
from thinkgraph.policies._react_input import key_value_args, unfence

__all__ = ["Action", "read_action"]


@dataclass(frozen=True, slots=True)
class Action:
    """An Action section, read: a tool name and the lines under it, or an error."""

    name: str = ""
    rest: str = ""
    """The lines after the name's line, up to the next key."""
    error: str | None = None
    """Feedback for the model, with the expected format."""


_TOOL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_-]{0,63}")
_WRAPPING = "`*\"'“”‘’ \t"
_PAIRS = (("[", "]"), ("<", ">"))
_DECORATION_LAYERS = 4
# `final_answer` alone may be a user's tool; with a colon after it, it is our answer token.
_FINAL = re.compile(r"final answer\b|final_answer[ \t]*[:：]", re.IGNORECASE)
# A description in parentheses is prose: no braces, `=` or quotes, which mean arguments.
_DESCRIPTION = re.compile(r"[ \t]\([^(){}=\"'\n]*\)\.?$")
_CALL = re.compile(r"(?P<name>[^\s(\[]+)[ \t]*(?:\((?P<args>.*)\)|\[(?P<text>.*)\])", re.DOTALL)
_PLACEHOLDERS = frozenset({"none", "null", "nil", "na", "nothing", "no_action", "noaction"})
_NO_ARGS = "<its arguments as one JSON object>"


def read_action(text: str) -> Action:
    """Read the text after ``Action:`` up to the next key."""
    body = text.strip()
    if body.startswith("```"):
        body = unfence(body)  # a fenced name, or more often a fenced JSON blob
    if body.startswith("{"):
        return Action(error=_json_instead_of_name(body))
    line, _, rest = body.partition("\n")
    name = _undecorate(line)
    if not name:
        return Action(error=_NO_NAME)
    if _FINAL.match(line.strip().strip(_WRAPPING)):
        return Action(error=_FINAL_AS_ACTION)
    described = _DESCRIPTION.search(name)
    if described and described.start() > 0:
        name = _undecorate(name[: described.start()])
    if name.endswith("()"):
        name = _undecorate(name[:-2])
    call = _CALL.fullmatch(name)
    if call:
        return Action(error=_call_syntax(line.strip(), call))
    if not _TOOL_NAME.fullmatch(name) or name.lower() in _PLACEHOLDERS:
        return Action(error=_not_a_name(line.strip()))
    return Action(name=name, rest=rest)


def _undecorate(text: str) -> str:
    """`**[search]**`, "`search`", 'search.' → search; a bounded number of layers."""
    for _ in range(_DECORATION_LAYERS):
        before = text
        text = text.strip().rstrip(".:：").strip(_WRAPPING).rstrip(".:：")
        for opening, closing in _PAIRS:
            if len(text) >= 2 and text[0] == opening and text[-1] == closing:
                text = text[1:-1]
        if text == before:
            break
    return text


def _suggested_args(call: re.Match[str]) -> str:
    """The arguments of `tool(...)` as the JSON object to write, when they can be read."""
    inside = (call["args"] or "").strip()
    if inside.startswith("{"):
        try:
            value, _ = json.JSONDecoder(strict=False).raw_decode(inside)
        except (json.JSONDecodeError, RecursionError):
            return inside
        return json.dumps(value, ensure_ascii=False)
    pairs = key_value_args(inside) if inside else None
    return json.dumps(pairs, ensure_ascii=False) if pairs else _NO_ARGS


# -- feedback ---------------------------------------------------------------------------------

_NO_NAME = feedback(
    "Your 'Action:' line had no tool name. Write the name of one tool after 'Action:' and "
    "its arguments after 'Action Input:'."
)

_FINAL_AS_ACTION = feedback(
    "'Final Answer' is not a tool. When you know the answer, write it after "
    "'Final Answer:' on its own line, with no 'Action:' line."
)


def _json_instead_of_name(body: str) -> str:
    try:
        value, _ = json.JSONDecoder(strict=False).raw_decode(body)
    except (json.JSONDecodeError, RecursionError):
        value = None
    if isinstance(value, dict) and "action" in value:
        return json_agent_feedback(value)
    return feedback(
        "Your 'Action:' line held JSON instead of a tool name. Write the tool's name after "
        "'Action:' and its arguments after 'Action Input:'."
    )


def _call_syntax(line: str, call: re.Match[str]) -> str:
    name = _undecorate(call["name"])
    if not _TOOL_NAME.fullmatch(name):
        return _not_a_name(line)
    return feedback(
        f"Your 'Action:' line wrote the call as {quoted(line)}. Write the tool's name "
        "alone after 'Action:' and its arguments as one JSON object after 'Action Input:', "
        f"like this:\n\nAction: {name}\nAction Input: {_suggested_args(call)}"
    )


def _not_a_name(line: str) -> str:
    return feedback(
        f"{quoted(line)} is not the name of a tool. Write only the name of one tool after "
        "'Action:' and its arguments after 'Action Input:'. If you need no tool, write "
        "your answer after 'Final Answer:' instead, with no 'Action:' line."
    )
