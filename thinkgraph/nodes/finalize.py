"""finalize: write the answer and the run's final status."""

from __future__ import annotations

import time
from typing import Any

from thinkgraph.guards import guard_stop
from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.model import ask_model
from thinkgraph.state import (
    AgentState,
    BaseStep,
    Counters,
    ErrorStep,
    FinalStep,
    RunInfo,
)
from thinkgraph.types import StopReason

__all__ = ["finalize"]


async def finalize(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """End the run.

    With an accepted answer, record it. After an abort, record the abort. At a guard (max
    steps, timeout, cost, tokens) make one last model call demanding a final answer and
    record why the run stopped; after too many failures, stop without another call.
    Reached with neither (a custom graph's route), the run fails with ``no_answer``.
    """
    counters = state.get("counters") or Counters()
    answer = state.get("answer")
    if answer is not None:
        return _end(answer, "final_answer", "done", counters)
    run = state.get("run")
    if run is not None and run.stop_reason == "aborted":
        return _end(None, "aborted", "failed", counters, detail=run.detail)
    reason = guard_stop(counters, state["limits"])
    if reason is None:
        # Only a custom graph's route gets here: ours reach finalize with an answer or a
        # tripped guard. The run ends, saying which node sent it, instead of crashing.
        came_from = state.get("node") or "the start"
        detail = (
            f"node {came_from!r} routed to finalize with no answer and no guard tripped; "
            "route it to validate with a candidate answer (or set answer) first"
        )
        return _end(None, "no_answer", "failed", counters, detail=detail)
    if reason == "consecutive_failures":
        detail = _last_error(state)
        if _fatal_model_error(state):
            # The provider refused the credentials: name that, not the failure count.
            return _end(None, "model_error", "failed", counters, detail=detail)
        return _end(None, reason, "failed", counters, detail=detail)
    return await _forced_answer(state, deps, reason, counters)


async def _forced_answer(
    state: AgentState, deps: Deps, reason: StopReason, counters: Counters
) -> dict[str, Any]:
    started = time.perf_counter()
    tools = list(deps.tools)
    chain = state["chain"]
    # Truncated, never summarized: the run is ending and needs no new summary.
    shown = deps.context.select(chain, deps.model.name) if deps.context is not None else chain
    answer = await ask_model(
        state,
        deps,
        deps.policy.to_messages(shown, tools, final=True),
        purpose="finalize",
        counters=counters,
        count_time=False,
    )
    counters = answer.counters.model_copy(
        update={"elapsed_s": answer.counters.elapsed_s + (time.perf_counter() - started)}
    )
    call = answer.call
    if answer.reply is None:  # a provider failure ends the run with the reason recorded
        message = call.error or ""
        failed = list(answer.steps)
        return _end(None, reason, "failed", counters, detail=message, before=failed, forced=True)
    decision = deps.policy.parse_reply(answer.reply)
    if decision.kind == "final" and decision.answer is not None:
        return _end(decision.answer, reason, "done", counters, before=[call], forced=True)
    detail = "the model did not give a final answer when asked for one"
    return _end(None, reason, "failed", counters, detail=detail, before=[call], forced=True)


def _fatal_model_error(state: AgentState) -> bool:
    last = next((s for s in reversed(state["chain"]) if isinstance(s, ErrorStep)), None)
    return last is not None and last.fatal


def _last_error(state: AgentState) -> str:
    for step in reversed(state["chain"]):
        message = getattr(step, "message", None) or getattr(step, "error", None)
        if isinstance(message, str) and message:
            return message
        if getattr(step, "is_error", False):
            return str(getattr(step, "text", ""))
    return ""


def _end(
    answer: str | None,
    reason: StopReason,
    status: str,
    counters: Counters,
    *,
    detail: str = "",
    before: list[BaseStep] | None = None,
    forced: bool = False,
) -> dict[str, Any]:
    final = FinalStep(answer=answer, stop_reason=reason, forced=forced)
    return {
        "chain": [*(before or []), final],
        "answer": answer,
        "counters": counters,
        "run": RunInfo(
            status="done" if status == "done" else "failed", stop_reason=reason, detail=detail
        ),
    }
