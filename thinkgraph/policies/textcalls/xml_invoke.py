"""XML invoke tool calls: ``<function_calls>`` / ``<invoke name=…>``, MiniMax-M2, legacy tags.

The formats, and where they are described:

- **Invoke blocks** (Anthropic's XML tool use, which open models tuned on agent transcripts
  write too)::

      <function_calls>
      <invoke name="get_weather">
      <parameter name="city">Rome</parameter>
      </invoke>
      </function_calls>

  Several invokes in a block, or several blocks, are several calls, in order. Tags may carry
  a namespace prefix (``<x:function_calls>``, ``<x:invoke>``, ``<x:parameter>``), attributes
  may be single-quoted, and the closing ``</function_calls>`` is often missing: it is the
  stop sequence.
- **MiniMax-M2** (the MiniMax-M2 tool-calling guide, ``docs/tool_calling_guide.md`` of the
  model repository; vLLM's ``minimax_m2`` tool parser): the same invokes wrapped in
  ``<minimax:tool_call>…</minimax:tool_call>``, after the model's ``<think>`` block.
- **Legacy tags** (Anthropic's "Legacy tool use" page, the Claude 2.1 format):
  ``<tool_name>NAME</tool_name>`` then ``<parameters>…</parameters>``, inside an ``<invoke>``
  without a name or on their own. The parameters are one JSON object, or one child tag per
  argument (``<parameters><city>Rome</city></parameters>``).

An argument's value is read by `tag_value` (the rule Qwen3-Coder's and GLM-4.5's tags follow
too, see `thinkgraph.policies.textcalls.hermes`): chat templates write a string argument as
its text and any other argument as JSON, so a value that is wholly a JSON number, ``true``,
``false``, ``null``, object or array is that value, and anything else is the text. A quoted
``"Rome"`` stays text, quotes and all: templates never quote a string. Without the tool's
schema a string of digits (a zip code) is read as a number, which the tool's validation then
reports.

What is not read as a call: a drafted block inside ``<think>`` (taken out before any reader
runs); a block that holds no invoke is feedback when closed, and a mention of the tag in
prose (never closed, nothing call-like after it) is left to the other formats. An invoke
without a name, a parameter given twice or legacy parameters that are not one object are
feedback naming the tag.
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

from thinkgraph.policies._react_format import quoted
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

__all__ = ["read", "tag_value"]

_TAG = re.compile(
    r"<(?P<close>/?)[ \t]*+(?P<ns>[A-Za-z_][\w.-]{0,40}+:)?+"
    r"(?P<tag>function_calls|invoke|parameters|parameter|tool_name|(?<=:)tool_call)"
    r"(?P<attrs>(?:\s[^<>]{0,300}+)?+)>",
    re.IGNORECASE,
)
"""The tags this format is made of; a ``tool_call`` only with a namespace (MiniMax's)."""

_NAME_ATTR = re.compile(r"""\bname\s*+=\s*+(?:"([^"]*+)"|'([^']*+)'|([^\s"'>/]++))""")

_CHILD = re.compile(r"\s*+<([A-Za-z_][\w.-]{0,63}+)\s*+>")
"""A legacy parameter's opening tag: ``<city>``."""

_WRAPPERS = frozenset({"function_calls", "tool_call"})
_WRAPPER_ENDS = frozenset({"/function_calls", "/tool_call"})
_INVOKE_ENDS = frozenset({"/invoke", "invoke", *_WRAPPER_ENDS})
_CALL_STARTS = frozenset({"invoke", "tool_name"})


def read(reply: Reply) -> Decision | None:
    """The calls in a reply's invoke blocks or legacy tags, or None when it has none."""
    body = reply.body
    tokens = [_Token.of(m) for m in _TAG.finditer(body)]
    reading = _Reading(body, tokens)
    return reading.decide(reply.reasoning)


class _Token(NamedTuple):
    """One tag of the format where it stands in the reply."""

    kind: str
    """The tag's name in lower case, after a ``/`` for a closing tag: ``invoke``, ``/invoke``."""
    ns: str
    attrs: str
    start: int
    end: int

    @classmethod
    def of(cls, match: re.Match[str]) -> _Token:
        close, ns, tag, attrs = match.group("close", "ns", "tag", "attrs")
        return cls(close + tag.lower(), ns or "", attrs, match.start(), match.end())

    @property
    def name(self) -> str | None:
        """The ``name`` attribute of the tag, if it has one."""
        attr = _NAME_ATTR.search(self.attrs) if self.attrs else None
        return None if attr is None else next(g for g in attr.groups() if g is not None)

    @property
    def shown(self) -> str:
        """The tag as feedback names it, e.g. ``<invoke>``."""
        return f"<{self.ns}{self.kind}>"


class _Bad(Exception):
    """A block that cannot be read as calls; its message is the feedback."""


class _Reading:
    """One pass over the tags of a reply, collecting its calls in order."""

    def __init__(self, body: str, tokens: list[_Token]) -> None:
        self.body = body
        self.tokens = tokens
        self.found: list[Found] = []
        self.first: int | None = None
        """Where the first call (or failed call) starts: the text before it is the thought."""
        self.where: str | None = None
        """How feedback names the format: the tag of the first call."""

    def decide(self, reasoning: str) -> Decision | None:
        try:
            self._walk()
        except _Bad as bad:
            return error(str(bad), self._thought(reasoning))
        if not self.found:
            return None
        return calls(self.found, self._thought(reasoning), self.where or "<invoke>")

    def _thought(self, reasoning: str) -> str:
        if reasoning:
            return reasoning
        return self.body[: self.first].strip() if self.first is not None else ""

    def _mark(self, token: _Token, where: str | None = None) -> None:
        """The reply's calls start at `token` (if none started before), written as `where`."""
        if self.first is None:
            self.first = token.start
        if where is not None and self.where is None:
            self.where = where

    def _walk(self) -> None:
        i = 0
        while i < len(self.tokens):
            token = self.tokens[i]
            if token.kind == "invoke":
                i = self._invoke(i)
            elif token.kind == "tool_name" and self._kind(i + 1) == "/tool_name":
                self._mark(token, "<tool_name>")
                i = self._legacy(i, len(self.tokens))
            elif token.kind in _WRAPPERS:
                i = self._wrapper(i)
            else:
                i += 1

    def _kind(self, i: int) -> str:
        """The kind of tokens[i], or "" past the last token."""
        return self.tokens[i].kind if i < len(self.tokens) else ""

    # -- blocks ------------------------------------------------------------------------------

    def _wrapper(self, i: int) -> int:
        """A ``<function_calls>`` (or MiniMax) block: its invokes, or JSON calls, or feedback."""
        opening = self.tokens[i]
        j = i + 1
        while j < len(self.tokens) and self.tokens[j].kind not in _WRAPPER_ENDS:
            if self.tokens[j].kind in _CALL_STARTS:
                self._mark(opening)  # the thought is the text before the block
                return i + 1  # the invokes inside are read one by one
            if self.tokens[j].kind in _WRAPPERS:
                break
            j += 1
        closed = self._kind(j)[:1] == "/"
        content = self.body[opening.end : self._end_of(j)]
        stripped = content.strip()
        call_like = stripped.startswith(("{", "["))
        if not closed and not call_like:
            return j  # the tag named in prose, not a block
        self._mark(opening, opening.shown)
        value = load_value(stripped) if call_like else NOT_A_VALUE
        found = None if value is NOT_A_VALUE else call_shaped(value, strict=True)
        if found is None:
            raise _Bad(
                f'Your {opening.shown} block held no <invoke name="…"> call. Write each '
                'call as <invoke name="TOOL"><parameter name="ARG">value</parameter></invoke>.'
            )
        self.found.extend(found)
        return j + 1 if closed else j

    def _invoke(self, i: int) -> int:
        """One ``<invoke>``: its parameters, or legacy tags inside it."""
        opening = self.tokens[i]
        end = i + 1
        while end < len(self.tokens) and self.tokens[end].kind not in _INVOKE_ENDS:
            end += 1
        closes = self._kind(end) == "/invoke"
        name = opening.name
        if name is not None:
            self._mark(opening, opening.shown)
            self.found.append(Found(name, self._parameters(i + 1, end)))
        elif end > i + 1 or closes:
            self._nameless(i, end, closes)
        # else: an unclosed <invoke> with nothing after it is the tag named in prose
        return end + 1 if closes else end

    def _nameless(self, i: int, end: int, closes: bool) -> None:
        """An ``<invoke>`` without a name: legacy ``<tool_name>`` tags inside it, or feedback."""
        opening = self.tokens[i]
        legacy = None
        for k in range(i + 1, end):
            if self.tokens[k].kind == "tool_name":
                legacy = k
                break
        named = legacy is not None and self._kind(legacy + 1) == "/tool_name"
        if not named and not closes:
            return  # the tag named in prose, not a call
        self._mark(opening, opening.shown)
        if legacy is None:
            raise _Bad(
                f'Your {opening.shown} had no name. Write <invoke name="TOOL"> with the '
                "name of one of your tools."
            )
        self._legacy(legacy, end)

    def _parameters(self, start: int, end: int) -> dict[str, Any]:
        """The ``<parameter name=…>`` values among tokens[start:end]."""
        args: dict[str, Any] = {}
        k = start
        while k < end:
            token = self.tokens[k]
            k += 1
            if token.kind != "parameter":
                continue
            name = token.name
            if name is None:
                raise _Bad(f'Your {token.shown} had no name. Write <parameter name="ARG">.')
            stop = self.tokens[k].start if k < end else self._end_of(end)
            if name in args:
                raise _Bad(
                    f"Your <invoke> gave the argument {quoted(name)} twice. Give each "
                    "argument once."
                )
            args[name] = tag_value(self.body[token.end : stop])
            if k < end and self.tokens[k].kind == "/parameter":
                k += 1
        return args

    def _end_of(self, end: int) -> int:
        """Where the text of tokens[:end] stops: the next token, or the end of the reply."""
        return self.tokens[end].start if end < len(self.tokens) else len(self.body)

    def _legacy(self, i: int, end: int) -> int:
        """``<tool_name>NAME</tool_name>`` and optional ``<parameters>`` from tokens[i]."""
        opening = self.tokens[i]
        if i + 1 >= end or self._kind(i + 1) != "/tool_name":
            raise _Bad("Your <tool_name> was not closed. Write <tool_name>TOOL</tool_name>.")
        name = self.body[opening.end : self.tokens[i + 1].start]
        k = i + 2
        if k < end and self.tokens[k].kind == "parameters":
            args, k = self._legacy_parameters(k, end)
        else:
            args = {}
        self.found.append(Found(name, args))
        return k

    def _legacy_parameters(self, k: int, end: int) -> tuple[Any, int]:
        """The arguments in ``<parameters>…</parameters>`` at tokens[k], and the next token."""
        opening = self.tokens[k]
        close = k + 1
        while close < end and self.tokens[close].kind != "/parameters":
            close += 1
        if close >= end:
            raise _Bad("Your <parameters> was not closed. End it with </parameters>.")
        content = self.body[opening.end : self.tokens[close].start].strip()
        args = load_value(content) if content.startswith("{") else _children(content)
        if not isinstance(args, dict):
            raise _Bad(
                "Your <parameters> did not hold one JSON object or one tag per argument. "
                "Write <parameters><ARG>value</ARG></parameters>."
            )
        return args, close + 1


def _children(content: str) -> dict[str, Any] | None:
    """Legacy parameters as child tags, ``<city>Rome</city>…``; None for anything else."""
    args: dict[str, Any] = {}
    pos = 0
    while pos < len(content):
        tag = _CHILD.match(content, pos)
        if tag is None:
            return None if content[pos:].strip() else args
        key = tag.group(1)
        closing = content.find(f"</{key}>", tag.end())
        if closing < 0 or key in args:
            return None
        args[key] = tag_value(content[tag.end() : closing])
        pos = closing + len(key) + 3
    return args


def tag_value(text: str) -> Any:
    """An argument's value as a tag holds it: JSON when it is wholly JSON, else the text.

    The text loses one blank first line and one blank last line (templates put a value on
    lines of its own) and keeps every other newline and space. A JSON number, ``true``,
    ``false``, ``null``, object or array is read as that value (objects and arrays also in
    Python-literal quoting); a JSON string, ``NaN`` or ``Infinity`` stays text.
    """
    text = _trim_blank_lines(text)
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        value = load_value(stripped)
        return value if isinstance(value, (dict, list)) else text
    if stripped in ("true", "false", "null") or (stripped and stripped[0] in "-0123456789"):
        parsed = json_prefix(stripped)
        if parsed is not None and parsed[1] == len(stripped) and _storable(parsed[0]):
            return parsed[0]
    return text


def _storable(value: Any) -> bool:
    """A scalar a run can hold: no NaN or infinity, no integer wider than 64 bits."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return -(2**63) <= value < 2**63
    return True


def _trim_blank_lines(text: str) -> str:
    first = text.find("\n")
    if first >= 0 and not text[:first].strip():
        text = text[first + 1 :]
    last = text.rfind("\n")
    if last >= 0 and not text[last + 1 :].strip():
        text = text[:last]
        if text.endswith("\r"):
            text = text[:-1]
    return text
