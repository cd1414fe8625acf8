"""Projection: the chain, read as the conversation a policy renders into messages.

The chain records everything (costs, tool results, approvals, provider failures); a
prompt shows only what the model needs to see. `project` makes that choice once, for every
policy, as a list of semantic turns; each policy only decides how a turn is worded.

What is projected:

- the task (the first `TaskStep`);
- the lessons of every `ResetStep`, and then only the steps after the last one, because
  a reset means the reasoning starts over;
- the latest summary of earlier steps (an `LLMCallStep` with purpose "summarize", written
  by the context policy), in place of the steps it covers;
- one `AssistantTurn` per think call that was parsed (its `ThoughtStep` and
  `ToolCallStep`s), or an `UnparsedTurn` when the reply could not be parsed;
- observations, feedback the model must act on (refused actions, validation errors, a
  rejected answer) and guidance from a person.

Tool results, other model calls (finalize, summarize, critic), provider failures, approval
decisions and the final step are not projected: the model sees a tool's result as its
observation, and the rest is bookkeeping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from thinkgraph.state import (
    BaseStep,
    ErrorStep,
    HumanStep,
    LLMCallStep,
    ObservationStep,
    ResetStep,
    TaskStep,
    ThoughtStep,
    ToolCall,
    ToolCallStep,
    ValidationStep,
)
from thinkgraph.types import NextAction

__all__ = [
    "AssistantTurn",
    "FeedbackTurn",
    "GuidanceTurn",
    "LessonTurn",
    "ObservationTurn",
    "RejectionTurn",
    "SummaryTurn",
    "TaskTurn",
    "Turn",
    "UnparsedTurn",
    "project",
]

# -- turns ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskTurn:
    """The task the run was given."""

    text: str


@dataclass(frozen=True, slots=True)
class LessonTurn:
    """Earlier attempts were abandoned by a reset; what was learned from them, in order."""

    lessons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SummaryTurn:
    """A summary of earlier steps, shown instead of them (see `thinkgraph.policies.context`)."""

    text: str


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """One parsed model reply: its thought and what it decided."""

    thought: str
    calls: tuple[ToolCall, ...] = ()
    """The tool calls it proposed, ids included so native formats can link results."""
    answer: str | None = None
    """The candidate answer, when the reply gave one."""
    next_action: NextAction = NextAction.CONTINUE
    text: str = ""
    """The reply as the model wrote it ("" when the chain has no llm_call for it)."""


@dataclass(frozen=True, slots=True)
class UnparsedTurn:
    """A model reply that could not be parsed, and the feedback saying why."""

    text: str
    """The reply as the model wrote it."""
    feedback: str


@dataclass(frozen=True, slots=True)
class ObservationTurn:
    """What a tool call returned, as the model is shown it."""

    call_id: str
    tool: str
    text: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class FeedbackTurn:
    """A refused action or an invalid decision: feedback the model must act on."""

    text: str
    kind: str = "refused_action"


@dataclass(frozen=True, slots=True)
class RejectionTurn:
    """A candidate answer the validators did not accept, with their reasons."""

    answer: str
    reasons: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class GuidanceTurn:
    """What a person told the model."""

    text: str


Turn: TypeAlias = (
    TaskTurn
    | LessonTurn
    | SummaryTurn
    | AssistantTurn
    | UnparsedTurn
    | ObservationTurn
    | FeedbackTurn
    | RejectionTurn
    | GuidanceTurn
)
"""Any turn of a projection."""

_HUMAN_KINDS_SHOWN = ("guidance", "retry")
"""Human steps whose text is meant for the model; approval decisions reach it otherwise."""


# -- projection -------------------------------------------------------------------------------


def project(chain: Sequence[BaseStep]) -> list[Turn]:
    """The turns a policy renders, in order.

    Args:
        chain: The run's steps, oldest first.

    Returns:
        The task, the lessons of any resets, then the turns after the last reset.

    Example:
        >>> project([TaskStep(text="What is 2 + 2?")])
        [TaskTurn(text='What is 2 + 2?')]
    """
    turns: list[Turn] = []
    task = next((s for s in chain if isinstance(s, TaskStep)), None)
    if task is not None:
        turns.append(TaskTurn(task.text))
    last_reset = max((i for i, s in enumerate(chain) if isinstance(s, ResetStep)), default=-1)
    lessons = tuple(s.lesson.strip() for s in chain if isinstance(s, ResetStep) and s.lesson)
    if last_reset >= 0:
        turns.append(LessonTurn(lessons))
    steps = chain[last_reset + 1 :]
    summary = latest_summary(steps)
    if summary is not None:
        turns.append(SummaryTurn(summary.text))
        steps = [s for s in steps if s is not summary and not is_covered(s, summary)]
    turns.extend(_Walker().walk(steps))
    return turns


def latest_summary(steps: Sequence[BaseStep]) -> LLMCallStep | None:
    """The last successful summarize call among `steps`, if any."""
    for step in reversed(steps):
        if (
            isinstance(step, LLMCallStep)
            and step.purpose == "summarize"
            and step.error is None
            and step.covers_through is not None
        ):
            return step
    return None


def is_covered(step: BaseStep, summary: LLMCallStep) -> bool:
    """Whether `summary` stands in for `step` in prompts.

    A step not yet numbered (-1: written by the node that is running) is never covered.
    """
    through = summary.covers_through
    return through is not None and 0 <= step.number <= through


class _Walker:
    """Folds an llm_call with the thought and tool calls that follow it into one turn."""

    def __init__(self) -> None:
        self._call: LLMCallStep | None = None
        self._thought: ThoughtStep | None = None
        self._calls: list[ToolCall] = []
        self._out: list[Turn] = []

    def walk(self, steps: Sequence[BaseStep]) -> list[Turn]:
        for step in steps:
            self._step(step)
        self._flush()
        return self._out

    def _step(self, step: BaseStep) -> None:
        if isinstance(step, LLMCallStep):
            self._flush()
            # A failed call or another purpose's call (finalize, critic) is not a turn.
            if step.purpose == "think" and step.error is None:
                self._call = step
        elif isinstance(step, ThoughtStep):
            if self._thought is not None:
                self._flush()
            self._thought = step
        elif isinstance(step, ToolCallStep):
            self._calls.append(step.call)
        elif isinstance(step, ErrorStep) and step.kind == "parse":
            self._unparsed(step)
        else:
            self._flush()
            turn = _other(step)
            if turn is not None:
                self._out.append(turn)

    def _unparsed(self, error: ErrorStep) -> None:
        feedback = error.feedback or error.message
        if self._call is not None:
            self._out.append(UnparsedTurn(self._call.text, feedback))
            self._call, self._thought, self._calls = None, None, []
        else:
            self._flush()
            self._out.append(FeedbackTurn(feedback, kind="parse"))

    def _flush(self) -> None:
        # An llm_call alone (its reply not yet recorded as a decision) is not shown: the
        # model would see a reply with no answer to it.
        if self._thought is not None or self._calls:
            thought = self._thought or ThoughtStep()
            self._out.append(
                AssistantTurn(
                    thought=thought.text,
                    calls=tuple(self._calls),
                    answer=thought.answer,
                    next_action=thought.next_action,
                    text=self._call.text if self._call is not None else "",
                )
            )
        self._call, self._thought, self._calls = None, None, []


def _other(step: BaseStep) -> Turn | None:
    """The turn of a step that stands alone, or None when the model does not see it."""
    if isinstance(step, ObservationStep):
        return ObservationTurn(step.call_id, step.tool, step.text, step.is_error)
    if isinstance(step, ErrorStep) and step.kind in ("refused_action", "validation"):
        return FeedbackTurn(step.feedback or step.message, kind=step.kind)
    if isinstance(step, ValidationStep) and not step.passed:
        reasons = tuple(v.reason for v in step.verdicts if not v.passed and v.reason)
        return RejectionTurn(step.answer, reasons)
    if isinstance(step, HumanStep) and step.kind in _HUMAN_KINDS_SHOWN and step.text.strip():
        return GuidanceTurn(step.text.strip())
    return None
