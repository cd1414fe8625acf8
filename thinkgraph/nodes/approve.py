"""approve: the human-in-the-loop gate before act. Side-effect free."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langgraph.types import interrupt

from thinkgraph.hitl import Approve, Edit, Pending, Reject, decision_from_stored
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import (
    AgentState,
    BaseStep,
    Counters,
    HumanStep,
    ThoughtStep,
    ToolCall,
    ToolResultStep,
)

__all__ = ["approve", "calls_needing_approval"]


def calls_needing_approval(deps: Deps, calls: Sequence[ToolCall]) -> list[str]:
    """Ids of the calls a person must approve: by the tool's own rule or the agent's."""
    needed: list[str] = []
    for call in calls:
        tool = deps.tools.get(call.name)
        if tool is None:
            continue  # an unknown tool cannot run; act tells the model so
        if (
            tool.needs_approval(call.args or {})
            or (isinstance(deps.approve, frozenset) and call.name in deps.approve)
            or (deps.approve == "side_effects" and tool.side_effects)
        ):
            needed.append(call.id)
    return needed


def approval_requests(state: AgentState) -> list[Pending]:
    """What the gate asks a person: one entry per call that needs a decision."""
    need = set(state.get("needs_approval") or [])
    thought = next((s.text for s in reversed(state["chain"]) if isinstance(s, ThoughtStep)), "")
    step = (state.get("counters") or Counters()).steps
    return [
        Pending(
            kind="approval",
            call_id=c.id,
            tool=c.name,
            args=c.args,
            raw_args=c.raw_args,
            thought=thought,
            step=step,
        )
        for c in state.get("pending_calls") or []
        if c.id in need
    ]


def approve(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """Pause once for every call that needs approval, then apply the decisions.

    LangGraph re-runs this node from the start when the run resumes, so nothing here may
    have an effect before `interrupt` returns. Approved and edited calls go on to act;
    a rejected call's reason, or a person's response, becomes its result without running.
    """
    requests = approval_requests(state)
    answer = interrupt({"kind": "approval", "requests": [r.model_dump() for r in requests]})
    decisions = {str(k): decision_from_stored(v) for k, v in dict(answer).items()}
    steps: list[BaseStep] = []
    calls: list[ToolCall] = []
    to_run: list[str] = []
    for call in state.get("pending_calls") or []:
        decision = decisions.get(call.id)
        if decision is None or isinstance(decision, Approve | Edit):
            if isinstance(decision, Edit):
                call = call.model_copy(update={"args": decision.args, "raw_args": None})
                text = json.dumps(decision.args, ensure_ascii=False)
                steps.append(HumanStep(node="approve", kind="edit", text=text, call_id=call.id))
            elif decision is not None:
                steps.append(HumanStep(node="approve", kind="approve", call_id=call.id))
            calls.append(call)
            to_run.append(call.id)
            continue
        calls.append(call)
        if isinstance(decision, Reject):
            steps.append(
                HumanStep(node="approve", kind="reject", text=decision.reason, call_id=call.id)
            )
            steps.append(
                ToolResultStep(
                    node="approve",
                    call_id=call.id,
                    tool=call.name,
                    ok=False,
                    error=f"A person rejected this call: {decision.reason}",
                    error_kind="rejected",
                    attempts=0,
                )
            )
        else:
            steps.append(
                HumanStep(node="approve", kind="respond", text=decision.text, call_id=call.id)
            )
            steps.append(
                ToolResultStep(
                    node="approve",
                    call_id=call.id,
                    tool=call.name,
                    ok=True,
                    output=decision.text,
                    attempts=0,
                )
            )
    return {"chain": steps, "pending_calls": calls, "run_calls": to_run, "needs_approval": []}
