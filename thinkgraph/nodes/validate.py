"""validate: run the validators on the candidate answer."""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping
from typing import Any

from thinkgraph.nodes.deps import Deps, Validator
from thinkgraph.nodes.model import count_usage
from thinkgraph.nodes.validators import LLMCritic, ModelReviewer
from thinkgraph.state import AgentState, BaseStep, Counters, ValidationStep, Verdict
from thinkgraph.types import NextAction

__all__ = ["review_answer", "run_validator", "validate"]


def _name(validator: Validator) -> str:
    return getattr(validator, "__name__", None) or type(validator).__name__


async def run_validator(validator: Validator, answer: str, state: Mapping[str, Any]) -> Verdict:
    """Call one validator (awaited when it is async) and make what it returned a Verdict.

    A validator that raises fails the answer with the exception as the reason: the run goes
    on and the chain shows which validator broke and how.
    """
    name = _name(validator)
    try:
        out = validator(answer, state)
        if inspect.isawaitable(out):
            out = await out
    except Exception as exc:
        return Verdict(passed=False, reason=f"{type(exc).__name__}: {exc}", validator=name)
    if isinstance(out, Verdict):
        return out if out.validator else out.model_copy(update={"validator": name})
    if out is None or out is True:
        return Verdict(passed=True, validator=name)
    if out is False:
        return Verdict(passed=False, reason="the answer was rejected", validator=name)
    if isinstance(out, str):
        return Verdict(passed=False, reason=out, validator=name)
    raise TypeError(
        f"validator {name!r} returned {type(out).__name__}; return a Verdict, a bool, "
        "a str (the reason it failed) or None"
    )


async def validate(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """Accept the candidate answer, or send it back with every failing validator's reason."""
    started = time.perf_counter()
    answer = state.get("candidate") or ""
    counters = state.get("counters") or Counters()
    steps: list[BaseStep] = []
    verdicts: list[Verdict] = []
    for validator in deps.validators:
        if isinstance(validator, LLMCritic):
            # A model-backed validator's call is a chain step and counts in the budgets.
            asked = await validator.ask(answer, state, deps, counters)
            steps.extend(asked.steps)
            counters = asked.counters
            verdicts.append(validator.verdict(asked))
        elif isinstance(validator, ModelReviewer):
            # A reviewer of yours makes its own call: recorded and counted the same way.
            review = await validator.review(
                answer, state, model=deps.model, turn=counters.model_calls
            )
            steps.append(review.step)
            counters = count_usage(counters, review.reply, 0.0)
            verdicts.append(review.verdict)
        else:
            verdicts.append(await run_validator(validator, answer, state))
    elapsed = counters.elapsed_s + (time.perf_counter() - started)
    counters = counters.model_copy(update={"elapsed_s": elapsed})
    return _judged(answer, verdicts, counters, steps, record=bool(verdicts))


def review_answer(state: Mapping[str, Any], *verdicts: Verdict) -> dict[str, Any]:
    """The update of a node of yours that reviews the answer (a critic after validate).

    Passed (every verdict): the review is recorded and the answer stands. Failed: the
    model sees the review with each reason, the answer and the candidate are cleared, and
    the rejection counts as a failure, so the failures guard stops a critic and a model
    that never agree; a verdict with ``reset=True`` asks for a reset. Route on
    ``state["answer"]`` afterwards: None means rejected.

    Example:
        >>> def critic(state):
        ...     ok = state["answer"] == "391"
        ...     return review_answer(state, Verdict(passed=ok, reason="", validator="critic"))
    """
    answer = state.get("candidate") or state.get("answer") or ""
    counters = state.get("counters") or Counters()
    return _judged(answer, list(verdicts), counters, [], record=True)


def _judged(
    answer: str,
    verdicts: list[Verdict],
    counters: Counters,
    steps: list[BaseStep],
    *,
    record: bool,
) -> dict[str, Any]:
    """The one rule for an answer under review: accepted, or sent back as a failure."""
    passed = all(v.passed for v in verdicts)
    if record:
        steps = [*steps, ValidationStep(answer=answer, verdicts=verdicts, passed=passed)]
    if passed:
        return {"chain": steps, "answer": answer, "counters": counters}
    wants_reset = any(v.reset for v in verdicts if not v.passed)
    return {
        "chain": steps,
        "counters": counters.model_copy(
            update={"consecutive_failures": counters.consecutive_failures + 1}
        ),
        "answer": None,
        "candidate": None,
        "next_action": NextAction.RESET if wants_reset else NextAction.CONTINUE,
    }
