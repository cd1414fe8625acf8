"""Reading the tool name of a ReAct ``Action:`` line, or the whole call when it is written there.

The name is the first non-empty line after ``Action:``. Decorations models put around it
are dropped, in any combination:

- backticks, quotes (straight or curly), ``**bold**``, ``[brackets]``, ``<angle
  brackets>``, a trailing ``.`` or ``:``;
- empty parentheses (``search()``) and a parenthesised description
  (``search (searches the web)``).

What is left must be a tool name, ``^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$``.

Some models write the whole call on the Action line (or fenced under it); it is read as
the call, its arguments taken from it:

- call syntax with keyword arguments or one JSON object: ``search(query="x", limit=3)``,
  ``search({"query": "x"})``, ``search ({...})``, over several lines too; values are
  literals only (JSON's ``true``/``false``/``null`` allowed), nothing is evaluated;
- JSON naming the call, ``{"name": "search", "arguments": {...}}`` (or ``"parameters"``,
  or a list of them: several calls, in order) — smolagents' ToolCallingAgent writes this;
- LangChain's JSON-agent blob, ``{"action": "search", "action_input": {...}}``, and
  ``{"action": "Final Answer", "action_input": "…"}`` as the final answer (`blob_action`,
  which also reads the blob when it is the whole reply).

Anything else is an error whose feedback says what to write instead, never a call to a
tool named like the line:

- call syntax with positional text or expressions: ``search("x")``, ``calc(expression=2+2)``,
  ``Search[query]`` (the feedback rewrites it as Action / Action Input when it can);
- a placeholder or a sentence: ``None``, ``N/A``, ``Use weather_tool``, ``I will search``;
- ``Final Answer`` as the action, or ``Action: Final Answer: …`` (``final_answer``
  alone is left alone: it may be a user's tool);
- JSON that is not a call (``{"city": "Rome"}``, ``{"name": "Alice", "age": 3}``).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from thinkgraph.policies._react_format import feedback, json_agent_feedback, quoted
from thinkgraph.policies._react_input import key_value_args, unfence
from thinkgraph.policies.textcalls._common import (
    NOT_A_VALUE,
    Found,
    call_shaped,
    json_prefix,
    literal,
    literal_fits,
    load_value,
)

__all__ = ["Action", "blob_action", "read_action"]


@dataclass(frozen=True, slots=True)
class Action:
    """An Action section, read: a tool name and the lines under it, a whole call, or an error.

    At most one of `error`, `found` and `answer` is set; with none, `name` is the tool and
    its input is `input` when the action carried one, else the reply's Action Input.
    """

    name: str = ""
    rest: str = ""
    """The lines after the name's line, up to the next key."""
    error: str | None = None
    """Feedback for the model, with the expected format."""
    found: tuple[Found, ...] = ()
    """Calls written whole on the Action line, name and arguments, not yet checked."""
    input: str | None = None
    """The input the action carried (a JSON-agent blob's ``action_input``), as text."""
    answer: str | None = None
    """The final answer a JSON-agent blob gave."""


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
    if body.startswith(("{", "[")):
        json_action = _json_action(body)
        if json_action is not None:
            return json_action
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
    call = _CALL.fullmatch(name) or _multiline_call(line, body)
    if call:
        return _call_action(line.strip(), call)
    if not _TOOL_NAME.fullmatch(name) or name.lower() in _PLACEHOLDERS:
        return Action(error=_not_a_name(line.strip()))
    return Action(name=name, rest=rest)


def blob_action(blob: dict[str, Any]) -> Action | None:
    """LangChain's JSON-agent blob as an action or a final answer; None when it is not one.

    ``{"action": NAME, "action_input": INPUT}``: INPUT is read as an Action Input would
    be (an object is the arguments, text is the tool's one text input). An action named
    ``Final Answer`` (any case, ``_`` for the space) gives INPUT as the final answer.
    Other keys (a "thought", say) are allowed; without ``action_input`` it is not a blob.
    """
    action = blob.get("action")
    if not isinstance(action, str) or "action_input" not in blob:
        return None
    given = blob["action_input"]
    name = _undecorate(action)
    if name.lower().replace("_", " ") == "final answer":
        return Action(answer=_answer_text(given))
    if not _TOOL_NAME.fullmatch(name) or name.lower() in _PLACEHOLDERS:
        return Action(error=_not_a_name(action))
    return Action(name=name, input=json.dumps(given, ensure_ascii=False))


def _answer_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _json_action(body: str) -> Action | None:
    """JSON on the Action line: a call, a list of calls or a blob; feedback for other JSON.

    None when it is not JSON at all (``[search]`` is a decorated name).
    """
    value = _json_value(body)
    if value is NOT_A_VALUE:
        return Action(error=_json_instead_of_name(body)) if body.startswith("{") else None
    if isinstance(value, dict) and "action" in value:
        blob = blob_action(value)
        return blob if blob is not None else Action(error=json_agent_feedback(value))
    found = call_shaped(value, strict=True)
    if found:
        return Action(found=tuple(found))
    objects = value if isinstance(value, list) else [value]
    if any(isinstance(item, dict) for item in objects):
        return Action(error=_json_instead_of_name(body))
    return None  # `["search"]`: a decorated name


def _json_value(body: str) -> Any:
    """The JSON value `body` starts with (text after it ignored), else a Python literal."""
    prefix = json_prefix(body)
    if prefix is not None:
        return prefix[0]
    return load_value(body)


def _multiline_call(line: str, body: str) -> re.Match[str] | None:
    """A call whose arguments run over several lines: ``search({`` … ``})``."""
    if "(" not in line or line.rstrip().endswith(")") or "\n" not in body:
        return None
    return _CALL.fullmatch(body)


def _call_action(line: str, call: re.Match[str]) -> Action:
    """``tool(key=value, …)`` or ``tool({…})`` as the call; other call syntax is feedback."""
    name = _undecorate(call["name"])
    if call["args"] is not None and _TOOL_NAME.fullmatch(name):
        args = _call_arguments(call["args"])
        if args is not None:
            return Action(found=(Found(name, args),))
    return Action(error=_call_syntax(line, call))


def _call_arguments(inside: str) -> dict[str, Any] | None:
    """The arguments between a call's parentheses: keywords, or one object; else None."""
    inside = inside.strip()
    if not inside or not literal_fits(inside):
        return None
    try:
        tree = ast.parse(f"f({inside})", mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    node = tree.body
    if not isinstance(node, ast.Call) or (node.args and node.keywords):
        return None
    if node.args:
        value = literal(node.args[0]) if len(node.args) == 1 else NOT_A_VALUE
        return value if isinstance(value, dict) else None
    args: dict[str, Any] = {}
    for keyword in node.keywords:
        value = literal(keyword.value)
        if keyword.arg is None or value is NOT_A_VALUE:
            return None  # `**spread` or an expression: nothing is evaluated
        args[keyword.arg] = value
    return args


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
    # Reading pairs costs a JSON parse each: a hostile line of thousands gets no suggestion.
    pairs = key_value_args(inside) if inside and literal_fits(inside) else None
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
