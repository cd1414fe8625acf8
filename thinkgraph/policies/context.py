"""The context policy: how much of a long chain a prompt shows.

The chain keeps everything; a prompt has room for less. `ContextPolicy` chooses, before
the policy words the messages, which steps a prompt is projected from:

- the task, the reset lessons and the steps after the last reset always stay;
- the rest is cut into *entries*, the turns the model sees (a reply, an observation, a
  note), grouped into units that cannot be split: a reply and the observations of its
  tool calls go or stay together, so a native tool message never loses its call;
- `truncate` drops the oldest units until at most `max_entries` entries are left, and (with
  `max_tokens`) until the prompt's steps fit in that many tokens, counted with litellm's
  token counter for the model (`"auto"`: the model's context window, from litellm's model
  table, less a quarter for the reply and the instructions);
- `summarize` asks the model to condense the oldest units (and any earlier summary) into
  one summary, recorded as an `LLMCallStep(purpose="summarize")` whose `covers_through`
  names the last step it stands in for. Every later prompt shows the summary instead of
  those steps, until the entries after it overflow again. When the call fails or answers
  nothing, the prompt falls back to truncation.

Large tool outputs are a separate matter: observe already shortens each observation to
`max_observation_chars` and keeps the whole output in the tool_result step.

Example:
    >>> policy = ContextPolicy(max_entries=20, mode="summarize")
    >>> policy.keep_after_summary
    10
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from thinkgraph.errors import ModelConfigError
from thinkgraph.llm.base import ChatModel, Message, ModelRequest
from thinkgraph.llm.call import ModelCall, call_model
from thinkgraph.llm.litellm import count_tokens, model_info
from thinkgraph.policies._messages import user_text
from thinkgraph.policies.projection import (
    AssistantTurn,
    ObservationTurn,
    UnparsedTurn,
    is_covered,
    latest_summary,
    project,
)
from thinkgraph.state import (
    BaseStep,
    ErrorStep,
    HumanStep,
    LLMCallStep,
    NoteStep,
    ResetStep,
    TaskStep,
    ValidationStep,
)

__all__ = ["ContextPolicy", "Fitted", "context_window", "fit_context"]

SUMMARY_INSTRUCTIONS = (
    "You condense an agent's earlier work so it can carry on with less text. Write a short "
    "summary of the steps below: what was tried, which tool results matter (keep exact "
    "numbers, names and identifiers), what failed and why, and what is still open. Reply "
    "with the summary only."
)


@dataclass(frozen=True, slots=True)
class ContextPolicy:
    """How many entries (or tokens) a prompt shows, and what happens to older ones.

    Args:
        max_entries: At most this many entries (turns after the task, lessons and summary)
            go into a prompt. The latest unit always stays, even when it alone is larger.
        max_tokens: At most about this many tokens of steps go into a prompt (the task,
            lessons and summary included), counted with `count_tokens` — by default
            litellm's counter for the model —, or "auto" for the model's context window
            less a quarter. With both limits, a prompt keeps within both.
        mode: "truncate" drops the oldest entries; "summarize" condenses them with a model
            call and falls back to truncating when that call fails.
        keep_after_summary: Entries left as they are when a summary is made, so the next
            few steps reuse it instead of summarizing again; half of `max_entries` by default.
        instructions: The summarizer's system prompt.
    """

    max_entries: int | None = None
    mode: Literal["truncate", "summarize"] = "truncate"
    keep_after_summary: int = -1
    instructions: str = field(default=SUMMARY_INSTRUCTIONS, repr=False)
    max_tokens: int | Literal["auto"] | None = None
    count_tokens: Callable[[str, str], int] | None = field(default=None, repr=False)
    """``count_tokens(model, text)``; litellm's token counter when None."""

    def __post_init__(self) -> None:
        if self.max_entries is None and self.max_tokens is None:
            raise ValueError("give max_entries, max_tokens or both (e.g. max_tokens='auto')")
        if self.max_entries is not None and self.max_entries < 1:
            raise ValueError(f"max_entries={self.max_entries} must be at least 1")
        if self.max_tokens is not None and self.max_tokens != "auto" and self.max_tokens < 1:
            raise ValueError(f"max_tokens={self.max_tokens} must be at least 1 (or 'auto')")
        if self.mode not in ("truncate", "summarize"):
            raise ValueError(f"mode={self.mode!r}: use 'truncate' or 'summarize'")
        if self.keep_after_summary < 0:
            object.__setattr__(self, "keep_after_summary", max(1, self._entries() // 2))
        if self.keep_after_summary > self._entries():
            raise ValueError(
                f"keep_after_summary={self.keep_after_summary} is above max_entries="
                f"{self.max_entries}; lower it"
            )

    def select(self, chain: Sequence[BaseStep], model: str = "") -> list[BaseStep]:
        """The chain a prompt is projected from: older units dropped to fit the limits.

        The task, everything up to the last reset and the latest summary stay; steps the
        summary covers are left out.

        Args:
            chain: the run's chain.
            model: the model the prompt is for (its tokenizer and, for "auto", its window).
        """
        head, summary, units = _split(chain)
        fixed = [*head, *([summary] if summary else [])]
        budget = self._token_budget(model, fixed)
        kept = _fit(units, self._entries(), budget)
        return [*fixed, *(s for u in kept for s in u)]

    def overflow(self, chain: Sequence[BaseStep], model: str = "") -> list[BaseStep]:
        """The steps a new summary should condense, or [] while the steps still fit."""
        head, summary, units = _split(chain)
        budget = self._token_budget(model, [*head, *([summary] if summary else [])])
        if _count(units) <= self._entries() and (
            budget is None or sum(t for _, t in budget.sizes(units)) <= budget.limit
        ):
            return []
        half = None if budget is None else budget.scaled(self.keep_after_summary, self._entries())
        kept = _fit(units, self.keep_after_summary, half)
        old = [s for u in units[: len(units) - len(kept)] for s in u]
        # Steps the running node wrote are not numbered yet and cannot be covered.
        return [s for s in old if s.number >= 0]

    def _entries(self) -> int:
        return self.max_entries if self.max_entries is not None else _NO_LIMIT

    def _token_budget(self, model: str, fixed: Sequence[BaseStep]) -> _Budget | None:
        """The tokens left for the units once the task, lessons and summary are counted."""
        if self.max_tokens is None:
            return None
        count = self.count_tokens or _litellm_tokens
        limit = context_window(model) if self.max_tokens == "auto" else self.max_tokens
        return _Budget(limit - count(model, _transcript(fixed)), lambda text: count(model, text))

    def summary_request(self, chain: Sequence[BaseStep], old: Sequence[BaseStep]) -> list[Message]:
        """The messages asking the model to condense `old` (with the previous summary)."""
        _, summary, _ = _split(chain)
        parts = [f"Task: {_task(chain)}"]
        if summary is not None:
            parts.append(f"Summary so far: {summary.text}")
        parts.append("Steps to condense:\n" + _transcript(old))
        return [
            {"role": "system", "content": self.instructions},
            {"role": "user", "content": "\n\n".join(parts)},
        ]


@dataclass(frozen=True, slots=True)
class Fitted:
    """What `fit_context` decided: the chain to project and the summary call it made."""

    chain: list[BaseStep]
    """The steps the prompt is projected from."""
    calls: list[ModelCall] = field(default_factory=list)
    """The summarize call made, if any: its step (successful or failed) goes in the run's
    chain and its reply counts in the usage counters."""


async def fit_context(
    policy: ContextPolicy, chain: Sequence[BaseStep], model: ChatModel, turn: int
) -> Fitted:
    """Fit `chain` into `policy`, summarizing first when the policy says so.

    Args:
        policy: The context policy.
        chain: The run's chain, including the steps the running node wrote so far.
        model: The model that writes summaries.
        turn: The run's model-call count, for `ModelRequest.turn`.

    Returns:
        The chain to project, and the summarize call when one was made. A failed summary
        never fails the step: the chain is truncated instead.
    """
    old = policy.overflow(chain, model.name) if policy.mode == "summarize" else []
    if not old:
        return Fitted(chain=policy.select(chain, model.name))
    request = ModelRequest(
        messages=policy.summary_request(chain, old), turn=turn, purpose="summarize"
    )
    called = await call_model(model, request)
    if called.reply is None:
        return Fitted(chain=policy.select(chain, model.name), calls=[called])
    text = called.reply.text.strip()
    step = called.step.model_copy(
        update={
            "text": text,
            "error": None if text else "the model answered the summary request with nothing",
            "covers_through": max(s.number for s in old) if text else None,
        }
    )
    called = ModelCall(step, called.reply, None, called.elapsed_s)
    return Fitted(chain=policy.select([*chain, step], model.name), calls=[called])


# -- entries ----------------------------------------------------------------------------------

_Unit = list[BaseStep]


def _split(chain: Sequence[BaseStep]) -> tuple[list[BaseStep], LLMCallStep | None, list[_Unit]]:
    """(steps up to the last reset, the latest summary, the uncovered units after it)."""
    last_reset = max((i for i, s in enumerate(chain) if isinstance(s, ResetStep)), default=-1)
    head = list(chain[: last_reset + 1])
    if last_reset < 0:
        # Without a reset the head is the task (and anything before it).
        first = next((i for i, s in enumerate(chain) if isinstance(s, TaskStep)), -1)
        head = list(chain[: first + 1])
        last_reset = first
    rest = list(chain[last_reset + 1 :])
    summary = latest_summary(rest)
    if summary is not None:
        rest = [s for s in rest if s is not summary and not is_covered(s, summary)]
    return head, summary, _units(rest)


def _units(steps: Sequence[BaseStep]) -> list[_Unit]:
    units: list[_Unit] = []
    for step in steps:
        if not units or _starts_unit(step):
            units.append([step])
        else:
            units[-1].append(step)
    return units


def _starts_unit(step: BaseStep) -> bool:
    """Whether a step opens a new unit; anything else belongs to the unit before it.

    A think call opens a round that holds its thought, calls, results and observations;
    a standalone note the model is shown opens its own.
    """
    if isinstance(step, LLMCallStep):
        return step.purpose == "think"
    if isinstance(step, ErrorStep):
        return step.kind != "parse"
    if isinstance(step, HumanStep):
        return step.kind in ("guidance", "retry")
    return isinstance(step, ValidationStep | NoteStep)


def _size(unit: _Unit) -> int:
    return len(project(unit))


def _count(units: Sequence[_Unit]) -> int:
    return sum(_size(u) for u in units)


_NO_LIMIT = 1 << 30
"""`max_entries` when only tokens are bounded."""


@dataclass(frozen=True, slots=True)
class _Budget:
    """Tokens a prompt's units may take, and how to count a unit's."""

    limit: int
    count: Callable[[str], int]

    def sizes(self, units: Sequence[_Unit]) -> list[tuple[_Unit, int]]:
        return [(u, self.count(_transcript(u)) + _TOKENS_PER_ENTRY * _size(u)) for u in units]

    def scaled(self, entries: int, of: int) -> _Budget:
        """The share of the budget `keep_after_summary` keeps (the same share of entries)."""
        share = 0.5 if of >= _NO_LIMIT else entries / of
        return _Budget(int(self.limit * share), self.count)


_TOKENS_PER_ENTRY = 4
"""What a chat message costs beyond its text (role, separators): a rough constant."""


def _fit(units: Sequence[_Unit], limit: int, budget: _Budget | None = None) -> list[_Unit]:
    """The latest units within `limit` entries (and `budget` tokens); the last one stays."""
    kept: list[_Unit] = []
    total = 0
    tokens = 0
    sized = budget.sizes(units) if budget is not None else [(u, 0) for u in units]
    for unit, cost in reversed(sized):
        size = _size(unit)
        too_many = total + size > limit
        too_long = budget is not None and tokens + cost > budget.limit
        if kept and (too_many or too_long):
            break
        kept.append(unit)
        total += size
        tokens += cost
    return kept[::-1]


def context_window(model: str) -> int:
    """Tokens of prompt a model takes less a quarter for the reply and the instructions.

    Raises:
        ModelConfigError: litellm's model table does not know the model's window.
    """
    window = model_info(model).get("max_input_tokens") if model else None
    if not isinstance(window, int) or window <= 0:
        raise ModelConfigError(
            f"max_tokens='auto' needs the context window of {model or 'the model'!r}, which "
            "litellm's model table does not know; give ContextPolicy(max_tokens=N)"
        )
    return window * 3 // 4


def _litellm_tokens(model: str, text: str) -> int:
    return count_tokens(model, text)


def _task(chain: Sequence[BaseStep]) -> str:
    return next((s.text for s in chain if isinstance(s, TaskStep)), "")


def _transcript(steps: Sequence[BaseStep]) -> str:
    """Old steps as plain lines for the summarizer."""
    lines: list[str] = []
    for turn in project(steps):
        if isinstance(turn, AssistantTurn):
            calls = ", ".join(
                f"{c.name}({json.dumps(c.args) if c.args is not None else c.raw_args or ''})"
                for c in turn.calls
            )
            line = f"Agent: {turn.thought}".rstrip()
            if calls:
                line += f" [called {calls}]"
            if turn.answer is not None:
                line += f" [answered: {turn.answer}]"
            lines.append(line)
        elif isinstance(turn, ObservationTurn):
            lines.append(f"{turn.tool} {'failed' if turn.is_error else 'returned'}: {turn.text}")
        elif isinstance(turn, UnparsedTurn):
            lines.append(f"Agent (unreadable reply): {turn.text}")
        else:
            text = user_text(turn)
            if text is not None:
                lines.append(text)
    return "\n".join(lines)
