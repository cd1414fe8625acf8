"""What the markdown, JSON and HTML views share: a run's header, totals and step metrics."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack

from pydantic_core import to_jsonable_python

from thinkgraph.state import BaseStep, LLMCallStep, ToolResultStep
from thinkgraph.views.redact import Redactor, unknown_tools_note
from thinkgraph.views.visibility import (
    Audience,
    ViewItem,
    ViewOptions,
    tool_map,
    view_items,
)

if TYPE_CHECKING:
    from thinkgraph.result import RunResult

__all__ = [
    "RunView",
    "build_run_view",
    "describe_pending",
    "fmt_cost",
    "metric_parts",
    "shown_state",
    "state_json",
    "state_line",
    "step_metrics",
]


@dataclass(frozen=True, slots=True)
class RunView:
    """A run prepared for one audience: everything in it is redacted and filtered."""

    thread_id: str
    status: str
    stop_reason: str | None
    detail: str
    answer: str | None
    audience: Audience
    items: list[ViewItem]
    totals: dict[str, Any]
    pending: list[dict[str, Any]]
    """What a paused run waits for, each entry redacted."""
    unknown_tools: list[str]
    """Tools called in the run that the view was not given: their values are all masked."""
    notes: list[str]
    """What the reader should know about the view itself (what could not be checked)."""
    state: dict[str, Any]
    """The keys of the run's own state (its graph's, beyond ours) as JSON, redacted."""


def describe_pending(item: dict[str, Any]) -> str:
    """One line for one thing a paused run waits for."""
    kind = str(item.get("kind", "question"))
    if kind == "approval":
        return f"approval of {item.get('tool')} (call {item.get('call_id')})"
    if kind == "breakpoint":
        return f"breakpoint {item.get('when') or 'at'} {item.get('node')}"
    return f"{kind}: {item.get('question') or item.get('value', '')}"


def step_metrics(step: BaseStep) -> dict[str, Any]:
    """Tokens, cost and duration of one step, where the step has them."""
    if isinstance(step, LLMCallStep):
        tokens = (
            None
            if step.prompt_tokens is None or step.completion_tokens is None
            else step.prompt_tokens + step.completion_tokens
        )
        return {"tokens": tokens, "cost_usd": step.cost_usd, "duration_s": step.latency_s}
    if isinstance(step, ToolResultStep):
        # Tools that call a model (an llm tool, a sub-agent) report that model's usage.
        usage = getattr(step, "usage", None)
        if not isinstance(usage, dict):
            return {"duration_s": step.duration_s}
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        tokens = None if prompt is None or completion is None else prompt + completion
        return {"tokens": tokens, "cost_usd": usage.get("cost_usd"), "duration_s": step.duration_s}
    return {}


def metric_parts(step: BaseStep, *, took: str = "") -> list[str]:
    """A step's tokens, cost and duration as short phrases, e.g. ``["42 tokens", "$0.0001",
    "took 0.120s"]`` with ``took="took "``; none for a step without them."""
    metrics = step_metrics(step)
    parts = []
    if "tokens" in metrics:
        tokens = metrics["tokens"]
        parts.append("tokens unknown" if tokens is None else f"{tokens} tokens")
        parts.append(fmt_cost(metrics["cost_usd"]))
    if "duration_s" in metrics:
        parts.append(f"{took}{metrics['duration_s']:.3f}s")
    return parts


def fmt_cost(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.6f}"


def _totals(result: RunResult) -> dict[str, Any]:
    c = result.counters
    llm = [s for s in result.chain if isinstance(s, LLMCallStep)]
    tools = [s for s in result.chain if isinstance(s, ToolResultStep)]
    return {
        "steps": len(result.chain),
        "think_steps": c.steps,
        "model_calls": len(llm),
        "tool_calls": len(tools),
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "tokens": c.tokens,
        "cost_usd": c.cost_usd if c.cost_known else None,
        "model_time_s": round(sum(s.latency_s for s in llm), 6),
        "tool_time_s": round(sum(s.duration_s for s in tools), 6),
        "elapsed_s": round(c.elapsed_s, 6),
    }


def build_run_view(result: RunResult, **options: Unpack[ViewOptions]) -> RunView:
    """Redact and filter a run once, for every renderer."""
    by_name = tool_map(options.get("tools"))
    redactor = Redactor(result.chain, by_name, mask_unknown=True)
    items = view_items(result.chain, redactor, by_name, options)
    pending = [redactor.pending(item) for item in result.pending]
    note = unknown_tools_note(redactor.unknown_tools)
    return RunView(
        thread_id=result.thread_id,
        status=result.status,
        stop_reason=result.stop_reason,
        detail=redactor.text(result.detail),
        answer=None if result.answer is None else redactor.text(result.answer),
        audience=options.get("audience", "developer"),
        items=items,
        totals=_totals(result),
        pending=pending,
        unknown_tools=redactor.unknown_tools,
        notes=[note] if note else [],
        state=shown_state(result.state, redactor),
    )


def state_json(state: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a run's own state as JSON values, by name, unmasked: what two runs'
    states are compared on (a changed secret is a change), never what is shown."""
    found: dict[str, Any] = to_jsonable_python(dict(sorted(state.items())), fallback=repr)
    return found


def shown_state(state: Mapping[str, Any], redactor: Redactor) -> dict[str, Any]:
    """The keys of a run's own state as JSON values, masked as every value of a run is."""
    shown: dict[str, Any] = redactor.value(state_json(state))
    return shown


def state_line(key: str, value: Any, width: int = 200) -> str:
    """One key of a run's own state as ``key = JSON``, cut to `width` characters."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return f"{key} = {text if len(text) <= width else text[: width - 1] + '…'}"
