"""Cohere Command R / R+ / R7B / A: tool calls as a JSON list of ``tool_name`` objects.

Formats, with their sources:

- Command R / R+ (model cards, and Cohere's "Prompting Command R" guide): a ``Plan:`` (or,
  after results, ``Reflection:``) line, then ``Action:`` and a JSON list in a json code
  fence, ``[{"tool_name": …, "parameters": {…}}, …]`` — every object a call, in order (the
  fence may be missing). The Plan / Reflection text is the thought.
- Command R7B / A (their chat templates; llama.cpp's and SGLang's Command parsers):
  ``<|START_THINKING|>…<|END_THINKING|>`` (the thought) then
  ``<|START_ACTION|>[{"tool_call_id": "0", "tool_name": …, "parameters": {…}}]<|END_ACTION|>``.
- Answers: Command R's grounded generation writes ``Relevant Documents: …``,
  ``Cited Documents: …``, ``Answer: …`` and ``Grounded answer: …`` (with ``<co: N>`` citation
  tags); the answer is the ``Answer:`` text, else the grounded answer without its tags — the
  document lines are never part of it. Command R7B / A write
  ``<|START_RESPONSE|>…<|END_RESPONSE|>`` (``<|START_TEXT|>…<|END_TEXT|>`` in some templates).
- ``directly_answer`` (``directly-answer`` in the prompt's wording) is the tool Command R's
  prompt offers for "answer without tools": it is never a call. With an answer in the reply,
  that is the answer; alone, feedback asks for the answer itself.

Special tokens never reach a name, an argument or an answer: an answer ends at the first one.
Text after the thinking block, when it holds none of these markers, is read as a reply of its
own (ReAct or any other format), the thinking kept as the thought.
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
    calls,
    error,
    json_prefix,
    load_value,
)
from thinkgraph.policies.textcalls._reasoning import split_reasoning
from thinkgraph.policies.textcalls.granite import read_rest
from thinkgraph.policies.textcalls.react import read_react

__all__ = ["read"]

_THINKING = ("<|START_THINKING|>", "<|END_THINKING|>")
_ACTION = ("<|START_ACTION|>", "<|END_ACTION|>")
_RESPONSES = (("<|START_RESPONSE|>", "<|END_RESPONSE|>"), ("<|START_TEXT|>", "<|END_TEXT|>"))
_TOKEN = "<|"
"""How every Cohere special token starts: an answer or a block ends at the first one."""

_R_ACTION = re.compile(r"^[ \t]*+(?:\*\*)?+Action(?:\*\*)?+[ \t]*+:(?:\*\*)?+", re.MULTILINE)
_FENCE = re.compile(r"\s*+(?:```[A-Za-z]*+)?+\s*+")
_PLAN = re.compile(r"^[ \t]*+(?:\*\*)?+(?:plan|reflection)(?:\*\*)?+[ \t]*+:[ \t]*+", re.I | re.M)
_ANSWER = re.compile(r"^[ \t]*+answer[ \t]*+:", re.IGNORECASE | re.MULTILINE)
_GROUNDED = re.compile(r"^[ \t]*+grounded answer[ \t]*+:", re.IGNORECASE | re.MULTILINE)
_DOCUMENTS = re.compile(r"^[ \t]*+(?:relevant|cited) documents[ \t]*+:", re.I | re.M)
_CITATION = re.compile(r"</?co(?:[ \t]*+:[^<>\n]*+)?>")

_CALL_KEYS = frozenset({"tool_name", "parameters", "tool_call_id"})
_DIRECTLY_ANSWER = frozenset({"directly_answer", "directly-answer"})


def read(reply: Reply) -> Decision | None:
    """The decision Cohere's markers make of the reply, or None when they are absent."""
    body = reply.body
    start = body.find(_THINKING[0])
    end = body.rfind(_THINKING[1])
    if start >= 0 and end > start:
        thought = _joined(reply.reasoning, _before_token(body[start + len(_THINKING[0]) : end]))
        rest = body[end + len(_THINKING[1]) :]
        return _marked(rest, thought) or _rest(reply, rest, thought)
    if start >= 0:  # never closed: the opener is dropped and the text read as usual
        body = body[start + len(_THINKING[0]) :]
    return _marked(body, reply.reasoning) or _command_r(body, reply.reasoning)


def _rest(reply: Reply, text: str, thought: str) -> Decision:
    """Text after the thinking block with no Cohere markers: a reply of its own."""
    decision = read_rest(reply, text, thought)
    if decision is not None:
        return decision
    feedback, _ = read_react(split_reasoning(text))
    return feedback.model_copy(update={"thought": thought})


def _joined(*parts: str) -> str:
    return "\n".join(part.strip() for part in parts if part.strip())


def _before_token(text: str) -> str:
    """`text` up to the first special token."""
    cut = text.find(_TOKEN)
    return text if cut < 0 else text[:cut]


# -- Command R7B / A: special-token blocks ------------------------------------------------------


def _marked(body: str, thought: str) -> Decision | None:
    """The action blocks' calls, else the response block's answer, else None."""
    if body.find(_ACTION[0]) >= 0:
        return _action_blocks(body, thought)
    for opener, _ in _RESPONSES:
        at = body.find(opener)
        if at >= 0:
            return answer(_before_token(body[at + len(opener) :]), thought, opener)
    return None


def _action_blocks(body: str, thought: str) -> Decision:
    """Every call in every ``<|START_ACTION|>`` block, in order, or feedback."""
    found: list[Found] = []
    at = body.find(_ACTION[0])
    while at >= 0:
        pos = at + len(_ACTION[0])
        value, pos = _value_at(body, pos)
        one = _tool_calls(value)
        if one is None:
            return error(_NOT_CALLS.format(where=_ACTION[0]), thought)
        found += one
        at = body.find(_ACTION[0], pos)
    return _decision(found, body, thought, _ACTION[0])


def _value_at(body: str, pos: int) -> tuple[Any, int]:
    """The JSON (or Python-literal) value from `pos`, and where it ends."""
    fence = _FENCE.match(body, pos)
    pos = fence.end() if fence else pos
    prefix = json_prefix(body, pos)
    if prefix is not None:
        return prefix
    if not body.startswith(("[", "{"), pos):
        return NOT_A_VALUE, pos  # not a list or an object in Python's quoting either
    ends = [i for i in (body.find(_TOKEN, pos), body.find("```", pos)) if i >= 0]
    end = min(ends, default=len(body))
    return load_value(body[pos:end]), end


# -- Command R / R+: Action with a fenced list, Answer / Grounded answer ---------------------------


def _command_r(body: str, reasoning: str) -> Decision | None:
    """Command R's ``Action:`` list of ``tool_name`` objects, else its answer, else None."""
    action = _R_ACTION.search(body)
    if action is not None:
        value, _ = _value_at(body, action.end())
        if _names_tools(value):
            plan = _PLAN.sub("", body[: action.start()]).strip()
            thought = _joined(reasoning, plan)
            one = _tool_calls(value)
            if one is None:
                return error(_NOT_CALLS.format(where="'Action:' list"), thought)
            return _decision(one, body, thought, "'Action:' list")
    return _command_r_answer(body, reasoning)


def _names_tools(value: Any) -> bool:
    """Whether a value is written in Cohere's call shape: an object with "tool_name"."""
    items = value if isinstance(value, list) else [value]
    return any(isinstance(item, dict) and "tool_name" in item for item in items)


def _command_r_answer(body: str, thought: str, *, bare: bool = False) -> Decision | None:
    """The ``Answer:`` text, else the grounded answer without citation tags; None if neither.

    A bare ``Answer:`` line is read only in grounded generation's company (a documents line
    or a grounded answer) or, with `bare`, after a ``directly_answer``: alone it is a
    final-answer style for `textcalls.finals`.
    """
    if "nswer" not in body and "NSWER" not in body:
        return None  # the case-insensitive searches below cost more than this look
    grounded = _GROUNDED.search(body)
    plain = _ANSWER.search(body)
    if plain is None and grounded is None:
        return None
    if grounded is None and not bare and _DOCUMENTS.search(body) is None:
        return None
    if plain is not None and (grounded is None or plain.start() < grounded.start()):
        end = grounded.start() if grounded is not None else len(body)
        return answer(_before_token(body[plain.end() : end]), thought, "'Answer:' line")
    assert grounded is not None
    text = _CITATION.sub("", _before_token(body[grounded.end() :]))
    return answer(text, thought, "'Grounded answer:' line")


# -- the calls ------------------------------------------------------------------------------------


def _tool_calls(value: Any) -> list[Found] | None:
    """``[{"tool_name": …, "parameters": {…}}, …]`` (or one object) as calls; None otherwise."""
    if value is NOT_A_VALUE:
        return None
    items = value if isinstance(value, list) else [value]
    found: list[Found] = []
    for item in items:
        if not isinstance(item, dict) or "tool_name" not in item or set(item) - _CALL_KEYS:
            return None
        found.append(Found(item["tool_name"], item.get("parameters")))
    return found or None


def _decision(found: list[Found], body: str, thought: str, where: str) -> Decision:
    """The calls; ``directly_answer`` is never one: the reply's answer, or feedback."""
    direct = [one for one in found if isinstance(one.name, str) and one.name in _DIRECTLY_ANSWER]
    if not direct:
        return calls(found, thought, where)
    if len(direct) == len(found):
        given = _command_r_answer(body, thought, bare=True) or _response(body, thought)
        if given is not None:
            return given
    return error(
        "Your reply chose directly_answer, which is not a tool to call: it means answering "
        "without tools. Write your answer itself after 'Final Answer:'; to use a tool, name "
        "only that tool.",
        thought,
    )


def _response(body: str, thought: str) -> Decision | None:
    for opener, _ in _RESPONSES:
        at = body.find(opener)
        if at >= 0:
            return answer(_before_token(body[at + len(opener) :]), thought, opener)
    return None


_NOT_CALLS = (
    "Your {where} did not hold a JSON list of calls. Write it as "
    '[{{"tool_name": "<tool>", "parameters": {{...}}}}], the parameters of each call as one '
    "JSON object."
)
