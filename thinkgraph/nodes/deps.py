"""What the nodes need besides the state: the model, the policy, the tools, the validators."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from thinkgraph.llm.base import ChatModel
from thinkgraph.policies.base import Policy
from thinkgraph.policies.context import ContextPolicy
from thinkgraph.state import Verdict
from thinkgraph.tools.registry import ToolRegistry

__all__ = ["Deps", "Validator"]

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
