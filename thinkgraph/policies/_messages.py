"""Wording shared by the policies that are not ReActText: the turns every format words alike.

Only the assistant's own replies and tool observations differ between NativeTools,
JsonPlan and StructuredStep; the task, lessons, summaries, feedback, rejections and
guidance are user messages worded the same way in each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from thinkgraph.llm.base import Message
from thinkgraph.policies.projection import (
    AssistantTurn,
    FeedbackTurn,
    GuidanceTurn,
    LessonTurn,
    NoteTurn,
    ObservationTurn,
    RejectionTurn,
    SummaryTurn,
    TaskTurn,
    Turn,
    UnparsedTurn,
    fold_turns,
)
from thinkgraph.state import BaseStep

__all__ = ["append", "text_messages", "user_text"]


def user_text(turn: Turn) -> str | None:
    """The user message of a turn every format words alike, or None for the others."""
    if isinstance(turn, TaskTurn):
        return f"Task: {turn.text}"
    if isinstance(turn, LessonTurn):
        if not turn.lessons:
            return "An earlier attempt was abandoned. Start again from the task."
        listed = "\n".join(f"- {lesson}" for lesson in turn.lessons)
        return f"Earlier attempts were abandoned. Lessons:\n{listed}"
    if isinstance(turn, SummaryTurn):
        return f"Summary of your earlier steps: {turn.text}"
    if isinstance(turn, UnparsedTurn | FeedbackTurn):
        return turn.feedback if isinstance(turn, UnparsedTurn) else turn.text
    if isinstance(turn, RejectionTurn):
        why = f": {'; '.join(turn.reasons)}" if turn.reasons else ""
        return f"Your answer was not accepted{why}. Revise it and reply again."
    if isinstance(turn, GuidanceTurn):
        return f"Guidance from a person: {turn.text}"
    if isinstance(turn, NoteTurn):
        return f"Note from {turn.node}: {turn.text}"
    return None


def append(messages: list[Message], message: Message) -> None:
    """Append a message, merging a user message into a user message just before it.

    Some providers reject two user messages in a row, and several notes between two
    replies read as one turn anyway.
    """
    last = messages[-1] if messages else None
    if (
        message["role"] == "user"
        and last is not None
        and last["role"] == "user"
        and isinstance(last.get("content"), str)
    ):
        messages[-1] = {"role": "user", "content": f"{last['content']}\n\n{message['content']}"}
    else:
        messages.append(message)


def text_messages(
    system: str,
    chain: Sequence[BaseStep],
    canonical: Callable[[AssistantTurn], str],
    demand: str | None = None,
) -> list[Message]:
    """Messages for a format whose replies are text and whose tools are in the prompt.

    Args:
        system: The system prompt.
        chain: The run's steps, projected with `project`.
        canonical: Writes an assistant turn in the exact format when the chain has no raw
            reply text for it; otherwise the model is shown what it wrote.
        demand: A last user message, e.g. the demand for a final answer.
    """

    def fold(messages: list[Message], state: dict[str, Any], turn: Turn) -> None:
        if isinstance(turn, AssistantTurn):
            messages.append({"role": "assistant", "content": turn.text or canonical(turn)})
        elif isinstance(turn, UnparsedTurn):
            # The raw reply, so the model sees exactly what it wrote wrong; some providers
            # reject an empty assistant message.
            messages.append({"role": "assistant", "content": turn.text or "(empty reply)"})
            append(messages, {"role": "user", "content": turn.feedback})
        elif isinstance(turn, ObservationTurn):
            what = "failed" if turn.is_error else "returned"
            result = f"Result of {turn.tool} ({what}): {turn.text}"
            append(messages, {"role": "user", "content": result})
        else:
            text = user_text(turn)
            if text is not None:
                append(messages, {"role": "user", "content": text})

    head: list[Message] = [{"role": "system", "content": system}]
    # The key names the format by its canonical writer, whose wording differs per policy.
    key = f"text:{canonical.__module__}.{canonical.__qualname__}"
    messages, _ = fold_turns(chain, key, head, fold)
    if demand is not None:
        append(messages, {"role": "user", "content": demand})
    return messages
