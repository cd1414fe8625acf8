"""Mistral's ``[TOOL_CALLS]`` formats, by tokenizer version.

Source: the tokenizers in ``mistral-common`` (``InstructTokenizerV3`` / ``V11``) and vLLM's
Mistral tool-parser documentation.

- Up to v3 (Mistral 7B v0.3, Mixtral 8x22B, Nemo): the token, then a JSON list of calls,
  ``[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Rome"}, "id": "a1b2c3d4e"}]``
  (the space is optional; the ``id`` is nine letters or digits and is not kept). Each item
  must be shaped like a call, ``name`` and ``arguments``: a list of data is feedback.
- v11 and later (Mistral Small 3.1+, Devstral, Magistral): ``[TOOL_CALLS]NAME[ARGS]{…}``,
  repeated for several calls, with ``[CALL_ID]id`` between the name and ``[ARGS]`` when
  the call has an id. Decoders that drop control tokens leave ``[TOOL_CALLS]NAME{…}``.
- v13 / Magistral reason first in ``[THINK]…[/THINK]``; that block is already out
  (`thinkgraph.policies.textcalls._reasoning`) and becomes the thought, so a call drafted
  inside it is never made.

A trailing ``</s>`` is dropped. Text before the first ``[TOOL_CALLS]`` is the thought when
there is no reasoning block. The same list with the token dropped by a decoder is a bare
JSON reply, read by the unmarked JSON reader (`thinkgraph.policies.textcalls.llama`).
"""

from __future__ import annotations

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

__all__ = ["read"]

_TOKEN = "[TOOL_CALLS]"
_ARGS = "[ARGS]"
_CALL_ID = "[CALL_ID]"
_EOS = "</s>"
_WHERE = "[TOOL_CALLS] call"
_SHAPE = (
    'Write [TOOL_CALLS] [{"name": "<tool>", "arguments": {...}}], or '
    "[TOOL_CALLS]<tool>[ARGS]{...} for each call."
)


def read(reply: Reply) -> Decision | None:
    """The calls after ``[TOOL_CALLS]``, feedback when they cannot be read, or None."""
    body = reply.body
    first = body.find(_TOKEN)
    if first < 0:
        return None
    thought = reply.reasoning or body[:first].strip()
    found: list[Found] = []
    for segment in body[first + len(_TOKEN) :].split(_TOKEN):
        read_ = _segment(segment)
        if isinstance(read_, str):
            return error(read_, thought)
        found.extend(read_)
    if not found:
        return error(f"Your reply's [TOOL_CALLS] held no call. {_SHAPE}", thought)
    return calls(found, thought, _WHERE)


def _segment(segment: str) -> list[Found] | str:
    """The calls written after one ``[TOOL_CALLS]``, or feedback saying what was wrong."""
    text = segment.strip().removesuffix(_EOS).rstrip()
    if not text:
        return []
    if text[0] in "[{" and not text.startswith((_ARGS, _CALL_ID)):
        return _listed(text)
    return _named(text)


def _listed(text: str) -> list[Found] | str:
    """Up to v3: a JSON list (or one object) of ``{"name", "arguments"}`` calls."""
    prefix = json_prefix(text)
    value = prefix[0] if prefix is not None else load_value(text)
    if value is NOT_A_VALUE:
        return f"The list after your [TOOL_CALLS] was not valid JSON. {_SHAPE}"
    found = call_shaped(value, strict=True)
    if found is None:
        return (
            "The list after your [TOOL_CALLS] did not hold calls: each must have a "
            f'"name" and "arguments". {_SHAPE}'
        )
    return found


def _named(text: str) -> list[Found] | str:
    """v11 and later: ``NAME[CALL_ID]id[ARGS]{…}``, or ``NAME{…}`` without control tokens."""
    at = text.find(_ARGS)
    if at >= 0:
        head, args = text[:at], text[at + len(_ARGS) :].strip()
    else:
        brace = text.find("{")
        if brace < 0:
            return f"Your [TOOL_CALLS] call {quoted(text)} had no arguments. {_SHAPE}"
        head, args = text[:brace], text[brace:]
    name = head.split(_CALL_ID, 1)[0]
    prefix = json_prefix(args) if args.startswith("{") else None
    # A JSON object followed by more text keeps the object; anything else is checked whole.
    return [Found(name, prefix[0] if prefix is not None else args)]
