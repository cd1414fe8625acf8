"""Validators that ship with thinkgraph: a pydantic output schema and an LLM critic.

A validator is any callable `(answer, state) -> Verdict` (see `thinkgraph.nodes.deps`);
validate runs them all on a candidate answer. These two cover the common needs:

- `output_schema(Model)`: the answer must be JSON that fits `Model`. The parsed object is
  kept on the verdict, and `RunResult.output` gives it back as a `Model` instance, also
  after a resume in another process.
- `llm_critic()`: a second model call reads the task, the observations and the answer and
  replies PASS, FAIL: reason, or RESET: reason (start over). The call is an
  `LLMCallStep(purpose="critic")` in the chain and counts towards tokens and cost.

Example:
    >>> class Point(BaseModel):
    ...     x: int
    ...     y: int
    >>> output_schema(Point)('```json\\n{"x": 1, "y": 2}\\n```', {}).output
    {'x': 1, 'y': 2}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from thinkgraph._sync import run_sync
from thinkgraph.llm import as_chat_model
from thinkgraph.llm.base import ChatModel, Message, ModelReply
from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.model import ModelAnswer, ask_model
from thinkgraph.policies._json import describe_errors, find_json_object
from thinkgraph.state import (
    BaseStep,
    Counters,
    LLMCallStep,
    ObservationStep,
    TaskStep,
    ValidationStep,
    Verdict,
)

__all__ = [
    "LLMCritic",
    "ModelReviewer",
    "OutputSchema",
    "Review",
    "llm_critic",
    "output_schema",
    "structured_output",
]

M = TypeVar("M", bound=BaseModel)


# -- output schema --------------------------------------------------------------------------


class OutputSchema(Generic[M]):
    """Accept only an answer that is JSON fitting `model`; see `output_schema`."""

    def __init__(self, model: type[M]) -> None:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(f"output_schema needs a pydantic model class, got {model!r}")
        self.model = model
        self.__name__ = f"output_schema({model.__name__})"

    def __call__(self, answer: str, state: Mapping[str, Any]) -> Verdict:
        found = find_json_object(answer)
        if found.value is None:
            return self._fail(f"the answer must be one JSON object. {found.error}")
        try:
            parsed = self.model.model_validate(found.value)
        except ValidationError as exc:
            return self._fail(f"the answer's JSON does not fit the schema: {describe_errors(exc)}")
        return Verdict(passed=True, validator=self.__name__, output=parsed.model_dump(mode="json"))

    def load(self, output: Any) -> M:
        """The model instance from what a passed verdict kept."""
        return self.model.model_validate(output)

    def _fail(self, why: str) -> Verdict:
        schema = self.model.model_json_schema()
        return Verdict(
            passed=False,
            reason=f"{why}. Answer with a JSON object that fits this JSON schema: {schema}",
            validator=self.__name__,
        )


def output_schema(model: type[M]) -> OutputSchema[M]:
    """A validator that accepts only an answer that parses into the pydantic `model`.

    The answer may wrap the JSON in a code fence or a sentence. On success the verdict
    keeps the parsed object and `RunResult.output` is the `model` instance.

    Example:
        >>> agent = Agent(model, validators=[output_schema(Invoice)])  # doctest: +SKIP
        >>> agent.run("Extract the invoice").output.total  # doctest: +SKIP
    """
    return OutputSchema(model)


def structured_output(chain: Sequence[BaseStep], validators: Sequence[Any]) -> Any:
    """The structured output of a run: what the last passed validation parsed, or None.

    With an `OutputSchema` among `validators` it is that model's instance; without one
    (e.g. read by an agent built without it) it is the JSON the verdict kept.
    """
    passed = next((s for s in reversed(chain) if isinstance(s, ValidationStep) and s.passed), None)
    if passed is None:
        return None
    schemas = {v.__name__: v for v in validators if isinstance(v, OutputSchema)}
    for verdict in passed.verdicts:
        if verdict.output is None:
            continue
        schema = schemas.get(verdict.validator)
        return schema.load(verdict.output) if schema is not None else verdict.output
    return None


# -- LLM critic -----------------------------------------------------------------------------

CRITIC_INSTRUCTIONS = (
    "You check an AI agent's answer. Read the task, what the agent observed and its "
    "answer. Decide whether the answer is correct, complete and supported by the "
    "observations."
)
_CRITIC_FORMAT = (
    "Reply with one line:\n"
    "PASS  (the answer is right)\n"
    "FAIL: <what is wrong, so the agent can fix it>\n"
    "RESET: <why the whole approach is wrong and the agent should start over>"
)
_VERDICT_LINE = re.compile(r"^[\s*#>_`-]*(PASS|FAIL|RESET)\b[\s*_`]*[:.\-–]?\s*(.*)$", re.I | re.M)
_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_OBSERVATIONS_SHOWN = 12
_OBSERVATION_CHARS = 800


@dataclass(frozen=True, slots=True)
class Review:
    """What a model-backed validator found: its verdict and the call it made."""

    verdict: Verdict
    step: LLMCallStep
    """The model call, for the chain."""
    reply: ModelReply | None
    """The reply, for the usage counters; None when the call failed."""


@runtime_checkable
class ModelReviewer(Protocol):
    """A validator that calls a model; validate records the call and counts its usage."""

    async def review(
        self, answer: str, state: Mapping[str, Any], *, model: ChatModel, turn: int
    ) -> Review:
        """Check `answer`, using `model` unless the validator has its own."""
        ...


class LLMCritic:
    """A second model call that checks the answer; see `llm_critic`."""

    def __init__(
        self, model: str | ChatModel | None = None, instructions: str = CRITIC_INSTRUCTIONS
    ) -> None:

        self.model = as_chat_model(model) if model is not None else None
        self.instructions = instructions
        self.__name__ = "llm_critic"

    async def review(
        self, answer: str, state: Mapping[str, Any], *, model: ChatModel, turn: int
    ) -> Review:
        """Ask the critic model; a failed call or an unreadable reply fails the answer."""
        asked = await self.ask(answer, state, None, Counters(model_calls=turn), model=model)
        return Review(self.verdict(asked), asked.call, asked.reply)

    async def ask(
        self,
        answer: str,
        state: Mapping[str, Any],
        deps: Deps | None,
        counters: Counters,
        *,
        model: ChatModel | None = None,
    ) -> ModelAnswer:
        """Ask the critic model (its own, else `model`, else the agent's) about `answer`."""
        return await ask_model(
            state,
            deps,
            self.messages(answer, state.get("chain", [])),
            purpose="critic",
            model=self.model or model,
            counters=counters,
            count_time=False,
        )

    def verdict(self, asked: ModelAnswer) -> Verdict:
        """The critic's verdict from its call: a failed call fails the answer."""
        if asked.reply is None:  # the provider's failure is recorded, not raised
            return Verdict(
                passed=False,
                reason=f"the critic could not be asked ({asked.call.error})",
                validator="llm_critic",
            )
        return parse_critique(asked.reply.text)

    def __call__(self, answer: str, state: Mapping[str, Any]) -> Verdict:
        """Check an answer outside a run (inside one, validate awaits `review`)."""

        if self.model is None:
            raise TypeError("llm_critic() without model= can only run inside an Agent")
        model = self.model
        return run_sync(lambda: self.review(answer, state, model=model, turn=0)).verdict

    def messages(self, answer: str, chain: Sequence[BaseStep]) -> list[Message]:
        """The critic's prompt: the task, the latest observations and the answer."""
        task = next((s.text for s in chain if isinstance(s, TaskStep)), "")
        observed = [s for s in chain if isinstance(s, ObservationStep)][-_OBSERVATIONS_SHOWN:]
        lines = [f"- {s.tool}: {s.text[:_OBSERVATION_CHARS]}" for s in observed]
        parts = [f"Task: {task}"]
        parts.append("What the agent observed:\n" + ("\n".join(lines) or "(nothing)"))
        parts.append(f"The agent's answer: {answer}")
        return [
            {"role": "system", "content": f"{self.instructions}\n\n{_CRITIC_FORMAT}"},
            {"role": "user", "content": "\n\n".join(parts)},
        ]


def llm_critic(
    model: str | ChatModel | None = None, instructions: str = CRITIC_INSTRUCTIONS
) -> LLMCritic:
    """A validator that asks a model whether the answer is right.

    Args:
        model: The critic model (a litellm model string or a ChatModel); the agent's own
            model when None.
        instructions: What the critic checks; the reply format is added to it.

    Example:
        >>> agent = Agent("openai/gpt-4o-mini", validators=[llm_critic()])  # doctest: +SKIP
    """
    return LLMCritic(model, instructions)


def parse_critique(text: str) -> Verdict:
    """Read a critic's reply: PASS, FAIL: reason or RESET: reason (the first one wins).

    Example:
        >>> parse_critique("FAIL: the total is 41, not 42").reason
        'the total is 41, not 42'
    """
    body = _THINK_BLOCK.sub("", text or "")
    match = _VERDICT_LINE.search(body)
    if match is None:
        shown = " ".join(body.split())[:200] or "(empty)"
        return Verdict(
            passed=False,
            reason=f"the critic's reply could not be read as PASS, FAIL or RESET: {shown}",
            validator="llm_critic",
        )
    word = match.group(1).upper()
    reason = match.group(2).strip() or body[match.end() :].strip()
    if word == "PASS":
        return Verdict(passed=True, reason=reason, validator="llm_critic")
    default = "the critic rejected the answer"
    return Verdict(
        passed=False, reason=reason or default, reset=word == "RESET", validator="llm_critic"
    )
