"""A run to export as a regression test: a door unlocked with a secret pin (approved),
then a calculation; importable by address (``tests.regress_support.sample:tools``)."""

from __future__ import annotations

import copy
from typing import Any

from thinkgraph import ScriptedModel, tool
from thinkgraph.policies import ReActText
from thinkgraph.policies.base import Decision
from thinkgraph.tools.builtin import calculator

PIN = "7310-secret-pin"
TOKEN = "tok-9f8e7d6c5b4a3921"
SESSION = "sk-live0123456789abcdefXYZ"
"""Three secrets the views mask: a `sensitive` argument, a token-looking key, a pattern."""
TASK = "Unlock the back door, then tell me 6*7."


@tool(sensitive={"pin"}, requires_approval=True)
def unlock(door: str, pin: str, api_token: str = "") -> str:
    """Unlock a door with its pin."""
    return f"{door} door open (session {SESSION})"


tools = [unlock, calculator]


def script() -> ScriptedModel:
    """The model's replies: unlock (approved), calculate, answer."""
    return ScriptedModel(REPLIES)


REPLIES = [
    "Thought: unlock first.\nAction: unlock\n"
    f'Action Input: {{"door": "back", "pin": "{PIN}", "api_token": "{TOKEN}"}}',
    'Thought: now the sum.\nAction: calculator\nAction Input: {"expression": "6*7"}',
    "Thought: done.\nFinal Answer: the back door is open and 6*7 = 42",
]


class FrontDoor(ReActText):
    """Code changed since the run: unlock is sent to the front door."""

    def parse(self, text: str) -> Decision:
        decision = super().parse(text)
        calls = [
            call.model_copy(update={"args": {**call.args, "door": "front"}})
            if call.name == "unlock" and call.args
            else call
            for call in decision.tool_calls
        ]
        return decision.model_copy(update={"tool_calls": calls})


def long_script(sums: int = 6) -> ScriptedModel:
    """A longer run: the unlock, then `sums` calculations (about 20 steps and more)."""
    replies = REPLIES[:1] + [
        f'Thought: sum {i}.\nAction: calculator\nAction Input: {{"expression": "{i}*7"}}'
        for i in range(1, sums + 1)
    ]
    return ScriptedModel([*replies, "Thought: done.\nFinal Answer: all summed"])


def described(text: str) -> list[Any]:
    """The tools with unlock described in other words: only the prompt changes."""
    changed = copy.copy(unlock)
    changed.description = text
    return [changed, calculator]
