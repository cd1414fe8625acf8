"""think: ask the model what to do next and record its decision in the chain."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.gate import calls_needing_approval
from thinkgraph.nodes.model import ask_model, count_usage, is_fatal_model_error
from thinkgraph.policies.base import Decision
from thinkgraph.policies.context import fit_context
from thinkgraph.state import (
    AgentState,
    BaseStep,
    Counters,
    ErrorStep,
    ResetStep,
    ThoughtStep,
    ToolCallStep,
    ValidationStep,
)
from thinkgraph.types import NextAction, StepLimits

__all__ = [
    "count_usage",
    "gate_confidence",
    "is_fatal_model_error",
    "refused_decision_feedback",
    "think",
]


def refused_decision_feedback(
    chain: Sequence[BaseStep], counters: Counters, limits: StepLimits
) -> ErrorStep | None:
    """Feedback for a decision the router did not follow, if the last decision was one.

    The router is pure, so it cannot write why it sent a final answer back to think; the
    next think finds the unfollowed decision at the end of the chain and explains it to the
    model here.
    """
    last = next(
        (s for s in reversed(chain) if isinstance(s, ThoughtStep | ValidationStep | ResetStep)),
        None,
    )
    if not isinstance(last, ThoughtStep):
        return None
    if last.next_action in (NextAction.FINAL_ANSWER, NextAction.VALIDATE) and (
        counters.steps < limits.min_steps
    ):
        return ErrorStep(
            kind="refused_action",
            message=f"final answer at step {counters.steps} refused: min_steps is "
            f"{limits.min_steps}",
            feedback=f"It is too early for a final answer: this task needs at least "
            f"{limits.min_steps} reasoning steps and you have taken {counters.steps}. "
            "Keep working: check your result, e.g. with a tool, before answering.",
        )
    if last.next_action == NextAction.RESET and counters.resets >= limits.max_resets:
        return ErrorStep(
            kind="refused_action",
            message=f"reset refused: max_resets ({limits.max_resets}) reached",
            feedback="You cannot start over again (no resets left). Continue from where you are.",
        )
    return None


async def think(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """Project the chain, call the model, parse the reply, record the decision.

    A reply that cannot be parsed becomes an error step with feedback for the model and
    counts as a failure; it is never taken as a final answer. A model that raises (network,
    provider, timeout) is recorded the same way, so the guards decide what happens next.
    """
    started = time.perf_counter()
    chain = state["chain"]
    limits = state["limits"]
    counters = state.get("counters") or Counters()
    steps: list[BaseStep] = []
    refused = refused_decision_feedback(chain, counters, limits)
    if refused is not None:
        steps.append(refused)
    tools = list(deps.tools)
    shown: list[BaseStep] = [*chain, *steps]
    if deps.context is not None:
        fitted = await fit_context(deps.context, shown, deps.model, counters.model_calls)
        shown = fitted.chain
        for summary in fitted.calls:
            steps.append(summary.step)
            counters = count_usage(counters, summary.reply, 0.0)  # the node's time is added below
    counters = counters.model_copy(update={"steps": counters.steps + 1})
    answer = await ask_model(
        state,
        deps,
        deps.policy.to_messages(shown, tools),
        purpose="think",
        tools=deps.policy.tool_schemas(tools),
        counters=counters,
        count_time=False,
    )
    # The whole node's time counts, projection and parsing included, not only the call's.
    counters = answer.counters.model_copy(
        update={"elapsed_s": answer.counters.elapsed_s + (time.perf_counter() - started)}
    )
    steps.extend(answer.steps)
    if answer.reply is None:
        if answer.fatal:
            # Retrying cannot help (a refused key): use up the failure allowance so the
            # router ends the run now (or asks a person), and finalize names the cause.
            failures = max(counters.consecutive_failures, limits.max_consecutive_failures - 1)
            counters = counters.model_copy(update={"consecutive_failures": failures})
        return _decided(steps, counters, failed=True)
    call = answer.call
    decision = gate_confidence(deps.policy.parse_reply(answer.reply), deps.confidence_threshold)
    if decision.kind == "error":
        error = decision.error or "the reply could not be parsed"
        steps.append(ErrorStep(kind="parse", message=error, feedback=error, llm_call_id=call.id))
        return _decided(steps, counters, failed=True)
    action = decision.next_action
    steps.append(
        ThoughtStep(
            text=decision.thought,
            next_action=action,
            answer=decision.answer,
            confidence=decision.confidence,
            llm_call_id=call.id,
        )
    )
    calls = list(decision.tool_calls) if action == NextAction.CONTINUE else []
    steps.extend(
        ToolCallStep(
            call=c,
            think_step=counters.steps,
            sensitive=deps.tools.sensitive_fields(c.name),
        )
        for c in calls
    )
    return {
        "chain": steps,
        "counters": counters,
        "next_action": action,
        "pending_calls": calls,
        "needs_approval": calls_needing_approval(deps, calls) if calls else [],
        "candidate": decision.answer if decision.kind == "final" else None,
    }


def gate_confidence(decision: Decision, threshold: float | None) -> Decision:
    """A decision whose confidence is below `threshold` asks for validation instead.

    Applies to a final answer and to a step that has a candidate answer but no tool
    call; tool calls run as asked, and a decision without a confidence is left alone.
    """
    if threshold is None or decision.confidence is None or decision.confidence >= threshold:
        return decision
    if decision.answer is None or decision.tool_calls:
        return decision
    if decision.next_action not in (NextAction.FINAL_ANSWER, NextAction.CONTINUE):
        return decision
    return decision.model_copy(update={"kind": "final", "action": NextAction.VALIDATE})


def _decided(steps: list[BaseStep], counters: Counters, *, failed: bool) -> dict[str, Any]:
    if failed:
        counters = counters.model_copy(
            update={"consecutive_failures": counters.consecutive_failures + 1}
        )
    return {
        "chain": steps,
        "counters": counters,
        "next_action": NextAction.CONTINUE,
        "pending_calls": [],
        "needs_approval": [],
        "candidate": None,
    }
