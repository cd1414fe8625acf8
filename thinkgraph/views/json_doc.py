"""The chain as one JSON document, for other programs.

The document's keys are fixed (programs can rely on them); each shown step is the step
record's own JSON (`model_dump(mode="json")`) after redaction, plus a `visibility` key.
A summarized tool call is reduced to a few keys and its summary, never its arguments.
`unknown_tools` lists the called tools the view was not given (every argument and result
value of theirs is masked) and `notes` says so in words.

Example:
    >>> import json
    >>> from thinkgraph import Agent, ScriptedModel
    >>> with Agent(ScriptedModel(["Thought: easy\\nFinal Answer: 4"]), store="memory://") as a:
    ...     doc = json.loads(to_json(a.run("2 + 2?", thread_id="j")))
    >>> doc["status"], doc["answer"], [s["type"] for s in doc["steps"]]
    ('done', '4', ['task', 'llm_call', 'thought', 'final'])
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Unpack

from thinkgraph.tools.base import Tool
from thinkgraph.views._run import build_run_view
from thinkgraph.views.redact import Redactor
from thinkgraph.views.visibility import ViewItem, ViewOptions, tool_map

if TYPE_CHECKING:
    from thinkgraph.result import RunResult, RunSummary

__all__ = [
    "FORMAT_VERSION",
    "job_fields",
    "run_summary_dict",
    "to_json",
    "to_json_dict",
    "waiting_doc",
]

FORMAT_VERSION = "thinkgraph.chain/1"
"""The `format` key of every document; bumped when a key changes meaning or goes away."""


def _item(item: ViewItem) -> dict[str, Any]:
    step = item.step
    if item.level == "summary":
        return {
            # Serialized like full steps, so `at` has one format in the whole document.
            **step.model_dump(mode="json", include={"number", "id", "at", "type"}),
            "visibility": "summary",
            "call_id": item.call_id,
            "summary": item.summary,
            "ok": item.ok,
        }
    # A task step's `graph` is the diagram's data, kept for drawing, not for reading.
    return {**step.model_dump(mode="json", exclude={"graph"}), "visibility": "full"}


def to_json_dict(result: RunResult, **options: Unpack[ViewOptions]) -> dict[str, Any]:
    """The document as a dict (see `to_json`)."""
    view = build_run_view(result, **options)
    return {
        "format": FORMAT_VERSION,
        "thread_id": view.thread_id,
        "status": view.status,
        "stop_reason": view.stop_reason,
        "detail": view.detail,
        "answer": view.answer,
        "audience": view.audience,
        "totals": view.totals,
        "pending": view.pending,
        "unknown_tools": view.unknown_tools,
        "notes": view.notes,
        "state": view.state,
        "steps": [_item(item) for item in view.items],
    }


def to_json(
    result: RunResult,
    *,
    indent: int | None = 2,
    **options: Unpack[ViewOptions],
) -> str:
    """A run as a JSON document: status, totals, pending questions and the shown steps.

    Args:
        result: the run, e.g. from `Agent.result(thread_id)`.
        indent: JSON indentation; None for one line.
        **options: who sees the run, and with which tools (see `ViewOptions`).
    """
    doc = to_json_dict(result, **options)
    return json.dumps(doc, indent=indent, ensure_ascii=False, default=repr)


def run_summary_dict(
    summary: RunSummary, *, tools: Mapping[str, Tool] | Iterable[Tool] | None = None
) -> dict[str, Any]:
    """One run of a list (`Agent.runs`) as JSON, its pending calls and detail masked.

    Masked as in `to_json_dict`, from what the summary holds (it has no chain): the
    pending calls' secret arguments, those values wherever the summary repeats them, and
    credential patterns.
    """
    redactor = Redactor([], tool_map(tools), mask_unknown=True)
    data: dict[str, Any] = json.loads(summary.model_dump_json())
    data["pending"] = [redactor.pending(p) for p in summary.pending]
    data["detail"] = redactor.text(summary.detail)
    return data


def job_fields(summary: RunSummary) -> dict[str, Any]:
    """What a run's job in the worker queue adds to its document, when it says more than the
    run's checkpoints (`RunSummary.job`): the run's status as every listing gives it, that
    status in words, and the job. Empty otherwise."""
    if summary.job is None:
        return {}
    return {
        "status": summary.status,
        "status_text": summary.status_text(),
        "job": json.loads(summary.job.model_dump_json()),
    }


def waiting_doc(summary: RunSummary) -> dict[str, Any]:
    """The document of a run that has no checkpoint yet, only a job: queued, or failed
    before its first checkpoint. No step; the job's state in words as its `detail`."""
    doc: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "thread_id": summary.thread_id,
        "status": summary.status,
        "detail": summary.status_text(),
        "steps": [],
        "pending": [],
    }
    if summary.job is not None:
        doc |= {"job_id": summary.job.job_id, "queue": summary.job.queue}
    return doc | job_fields(summary)
