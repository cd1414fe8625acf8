"""The one parser of tool-call texts: a reply in any format open models write → `Decision`.

Open-weight models served without a server-side tool parser, or asked to follow ReAct, write
their tool calls as text in the format they were trained on. `parse_text` reads them all
without configuration, one module per family, each documenting its format and source:

1. Reasoning blocks are taken out first (`_reasoning`): what a model drafts inside
   ``<think>`` is never acted on and never part of an answer.
2. Formats marked by their own special tokens or tags, in `MARKED` order: the first reader
   that finds its markers decides. They read the text before the reply's first ReAct
   ``Action:`` / ``Final Answer:`` line (but for `READ_WHOLE`): a marker quoted in a ReAct
   input or answer is text.
3. ReAct (`react`), the format the prompt asks for: when the reply holds an ``Action:`` or
   ``Final Answer:`` line, it decides.
4. Shapes recognised by the whole reply — bare or fenced JSON calls, Python-style calls,
   answer styles (`UNMARKED`).
5. Otherwise ReAct's feedback: what was missing, and the format to write.

Every reader answers through `_common.calls` / `_common.answer`, so a reply is a call with a
tool name and one object of arguments, a non-empty final answer, or feedback; an unknown tool
name is act's clear feedback, as for ReAct. Several calls in one reply are every one of them,
in order (the gate applies to each).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls import (
    cohere,
    deepseek,
    finals,
    gemma,
    granite,
    harmony,
    hermes,
    llama,
    mistral,
    pythonic,
    xml_invoke,
)
from thinkgraph.policies.textcalls._common import Reply
from thinkgraph.policies.textcalls._reasoning import split_reasoning
from thinkgraph.policies.textcalls.react import decision_start, read_react

__all__ = ["MARKED", "UNMARKED", "Reader", "parse_text"]

Reader = Callable[[Reply], Decision | None]
"""A format: the decision its markers make of a reply, or None when they are not there."""

MARKED: tuple[Reader, ...] = (
    harmony.read,
    deepseek.read,
    mistral.read,
    granite.read_response,
    granite.read_calls,
    cohere.read,
    llama.read_marked,
    pythonic.read_marked,
    xml_invoke.read,
    hermes.read,
    gemma.read,
)
"""Formats with their own special tokens or tags; the first that finds its markers decides."""

READ_WHOLE: frozenset[Reader] = frozenset({harmony.read, cohere.read, granite.read_response})
"""Marked formats whose own structure holds ReAct-like keys (harmony's channels drafting an
``Action:``, Cohere's ``Action:`` list, Granite's response written in ReAct): they read the
whole reply. Every other marked format
reads only the text before the reply's first ReAct decision, so a marker quoted in a ReAct
input or answer is text, never a call."""

UNMARKED: tuple[Reader, ...] = (
    llama.read_unmarked,
    pythonic.read,
    finals.read,
)
"""Shapes read only when the reply holds no ReAct decision: whole-reply calls, answer styles."""


def parse_text(text: str) -> Decision:
    """Parse a model's reply into a `Decision`. Never raises on a string.

    Args:
        text: The reply as the model wrote it.

    Returns:
        A "tool_calls" decision (one call or several, in order), a "final" decision with a
        non-empty answer, or an "error" decision whose `error` is feedback for the model.

    Example:
        >>> reply = '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>'
        >>> parse_text(reply).tool_calls[0].args
        {'a': 1}
    """
    reply = replace(split_reasoning(text if isinstance(text, str) else ""), reread=parse_text)
    before = _before_react(reply)
    for read in MARKED:
        decision = read(reply if read in READ_WHOLE else before)
        if decision is not None:
            return decision
    react, decided = read_react(reply)
    if decided:
        return react
    for read in UNMARKED:
        decision = read(reply)
        if decision is not None:
            return decision
    return react


def _before_react(reply: Reply) -> Reply:
    """The reply up to its first ReAct decision (all of it when it has none)."""
    start = decision_start(reply.body)
    return reply if start is None else replace(reply, body=reply.body[:start])
