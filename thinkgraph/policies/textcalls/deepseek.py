"""DeepSeek's native tool-call tokens (V3, R1, V3.1).

Source: the chat templates of DeepSeek-V3 / R1 and DeepSeek-V3.1 on their model cards, and
vLLM's ``deepseek_v3`` / ``deepseek_v31`` tool parsers.

- V3 and R1: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME``, a
  newline, the arguments in a ```` ```json ```` fence, ``<｜tool▁call▁end｜>``; more calls;
  ``<｜tool▁calls▁end｜>``.
- V3.1: ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>`` inside the same
  ``<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>`` block.

The bars are full-width (｜) and the word separators are ▁; some decoders write ASCII ``|``
and ``_`` instead, and either is read. A reply stopped before its end tokens keeps the
calls it holds. R1's ``<think>`` block is already out (`textcalls._reasoning`): it is the
thought, and a call drafted inside it is never made; else the text before the block is.

The tokens are read only when the reply holds ``tool▁calls▁begin``, or a ``tool▁call▁begin``
together with a ``tool▁sep``: other families' ASCII tokens (Kimi's
``<|tool_calls_section_begin|>``, Phi's ``<|tool_call|>``) are left to their readers.
"""

from __future__ import annotations

import re

from thinkgraph.policies._react_format import quoted
from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls._common import Found, Reply, calls, error, json_prefix

__all__ = ["read"]


def _token(words: str) -> re.Pattern[str]:
    separator = "[▁_]"
    return re.compile(r"<[｜|]" + separator.join(words.split()) + r"[｜|]>")


_CALLS_BEGIN = _token("tool calls begin")
_CALLS_END = _token("tool calls end")
_CALL_BEGIN = _token("tool call begin")
_CALL_END = _token("tool call end")
_SEP = _token("tool sep")
_CALL_MARK = re.compile(f"(?P<begin>{_CALL_BEGIN.pattern})|{_CALL_END.pattern}")
_V3_NAME = re.compile(r"\s*+([^\s`{\[]*+)")

_WHERE = "DeepSeek tool call"
_SHAPE = "Write <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜> for each call."


def read(reply: Reply) -> Decision | None:
    """The calls in DeepSeek's tool-call block, feedback when they cannot be read, or None."""
    body = reply.body
    block = _block(body)
    if block is None:
        return None
    before, start, end = block
    thought = reply.reasoning or body[:before].strip()
    texts = _call_texts(body[start:end])
    if not texts:
        return error(f"Your reply's DeepSeek tool-call block held no call. {_SHAPE}", thought)
    found: list[Found] = []
    for text in texts:
        one = _one_call(text)
        if isinstance(one, str):
            return error(one, thought)
        found.append(one)
    return calls(found, thought, _WHERE)


def _block(body: str) -> tuple[int, int, int] | None:
    """Where the block opens, and its calls: after ``tool▁calls▁begin`` up to its end token.

    Without the end token the calls run to the end of the reply.
    """
    begin = _CALLS_BEGIN.search(body)
    if begin is not None:
        before, start = begin.start(), begin.end()
    else:
        call = _CALL_BEGIN.search(body)
        if call is None or _SEP.search(body, call.end()) is None:
            return None
        before = start = call.start()
    close = _CALLS_END.search(body, start)
    return before, start, close.start() if close is not None else len(body)


def _call_texts(block: str) -> list[str]:
    """The text of each call in the block, between ``tool▁call▁begin`` and its end."""
    texts: list[str] = []
    open_at: int | None = None
    for mark in _CALL_MARK.finditer(block):
        if open_at is not None:
            texts.append(block[open_at : mark.start()])
        open_at = mark.end() if mark.group("begin") else None
    if open_at is not None:
        texts.append(block[open_at:])
    if not texts and _SEP.search(block):
        texts.append(block)  # the call tokens are missing, the separator is there
    return texts


def _one_call(text: str) -> Found | str:
    """One call, V3 (``function<sep>NAME`` and fenced JSON) or V3.1 (``NAME<sep>{…}``)."""
    sep = _SEP.search(text)
    if sep is None:
        return (
            f"Your DeepSeek tool call {quoted(text)} had no <｜tool▁sep｜> between the "
            f"tool's name and its arguments. {_SHAPE}"
        )
    left, right = text[: sep.start()].strip(), text[sep.end() :]
    if left == "function" and not right.lstrip().startswith(("{", "[", "`")):
        named = _V3_NAME.match(right)
        assert named is not None  # the pattern matches every text
        name, args = named.group(1), right[named.end() :]
    else:
        name, args = left, right
    return Found(name, _arguments(args))


def _arguments(text: str) -> object:
    """The arguments without their fence; a JSON object followed by more text keeps the object."""
    text = text.strip()
    if text.startswith("`"):
        text = text.lstrip("`")
        if text.startswith("json"):
            text = text[len("json") :]
        text = text.rstrip().rstrip("`").strip()
    prefix = json_prefix(text) if text.startswith("{") else None
    return prefix[0] if prefix is not None else text
