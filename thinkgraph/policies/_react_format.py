"""What the ReAct text parser tells a model: the reply format and the feedback around it.

Every parse failure is fed back to the model as one sentence or two saying what was wrong,
followed by the expected format (`feedback`), so a model that drifted sees exactly what to
write next.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "EXPECTED",
    "FINAL_FORMAT",
    "REPLY_FORMAT",
    "feedback",
    "json_agent_feedback",
    "quoted",
]

REPLY_FORMAT = (
    "Thought: <your reasoning about what to do next>\n"
    "Action: <the name of one tool>\n"
    "Action Input: <the tool's arguments as one JSON object>"
)
"""The shape of a reply that calls a tool."""

FINAL_FORMAT = "Thought: <your reasoning>\nFinal Answer: <your answer>"
"""The shape of a reply that gives the final answer."""

EXPECTED = (
    f"Reply in exactly this format:\n\n{REPLY_FORMAT}\n\n"
    f"or, when you know the answer:\n\n{FINAL_FORMAT}"
)
"""Both shapes, as the feedback shows them."""

_QUOTE_LIMIT = 80


def feedback(what: str) -> str:
    """What was wrong, then the expected format."""
    return f"{what}\n\n{EXPECTED}"


def quoted(text: str) -> str:
    """`text` in single quotes, cut short so a rambling line does not flood the feedback."""
    text = " ".join(text.split())
    if len(text) > _QUOTE_LIMIT:
        text = text[: _QUOTE_LIMIT - 1].rstrip() + "…"
    return f"'{text}'"


def json_agent_feedback(blob: dict[str, Any]) -> str:
    """Feedback for LangChain's JSON-agent blob, `{"action": …, "action_input": …}`.

    The blob belongs to another protocol; the feedback rewrites it in this one when it can.
    """
    action = blob.get("action")
    action_input = blob.get("action_input")
    what = 'Your reply used another format: a JSON object with "action" and "action_input" keys.'
    if isinstance(action, str) and action.strip().lower().replace("_", " ") == "final answer":
        answer = action_input if isinstance(action_input, str) else "<your answer>"
        return feedback(
            f"{what} When you know the answer, write it after 'Final Answer:', like this:"
            f"\n\nFinal Answer: {answer}"
        )
    name = action.strip() if isinstance(action, str) and action.strip() else "<tool>"
    args = (
        json.dumps(action_input, ensure_ascii=False)
        if isinstance(action_input, dict)
        else "<its arguments as one JSON object>"
    )
    return feedback(
        f"{what} Write the tool's name after 'Action:' and its arguments after "
        f"'Action Input:', like this:\n\nAction: {name}\nAction Input: {args}"
    )
