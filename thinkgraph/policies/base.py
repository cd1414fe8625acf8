"""The policy interface: how think turns the chain into messages and a reply into a Decision."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from thinkgraph.state import BaseStep, ToolCall
from thinkgraph.types import NextAction
from thinkgraph.values import problem, storable

if TYPE_CHECKING:
    from thinkgraph.llm.base import Message, ModelReply
    from thinkgraph.tools.base import Tool

__all__ = ["BaseTextPolicy", "Decision", "Policy"]


class Decision(BaseModel):
    """A model reply, parsed: what the model thinks and wants to do next.

    `kind` is "tool_calls" (run `tool_calls`), "final" (`answer` is a candidate final answer)
    or "error" (the reply could not be parsed; `error` is feedback for the model).

    Every decision fits what a run can hold (see `thinkgraph.values`), whichever policy
    made it: a tool call whose name or input carries a value the run cannot hold (a lone
    surrogate, an integer wider than 64 bits, NaN, nesting too deep) makes the decision an
    error whose feedback names the value, so the call never runs and the model can send it
    again; the texts (thought, answer, feedback) are kept in their nearest storable form.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["tool_calls", "final", "error"]
    thought: str = ""
    answer: str | None = None
    error: str | None = None
    """Feedback for the model saying what was wrong and what format is expected."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    action: NextAction | None = None
    """An explicit NextAction, for formats that state one (VALIDATE, RESET); else derived."""
    confidence: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _fit_to_run(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        refused = _refused_call(data.get("tool_calls") or [])
        if refused is not None:
            return {"kind": "error", "thought": storable(data.get("thought", "")), "error": refused}
        return {k: v if k == "tool_calls" else storable(v) for k, v in data.items()}

    @property
    def next_action(self) -> NextAction:
        """The NextAction this decision asks for."""
        if self.action is not None:
            return self.action
        if self.kind == "final":
            return NextAction.FINAL_ANSWER
        return NextAction.CONTINUE


def _refused_call(calls: Sequence[ToolCall | dict[str, Any]]) -> str | None:
    """Feedback for the first call whose name or input a run cannot hold; None if all fit."""
    for call in calls:
        fields = call if isinstance(call, dict) else vars(call)
        name = fields.get("name")
        found = problem(name, "the tool name")
        if found is None:
            found = problem(fields.get("args"), "the arguments")
        if found is None:
            found = problem(fields.get("raw_args"), "the input")
        if found is not None:
            return f"Your call to {storable(name)!r} was not run: {found}."
    return None


@runtime_checkable
class Policy(Protocol):
    """Turns (chain, tools) into messages, and a model reply into a `Decision`."""

    native_tools: bool
    """True when tool schemas go to the provider's tool-calling API instead of the prompt."""

    def to_messages(
        self, chain: Sequence[BaseStep], tools: Sequence[Tool], *, final: bool = False
    ) -> list[Message]:
        """Project the chain into messages. `final=True` demands a final answer now."""
        ...

    def parse_reply(self, reply: ModelReply) -> Decision:
        """Parse a model reply. Never raises on model output: failures are error decisions."""
        ...

    def tool_schemas(self, tools: Sequence[Tool]) -> list[dict[str, Any]] | None:
        """Schemas for native tool calling, or None when tools are described in the prompt."""
        ...


class BaseTextPolicy:
    """Base for policies whose tools are described in the prompt and whose replies are text.

    Subclasses implement `parse(text)`, `system_prompt(tools)` and `to_messages(...)`, and
    set `default_intro`.

    Args:
        intro: What the agent is, the first sentence of the system prompt; the policy's
            `default_intro` when left out.
    """

    native_tools: bool = False
    """Tools are described in the prompt, not sent to the provider's tool-calling API."""
    default_intro: ClassVar[str] = "You are an agent that solves a task step by step."
    """The first sentence of the system prompt, unless `intro` is given."""

    def __init__(self, *, intro: str | None = None) -> None:
        self.intro = self.default_intro if intro is None else intro

    def parse(self, text: str) -> Decision:
        """Parse a reply's text. Never raises on a string: failures are error decisions."""
        raise NotImplementedError

    def parse_reply(self, reply: ModelReply) -> Decision:
        """Parse a model reply by its text (native tool calls are not part of the format)."""
        return self.parse(reply.text)

    def tool_schemas(self, tools: Sequence[Tool]) -> list[dict[str, Any]] | None:
        """None: the tools are described in the system prompt."""
        return None
