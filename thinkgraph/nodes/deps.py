"""What the nodes need besides the state: the model, the policy, the tools, the validators."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from thinkgraph.llm.base import ChatModel
from thinkgraph.policies.base import Policy
from thinkgraph.policies.context import ContextPolicy
from thinkgraph.state import ToolCall, ToolResultStep, Verdict
from thinkgraph.tools.base import ToolContext
from thinkgraph.tools.registry import ToolRegistry

__all__ = ["Deps", "RecordedResults", "ServeResult", "Validator"]

ServeResult: TypeAlias = Callable[[ToolCall, int, ToolContext], "ToolResultStep | None"]
"""Serves a call's result from a recorded run: `(call, think_step, ctx) -> result`, or None
to run the tool."""


@dataclass(slots=True)
class RecordedResults:
    """Where act takes a call's result from instead of running the tool: a replay's record.

    Empty (``serve`` None) for every agent but a replay's (see `thinkgraph.runs.replay`).
    """

    serve: ServeResult | None = None
    """The recorded result of a call, or None: run the tool."""


Validator: TypeAlias = Callable[
    [str, Mapping[str, Any]],
    "Verdict | bool | str | Awaitable[Verdict | bool | str | None] | None",
]
"""A check on a candidate answer: `(answer, state) -> Verdict`, or an `async def` one.

For convenience it may also return True/None (passed), False (failed) or a str (failed,
with that reason).
"""


@dataclass(frozen=True, slots=True)
class Deps:
    """The parts a thinkgraph graph's nodes are built from.

    Example:
        >>> from thinkgraph import ScriptedModel
        >>> from thinkgraph.policies import ReActText
        >>> deps = Deps(model=ScriptedModel([]), policy=ReActText(), tools=ToolRegistry([]))
    """

    model: ChatModel
    """The model think and finalize call."""
    policy: Policy
    """How the chain becomes messages and a reply becomes a Decision."""
    tools: ToolRegistry
    """The tools act may call."""
    validators: tuple[Validator, ...] = field(default=())
    """Checks a candidate answer must pass before it is final."""
    approve: frozenset[str] | Literal["side_effects"] | None = None
    """Calls that need a person's approval besides tools marked `requires_approval`: these
    tool names, or every tool with side effects."""
    max_observation_chars: int = 4000
    """Tool output longer than this is shortened in the observation (kept whole in the
    tool_result step)."""
    context: ContextPolicy | None = None
    """How much of the chain a prompt shows (truncate or summarize); None shows it all."""
    confidence_threshold: float | None = None
    """A candidate answer with a lower confidence is validated instead of taken (None: off)."""
    gate_verdicts: dict[tuple[str, str, str | None, str], bool] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """What the tools' approval rules said of this agent's calls (see `thinkgraph.nodes.gate`):
    a rule is judged once per call, however many edges ask the gate."""
    recorded: RecordedResults = field(
        default_factory=RecordedResults, init=False, repr=False, compare=False
    )
    """Recorded results act serves instead of running tools: set only for a replay."""
