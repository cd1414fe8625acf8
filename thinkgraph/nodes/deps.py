"""What the nodes need besides the state: the model, the policy, the tools, the validators."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from thinkgraph.llm import as_chat_model
from thinkgraph.llm.base import ChatModel
from thinkgraph.policies import ReActText
from thinkgraph.policies.base import Policy
from thinkgraph.policies.context import ContextPolicy
from thinkgraph.state import Verdict
from thinkgraph.tools import Tool, as_tool
from thinkgraph.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["Deps", "Validator", "agent_deps"]

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


def agent_deps(
    model: str | ChatModel | BaseChatModel,
    tools: Iterable[Tool | Callable[..., Any]],
    policy: Policy | None,
    validators: Sequence[Validator],
    approve: Iterable[str] | Literal["side_effects"] | None,
    max_observation_chars: int,
    context: ContextPolicy | None,
    confidence_threshold: float | None,
) -> Deps:
    """The parts an agent's nodes share, from `Agent`'s arguments of the same names."""
    return Deps(
        model=as_chat_model(model),
        policy=policy or ReActText(),
        tools=ToolRegistry([as_tool(t) for t in tools]),
        validators=tuple(validators),
        approve=approve if approve in (None, "side_effects") else frozenset(approve),  # type: ignore[arg-type]
        max_observation_chars=max_observation_chars,
        context=context,
        confidence_threshold=confidence_threshold,
    )
