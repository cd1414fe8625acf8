"""What every format reader shares: the reply it reads, and how found calls become a Decision.

A format reader finds calls as the model wrote them (`Found`: a name and arguments, not yet
checked) and hands them to `calls`, the one place that decides whether they are calls a run
can make: a name that is a tool name, arguments that are one object. Anything else is an
error decision whose feedback says what was wrong — never a call to a tool named like a
sentence, never arguments read from somewhere else. A reply whose only call gives the final
answer (smolagents' ``final_answer`` tool, `final_answer_text`) is that answer.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from thinkgraph.policies._react_format import feedback, quoted
from thinkgraph.policies.base import Decision
from thinkgraph.state import ToolCall

__all__ = [
    "FINAL_ANSWER_TOOL",
    "MAX_CALLS",
    "NOT_A_VALUE",
    "SPECIAL_TOKEN",
    "TOOL_NAME",
    "Found",
    "Reply",
    "answer",
    "before_special_token",
    "call_shaped",
    "calls",
    "error",
    "final_answer_text",
    "json_prefix",
    "literal",
    "literal_fits",
    "load_value",
]

TOOL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_-]{0,63}")
"""What a tool name may be (the same rule the ReAct ``Action:`` line follows)."""

MAX_CALLS = 64
"""The most calls one reply may make: more is a runaway reply, not a round of calls."""

MAX_LITERAL = 200_000
"""The longest text read as a Python literal: Python's parser is not linear in every input."""

MAX_LITERAL_PARTS = 3_000
"""The most brackets, commas, colons and ``=`` a text read as Python may hold: Python's parser
builds a node for each, some 15 µs apiece, so a 100 KB list of small items would take
seconds. A string literal is one node, however long."""

_PARTS = "([{,:="

NOT_A_VALUE: Any = object()
"""What `load_value` and `literal` give back for text that is not a value."""

_DECODER = json.JSONDecoder(strict=False)  # raw newlines and tabs inside strings are fine


@dataclass(frozen=True, slots=True)
class Reply:
    """A reply, with its reasoning blocks taken out (see `textcalls._reasoning`)."""

    text: str
    """The reply as the model wrote it."""
    body: str
    """The reply without its reasoning blocks: where calls and answers are read."""
    reasoning: str
    """The text of the reasoning blocks, kept as the thought when there is no other."""
    unclosed: bool = False
    """A reasoning block was opened and never closed."""
    reread: Callable[[str], Decision] | None = None
    """The whole parser, for formats whose own reasoning comes before a reply written in any
    format (Cohere's thinking block, Granite's response); set by the parser that runs them."""


@dataclass(frozen=True, slots=True)
class Found:
    """One call as a format wrote it: a name and its arguments, not yet checked."""

    name: Any
    args: Any = None
    """A dict, a JSON (or Python-literal) text holding one, or None for no arguments."""


def calls(found: Sequence[Found], thought: str, where: str) -> Decision:
    """The decision to make every call in `found`, in order, or feedback for the first bad one.

    A reply whose only call is smolagents' ``final_answer`` with one argument that is text
    (or a number) is the final answer, in every format (see `final_answer_text`).

    Args:
        found: The calls as read; at least one.
        thought: The reasoning that goes with them.
        where: How the format is named in feedback, e.g. ``"<tool_call>"``.
    """
    if len(found) > MAX_CALLS:
        return error(
            f"Your reply made more than {MAX_CALLS} tool calls in {where} form. Make at "
            f"most {MAX_CALLS} calls in one reply.",
            thought,
        )
    final = final_answer_text(found)
    if final is not None:
        return answer(final, thought, f"{where} final answer")
    made: list[ToolCall] = []
    for one in found:
        name = one.name.strip() if isinstance(one.name, str) else one.name
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            shown = quoted(name) if isinstance(name, str) else quoted(json.dumps(name, default=str))
            return error(
                f"Your {where} named the tool {shown}, which is not a tool name. Name one of "
                "your tools, with its arguments as one JSON object.",
                thought,
            )
        args = _arguments(one.args)
        if args is NOT_A_VALUE or not isinstance(args, dict):
            return error(
                f"The arguments of your {where} for {name!r} were not one JSON object. Write "
                'them as one object that names each argument, e.g. {"name": "value"}.',
                thought,
            )
        made.append(ToolCall(name=name, args=args))
    return Decision(kind="tool_calls", thought=thought, tool_calls=made)


FINAL_ANSWER_TOOL = "final_answer"
"""The tool smolagents' agents call to give their answer."""


def final_answer_text(found: Sequence[Found]) -> str | None:
    """The answer when `found` is exactly one call that gives the final answer, else None.

    The rule: exactly one call, named ``final_answer`` exactly, whose arguments are one
    object with exactly one key, whose value is a string (kept as written) or a number
    (written as JSON writes it). smolagents' ``{"name": "final_answer", "arguments":
    {"answer": "…"}}`` is the shape; any key name counts, since the tool has one parameter.
    Anything else — two arguments, an object or list value, a second call beside it —
    stays a call, so a user's own ``final_answer`` tool that takes more still runs.
    """
    if len(found) != 1:
        return None
    one = found[0]
    if not isinstance(one.name, str) or one.name.strip() != FINAL_ANSWER_TOOL:
        return None
    args = _arguments(one.args)
    if not isinstance(args, dict) or len(args) != 1:
        return None
    (value,) = args.values()
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    return None


SPECIAL_TOKEN = re.compile(r"<\|[A-Za-z_/][\w./:-]{0,40}\|>|<｜[^｜<>\n]{1,40}｜>")
"""A chat template's special token as text: ``<|im_end|>``, ``<|eot_id|>``, DeepSeek's
``<｜end▁of▁sentence｜>``."""

_LEADING_TOKENS = re.compile(rf"(?:\s*+(?:{SPECIAL_TOKEN.pattern}))*+\s*+")


def before_special_token(text: str) -> str:
    """`text` without the special tokens before it, up to the first one after.

    What follows an end-of-turn token is the model writing the next turn itself.
    """
    leading = _LEADING_TOKENS.match(text)
    start = leading.end() if leading else 0
    token = SPECIAL_TOKEN.search(text, start)
    return text[start : token.start()] if token else text[start:]


def answer(text: str, thought: str, where: str) -> Decision:
    """A final answer (special tokens cut off, `before_special_token`), or feedback if empty."""
    text = before_special_token(text).strip()
    if not text:
        return error(f"Your {where} was empty. Write the answer itself.", thought)
    return Decision(kind="final", thought=thought, answer=text)


def error(message: str, thought: str) -> Decision:
    """Feedback for the model: what was wrong, then the expected format."""
    return Decision(kind="error", thought=thought, error=feedback(message))


def call_shaped(value: Any, *, strict: bool) -> list[Found] | None:
    """The calls in a parsed JSON value, or None when it is not shaped like calls.

    Reads ``{"name", "arguments"}`` (or ``"parameters"``), OpenAI's ``{"type": "function",
    "function": {...}}`` wrapper, and a list of them. With `strict`, an object must have
    both a name and arguments to count (a bare JSON reply may be an answer that happens to
    have a "name" key); without it, a missing arguments key means none.
    """
    items = value if isinstance(value, list) else [value]
    if not items:
        return None
    found: list[Found] = []
    for item in items:
        one = _one_call(item, strict=strict)
        if one is None:
            return None
        found.append(one)
    return found


def _one_call(item: Any, *, strict: bool) -> Found | None:
    if not isinstance(item, dict):
        return None
    inner = item.get("function")
    if isinstance(inner, dict) and item.get("type", "function") == "function":
        item = inner
    if "name" not in item:
        return None
    keys = [k for k in ("arguments", "parameters") if k in item]
    if not keys:
        return None if strict else Found(item["name"], {})
    extra = set(item) - {"name", "arguments", "parameters", "id", "type"}
    if strict and extra:
        return None  # an object with other fields is data, not a call
    return Found(item["name"], item[keys[0]])


def _arguments(args: Any) -> Any:
    if args is None:
        return {}
    if isinstance(args, str):
        stripped = args.strip()
        if not stripped:
            return {}
        return load_value(stripped)
    return args


def load_value(text: str) -> Any:
    """A JSON value that is all of `text` (read leniently), else a Python literal, else NOT_A_VALUE.

    Python-literal quoting (``{'city': 'Rome'}``, ``True``, ``None``) is what some models
    write inside their call tags; JSON's ``true``/``false``/``null`` are read in it too.
    """
    text = text.strip()
    try:
        value, end = _DECODER.raw_decode(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    else:
        if not text[end:].strip():
            return value
    if not literal_fits(text):
        return NOT_A_VALUE
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return NOT_A_VALUE
    return literal(tree.body)


def literal_fits(text: str) -> bool:
    """Whether `text` is small enough to be parsed as Python quickly (see MAX_LITERAL_PARTS)."""
    if len(text) > MAX_LITERAL:
        return False
    return sum(text.count(part) for part in _PARTS) <= MAX_LITERAL_PARTS


def json_prefix(text: str, start: int = 0) -> tuple[Any, int] | None:
    """The JSON value that starts at `start` and where it ends, or None; text after it is left."""
    try:
        return _DECODER.raw_decode(text, start)
    except (json.JSONDecodeError, RecursionError):
        return None


_NAMED_CONSTANTS = {
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}


def literal(node: ast.AST) -> Any:
    """The value of a Python literal expression (JSON's constants allowed), else NOT_A_VALUE.

    Only literals are read — never a name, a call or an operator other than a sign — so
    nothing a model wrote is evaluated.
    """
    try:
        return _literal(node)
    except (_NotLiteral, RecursionError):
        return NOT_A_VALUE


_SCALARS = (str, int, float, bool, type(None))


class _NotLiteral(Exception):
    pass


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(
        node.value, (str, int, float, bool, type(None))
    ):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMED_CONSTANTS:
        return _NAMED_CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
        raise _NotLiteral
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise _NotLiteral  # `**spread`
            name = _literal(key)
            if not isinstance(name, str):
                raise _NotLiteral
            out[name] = _literal(value)
        return out
    raise _NotLiteral
