"""A run to export as a regression test: a door unlocked with a secret pin (approved),
then a calculation; importable by address (``tests.regress_support.sample:tools``)."""

from __future__ import annotations

from typing import Any

from thinkgraph import ScriptedModel, tool
from thinkgraph.policies import ReActText
from thinkgraph.policies.base import Decision
from thinkgraph.tools.builtin import calculator

PIN = "7310-secret-pin"
TASK = "Unlock the back door, then tell me 6*7."


@tool(sensitive={"pin"}, requires_approval=True)
def unlock(door: str, pin: str) -> str:
    """Unlock a door with its pin."""
    return f"{door} door open"


tools = [unlock, calculator]


def script() -> ScriptedModel:
    """The model's replies: unlock (approved), calculate, answer."""
    return ScriptedModel(
        [
            "Thought: unlock first.\nAction: unlock\n"
            f'Action Input: {{"door": "back", "pin": "{PIN}"}}',
            'Thought: now the sum.\nAction: calculator\nAction Input: {"expression": "6*7"}',
            "Thought: done.\nFinal Answer: the back door is open and 6*7 = 42",
        ]
    )


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


def any_tools() -> list[Any]:
    """The tools, for `--tools`."""
    return list(tools)
