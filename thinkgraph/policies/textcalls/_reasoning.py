"""Taking a reply's reasoning blocks out before anything in it is read.

Reasoning is where a model drafts: an ``Action:`` or a ``<tool_call>`` written inside it is
a draft, never acted on, and its text never reaches an answer (it becomes the thought when
the reply has no other). Blocks, in any case:

- ``<think>…</think>`` and ``<thinking>…</thinking>`` (DeepSeek R1, QwQ, Qwen3, most
  reasoning models), Hermes 3's ``<scratch_pad>…</scratch_pad>``, ``<reasoning>…</reasoning>``;
- Mistral Magistral / v13's ``[THINK]…[/THINK]``.

A closing tag with no opener (chat templates that open the block in the prompt) marks
everything before it as reasoning. An opening tag never closed is dropped and the text after
it read as usual: models that forget to close the block still write their call after it.
gpt-oss's analysis channel is its own format's (`thinkgraph.policies.textcalls.harmony`).
"""

from __future__ import annotations

import re

from thinkgraph.policies.textcalls._common import Reply

__all__ = ["split_reasoning"]

_TAG = re.compile(
    r"<(?P<close>/?)[ \t]*(?:think|thinking|scratch_?pad|reasoning)[ \t]*>"
    r"|\[(?P<bclose>/?)THINK\]",
    re.IGNORECASE,
)


def split_reasoning(text: str) -> Reply:
    """The reply with its reasoning blocks taken out; their text kept apart."""
    body: list[str] = []
    reasoning: list[str] = []
    pos = 0
    open_at: int | None = None
    for tag in _TAG.finditer(text):
        closing = bool(tag.group("close") or tag.group("bclose"))
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
    return Reply(text=text, body="".join(body), reasoning=thought, unclosed=open_at is not None)
