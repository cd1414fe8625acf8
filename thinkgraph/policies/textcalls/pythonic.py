"""Pythonic tool calls (Llama 3.2, 3.3 and 4): a list of Python calls with named arguments.

Formats read:

- A whole reply that is a list of calls, ``[get_weather(city="Rome"), search(query='x')]``
  — the format Meta's Llama 3.2 and Llama 4 prompt-format documentation gives for zero-shot
  function calling, and the one vLLM's ``pythonic`` and ``llama4_pythonic`` tool parsers read.
  One call outside a list, ``get_weather(city="Rome")``, is read the same way, and so are
  calls one per line or separated by ``;`` (the shapes vLLM's parser notes Llama 3.2 writes).
- Llama 4's ``<|python_start|>…<|python_end|>`` around the list (vLLM's ``llama4_pythonic``
  parser drops these tokens); text before it is the thought, and the end token may be missing.
  Several such blocks are every call in them, in order.

Rules:

- The text is parsed with `ast`, never evaluated. Arguments must be named (``city="Rome"``)
  and their values literals (`_common.literal`: strings, numbers, true/false/null in Python
  or JSON spelling, lists, dicts). A positional literal (``get_weather("Rome")``), a
  ``**spread`` or a named argument whose value is a name or an expression is feedback — never
  a call with made-up argument names. A positional argument that is not a literal
  (``f(x)``, ``Yes (definitely)``) makes the text code or prose, not a call: None.
- A tool name is a plain name. A dotted name (``math.sqrt(x=2)``) is not read here: Gemma's
  ``default_api.NAME`` is `thinkgraph.policies.textcalls.gemma`'s, and Llama 3.1's built-in
  ``brave_search.call(…)`` is `thinkgraph.policies.textcalls.llama`'s.
- Without the Llama 4 tokens, only the whole reply is read (after stop tokens such as
  ``<|eot_id|>`` are cut off): a list that holds anything but calls (``[1, 2, 3]``), prose that
  mentions ``f(x)`` or a call inside an expression is not a call. The parser does not know the
  agent's tools, so a whole reply ``print(text="hi")`` is a call to ``print``, which act then
  reports as a tool the agent does not have; ``print("hi")`` and ``max(3, 4)`` pass literal
  arguments by position and are feedback.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls._common import (
    MAX_LITERAL,
    NOT_A_VALUE,
    Found,
    Reply,
    calls,
    error,
    literal,
)

__all__ = [
    "STOP_TOKENS",
    "follows_react",
    "found_in_call",
    "parse_calls",
    "read",
    "read_marked",
    "too_dense",
    "until_stop",
]

STOP_TOKENS = (
    "<|eot_id|>",
    "<|eom_id|>",
    "<|eot|>",
    "<|eom|>",
    "<|end_of_text|>",
    "<end_of_turn>",
    "<eos>",
)
"""Tokens that end a turn (Llama 3, Llama 4, Gemma); text after one is not part of the reply."""

START = "<|python_start|>"
END = "<|python_end|>"

_WHERE = "Python-style call"

_EXAMPLE = '[get_weather(city="Rome")]'

# A ReAct key at the start of a line: a marker after it is in ReAct's text (an input, an
# answer that shows a call), so ReAct reads the reply.
_REACT_KEY = re.compile(
    r"^[ \t]*+[-*#>_ \t]*+(?:final[ _]answer|action)[ \t*_]*+[:：]", re.IGNORECASE | re.MULTILINE
)

MAX_PIECES = 5_000
"""The most separators (``,``, ``=``, ``:``, ``.`` and openers) a reply read as Python may hold."""

_PIECE_MARKS = (",", "=", ":", ".", "(", "[", "{")

# A cheap first look before parsing: a name, alone or first in a list (not `[{`, not `[1`).
_SHAPE = re.compile(r"\[?+\s*+[A-Za-z_]")


def read(reply: Reply) -> Decision | None:
    """The calls when the whole reply is a list of calls or one call, else None."""
    found = parse_calls(until_stop(reply.body))
    if found is None:
        return None
    if isinstance(found, str):
        return error(found, reply.reasoning)
    return calls(found, reply.reasoning, _WHERE)


def read_marked(reply: Reply) -> Decision | None:
    """The calls in Llama 4's ``<|python_start|>`` blocks, or None when there is none."""
    body = reply.body
    start = body.find(START)
    if start < 0 or follows_react(body, start):
        return None
    thought = body[:start].strip() or reply.reasoning
    found: list[Found] = []
    for block in _blocks(body, start):
        read = parse_calls(block.strip())
        if read is None:
            return error(
                f"Your {START} block did not hold tool calls. Write them as a list of calls "
                f"whose arguments are named, e.g. {_EXAMPLE}.",
                thought,
            )
        if isinstance(read, str):
            return error(read, thought)
        found.extend(read)
    return calls(found, thought, f"{START} call")


def _blocks(body: str, start: int) -> list[str]:
    """The text of each ``<|python_start|>`` block from `start`, up to its end token if any."""
    blocks: list[str] = []
    for segment in until_stop(body[start:]).split(START)[1:]:
        end = segment.find(END)
        block = segment if end < 0 else segment[:end]
        if block.strip():
            blocks.append(block)
    return blocks or [""]


def follows_react(body: str, at: int) -> bool:
    """Whether a ReAct ``Action:`` or ``Final Answer:`` line comes before `at` in `body`."""
    return _REACT_KEY.search(body, 0, at) is not None


def until_stop(text: str) -> str:
    """`text` up to its first stop token (`STOP_TOKENS`), stripped."""
    cut = len(text)
    for token in STOP_TOKENS:
        at = text.find(token, 0, cut)
        if at >= 0:
            cut = at
    return text[:cut].strip()


def too_dense(text: str) -> bool:
    """Whether `text` has more separators than any tool call needs (`MAX_PIECES`).

    Python's parser is linear but slow on text dense with tokens (about a microsecond a
    byte); counting is fast, so 100 KB of ``f(a=1), `` is refused before it is parsed.
    """
    return sum(text.count(mark) for mark in _PIECE_MARKS) > MAX_PIECES


def parse_calls(text: str, *, method: str | None = None) -> list[Found] | str | None:
    """The calls when all of `text` is a list of calls, or calls one per line or ``;``.

    Args:
        text: The text to read, stripped.
        method: A method name that marks a call by its object's name, e.g. ``"call"`` for
            Llama 3.1's built-in ``brave_search.call(query=…)``.

    Returns:
        The calls; feedback (a str) when the text is calls but their arguments cannot be
        read; None when the text is not shaped like calls.
    """
    if not text or len(text) > MAX_LITERAL or not _SHAPE.match(text):
        return None
    if not text.endswith(("]", ")", ";")) or too_dense(text):
        return None
    try:
        tree = ast.parse(text, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    items = _call_nodes(tree.body)
    if items is None:
        return None
    found: list[Found] = []
    for item in items:
        one = found_in_call(item, method=method)
        if not isinstance(one, Found):
            return one
        found.append(one)
    return found


def _call_nodes(statements: Sequence[ast.stmt]) -> list[ast.Call] | None:
    """The calls when the statements are one list of calls or calls alone, else None."""
    values = [s.value if isinstance(s, ast.Expr) else None for s in statements]
    if len(values) == 1 and isinstance(values[0], ast.List):
        values = list(values[0].elts)
    calls_only = [value for value in values if isinstance(value, ast.Call)]
    if not calls_only or len(calls_only) != len(values):
        return None
    return calls_only


def found_in_call(
    call: ast.Call, *, namespace: str | None = None, method: str | None = None
) -> Found | str | None:
    """The call a Python call expression makes, feedback for its arguments, or None.

    Args:
        call: The parsed call.
        namespace: An object whose attributes are the tools, e.g. ``"default_api"``.
        method: A method whose object is the tool, e.g. ``"call"`` in ``brave_search.call()``.

    Returns:
        The call; feedback (a str) when an argument is positional or not a value; None when
        the callee is not a tool name (a dotted name outside `namespace` / `method`) or a
        positional argument is not a literal (``f(x)`` is code or prose, not a tool call).
    """
    name = _callee(call.func, namespace=namespace, method=method)
    if name is None:
        return None
    if any(literal(arg) is NOT_A_VALUE for arg in call.args):
        return None  # `f(x)`, `Yes (definitely)`: code or prose, not a call to a tool
    if call.args or any(keyword.arg is None for keyword in call.keywords):
        return (
            f"Your call to {name!r} passed arguments without their names. A tool's arguments "
            f'must be named: name each argument, e.g. {name}(city="Rome").'
        )
    args = {}
    for keyword in call.keywords:
        assert keyword.arg is not None
        value = literal(keyword.value)
        if value is NOT_A_VALUE:
            return (
                f"The argument {keyword.arg!r} of your call to {name!r} was not a value. Write "
                "each argument as a string, number, true, false, null, list or object, e.g. "
                f'{name}({keyword.arg}="Rome").'
            )
        args[keyword.arg] = value
    return Found(name, args)


def _callee(func: ast.expr, *, namespace: str | None, method: str | None) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if namespace is not None and func.value.id == namespace:
            return func.attr
        if method is not None and func.attr == method:
            return func.value.id
    return None
