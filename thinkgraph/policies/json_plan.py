"""JsonPlan: the iterative-consultation format, one JSON object per reply.

Each reply states what the model understood, whether the task is complete, its reasoning,
exactly one action (a tool and its arguments) while it is not, and the response when it is:

    {"understanding": "...", "task_complete": false, "reasoning": "...",
     "actions": [{"tool": "add", "args": {"a": 2, "b": 40}}], "response": null}

Example:
    >>> JsonPlan().parse('{"understanding": "u", "task_complete": true, '
    ...                  '"reasoning": "r", "actions": [], "response": "42"}').answer
    '42'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from thinkgraph.policies._json import ToolAction, error_decision, parse_reply
from thinkgraph.policies._messages import text_messages
from thinkgraph.policies.base import BaseTextPolicy, Decision
from thinkgraph.policies.projection import AssistantTurn
from thinkgraph.policies.react_text import describe_tools
from thinkgraph.state import BaseStep

if TYPE_CHECKING:
    from thinkgraph.llm.base import Message
    from thinkgraph.tools.base import Tool

__all__ = ["JsonPlan", "PlanAction", "PlanReply"]

REPLY_FORMAT = (
    "{\n"
    '  "understanding": "<what the task asks and what you know so far>",\n'
    '  "task_complete": false,\n'
    '  "reasoning": "<why the next action is the right one>",\n'
    '  "actions": [{"tool": "<one tool name>", "args": {<its arguments>}}],\n'
    '  "response": null\n'
    "}"
)
FINAL_FORMAT = (
    "{\n"
    '  "understanding": "...",\n'
    '  "task_complete": true,\n'
    '  "reasoning": "<why this is the answer>",\n'
    '  "actions": [],\n'
    '  "response": "<your final answer>"\n'
    "}"
)
_EXPECTED = (
    "Reply with exactly one JSON object. To use a tool:\n\n"
    f"{REPLY_FORMAT}\n\nWhen the task is complete:\n\n{FINAL_FORMAT}"
)
_INTRO = "You are an agent that solves a task step by step, one action at a time."


PlanAction = ToolAction
"""The one action of a reply: a tool and its arguments."""


class PlanReply(BaseModel):
    """One JsonPlan reply, validated."""

    model_config = ConfigDict(extra="ignore")

    understanding: str
    task_complete: bool
    reasoning: str = ""
    actions: list[PlanAction]
    response: str | None = None


class JsonPlan(BaseTextPolicy):
    """The iterative-consultation policy: one JSON plan per reply, one action per step.

    ``JsonPlan(intro=...)`` changes the first sentence of the system prompt.
    """

    default_intro = _INTRO

    def parse(self, text: str) -> Decision:
        """Parse one reply. Never raises on a string: failures are error decisions.

        Code fences, `<think>` blocks and prose around the JSON object are tolerated.
        """
        plan = parse_reply(text, PlanReply, _EXPECTED)
        if isinstance(plan, Decision):
            return plan
        thought = "\n".join(p for p in (plan.understanding.strip(), plan.reasoning.strip()) if p)
        if plan.task_complete:
            answer = (plan.response or "").strip()
            if not answer:
                return error_decision(
                    '"task_complete" is true but "response" is empty. Put your final answer '
                    'in "response", or set "task_complete" to false and give one action.',
                    thought,
                )
            return Decision(kind="final", thought=thought, answer=answer)
        if len(plan.actions) != 1:
            what = "no action" if not plan.actions else f"{len(plan.actions)} actions"
            return error_decision(
                f'"actions" has {what}, but it must hold exactly one action while the task '
                'is not complete: give the next one only (or set "task_complete" to true '
                'and put the answer in "response").',
                thought,
            )
        call = plan.actions[0].to_call()
        return Decision(kind="tool_calls", thought=thought, tool_calls=[call])

    def system_prompt(self, tools: Sequence[Tool]) -> str:
        """The system message: what the agent is, its tools and the reply format."""
        listed = describe_tools(tools) if tools else "(none: set task_complete and answer)"
        return f"{self.intro} You can use these tools:\n\n{listed}\n\n{_EXPECTED}"

    def to_messages(
        self, chain: Sequence[BaseStep], tools: Sequence[Tool], *, final: bool = False
    ) -> list[Message]:
        """Project the chain into messages; tool results come back as user messages."""
        demand = f"Stop using tools now. Give your final answer in this format:\n\n{FINAL_FORMAT}"
        return text_messages(
            self.system_prompt(tools), chain, _canonical, demand if final else None
        )


def _canonical(turn: AssistantTurn) -> str:
    """A reply in the exact format, for turns whose raw text is not in the chain."""
    actions = [
        {"tool": c.name, "args": c.args if c.args is not None else (c.raw_args or {})}
        for c in turn.calls
    ]
    done = turn.answer is not None and not turn.calls
    reply = {
        "understanding": turn.thought,
        "task_complete": done,
        "reasoning": "",
        "actions": actions,
        "response": turn.answer if done else None,
    }
    return json.dumps(reply, ensure_ascii=False)
