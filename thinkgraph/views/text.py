"""The chain as plain text, one block per step, for terminals and logs.

`to_text` redacts secrets and applies an audience's visibility (see
`thinkgraph.views.visibility`); `format_step` formats one step as it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Unpack

from thinkgraph import state
from thinkgraph.state import BaseStep, LLMCallStep, ToolCallStep
from thinkgraph.views.redact import Redactor, unknown_tools_note
from thinkgraph.views.visibility import (
    ViewItem,
    ViewOptions,
    tool_map,
    view_items,
)

__all__ = ["format_item", "format_step", "step_body", "to_text"]


def _indent(text: str, width: int = 6) -> str:
    pad = " " * width
    return "\n".join(pad + line if line else line for line in text.splitlines()).lstrip()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _llm(step: LLMCallStep) -> str:
    if step.error:
        return f"model {step.model or '?'} failed: {step.error}"
    tokens = (
        f"{step.prompt_tokens}+{step.completion_tokens} tokens"
        if step.prompt_tokens is not None and step.completion_tokens is not None
        else "tokens unknown"
    )
    cost = "cost unknown" if step.cost_usd is None else f"${step.cost_usd:.6f}"
    extra = " (fallback)" if step.fallback else ""
    return f"{step.purpose} call to {step.model}{extra}: {tokens}, {cost}, {step.latency_s:.2f}s"


def _args(step: ToolCallStep, limit: int | None) -> str:
    """The call's arguments as JSON: all of it, or with `limit` at least that much of it."""
    call = step.call
    if call.args is None:
        return repr(call.raw_args)
    if limit is None:
        return json.dumps(call.args, ensure_ascii=False)
    # Written piece by piece, and only as far as shown: a call may have 200,000 arguments.
    written, length = [], 0
    for piece in json.JSONEncoder(ensure_ascii=False).iterencode(call.args):
        written.append(piece)
        length += len(piece)
        if length > limit:
            break
    return "".join(written)


def format_step(step: BaseStep, *, width: int = 400) -> str:
    """One step as a line or a short block: `#3  thought   text…`."""
    head = f"#{step.number:<3} {getattr(step, 'type', '?'):<11} "
    return head + _indent(_clip(step_body(step, limit=width), width), width=len(head))


def step_body(step: BaseStep, *, limit: int | None = None) -> str:
    """What a step says, without its number and type: the text the views show for it.

    With `limit`, a call's arguments may be cut after that many characters: for a
    caller that shows no more of the body.
    """
    match step:
        case state.TaskStep():
            return step.text
        case state.LLMCallStep():
            return _llm(step)
        case state.ThoughtStep():
            body = step.text or "(no thought)"
            if step.answer is not None:
                return body + f"\n→ {step.next_action.value}: {step.answer}"
            if step.next_action.value != "continue":
                return body + f"\n→ {step.next_action.value}"
            return body
        case state.ToolCallStep():
            return f"{step.call.name}({_args(step, limit)})  [call {step.call.id}]"
        case state.ToolResultStep():
            status, ms = "ok" if step.ok else f"{step.error_kind}", step.duration_s * 1000
            return f"{step.tool} → {status} in {ms:.1f} ms  [call {step.call_id}]"
        case state.ObservationStep():
            return ("error: " if step.is_error else "") + step.text
        case state.ErrorStep():
            return f"{step.kind}: {step.message}"
        case state.ValidationStep():
            verdicts = "; ".join(
                f"{v.validator}: {'pass' if v.passed else 'fail'}"
                + (f" ({v.reason})" if v.reason else "")
                for v in step.verdicts
            )
            return f"{'passed' if step.passed else 'failed'}: {verdicts}"
        case state.ResetStep():
            return f"start over. lesson: {step.lesson}"
        case state.HumanStep():
            return f"{step.kind}: {step.text}" if step.text else step.kind
        case state.NoteStep():
            return step.text if step.for_model else f"{step.text}  (not shown to the model)"
        case state.FinalStep():
            forced = " (forced)" if step.forced else ""
            return f"{step.stop_reason}{forced}: {step.answer if step.answer is not None else '—'}"
    return repr(step)


def format_item(item: ViewItem, *, width: int = 400) -> str:
    """One view item: the step in full, or its summary line."""
    if item.level == "full":
        return format_step(item.step, width=width)
    status = {True: "", False: "  (failed)", None: "  (no result yet)"}[item.ok]
    head = f"#{item.step.number:<3} {'tool':<11} "
    return head + _clip(f"{item.summary}{status}", width)


def to_text(
    chain: Iterable[BaseStep],
    *,
    width: int = 400,
    redactor: Redactor | None = None,
    **options: Unpack[ViewOptions],
) -> str:
    """The whole chain as text, one step per block, secrets redacted.

    When calls to tools the view was not given were masked in full, a last line
    `note: …` says so and how to show them.

    Args:
        chain: the run's steps.
        width: longest body shown per step; longer ones end with "…".
        redactor: a `Redactor(chain, tools, mask_unknown=True)` the caller made already
            (it also masks the outcome it prints after), so the chain is learned once.
        **options: who sees the run, and with which tools (see `ViewOptions`).
    """
    steps = list(chain)
    by_name = tool_map(options.get("tools"))
    if redactor is None:
        redactor = Redactor(steps, by_name, mask_unknown=True)
    items = view_items(steps, redactor, by_name, options)
    note = unknown_tools_note(redactor.unknown_tools)
    lines = [format_item(item, width=width) for item in items]
    return "\n".join(lines + ([f"note: {note}"] if note else []))
