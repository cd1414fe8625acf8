"""Final-answer styles other than ReAct's ``Final Answer:`` line.

Read only when the reply holds no ReAct decision and no call in any format, so a reply
with an ``Action:`` is never taken for an answer. Styles, first found wins:

- ``<answer>…</answer>``, usually after ``<think>…</think>`` (DeepSeek-R1's training
  template, "<think> reasoning process here </think> <answer> answer here </answer>";
  Open-R1 and most R1-style fine-tunes); an ``<answer>`` never closed runs to the end.
- A "Final Answer" heading on a line of its own, without a colon (``**Final Answer**``,
  ``## Final Answer``), as reasoning models (DeepSeek-R1, QwQ) end their replies: the text
  under it is the answer. With a colon it is ReAct's key and ReAct reads it.
- ``Answer:`` at the start of a line (also bold, or with a full-width colon): the text after
  it, up to the next such line. Mid-sentence ("I think the answer: 4") it is prose.
- ``\\boxed{…}`` (the math convention of QwQ, DeepSeek-R1 and their evaluations): the
  content of the last box, nested braces kept, is the answer. An answer found above that is
  only a box (``\\[ \\boxed{42} \\]``) is the box's content.
- Plain text after a closed reasoning block (``<think>…</think>``, a lone ``</think>``,
  ``[THINK]…[/THINK]``): how DeepSeek R1, QwQ, Qwen3 and Magistral answer when they need no
  tool. Plain text with no reasoning block before it stays feedback (the prompt asks for
  ``Final Answer:``), as does text that starts like JSON or holds a ReAct key, and text
  after a block that drafted a call or an answer (the model meant to act).

The text before the answer (or the reasoning block) is the thought; reasoning never reaches
the answer, since `textcalls._reasoning` took it out first. A reply with none of these
stays ReAct's feedback. smolagents' ``final_answer`` tool call is read with the calls of
every format (`textcalls._common.calls`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls._common import Reply, answer

__all__ = ["read"]

_OPEN_TAG, _CLOSE_TAG = "<answer>", "</answer>"
_BOLD = r"(?:\*\*|__)"
_HEADING = re.compile(
    rf"^[ \t]*+(?:\#{{1,6}}[ \t]++)?+{_BOLD}?+[ \t]*+final[ \t]++answer[ \t]*+{_BOLD}?+"
    rf"[ \t]*+[:：]?+[ \t]*+{_BOLD}?+[ \t]*+$",
    re.IGNORECASE | re.MULTILINE,
)
_ANSWER_LINE = re.compile(
    rf"^[ \t]*+(?P<bold>{_BOLD})?+[ \t]*+answer[ \t]*+{_BOLD}?+[ \t]*+[:：](?(bold){_BOLD}?+)",
    re.IGNORECASE | re.MULTILINE,
)
_THOUGHT_KEY = re.compile(rf"^\s*+{_BOLD}?+thought{_BOLD}?+[ \t]*+[:：]{_BOLD}?+", re.I)
_REACT_KEY = re.compile(
    r"^[ \t]*+(?:[-*#]+[ \t]*+)?+(?:\*\*|__)?+(?:thought|action|observation)\b", re.I | re.M
)
_DRAFTED = re.compile(
    r"^[ \t]*+(?:\*\*)?+(?:action|final[ _]answer)\b|<tool_call|<function|<answer>|\"action\"|"
    r"\[TOOL_CALLS\]|<\|python_tag\|>|tool.calls.begin",
    re.I | re.M,
)
_BOXED = "\\boxed{"
_MATH_WRAPPERS = (("$$", "$$"), ("$", "$"), ("\\[", "\\]"), ("\\(", "\\)"))


def read(reply: Reply) -> Decision | None:
    """The final answer in one of these styles, or None when the reply has none."""
    readers: tuple[Callable[[str], tuple[str, str] | None], ...] = (
        _answer_tags,
        _heading,
        _answer_line,
        _boxed,
    )
    for reader in readers:
        found = reader(reply.body)
        if found is not None:
            before, text = found
            thought = reply.reasoning or _THOUGHT_KEY.sub("", before.strip(), count=1).strip()
            return answer(_unboxed(text), thought, "answer")
    return _after_reasoning(reply)


def _after_reasoning(reply: Reply) -> Decision | None:
    """Plain text after a closed reasoning block: how reasoning models answer without tools.

    Not when the block was left open (the text may be more reasoning), nor when the text
    starts like JSON or a list (a call that could not be read: feedback says so), nor when
    it holds a ReAct key (a reply in our format that decided nothing: feedback), nor when
    the block drafted a call or an answer (the model meant to act, and the text after may
    be a result it imagined: feedback asks for the call after the block).
    """
    text = reply.body.strip()
    if not reply.reasoning or reply.unclosed or not text or text.startswith(("{", "[")):
        return None
    if _REACT_KEY.search(text) or _DRAFTED.search(reply.reasoning):
        return None
    return answer(text, reply.reasoning, "answer")


# -- the styles: each gives the text before the answer and the answer --------------------------


def _answer_tags(body: str) -> tuple[str, str] | None:
    start = body.find(_OPEN_TAG)
    if start < 0:
        return None
    inner = start + len(_OPEN_TAG)
    end = body.find(_CLOSE_TAG, inner)
    return body[:start], body[inner:] if end < 0 else body[inner:end]


def _heading(body: str) -> tuple[str, str] | None:
    if "inal" not in body and "INAL" not in body:
        return None  # the case-insensitive search below costs more than this look
    heading = _HEADING.search(body)
    if heading is None or not body[heading.end() :].strip():
        return None
    return body[: heading.start()], body[heading.end() :]


def _answer_line(body: str) -> tuple[str, str] | None:
    if "nswer" not in body and "NSWER" not in body:
        return None
    line = _ANSWER_LINE.search(body)
    if line is None:
        return None
    following = _ANSWER_LINE.search(body, line.end())
    end = following.start() if following is not None else len(body)
    return body[: line.start()], body[line.end() : end]


def _boxed(body: str) -> tuple[str, str] | None:
    start = body.rfind(_BOXED)
    if start < 0:
        return None
    content = _box_content(body, start)
    if content is None or not content.strip():
        return None
    return body[:start], content


# -- boxes ------------------------------------------------------------------------------------


def _box_content(text: str, start: int) -> str | None:
    """What the ``\\boxed{`` at `start` holds, up to its matching brace; None if unclosed."""
    inner = start + len(_BOXED)
    depth = 1
    for i in range(inner, len(text)):
        char = text[i]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[inner:i]
    return None


def _unboxed(text: str) -> str:
    """The box's content when `text` is only a box (in math delimiters), else `text`."""
    bare = text.strip().rstrip(".").strip()
    for opening, closing in _MATH_WRAPPERS:
        wrapped = bare.startswith(opening) and bare.endswith(closing)
        if wrapped and len(bare) > len(opening) + len(closing):
            bare = bare[len(opening) : -len(closing)].strip().rstrip(".").strip()
            break
    if not bare.startswith(_BOXED):
        return text
    content = _box_content(bare, 0)
    if content is None or len(content) + len(_BOXED) + 1 != len(bare) or not content.strip():
        return text
    return content
