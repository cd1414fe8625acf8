"""NativeTools: the provider's own tool calling (OpenAI function calling, through litellm).

Tools go to the provider as JSON schemas; the model answers with structured tool calls,
several at once if it likes (each runs as its own act task), or with plain text, which is
its final answer. Earlier calls and their observations are sent back in the OpenAI format:
an assistant message with `tool_calls`, then one `tool` message per call id.

Example:
    >>> from thinkgraph.llm.base import ModelReply
    >>> NativeTools().parse_reply(ModelReply(text="Paris")).answer
    'Paris'
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from thinkgraph.policies._messages import append, user_text
from thinkgraph.policies.base import Decision
from thinkgraph.policies.projection import (
    AssistantTurn,
    ObservationTurn,
    Turn,
    UnparsedTurn,
    fold_turns,
)
from thinkgraph.state import BaseStep, ToolCall

if TYPE_CHECKING:
    from thinkgraph.llm.base import Message, ModelReply
    from thinkgraph.tools.base import Tool

__all__ = ["NativeTools"]

DEFAULT_INSTRUCTIONS = (
    "You are an agent that solves a task step by step. Call the tools you need; you may "
    "call several at once when they do not depend on each other. When you know the "
    "answer, reply with the answer as plain text, without calling a tool."
)
_DEMAND_FINAL = "Stop using tools now. Reply with your final answer as plain text."
_EMPTY = (
    "Your reply was empty: it had no text and no tool call. Call a tool, or reply with "
    "your final answer as plain text."
)
_NOT_RUN = "This call was not run."
_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)


class NativeTools:
    """Provider tool calling: schemas to the API, decisions from its structured tool calls.

    Needs a model whose provider supports tool calling (OpenAI, Anthropic, most servers
    that speak the OpenAI protocol). A reply with tool calls runs them all, in parallel;
    a reply with text and no tool call is the final answer.

    Args:
        instructions: The system prompt.
    """

    native_tools: bool = True
    """Tool schemas go to the provider's tool-calling API."""

    def __init__(self, *, instructions: str = DEFAULT_INSTRUCTIONS) -> None:
        self.instructions = instructions

    def tool_schemas(self, tools: Sequence[Tool]) -> list[dict[str, Any]] | None:
        """Each tool's OpenAI function schema; None when there are no tools."""
        return [t.openai_schema() for t in tools] or None

    def parse_reply(self, reply: ModelReply) -> Decision:
        """Tool calls → run them; text alone → the final answer; nothing → feedback.

        A call whose arguments were not a JSON object keeps them in `raw_args` (act maps
        them to a single string parameter or reports the error to the model).
        """
        text = _THINK_BLOCK.sub("", reply.text or "").strip()
        if reply.tool_calls:
            unnamed = [c for c in reply.tool_calls if not c.name.strip()]
            if unnamed:
                return Decision(
                    kind="error",
                    thought=text,
                    error="One of your tool calls had no function name. Call the tools "
                    "by the names you were given.",
                )
            return Decision(kind="tool_calls", thought=text, tool_calls=list(reply.tool_calls))
        if not text:
            return Decision(kind="error", error=_EMPTY)
        return Decision(kind="final", answer=text)

    def to_messages(
        self, chain: Sequence[BaseStep], tools: Sequence[Tool], *, final: bool = False
    ) -> list[Message]:
        """Project the chain into OpenAI-format messages with native tool calls.

        Every assistant `tool_calls` message is followed by one `tool` message per call id,
        as providers require; a call that never ran (the run stopped first) gets a short
        note instead of a result.
        """
        head: list[Message] = [{"role": "system", "content": self.instructions}]
        messages, state = fold_turns(chain, "native_tools", head, _fold)
        _close(messages, state.setdefault("open_calls", []))
        if final:
            append(messages, {"role": "user", "content": _DEMAND_FINAL})
        return messages


def _fold(messages: list[Message], state: dict[str, Any], turn: Turn) -> None:
    open_calls: list[str] = state.setdefault("open_calls", [])
    if isinstance(turn, ObservationTurn) and turn.call_id in open_calls:
        open_calls.remove(turn.call_id)
        messages.append({"role": "tool", "tool_call_id": turn.call_id, "content": turn.text})
        return
    _close(messages, open_calls)
    if isinstance(turn, AssistantTurn):
        messages.append(_assistant(turn))
        open_calls.extend(c.id for c in turn.calls)
    elif isinstance(turn, UnparsedTurn):
        # Some providers reject an empty assistant message.
        messages.append({"role": "assistant", "content": turn.text or "(empty reply)"})
        append(messages, {"role": "user", "content": turn.feedback})
    elif isinstance(turn, ObservationTurn):
        # An observation whose call is not shown (e.g. summarized away): as text.
        append(messages, {"role": "user", "content": f"{turn.tool} returned: {turn.text}"})
    else:
        text = user_text(turn)
        if text is not None:
            append(messages, {"role": "user", "content": text})


def _assistant(turn: AssistantTurn) -> Message:
    if not turn.calls:
        return {"role": "assistant", "content": turn.answer or turn.thought or turn.text}
    return {
        "role": "assistant",
        "content": turn.thought or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call)},
            }
            for call in turn.calls
        ],
    }


def _arguments(call: ToolCall) -> str:
    if call.args is not None:
        return json.dumps(call.args, ensure_ascii=False)
    # Sent back as the model wrote it, so it sees its own malformed arguments.
    return call.raw_args if call.raw_args is not None else "{}"


def _close(messages: list[Message], open_calls: list[str]) -> None:
    """Answer calls that have no observation, so the next message is valid for the provider."""
    for call_id in open_calls:
        messages.append({"role": "tool", "tool_call_id": call_id, "content": _NOT_RUN})
    open_calls.clear()
