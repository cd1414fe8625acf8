"""The ReAct text parser: a model reply in Thought / Action / Final Answer form → `Decision`.

Real models rarely write the format exactly as asked, so the parser reads keys loosely
and everything else strictly:

- A key is recognised only at the start of a line, in any case, possibly indented,
  bulleted (``- ``, ``* ``, ``1. ``, ``1) ``), a markdown heading, bold or italic
  (``**Action:**``, ``**Action**:``) and possibly numbered as in the ReAct paper
  (``Thought 2:``). Keys: ``Thought``, ``Action``, ``Action Input``, ``Final Answer`` /
  ``FINAL_ANSWER`` and ``Observation``.
- Every key opens a section that runs to the next key (or the end of the reply). This one
  rule decides where a thought, an action input and a final answer end; a final answer is
  therefore cut at a later line-start key, so protocol lines the model kept writing after
  its answer never leak into the answer.
- ``<think>…</think>`` and ``<thinking>…</thinking>`` blocks are removed first; their
  text becomes the thought when the reply has no other. An unclosed ``<think>`` tag is
  dropped and the text after it parsed as usual (models that forget to close the tag
  still write their Action), and a ``</think>`` with no opening tag (chat templates that
  open the block in the prompt) marks everything before it as reasoning.
- Everything from the first line-start ``Observation:`` after an Action or Final Answer
  is ignored: the model hallucinated the tool's result.
- When a reply has both an Action and a Final Answer, the one that appears first wins;
  only the first Action is taken (ReAct runs one tool per reply).
- The Action name is the first non-empty line after ``Action:``, without backticks,
  quotes, bold or a trailing ``()``.
- The Action Input is the section of the first ``Action Input:`` after the Action (or,
  without that key, the lines under the Action line), taken out of a code fence or
  backticks. Empty → ``args={}``. A JSON object → ``args``, ignoring any prose after it.
  A JSON string alone → ``raw_args`` holds the decoded string. Anything else (``2+2``,
  ``[1, 2]``, plain words) → ``raw_args`` holds the text as written. Text that starts
  with ``{`` but is not valid JSON is an error naming the line and column.
- Anything that cannot be read becomes an error decision whose feedback says exactly
  what was wrong and shows the expected format. The parser never raises on a string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from thinkgraph.policies.base import Decision
from thinkgraph.state import ToolCall

__all__ = ["FINAL_FORMAT", "REPLY_FORMAT", "parse_react"]

REPLY_FORMAT = (
    "Thought: <your reasoning about what to do next>\n"
    "Action: <the name of one tool>\n"
    "Action Input: <the tool's arguments as one JSON object>"
)
"""The shape of a reply that calls a tool."""

FINAL_FORMAT = "Thought: <your reasoning>\nFinal Answer: <your answer>"
"""The shape of a reply that gives the final answer."""

_EXPECTED = (
    f"Reply in exactly this format:\n\n{REPLY_FORMAT}\n\n"
    f"or, when you know the answer:\n\n{FINAL_FORMAT}"
)

# Possessive quantifiers (`*+`, `?+`) keep the match linear: a line of a million spaces
# must not make the engine retry every split between the optional parts.
_KEY = re.compile(
    r"^[ \t]*+"
    r"(?:(?:[-*+•]|\d{1,3}[.)]|\#{1,6})[ \t]++)?+"  # bullet, list number or heading
    r"(?P<bold>\*{1,2}|_{1,2})?+[ \t]*+"  # opening bold / italic
    r"(?P<key>thought|action[ _]input|action|final[ _]answer|observation)"
    r"(?:[ \t]++\d{1,3})?+"  # "Thought 2:" as in the ReAct paper
    r"[ \t]*+(?:\*{1,2}|_{1,2})?+[ \t]*+:"
    # `**Action:**` closes the bold after the colon; only an opened bold may close, so
    # `Final Answer: **42**` keeps its own markup.
    r"(?(bold)(?:\*{1,2}|_{1,2})?+)",
    re.IGNORECASE | re.MULTILINE,
)

_THINK_TAG = re.compile(r"<(/?)think(?:ing)?[ \t]*>", re.IGNORECASE)

_NAME_WRAPPING = "`*\"' \t"

_FENCE_OPEN = re.compile(r"```(?:[A-Za-z][\w+.-]*(?=\s))?")


@dataclass(frozen=True, slots=True)
class _Section:
    """One key and the text after it, up to the next key."""

    key: str
    """Normalised key: thought, action, action_input, final_answer or observation."""
    start: int
    """Where the key's line starts; sections are compared by it."""
    text: str


@dataclass(frozen=True, slots=True)
class _Input:
    """An Action Input, read."""

    args: dict[str, Any] | None = None
    raw_args: str | None = None
    error: str | None = None


def parse_react(text: str) -> Decision:
    """Parse a ReAct text reply into a `Decision`. Never raises on a string.

    Args:
        text: The reply as the model wrote it.

    Returns:
        A "tool_calls" decision with exactly one call, a "final" decision with a non-empty
        answer, or an "error" decision whose `error` is feedback for the model.

    Example:
        >>> d = parse_react('Thought: add\\nAction: add\\nAction Input: {"a": 1, "b": 2}')
        >>> d.kind, d.tool_calls[0].name, d.tool_calls[0].args
        ('tool_calls', 'add', {'a': 1, 'b': 2})
    """
    body, reasoning, unclosed = _strip_think(text if isinstance(text, str) else "")
    sections, preamble = _sections(body)
    decisive = next((s for s in sections if s.key in ("action", "final_answer")), None)
    thought = _thought(sections, decisive, preamble, reasoning)
    if decisive is None:
        return _error(_no_decision_feedback(body, unclosed), thought)
    if decisive.key == "final_answer":
        answer = decisive.text.strip()
        if not answer:
            return _error(
                "Your 'Final Answer:' line was empty. Write the answer itself after "
                f"'Final Answer:'.\n\n{_EXPECTED}",
                thought,
            )
        return Decision(kind="final", thought=thought, answer=answer)
    return _action_decision(sections, decisive, thought)


# -- reading the reply ----------------------------------------------------------------------


def _strip_think(text: str) -> tuple[str, str, bool]:
    """Remove reasoning blocks; return (body, their text, whether a block was left open)."""
    body: list[str] = []
    reasoning: list[str] = []
    pos = 0
    open_at: int | None = None
    for tag in _THINK_TAG.finditer(text):
        closing = tag.group(1) == "/"
        if open_at is None and not closing:
            body.append(text[pos : tag.start()])
            open_at = tag.end()
        elif open_at is not None and closing:
            reasoning.append(text[open_at : tag.start()])
            open_at = None
            pos = tag.end()
        elif closing:
            # A closing tag with no opener: the template opened the block in the prompt.
            reasoning.append(text[pos : tag.start()])
            pos = tag.end()
        # A nested opening tag inside an open block is part of the reasoning.
    if open_at is not None:
        body.append(text[open_at:])
    else:
        body.append(text[pos:])
    thought = "\n".join(r.strip() for r in reasoning if r.strip())
    return "".join(body), thought, open_at is not None


def _sections(body: str) -> tuple[list[_Section], str]:
    """Split the body at line-start keys; return the sections and the text before them."""
    matches = list(_KEY.finditer(body))
    sections: list[_Section] = []
    seen_decision = False
    for i, m in enumerate(matches):
        key = re.sub(r"[ _]+", "_", m.group("key").lower())
        if key == "observation" and seen_decision:
            break  # the model is writing the tool's result itself: ignore the rest
        seen_decision = seen_decision or key in ("action", "final_answer")
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        sections.append(_Section(key, m.start(), body[m.end() : end]))
    preamble = body[: matches[0].start()] if matches else body
    return sections, preamble


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


# -- the action -------------------------------------------------------------------------------


def _action_decision(sections: list[_Section], action: _Section, thought: str) -> Decision:
    # The name may sit on the line under "Action:" (`**Action:**` then `calculator`).
    first_line, _, rest = action.text.lstrip().partition("\n")
    name = _clean_name(first_line)
    if not name:
        return _error(
            "Your 'Action:' line had no tool name. Write the name of one tool after "
            f"'Action:' and its arguments after 'Action Input:'.\n\n{_EXPECTED}",
            thought,
        )
    input_text = _input_text(sections, action, rest)
    read = _read_input(input_text)
    if read.error is not None:
        return _error(
            f"Your 'Action Input:' for '{name}' is not valid JSON: {read.error}. "
            "Write the arguments as one JSON object, with double-quoted keys and strings, "
            f'e.g. Action Input: {{"name": "value"}}.\n\n{_EXPECTED}',
            thought,
        )
    call = ToolCall(name=name, args=read.args, raw_args=read.raw_args)
    return Decision(kind="tool_calls", thought=thought, tool_calls=[call])


def _clean_name(line: str) -> str:
    """`calculator`, **calculator**, "calculator" or calculator() → calculator.

    Underscores are kept: `_lookup` is a valid tool name more often than italic markup.
    """
    name = line.strip().rstrip(".:").strip(_NAME_WRAPPING).rstrip(".:")
    if name.endswith("()"):
        name = name[:-2].strip(_NAME_WRAPPING)
    return name


def _input_text(sections: list[_Section], action: _Section, rest: str) -> str:
    """The first Action Input after the action, else the lines under the Action line."""
    after = [s for s in sections if s.start > action.start]
    for section in after:
        if section.key == "action_input":
            return section.text
        if section.key in ("action", "final_answer"):
            break
    # No "Action Input:" key: some models put the JSON on the lines under "Action:".
    return rest


def _read_input(text: str) -> _Input:
    """Read an Action Input: a JSON object → args, anything else → raw_args."""
    text = _unfence(text.strip())
    if not text:
        return _Input(args={})
    try:
        value, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError as exc:
        if text.startswith("{"):
            return _Input(error=f"{exc.msg} at line {exc.lineno}, column {exc.colno}")
        return _Input(raw_args=text)
    except RecursionError:  # absurdly deep nesting: not something a tool can use
        return _Input(error="the JSON is nested too deeply")
    if isinstance(value, dict):
        return _Input(args=value)  # prose after the object is the model talking: ignore it
    if isinstance(value, str) and not text[end:].strip():
        return _Input(raw_args=value)
    # A number, a list, or a value followed by more text (`2+2` decodes as 2): keep it all.
    return _Input(raw_args=text)


def _unfence(text: str) -> str:
    """The contents of a ```fenced``` or `backticked` input, or the text unchanged."""
    if text.startswith("```"):
        opening = _FENCE_OPEN.match(text)
        start = opening.end() if opening else 3
        close = text.find("```", start)
        return (text[start:] if close < 0 else text[start:close]).strip()
    if len(text) >= 2 and text[0] == "`" and text[-1] == "`":
        return text.strip("`").strip()
    return text


# -- errors -------------------------------------------------------------------------------------


def _no_decision_feedback(body: str, unclosed: bool) -> str:
    if unclosed:
        what = (
            "Your reply ended inside an unclosed <think> block, so it had no 'Action:' "
            "line and no 'Final Answer:' line. Close it with </think> before you act."
        )
    elif not body.strip():
        what = "Your reply was empty."
    else:
        what = "Your reply had no 'Action:' line and no 'Final Answer:' line."
    return f"{what} {_EXPECTED}"


def _error(feedback: str, thought: str) -> Decision:
    return Decision(kind="error", thought=thought, error=feedback)
