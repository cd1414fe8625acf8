"""IBM Granite 3.x and Microsoft Phi-4-mini: a JSON list of calls after a marker, and
Granite's thought-process / response answers.

Formats, with their sources:

- Granite 3.0–3.3: ``<|tool_call|>[{"name": …, "arguments": {…}}, …]`` — the
  granite-3.x-instruct chat templates tell the model to "respond with <|tool_call|>
  followed by a JSON list of tools used"; Granite 3.1's model card notes the model writes
  the tag as text, ``<tool_call>[…]`` (the list form only: ``<tool_call>{…}`` objects are
  Hermes's, `textcalls.hermes`).
- Phi-4-mini: ``functools[{"name": …, "arguments": {…}}, …]`` (vLLM's ``phi4_mini_json``
  tool parser: the literal ``functools`` then a JSON list), and
  ``<|tool_call|>[…]<|/tool_call|>`` (its Ollama template); ``<|tool_calls|>`` likewise.
- Granite's thinking mode: ``Here is my thought process: … Here is my response: …``
  (vLLM's granite reasoning parser, which also accepts ``Here's``): the text before the
  response is the thought, the response is read as a reply of its own — a call or an
  answer in any format, or, when it is prose, the answer. Granite 3.3 writes
  ``<think>…</think><response>…</response>``: the response tags are read the same way.

A list holds every call, in order; each item names the tool and its arguments
(``"arguments"`` or ``"parameters"``; none for a tool without arguments). Text before the
marker is the thought; text after the list is ignored. Anything else after a marker is
feedback: never a call read from JSON that is not a call.
"""

from __future__ import annotations

import re
from typing import Any

from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls._common import (
    NOT_A_VALUE,
    Found,
    Reply,
    answer,
    call_shaped,
    calls,
    error,
    json_prefix,
    load_value,
)
from thinkgraph.policies.textcalls._reasoning import split_reasoning
from thinkgraph.policies.textcalls.react import read_react

__all__ = ["read_calls", "read_response", "read_rest"]

_THOUGHT = "my thought process"
_RESPONSE = "my response"
# What comes before a marker's phrase, read on a short slice: "Here is " / "Here's ".
_HERE = re.compile(r"(?:^|(?<=[^\w]))here(?:[ \t]++is|['’]s)[ \t]++$", re.IGNORECASE)
_COLON = re.compile(r"[ \t]*+:")
_HERE_REACH = 16

_TOKENS = ("<|tool_call|>", "<|tool_calls|>")  # Granite, Phi-4-mini
_TAG = "<tool_call>"  # Granite 3.1 writing the token as text; objects in it are Hermes's
_FUNCTOOLS = "functools["  # Phi-4-mini
_LIST_AHEAD = re.compile(r"\s*+\[")
_BETWEEN = re.compile(r"\s*+(?:<\|/tool_calls?\|>|</tool_call>)?+\s*+")
_FENCE = re.compile(r"\s*+```[A-Za-z]*+[ \t]*+\n?")
_CLOSERS = ("<|/tool_call|>", "<|/tool_calls|>", "</tool_call>")
_SPACE = re.compile(r"\s++")
_RESPONSE_TAG = "<response>"
_NAME_ONLY = frozenset({"name", "id", "type"})


def read_response(reply: Reply) -> Decision | None:
    """Granite's thought process and response, read as the decision the response makes.

    Reads the whole reply: the response may be a ReAct reply of its own.
    """
    body = reply.body
    split = _thought_and_response(body)
    if split is not None:
        thought, response = split
        return _response_decision(reply, response, _joined(reply.reasoning, thought))
    tagged = _response_tags(body)
    if tagged is not None:
        return _response_decision(reply, tagged, reply.reasoning)
    return None


def read_calls(reply: Reply) -> Decision | None:
    """The calls after Granite's or Phi-4-mini's markers, or None when there are none."""
    return _tool_calls(reply.body, reply.reasoning)


def read_rest(reply: Reply, text: str, thought: str) -> Decision | None:
    """The decision the whole parser makes of `text`, with `thought`; None for plain prose.

    For formats whose own reasoning comes before a reply written in any format: the
    reasoning is the thought, and prose (no format decided anything) is left to the caller.
    The parser is the one reading `reply` (`Reply.reread`); without one, only ReAct.
    """
    if reply.reread is None:
        decision, _ = read_react(split_reasoning(text))
    else:
        decision = reply.reread(text)
    if decision.kind == "error":
        fallback, decided = read_react(split_reasoning(text))
        if not decided and decision.error == fallback.error:
            return None
    if thought.strip():
        decision = decision.model_copy(update={"thought": thought.strip()})
    return decision


# -- answers ----------------------------------------------------------------------------------


def _thought_and_response(body: str) -> tuple[str, str] | None:
    """The thought process and the response, when both markers are there."""
    thought = _marker(body, _THOUGHT, 0)
    if thought is None:
        return None
    last = None
    pos = thought[1]
    while (found := _marker(body, _RESPONSE, pos)) is not None:
        last, pos = found, found[1]
    if last is None:
        return None  # a thought process never ended: read the reply as usual
    before = body[: thought[0]] + body[thought[1] : last[0]]
    return before.strip(), body[last[1] :]


def _marker(body: str, phrase: str, pos: int) -> tuple[int, int] | None:
    """Where the first ``Here is <phrase>:`` from `pos` starts and ends, or None.

    The phrase is found with `str.find` and what surrounds it checked on short slices:
    a case-insensitive search over the whole reply would cost far more.
    """
    while (at := body.find(phrase, pos)) >= 0:
        pos = at + len(phrase)
        here = _HERE.search(body, max(0, at - _HERE_REACH), at)
        colon = _COLON.match(body, pos)
        if here is not None and colon is not None:
            return here.start(), colon.end()
    return None


def _response_tags(body: str) -> str | None:
    """Granite 3.3's ``<response>…</response>`` when the reply is one, else None."""
    pos = 0
    while True:  # `<response>` repeated is one opener: the inner text must not start with it
        space = _SPACE.match(body, pos)
        start = space.end() if space else pos
        if not body.startswith(_RESPONSE_TAG, start):
            break
        pos = start + len(_RESPONSE_TAG)
    if pos == 0:
        return None
    end = body.find("</response>", pos)
    return body[pos:] if end < 0 else body[pos:end]


def _response_decision(reply: Reply, response: str, thought: str) -> Decision:
    decision = read_rest(reply, response, thought)
    if decision is not None:
        return decision
    return answer(response, thought, "response")


def _joined(*parts: str) -> str:
    return "\n".join(part.strip() for part in parts if part.strip())


# -- tool calls ---------------------------------------------------------------------------------


def _tool_calls(body: str, reasoning: str) -> Decision | None:
    """Every call in the list (or lists) after the first marker, or feedback."""
    opener = _first_opener(body)
    if opener is None:
        return None
    at, marker = opener
    where = "functools[…]" if marker == _FUNCTOOLS else marker
    thought = reasoning or body[:at].strip()
    found: list[Found] = []
    pos = _after(marker, at)
    while True:
        value, pos = _value_at(body, pos)
        one = _calls_in(value)
        if one is None:
            return error(
                f"Your {where} was not followed by a JSON list of calls. Write "
                f'{marker.rstrip("[")}[{{"name": "<tool>", "arguments": {{...}}}}] with each '
                "call's arguments as one JSON object.",
                thought,
            )
        found += one
        after = _BETWEEN.match(body, pos)
        pos = after.end() if after else pos
        if not body.startswith(marker, pos):
            return calls(found, thought, where)
        pos = _after(marker, pos)


def _after(marker: str, at: int) -> int:
    """Where the list after a marker at `at` may start (``functools[`` holds its bracket)."""
    return at + len(marker) - 1 if marker == _FUNCTOOLS else at + len(marker)


def _first_opener(body: str) -> tuple[int, str] | None:
    """Where the first marker is, and which; ``<tool_call>`` only when it opens a list."""
    openers = [(body.find(token), token) for token in _TOKENS]
    tag = body.find(_TAG)
    if tag >= 0 and _LIST_AHEAD.match(body, tag + len(_TAG)):
        openers.append((tag, _TAG))
    openers.append((_functools(body), _FUNCTOOLS))
    present = [opener for opener in openers if opener[0] >= 0]
    return min(present) if present else None


def _functools(body: str) -> int:
    """Where ``functools[`` starts a call list (not ``x.functools[`` or ``myfunctools[``)."""
    pos = 0
    while (at := body.find(_FUNCTOOLS, pos)) >= 0:
        if at == 0 or not (body[at - 1].isalnum() or body[at - 1] in "_."):
            return at
        pos = at + 1
    return -1


def _value_at(body: str, pos: int) -> tuple[Any, int]:
    """The JSON (or Python-literal) value from `pos`, and where it ends."""
    fence = _FENCE.match(body, pos)
    if fence and "```" in fence.group():
        pos = fence.end()
    while pos < len(body) and body[pos].isspace():
        pos += 1
    prefix = json_prefix(body, pos)
    if prefix is not None:
        return prefix
    if not body.startswith(("[", "{"), pos):
        return NOT_A_VALUE, pos  # not a list or an object in Python's quoting either
    end = _segment_end(body, pos)
    return load_value(body[pos:end]), end


def _segment_end(body: str, pos: int) -> int:
    """Where a block that is not JSON ends: at its closing token, a fence or the end."""
    ends = [i for i in (body.find(token, pos) for token in (*_CLOSERS, "```")) if i >= 0]
    return min(ends, default=len(body))


def _calls_in(value: Any) -> list[Found] | None:
    """The calls in a value (a list of calls, or one), or None when it is not calls.

    Each item is `call_shaped` (strictly: an object with other fields is data), or an
    object that only names a tool, called without arguments.
    """
    if value is NOT_A_VALUE:
        return None
    items = value if isinstance(value, list) else [value]
    found: list[Found] = []
    for item in items:
        one = call_shaped(item, strict=True)
        if one is not None:
            found += one
        elif isinstance(item, dict) and "name" in item and set(item) <= _NAME_ONLY:
            found.append(Found(item["name"], {}))
        else:
            return None
    return found or None
