"""The ReAct text parser: a model reply in Thought / Action / Final Answer form → `Decision`.

Real models rarely write the format exactly as asked, so the parser reads keys loosely
and everything else strictly:

- A key is recognised only at the start of a line, in any case, possibly indented,
  bulleted (``- ``, ``* ``, ``1. ``, ``1) ``), a markdown heading, bold or italic
  (``**Action:**``, ``**Action**:``) and possibly numbered as in the ReAct paper
  (``Thought 2:``), followed by a colon or a full-width colon (``Action：``, common with
  Chinese and Japanese models). Keys: ``Thought``, ``Action``, ``Action Input``,
  ``Final Answer`` / ``FINAL_ANSWER`` and ``Observation``.
- Keys inside a code fence are not keys: a final answer that shows the format in a fence
  keeps the fence. Only when no Action or Final Answer stands outside fences are fenced
  keys read (a model that fenced its whole reply).
- Every key opens a section that runs to the next key (or the end of the reply). This one
  rule decides where a thought, an action input and a final answer end; a final answer is
  therefore cut at a later line-start key, so protocol lines the model kept writing after
  its answer never leak into the answer.
- Reasoning blocks (``<think>…</think>`` and the like) are already out
  (`thinkgraph.policies.textcalls._reasoning`); their text becomes the thought when the
  reply has no other.
- Everything from the first line-start ``Observation:`` after an Action or Final Answer
  is ignored: the model hallucinated the tool's result. A final answer also ends at the
  first end-of-turn token (``<|im_end|>``, ``<|eot_id|>`` …): what follows is the next turn.
- When a reply has both an Action and a Final Answer, the one that appears first wins;
  only the first Action is taken (ReAct runs one tool per reply).
- The Action name is read by `thinkgraph.policies._react_name` (decorations dropped;
  placeholders and sentences are errors), the Action Input by
  `thinkgraph.policies._react_input` (JSON object → args, text → raw_args). The input is
  the section of the first ``Action Input:`` (fenced or not) after the Action or, without
  that key, JSON on the lines under the Action line; with neither it is missing, an error.
- A whole call on the Action line is that call: call syntax with keyword arguments or one
  JSON object (``search(query="x")``, ``search({"query": "x"})``), JSON naming the call
  (``{"name": …, "arguments": …}``, a list of them being several calls), and LangChain's
  JSON-agent blob (``{"action": …, "action_input": …}``; ``"Final Answer"`` as the action
  gives the final answer). Call syntax with positional text gets feedback that rewrites it.
- A reply with neither Action nor Final Answer: a JSON-agent blob in it (LangChain's JSON
  agents reply with the blob alone, often fenced) is read as above; otherwise it is an
  error, left for the other formats to read first (`thinkgraph.policies.textcalls`).
- Every call with arguments goes through `textcalls._common.calls`, as in every format, so
  one call to ``final_answer`` with one text argument is the final answer.
- Anything that cannot be read becomes an error decision whose feedback says exactly
  what was wrong and shows the expected format. The parser never raises on a string.
"""

from __future__ import annotations

import bisect
import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from thinkgraph.policies._react_format import EXPECTED, feedback, json_agent_feedback
from thinkgraph.policies._react_input import missing_input, read_input
from thinkgraph.policies._react_name import Action, blob_action, read_action
from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls._common import Found, Reply, answer, calls
from thinkgraph.state import ToolCall

__all__ = ["decision_start", "read_react"]

# Possessive quantifiers (`*+`, `?+`) keep the match linear: a line of a million spaces
# must not make the engine retry every split between the optional parts.
_KEY = re.compile(
    r"^[ \t]*+"
    r"(?:(?:[-*+•]|\d{1,3}[.)]|\#{1,6})[ \t]++)?+"  # bullet, list number or heading
    r"(?P<bold>\*{1,2}|_{1,2})?+[ \t]*+"  # opening bold / italic
    r"(?P<key>thought|action[ _]input|action|final[ _]answer|observation)"
    r"(?:[ \t]++\d{1,3})?+"  # "Thought 2:" as in the ReAct paper
    r"[ \t]*+(?:\*{1,2}|_{1,2})?+[ \t]*+[:：]"
    # `**Action:**` closes the bold after the colon; only an opened bold may close, so
    # `Final Answer: **42**` keeps its own markup.
    r"(?(bold)(?:\*{1,2}|_{1,2})?+)",
    re.IGNORECASE | re.MULTILINE,
)

_FENCE = re.compile(r"`{3,}")

_DECISIVE = ("action", "final_answer")

_JSON_AGENT = re.compile(r"\{\s*\"action\"\s*:")

# The tokens chat templates close or open a turn with (ChatML, Llama 3 / 4, Phi, Granite,
# harmony, Cohere, DeepSeek, Gemma): a final answer ends at the first. Other special tokens
# stay: an answer may show a format's syntax.
_END_OF_TURN = re.compile(
    r"<\|(?:im_end|im_start|endoftext|end_of_text|eot_id|eom_id|eot|eom|end|start|return"
    r"|call|start_header_id|header_start|start_of_role|user|assistant|system"
    r"|END_OF_TURN_TOKEN|START_OF_TURN_TOKEN)\|>"
    r"|<｜(?:end▁of▁sentence|User|Assistant)｜>|<(?:end|start)_of_turn>"
)


@dataclass(frozen=True, slots=True)
class _Section:
    """One key and the text after it, up to the next key."""

    key: str
    """Normalised key: thought, action, action_input, final_answer or observation."""
    start: int
    """Where the key's line starts; sections are compared by it."""
    text: str


def read_react(reply: Reply) -> tuple[Decision, bool]:
    """Read a reply (its reasoning blocks already out) as ReAct; never raises.

    Returns:
        The decision — a "tool_calls" decision with exactly one call, a "final" decision
        with a non-empty answer, or an "error" decision whose `error` is feedback for the
        model — and whether the reply held an ``Action:`` or ``Final Answer:`` at all (when
        it did not, other formats may still read it; the error is the last word).

    Example:
        >>> from thinkgraph.policies.textcalls._reasoning import split_reasoning
        >>> d, _ = read_react(split_reasoning('Action: add\\nAction Input: {"a": 1, "b": 2}'))
        >>> d.kind, d.tool_calls[0].name, d.tool_calls[0].args
        ('tool_calls', 'add', {'a': 1, 'b': 2})
    """
    body = reply.body
    sections, preamble = _sections(body)
    decisive = next((s for s in sections if s.key in _DECISIVE), None)
    thought = _thought(sections, decisive, preamble, reply.reasoning)
    if decisive is None:
        blob = _blob_decision(body, reply.reasoning)
        if blob is not None:
            return blob, True
        return _error(_no_decision_feedback(body, reply), thought), False
    if decisive.key == "final_answer":
        text = _before_end_of_turn(decisive.text).strip()
        if not text:
            return _error(_EMPTY_ANSWER, thought), True
        return Decision(kind="final", thought=thought, answer=text), True
    return _action_decision(sections, decisive, thought), True


def decision_start(body: str) -> int | None:
    """Where the reply's first ``Action:`` or ``Final Answer:`` line starts, if it has one.

    What comes after it belongs to the ReAct reply (an input, an answer): another format's
    markers there are text the model wrote, not its call.
    """
    return next((m.start() for m in _keys(body) if _key_name(m) in _DECISIVE), None)


# -- reading the reply ----------------------------------------------------------------------


def _sections(body: str) -> tuple[list[_Section], str]:
    """Split the body at line-start keys; return the sections and the text before them."""
    matches = _keys(body)
    sections: list[_Section] = []
    seen_decision = False
    for i, m in enumerate(matches):
        key = _key_name(m)
        if key == "observation" and seen_decision:
            break  # the model is writing the tool's result itself: ignore the rest
        seen_decision = seen_decision or key in _DECISIVE
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        sections.append(_Section(key, m.start(), body[m.end() : end]))
    preamble = body[: matches[0].start()] if matches else body
    return sections, preamble


@functools.lru_cache(maxsize=16)
def _keys(body: str) -> tuple[re.Match[str], ...]:
    """The line-start keys outside code fences, or all of them if none outside decides.

    Read once per reply: the parser asks where the decision starts before ReAct reads it.
    """
    matches = list(_KEY.finditer(body))
    starts, ends = _fences(body)
    outside = [m for m in matches if not _is_inside(m.start(), starts, ends)]
    if any(_key_name(m) in _DECISIVE for m in outside):
        return tuple(outside)
    return tuple(matches)  # the model fenced its whole reply, or the Action in it


def _key_name(match: re.Match[str]) -> str:
    return match.group("key").lower().replace(" ", "_")  # one space or underscore, by _KEY


def _fences(body: str) -> tuple[list[int], list[int]]:
    """Where each code fence opens and closes; a fence never closed hides nothing."""
    runs = list(_FENCE.finditer(body))
    pairs = zip(runs[0::2], runs[1::2], strict=False)
    spans = [(opening.end(), closing.start()) for opening, closing in pairs]
    return [start for start, _ in spans], [end for _, end in spans]


def _is_inside(position: int, starts: list[int], ends: list[int]) -> bool:
    i = bisect.bisect_right(starts, position) - 1
    return i >= 0 and position < ends[i]


def _thought(
    sections: list[_Section], decisive: _Section | None, preamble: str, reasoning: str
) -> str:
    """The Thought sections before the decision, else the text before the first key."""
    limit = decisive.start if decisive is not None else None
    thoughts = [
        s.text.strip()
        for s in sections
        if s.key == "thought" and (limit is None or s.start < limit) and s.text.strip()
    ]
    if thoughts:
        return "\n".join(thoughts)
    # Without a Thought key, the text before the first key is the reasoning; in an error
    # decision it is what the model wrote instead, kept so the chain shows it.
    return preamble.strip() or reasoning


def _before_end_of_turn(text: str) -> str:
    """`text` up to the first end-of-turn token: what follows is the next turn."""
    token = _END_OF_TURN.search(text)
    return text if token is None else text[: token.start()]


# -- the action -------------------------------------------------------------------------------


def _action_decision(sections: list[_Section], action: _Section, thought: str) -> Decision:
    read = read_action(action.text)
    input_text = read.input
    if input_text is None and read.error is None and not read.found and read.answer is None:
        input_text = _input_text(sections, action, read.rest)
    return _decide(read, input_text, thought)


def _decide(read: Action, input_text: str | None, thought: str) -> Decision:
    """The decision an action makes: its call (arguments from `input_text`), answer or error.

    Calls with arguments go through `_common.calls`, as in every format: one call to
    ``final_answer`` with one text argument is the final answer.
    """
    if read.error is not None:
        return _error(read.error, thought)
    if read.answer is not None:
        return answer(read.answer, thought, "final answer")
    if read.found:
        return calls(read.found, thought, "'Action:' line")
    if input_text is None:
        return _error(missing_input(read.name), thought)
    args = read_input(input_text, read.name)
    if args.error is not None:
        return _error(args.error, thought)
    if args.args is not None:
        return calls([Found(read.name, args.args)], thought, "'Action:'")
    call = ToolCall(name=read.name, raw_args=args.raw_args)
    return Decision(kind="tool_calls", thought=thought, tool_calls=[call])


def _input_text(sections: list[_Section], action: _Section, rest: str) -> str | None:
    """The first Action Input after the action, else JSON under the Action line, else None."""
    after = [s for s in sections if s.start > action.start]
    for section in after:
        if section.key == "action_input":
            return section.text
        if section.key in _DECISIVE:
            break
    # No "Action Input:" key: some models put the JSON on the lines under "Action:"; prose
    # there is the model talking, not an input.
    under = rest.strip()
    return under if under.startswith(("{", "```")) else None


# -- LangChain's JSON-agent blob -----------------------------------------------------------


def _blob_decision(body: str, reasoning: str) -> Decision | None:
    """The call or answer of a JSON-agent blob written without an ``Action:`` key, or None.

    LangChain's JSON agents reply with the blob alone, often fenced, after a thought.
    """
    found = _JSON_AGENT.search(body)
    if found is None:
        return None
    blob = _json_agent_blob(body, found.start())
    read = blob_action(blob) if blob is not None else None
    if read is None:
        return None
    return _decide(read, read.input, _thought_before(body[: found.start()], reasoning))


def _thought_before(text: str, reasoning: str) -> str:
    """The thought in the text before a blob: its Thought sections or the text itself."""
    text = text.rstrip()
    opening = text.rfind("```")
    if opening >= 0 and "\n" not in text[opening:]:
        text = text[:opening]  # the fence the blob is in
    sections, preamble = _sections(text)
    return _thought(sections, None, preamble, reasoning)


# -- errors -------------------------------------------------------------------------------------


def _no_decision_feedback(body: str, reply: Reply) -> str:
    found = _JSON_AGENT.search(body)
    blob = _json_agent_blob(body, found.start()) if found is not None else None
    if blob is not None:
        return json_agent_feedback(blob)
    if reply.unclosed:
        what = (
            "Your reply ended inside an unclosed <think> block, so it had no 'Action:' "
            "line and no 'Final Answer:' line. Close it with </think> before you act."
        )
    elif not body.strip() and reply.reasoning:
        what = (
            "Your reply held only a reasoning block. Whatever you draft inside it is not "
            "acted on: after the block, write your 'Action:' or your 'Final Answer:'."
        )
    elif not body.strip():
        what = "Your reply was empty."
    else:
        what = "Your reply had no 'Action:' line and no 'Final Answer:' line."
    return f"{what} {EXPECTED}"


def _json_agent_blob(body: str, start: int) -> dict[str, Any] | None:
    """LangChain's JSON-agent blob at `start`, `{"action": …, "action_input": …}`."""
    try:
        value, _ = json.JSONDecoder(strict=False).raw_decode(body, start)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


_EMPTY_ANSWER = feedback(
    "Your 'Final Answer:' line was empty. Write the answer itself after 'Final Answer:'."
)


def _error(message: str, thought: str) -> Decision:
    return Decision(kind="error", thought=thought, error=message)
