"""approve: the human-in-the-loop gate before act. Side-effect free."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langgraph.types import interrupt

from thinkgraph import tracing
from thinkgraph.hitl import (
    LANGCHAIN_DECISIONS,
    Approve,
    Edit,
    Pending,
    Reject,
    Respond,
    approval_answer,
)
from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.gate import calls_needing_approval, decided_calls, waiting_calls
from thinkgraph.state import (
    AgentState,
    BaseStep,
    Counters,
    HumanStep,
    ThoughtStep,
    ToolCall,
    ToolResultStep,
)
from thinkgraph.tools.registry import ToolRegistry

__all__ = [
    "approval_requests",
    "approve",
    "calls_needing_approval",
    "decided_calls",
    "langchain_request",
]


def approval_requests(state: AgentState, deps: Deps) -> list[Pending]:
    """What the gate asks a person: one entry per call of the round that waits for one."""
    need = set(waiting_calls(state, deps))
    thought = next((s.text for s in reversed(state["chain"]) if isinstance(s, ThoughtStep)), "")
    step = (state.get("counters") or Counters()).steps
    calls = state.get("pending_calls") or []
    return [Pending.approval(c, thought=thought, step=step) for c in calls if c.id in need]


def langchain_request(requests: Sequence[Pending], tools: ToolRegistry) -> dict[str, Any]:
    """The same requests in LangChain's HITL shape (`HumanInTheLoopMiddleware`'s `HITLRequest`).

    ``action_requests`` (name, args, description), one per waiting call in the order of
    ``requests``, and ``review_configs`` (action_name, allowed_decisions, args_schema), one
    per tool: what a generic LangGraph client such as Studio or Agent Chat UI renders. Its
    answer, ``{"decisions": [...]}`` in the same order, is accepted by `check_approvals`.
    """
    actions: list[dict[str, Any]] = []
    configs: dict[str, dict[str, Any]] = {}
    for request in requests:
        name = request.tool or ""
        shown = request.args if request.args is not None else {}
        described = json.dumps(shown if request.args is not None else request.raw_args)
        description = f"Tool call pending approval: {name} with {described}"
        if request.thought:
            description += f"\nThought: {request.thought}"
        actions.append({"name": name, "args": shown, "description": description})
        if name not in configs:
            tool = tools.get(name)
            config: dict[str, Any] = {"action_name": name, "allowed_decisions": LANGCHAIN_DECISIONS}
            if tool is not None:
                config["args_schema"] = tool.args_model.model_json_schema()
            configs[name] = config
    return {"action_requests": actions, "review_configs": list(configs.values())}


async def approve(state: AgentState, *, deps: Deps) -> dict[str, Any]:
    """Pause once for every call that needs approval, then apply the decisions.

    LangGraph re-runs this node from the start when the run resumes, so nothing here may
    have an effect before `interrupt` returns. The answer is checked by `interrupt` itself
    against what waits (one decision per waiting call, edits against the tool's schema):
    a bad one raises `ResumeValueError` before it is recorded, whoever sent it, and the
    run stays paused. Approved and edited calls go on to act; a rejected call's reason, or
    a person's response, becomes its result without running.
    """
    requests = approval_requests(state, deps)
    decisions: dict[str, Approve | Edit | Reject | Respond] = {}
    if requests:
        decisions = interrupt(
            {
                "kind": "approval",
                "requests": [r.model_dump() for r in requests],
                **langchain_request(requests, deps.tools),
            },
            response_schema=approval_answer(requests, deps.tools),
        )
    steps: list[BaseStep] = []
    calls: list[ToolCall] = []
    to_run: list[str] = []
    for proposed in state.get("pending_calls") or []:
        call, recorded, runs = _applied(proposed, decisions.get(proposed.id))
        calls.append(call)
        steps.extend(recorded)
        if runs:
            to_run.append(call.id)
    return {"chain": steps, "pending_calls": calls, "run_calls": to_run, "needs_approval": []}


def _applied(
    call: ToolCall, decision: Approve | Edit | Reject | Respond | None
) -> tuple[ToolCall, list[BaseStep], bool]:
    """The call after a person's decision, the steps recording it, and whether act runs it.

    A call that needed no decision runs as proposed. A rejected call's reason, or a
    person's response, becomes its result without running.
    """
    if decision is None:
        return call, [], True
    if isinstance(decision, Approve):
        return call, [HumanStep(kind="approve", call_id=call.id)], True
    if isinstance(decision, Edit):
        edited = call.model_copy(update={"args": decision.args, "raw_args": None})
        text = json.dumps(decision.args, ensure_ascii=False)
        return edited, [HumanStep(kind="edit", text=text, call_id=call.id)], True
    if isinstance(decision, Reject):
        text = decision.reason
        outcome: dict[str, Any] = {
            "ok": False,
            "error": f"A person rejected this call: {decision.reason}",
            "error_kind": "rejected",
        }
    else:
        text = decision.text
        outcome = {"ok": True, "output": decision.text}
    human = HumanStep(kind=decision.action, text=text, call_id=call.id)
    result = ToolResultStep(call_id=call.id, tool=call.name, attempts=0, **outcome)
    # Traced like a call that ran: a person's answer is this call's outcome.
    tracing.answered_call(call, result, "rejected" if isinstance(decision, Reject) else "responded")
    return call, [human, result], False
