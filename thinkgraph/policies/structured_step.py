"""StructuredStep: one structured reasoning step per reply, with its own NextAction.

Each reply is a JSON object, validated with pydantic:

    {"title": "Add the numbers", "action": {"tool": "add", "args": {"a": 2, "b": 40}},
     "result": null, "reasoning": "...", "next_action": "continue", "confidence": 0.9}

`next_action` is one of the four NextAction words, so the model itself asks for a
validation, a final answer or a reset; `result` is the candidate answer for `validate`
and `final_answer`. The `confidence` is kept on the decision: with
`Agent(confidence_threshold=...)` a low-confidence answer is validated instead of taken.

Example:
    >>> d = StructuredStep().parse('{"title": "t", "reasoning": "r", "result": "42", '
    ...                            '"next_action": "final_answer", "confidence": 0.9}')
    >>> d.kind, d.answer, d.confidence
    ('final', '42', 0.9)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from thinkgraph.policies._json import ToolAction, error_decision, parse_reply
from thinkgraph.policies._messages import text_messages
from thinkgraph.policies.base import BaseTextPolicy, Decision
from thinkgraph.policies.projection import AssistantTurn
from thinkgraph.policies.react_text import describe_tools
from thinkgraph.state import BaseStep
from thinkgraph.types import NextAction

if TYPE_CHECKING:
    from thinkgraph.llm.base import Message
    from thinkgraph.tools.base import Tool

__all__ = ["ReasoningStep", "StepAction", "StructuredStep"]

STEP_FORMAT = (
    "{\n"
    '  "title": "<a few words naming this step>",\n'
    '  "action": {"tool": "<tool name>", "args": {<its arguments>}} or null,\n'
    '  "result": "<your answer so far>" or null,\n'
    '  "reasoning": "<your reasoning in this step>",\n'
    '  "next_action": "continue" | "validate" | "final_answer" | "reset",\n'
    '  "confidence": <a number from 0 to 1>\n'
    "}"
)
_EXPECTED = (
    f"Reply with exactly one JSON object:\n\n{STEP_FORMAT}\n\n"
    'Use "continue" to run the action (or to keep reasoning without one), "validate" to have '
    'your result checked, "final_answer" when the result is your answer, and "reset" to '
    "start over with a new approach."
)
_INTRO = "You are an agent that solves a task in small, explicit reasoning steps."


StepAction = ToolAction
"""A tool call named by a step."""


class ReasoningStep(BaseModel):
    """One StructuredStep reply, validated."""

    model_config = ConfigDict(extra="ignore")

    title: str
    action: StepAction | str | None = None
    """A tool call, or a few words saying what the step does without a tool."""
    result: Any = None
    """The candidate answer; any JSON value (an object is kept as JSON text)."""
    reasoning: str
    next_action: Literal["continue", "validate", "final_answer", "reset"]
    confidence: float = Field(ge=0.0, le=1.0)


class StructuredStep(BaseTextPolicy):
    """The structured-step policy: title, action, result, reasoning, next_action, confidence.

    ``StructuredStep(intro=...)`` changes the first sentence of the system prompt.
    """

    default_intro = _INTRO

    def parse(self, text: str) -> Decision:
        """Parse one reply. Never raises on a string: failures are error decisions."""
        step = parse_reply(text, ReasoningStep, _EXPECTED)
        if isinstance(step, Decision):
            return step
        thought = f"{step.title.strip()}: {step.reasoning.strip()}".strip(": ")
        action = NextAction(step.next_action)
        answer = _result_text(step.result)
        if action in (NextAction.VALIDATE, NextAction.FINAL_ANSWER):
            if answer is None:
                return error_decision(
                    f'"next_action" is "{step.next_action}" but "result" is empty: put your '
                    'answer in "result", or use "continue".',
                    thought,
                )
            return Decision(
                kind="final",
                thought=thought,
                answer=answer,
                action=action,
                confidence=step.confidence,
            )
        calls = []
        if action == NextAction.CONTINUE and isinstance(step.action, StepAction):
            calls = [step.action.to_call()]
        # "tool_calls" with no call is a reasoning step (or a reset): think goes on.
        return Decision(
            kind="tool_calls",
            thought=thought,
            tool_calls=calls,
            answer=answer,
            action=action,
            confidence=step.confidence,
        )

    def system_prompt(self, tools: Sequence[Tool]) -> str:
        """The system message: what the agent is, its tools and the reply format."""
        listed = describe_tools(tools) if tools else "(none: reason without tools)"
        return f"{self.intro} You can use these tools:\n\n{listed}\n\n{_EXPECTED}"

    def to_messages(
        self, chain: Sequence[BaseStep], tools: Sequence[Tool], *, final: bool = False
    ) -> list[Message]:
        """Project the chain into messages; tool results come back as user messages."""
        demand = (
            'Stop using tools now. Reply with "next_action": "final_answer" and your '
            'answer in "result".'
        )
        return text_messages(
            self.system_prompt(tools), chain, _canonical, demand if final else None
        )


def _result_text(result: Any) -> str | None:
    if result is None:
        return None
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    return text.strip() or None


def _canonical(turn: AssistantTurn) -> str:
    """A reply in the exact format, for turns whose raw text is not in the chain."""
    call = turn.calls[0] if turn.calls else None
    reply = {
        "title": "",
        "action": {"tool": call.name, "args": call.args or call.raw_args or {}} if call else None,
        "result": turn.answer,
        "reasoning": turn.thought,
        "next_action": turn.next_action.value,
        "confidence": None,
    }
    return json.dumps(reply, ensure_ascii=False)
