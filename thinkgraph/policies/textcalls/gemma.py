"""Gemma tool calls: ``tool_code`` blocks, ``print(default_api.NAME(…))`` and FunctionGemma.

Formats read, in this order (the first found decides):

1. FunctionGemma, from Google's "FunctionGemma formatting and best practices" guide:
   ``<start_function_call>call:NAME{key:<escape>text<escape>,n:3}<end_function_call>``,
   repeated for parallel calls. Strings are delimited by ``<escape>`` (so ``{``, ``,`` and
   quotes inside them are text); numbers, ``true``/``false``/``null``, lists ``[…]`` and
   nested objects ``{…}`` are written bare; a bare word is read as text. Text before the
   first call is the thought. Without its special tokens the call is read only when the
   reply starts with ``call:``. A ``<start_function_response>`` the model wrote itself is an
   invented result: nothing from it on is read.
2. A ```` ```tool_code ```` fenced block, Gemma 3's convention for calls (Google's "Function
   calling with Gemma" guide; LiteRT-LM parses the same): one call per line, as
   ``print(default_api.NAME(k=v))``, ``default_api.NAME(k=v)`` or ``NAME(k=v)``, or a list
   of calls as the guide's prompt asks (``[NAME(k=v), …]``); every block in the reply, up to
   a ```` ```tool_outputs ```` block the model invented.
3. ``print(default_api.NAME(k=v))`` or ``default_api.NAME(k=v)`` at the start of a line,
   without a fence: that line and the rest of the reply are the calls.

Calls in Python syntax are parsed with `ast`, never evaluated, through
`thinkgraph.policies.textcalls.pythonic`: arguments must be named and their values literals,
else feedback. A ``tool_code`` block or ``default_api`` line that follows a ReAct
``Action:`` or ``Final Answer:`` line is left to ReAct: it is shown in an answer, not called.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from typing import Any

from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls._common import MAX_LITERAL, Found, Reply, calls, error
from thinkgraph.policies.textcalls.pythonic import (
    follows_react,
    found_in_call,
    too_dense,
    until_stop,
)

__all__ = ["read"]

START_CALL = "<start_function_call>"
END_CALL = "<end_function_call>"
START_RESPONSE = "<start_function_response>"
ESCAPE = "<escape>"
CALL_PREFIX = "call:"

TOOL_CODE = "```tool_code"
TOOL_OUTPUT = "```tool_output"
NAMESPACE = "default_api"

_FUNCTIONGEMMA = "FunctionGemma call"
_FUNCTIONGEMMA_EXAMPLE = f"call:get_weather{{city:{ESCAPE}Rome{ESCAPE}}}"
_PYTHON_EXAMPLE = 'print(default_api.get_weather(city="Rome"))'

_MAX_DEPTH = 32
"""How deeply FunctionGemma objects and lists may nest."""

_DEFAULT_API_LINE = re.compile(r"^[ \t]*+(?:print\([ \t]*+)?+default_api\.", re.MULTILINE)

# A FunctionGemma call without its tokens, read only at the start of the reply.
_BARE_CALL = re.compile(r"call:[A-Za-z_][\w.\-]*+\{")

_SPACE = re.compile(r"\s*+")
_KEY = re.compile(r"[^:,{}\[\]<]*+")
_BARE = re.compile(r"[^,{}\[\]<]*+")


def read(reply: Reply) -> Decision | None:
    """The decision Gemma's call formats make of the reply, or None when none is there."""
    body = until_stop(reply.body)
    for reader in (_function_gemma, _tool_code, _default_api):
        decision = reader(body, reply.reasoning)
        if decision is not None:
            return decision
    return None


# -- FunctionGemma ------------------------------------------------------------------------------


class _Unreadable(Exception):
    """A FunctionGemma call that cannot be read; the message says why."""


def _function_gemma(body: str, reasoning: str) -> Decision | None:
    start = body.find(START_CALL)
    if start < 0 and not _BARE_CALL.match(body):
        return None
    start = max(start, 0)
    if follows_react(body, start):
        return None
    thought = body[:start].strip() or reasoning
    response = body.find(START_RESPONSE, start)
    text = body[start : response if response >= 0 else len(body)]
    try:
        found = _Calls(text).read()
    except _Unreadable as exc:
        return error(
            f"Your {_FUNCTIONGEMMA} could not be read: {exc}. Write it as "
            f"{START_CALL}{_FUNCTIONGEMMA_EXAMPLE}{END_CALL}.",
            thought,
        )
    return calls(found, thought, _FUNCTIONGEMMA)


class _Calls:
    """A scanner over FunctionGemma calls; every step moves forward, so it is linear."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def read(self) -> list[Found]:
        """Every ``call:NAME{…}`` in the text, in order, until something else follows."""
        found: list[Found] = []
        while True:
            self._space()
            self._token(START_CALL)
            self._space()
            if not self.text.startswith(CALL_PREFIX, self.at):
                if found:
                    return found  # prose after the calls
                raise _Unreadable(f"{START_CALL} was not followed by {CALL_PREFIX}NAME{{…}}")
            self.at += len(CALL_PREFIX)
            brace = self.text.find("{", self.at)
            if brace < 0:
                raise _Unreadable("the arguments after the tool's name did not open with '{'")
            name = self.text[self.at : brace]
            self.at = brace
            found.append(Found(name, self._object(0)))
            self._space()
            self._token(END_CALL)
            self._space()
            if not self.text.startswith((START_CALL, CALL_PREFIX), self.at):
                return found

    def _object(self, depth: int) -> dict[str, Any]:
        self._open("{", depth)
        out: dict[str, Any] = {}
        self._space()
        if self._token("}"):
            return out
        while True:
            key = self._key()
            out[key] = self._value(depth)
            self._space()
            if self._token("}"):
                return out
            if not self._token(","):
                raise _Unreadable(f"expected ',' or '}}' after the value of {key!r}")

    def _list(self, depth: int) -> list[Any]:
        self._open("[", depth)
        out: list[Any] = []
        self._space()
        if self._token("]"):
            return out
        while True:
            out.append(self._value(depth))
            self._space()
            if self._token("]"):
                return out
            if not self._token(","):
                raise _Unreadable("expected ',' or ']' in a list")

    def _open(self, bracket: str, depth: int) -> None:
        if depth >= _MAX_DEPTH:
            raise _Unreadable("the arguments were nested too deeply")
        self.at += len(bracket)

    def _key(self) -> str:
        self._space()
        if self.text.startswith(ESCAPE, self.at):
            key = self._escaped()
        else:
            end = _KEY.match(self.text, self.at).end()  # type: ignore[union-attr]
            key = self.text[self.at : end].strip()
            self.at = end
        self._space()
        if not key or not self._token(":"):
            raise _Unreadable("an argument was not written as name:value")
        return key

    def _value(self, depth: int) -> Any:
        self._space()
        if self.text.startswith(ESCAPE, self.at):
            return self._escaped()
        if self.text.startswith("{", self.at):
            return self._object(depth + 1)
        if self.text.startswith("[", self.at):
            return self._list(depth + 1)
        end = _BARE.match(self.text, self.at).end()  # type: ignore[union-attr]
        word = self.text[self.at : end].strip()
        self.at = end
        if not word:
            raise _Unreadable("a value was missing")
        return _bare(word)

    def _escaped(self) -> str:
        opened = self.at + len(ESCAPE)
        closed = self.text.find(ESCAPE, opened)
        if closed < 0:
            raise _Unreadable(f"a text value opened with {ESCAPE} was never closed")
        self.at = closed + len(ESCAPE)
        return self.text[opened:closed]

    def _token(self, token: str) -> bool:
        if self.text.startswith(token, self.at):
            self.at += len(token)
            return True
        return False

    def _space(self) -> None:
        self.at = _SPACE.match(self.text, self.at).end()  # type: ignore[union-attr]


def _bare(word: str) -> Any:
    """A number, true, false or null written bare; any other word is text."""
    try:
        return json.loads(word)
    except ValueError:
        return word


# -- tool_code blocks and default_api lines -----------------------------------------------------


def _tool_code(body: str, reasoning: str) -> Decision | None:
    first = body.find(TOOL_CODE)
    if first < 0 or follows_react(body, first):
        return None
    thought = body[:first].strip() or reasoning
    invented = body.find(TOOL_OUTPUT, first)
    text = body[: invented if invented >= 0 else len(body)]
    found: list[Found] = []
    at = first
    while at >= 0:
        line_end = text.find("\n", at)
        opened = line_end + 1 if line_end >= 0 else len(text)
        closed = text.find("```", opened)
        read = _statements(text[opened : closed if closed >= 0 else len(text)], "tool_code block")
        if isinstance(read, str):
            return error(read, thought)
        found.extend(read)
        at = text.find(TOOL_CODE, closed + 3) if closed >= 0 else -1
    return calls(found, thought, "tool_code call")


def _default_api(body: str, reasoning: str) -> Decision | None:
    line = _DEFAULT_API_LINE.search(body)
    if line is None or follows_react(body, line.start()):
        return None
    thought = body[: line.start()].strip() or reasoning
    source = body[line.start() :].strip()
    source = source.removesuffix("```")
    read = _statements(source, f"{NAMESPACE} call")
    if isinstance(read, str):
        return error(read, thought)
    return calls(read, thought, f"{NAMESPACE} call")


def _statements(source: str, where: str) -> list[Found] | str:
    """The calls in Python source, one per statement, or feedback."""
    if not source.strip():
        return f"Your {where} was empty. Write one call per line, e.g. {_PYTHON_EXAMPLE}."
    if len(source) > MAX_LITERAL or too_dense(source):
        return f"Your {where} was too long to read. Write one call per line."
    try:
        tree = ast.parse(textwrap.dedent(source.strip("\n")), mode="exec")
    except SyntaxError as exc:
        return (
            f"Your {where} was not valid Python: {exc.msg} (line {exc.lineno}). Write one "
            f"call per line, e.g. {_PYTHON_EXAMPLE}."
        )
    except (ValueError, RecursionError, MemoryError):
        return f"Your {where} could not be read. Write one call per line, e.g. {_PYTHON_EXAMPLE}."
    found: list[Found] = []
    for node in _call_nodes(tree.body):
        one = _found(node)
        if not isinstance(one, Found):
            return one or (
                f"Your {where} held something other than tool calls. Write only calls, one "
                f"per line, e.g. {_PYTHON_EXAMPLE}."
            )
        found.append(one)
    return found or f"Your {where} held no call. Write one, e.g. {_PYTHON_EXAMPLE}."


def _call_nodes(statements: list[ast.stmt]) -> list[ast.expr | ast.stmt]:
    """What each statement holds: its expression, or each item of a list of calls."""
    nodes: list[ast.expr | ast.stmt] = []
    for statement in statements:
        value = statement.value if isinstance(statement, ast.Expr) else None
        if isinstance(value, ast.List) and value.elts:
            nodes.extend(value.elts)  # `[f(a=1), g(b=2)]`, the prompt-based list format
        else:
            nodes.append(value if value is not None else statement)
    return nodes


def _found(node: ast.expr | ast.stmt) -> Found | str | None:
    """The call a node makes, unwrapping ``print(…)``; None when it is no call."""
    if not isinstance(node, ast.Call):
        return None
    call = node
    inner = call.args[0] if len(call.args) == 1 else None
    if (
        isinstance(call.func, ast.Name)
        and call.func.id == "print"
        and not call.keywords
        and isinstance(inner, ast.Call)
    ):
        call = inner
    return found_in_call(call, namespace=NAMESPACE)
