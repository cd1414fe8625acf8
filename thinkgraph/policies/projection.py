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
  rejected answer), guidance from a person and the notes a node wrote for the model
  (`NoteStep`), each as its own kind of turn.

Tool results, other model calls (finalize, summarize, critic), provider failures, approval
decisions and the final step are not projected: the model sees a tool's result as its
observation, and the rest is bookkeeping.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from thinkgraph.llm.base import Message
from thinkgraph.state import (
    BaseStep,
    ErrorStep,
    HumanStep,
    LLMCallStep,
    NoteStep,
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
    "NoteTurn",
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


@dataclass(frozen=True, slots=True)
class NoteTurn:
    """What a node of the graph noted for the model (a plan, a reflection): not a person."""

    node: str
    """The node that wrote the note."""
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
    | NoteTurn
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
    memo = _memo_for(chain)
    if memo is None:
        return _project_whole(chain)
    return [*memo.prefix, *memo.walker.done, *memo.walker.pending()]


def _project_whole(chain: Sequence[BaseStep]) -> list[Turn]:
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


# -- incremental projection -------------------------------------------------------------------
#
# A chain only grows, and think projects it at every step: projecting it whole each time
# makes a long run quadratic. A memo per chain keeps the walk, and each policy's messages
# for the finished turns, and feeds only the steps added since. It is checked against the
# very step objects it last saw, so another chain (another thread, a fork with edited
# steps, a resume in a new process) never reuses it.

Fold = Callable[[list[Message], dict[str, Any], Turn], None]
"""Adds one turn's messages to a message list, with whatever state the format needs."""


class _Folded:
    """A policy's messages for the finished turns of one memo."""

    def __init__(self, epoch: int, head: list[Message]) -> None:
        self.epoch = epoch
        self.head = head
        self.messages: list[Message] = list(head)
        self.state: dict[str, Any] = {}
        self.turns = 0


class _Memo:
    """The walk of one chain so far."""

    def __init__(self) -> None:
        self.first: BaseStep | None = None
        self.last: BaseStep | None = None
        self.count = 0
        self.epoch = 0
        """Changes when the finished turns stop being a prefix (a reset, the task)."""
        self.task: TaskStep | None = None
        self.lessons: list[str] = []
        self.reset_seen = False
        self.summarized = False
        """A summary replaces steps it covers: such chains are projected whole."""
        self.prefix: list[Turn] = []
        self.walker = _Walker()
        self.folds: dict[str, _Folded] = {}

    def matches(self, chain: Sequence[BaseStep]) -> bool:
        return (
            0 < self.count <= len(chain)
            and chain[0] is self.first
            and chain[self.count - 1] is self.last
        )

    def feed(self, chain: Sequence[BaseStep]) -> None:
        for step in chain[self.count :]:
            self._feed(step)
        self.first, self.last, self.count = chain[0], chain[-1], len(chain)

    def _feed(self, step: BaseStep) -> None:
        if isinstance(step, TaskStep):
            if self.task is None:
                self.task = step
                self._restart()
            return
        if isinstance(step, ResetStep):
            self.reset_seen = True
            if step.lesson:
                self.lessons.append(step.lesson.strip())
            self.summarized = False
            self._restart()
            return
        if (
            isinstance(step, LLMCallStep)
            and step.purpose == "summarize"
            and step.error is None
            and step.covers_through is not None
        ):
            self.summarized = True
        self.walker.feed(step)

    def _restart(self) -> None:
        self.epoch += 1
        self.walker = _Walker()
        self.prefix = [TaskTurn(self.task.text)] if self.task is not None else []
        if self.reset_seen:
            self.prefix.append(LessonTurn(tuple(self.lessons)))


_MEMOS: OrderedDict[str, _Memo] = OrderedDict()
_MEMO_LIMIT = 64
"""Chains remembered at once (one per run being worked on in this process)."""


def _memo_for(chain: Sequence[BaseStep]) -> _Memo | None:
    if not chain:
        return None
    key = chain[0].id
    memo = _MEMOS.get(key)
    if memo is None or not memo.matches(chain):
        memo = _Memo()
    memo.feed(chain)
    _MEMOS[key] = memo
    _MEMOS.move_to_end(key)
    while len(_MEMOS) > _MEMO_LIMIT:
        _MEMOS.popitem(last=False)
    return None if memo.summarized else memo


def fold_turns(
    chain: Sequence[BaseStep], key: str, head: list[Message], fold: Fold
) -> tuple[list[Message], dict[str, Any]]:
    """Fold a chain's turns into messages, reusing the messages of turns folded before.

    Args:
        chain: The run's steps.
        key: Names the format (and anything its messages depend on besides the turns).
        head: The messages before the first turn, e.g. the system prompt.
        fold: Adds one turn's messages; it may keep state (e.g. calls awaiting results)
            in the dict it is given.

    Returns:
        The messages and the fold's state after the last turn; the caller may add to both.
    """
    memo = _memo_for(chain)
    if memo is None:
        messages: list[Message] = list(head)
        state: dict[str, Any] = {}
        for turn in _project_whole(chain):
            fold(messages, state, turn)
        return messages, state
    folded = memo.folds.get(key)
    if folded is None or folded.epoch != memo.epoch or folded.head != head:
        folded = memo.folds[key] = _Folded(memo.epoch, head)
    finished = memo.walker.done
    fresh = memo.prefix if folded.turns == 0 else []
    for turn in [*fresh, *finished[max(folded.turns - len(memo.prefix), 0) :]]:
        fold(folded.messages, folded.state, turn)
    folded.turns = len(memo.prefix) + len(finished)
    messages = list(folded.messages)
    state = {k: list(v) if isinstance(v, list) else v for k, v in folded.state.items()}
    for turn in memo.walker.pending():
        fold(messages, state, turn)
    return messages, state


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
    """Folds an llm_call with the thought and tool calls that follow it into one turn.

    `done` holds the finished turns, which never change once written; the turn still
    being assembled (its llm_call seen, more of its steps may follow) is `pending()`.
    """

    def __init__(self) -> None:
        self._call: LLMCallStep | None = None
        self._thought: ThoughtStep | None = None
        self._calls: list[ToolCall] = []
        self.done: list[Turn] = []

    def walk(self, steps: Sequence[BaseStep]) -> list[Turn]:
        for step in steps:
            self.feed(step)
        return [*self.done, *self.pending()]

    def feed(self, step: BaseStep) -> None:
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
                self.done.append(turn)

    def pending(self) -> list[Turn]:
        """The turn being assembled, if it has enough to show."""
        turn = self._assembled()
        return [turn] if turn is not None else []

    def _unparsed(self, error: ErrorStep) -> None:
        feedback = error.feedback or error.message
        if self._call is not None:
            self.done.append(UnparsedTurn(self._call.text, feedback))
            self._call, self._thought, self._calls = None, None, []
        else:
            self._flush()
            self.done.append(FeedbackTurn(feedback, kind="parse"))

    def _assembled(self) -> Turn | None:
        # An llm_call alone (its reply not yet recorded as a decision) is not shown: the
        # model would see a reply with no answer to it.
        if self._thought is None and not self._calls:
            return None
        thought = self._thought or ThoughtStep()
        return AssistantTurn(
            thought=thought.text,
            calls=tuple(self._calls),
            answer=thought.answer,
            next_action=thought.next_action,
            text=self._call.text if self._call is not None else "",
        )

    def _flush(self) -> None:
        turn = self._assembled()
        if turn is not None:
            self.done.append(turn)
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
    if isinstance(step, NoteStep) and step.for_model and step.text.strip():
        return NoteTurn(step.node or "a node", step.text.strip())
    return None
