"""A `RunDiff` as text, Markdown, JSON and one self-contained HTML page.

Each renderer shows the same things in the same order: the verdict (`same`, the first
divergence, or a change of content only), the two runs' totals side by side, the keys of
their own state that differ at the end (the graph's keys beyond `AgentState`), then the
aligned steps, one line each, marked ``=`` same, ``~`` changed (with the fields that
differ), ``-`` only in run A and ``+`` only in run B. Everything shown comes from the
diff, which is masked already: no renderer sees a secret.

Example:
    >>> print(diff_to_text(diff_runs(a.chain, b.chain, a=a, b=b)))  # doctest: +SKIP
    first divergence: route at think#1: a goes to act (step #4), c goes to finalize (step #3)
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from thinkgraph.state import BaseStep
from thinkgraph.views._run import fmt_cost
from thinkgraph.views.diff import FieldChange, RunDiff, RunTotals, StepPair
from thinkgraph.views.html_page import _CSP, _CSS, _diagram, _e
from thinkgraph.views.markdown import _code_span, escape_markdown
from thinkgraph.views.redact import unknown_tools_note
from thinkgraph.views.text import step_body

__all__ = [
    "DIFF_FORMAT_VERSION",
    "change_line",
    "diff_to_html",
    "diff_to_json",
    "diff_to_json_dict",
    "diff_to_markdown",
    "diff_to_text",
]

DIFF_FORMAT_VERSION = "thinkgraph.diff/1"
"""The `format` key of a diff's JSON document; bumped when a key changes meaning."""

MARKS = {"same": "=", "changed": "~", "deleted": "-", "inserted": "+"}
"""How each kind of pair is marked, as in a unified diff."""

VALUE_CHARS = 80
"""Longest value shown for a changed field; longer ones end with "…"."""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _line(text: str) -> str:
    """A body on one line: its line breaks shown as ⏎."""
    return text.replace("\r\n", "\n").replace("\n", " ⏎ ")


def _body(step: BaseStep | None, width: int) -> str:
    return "" if step is None else _clip(_line(step_body(step, limit=width)), width)


def _shown(value: Any, present: bool) -> str:
    if not present:
        return "(none)"
    return json.dumps(value, ensure_ascii=False)


def _from(text: str, start: int) -> str:
    """`text` from `start` (after "…" when that cuts its head), clipped, on one line."""
    head = "…" if start else ""
    return _clip(_line(head + text[start:]), VALUE_CHARS)


def _change(change: FieldChange) -> tuple[str, str, str]:
    """A change as (path, value in A, value in B), each short enough for one line.

    Two long values are shown from a little before where they first differ: the
    difference of two 2,000-character prompts is rarely in their first 80 characters.
    """
    a, b = _shown(change.a, change.in_a), _shown(change.b, change.in_b)
    same = 0
    if change.in_a and change.in_b:
        same = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), 0)
    start = max(0, same - _CONTEXT) if same > VALUE_CHARS - _CONTEXT else 0
    return change.path, _from(a, start), _from(b, start)


_CONTEXT = 24
"""Characters kept before the first difference of two long values."""


def change_line(change: FieldChange) -> str:
    """A field that differs as one line of text: ``score: 10 → 20``, each value clipped."""
    path, a, b = _change(change)
    return f"{path}: {a} → {b}"


def _num(step: BaseStep | None) -> str:
    return "" if step is None else f"#{step.number}"


def _outcome_line(t: RunTotals) -> str:
    status = t.status or "?"
    why = f" ({t.stop_reason})" if t.stop_reason else ""
    return f"{status}{why}"


def _rows(diff: RunDiff) -> list[tuple[str, str, str]]:
    """The totals table: (what, run A, run B)."""

    def tokens(t: RunTotals) -> str:
        return f"{t.tokens} ({t.prompt_tokens}+{t.completion_tokens})"

    a, b = diff.a, diff.b
    return [
        ("status", _outcome_line(a), _outcome_line(b)),
        ("answer", _clip(_line(a.answer or "—"), 60), _clip(_line(b.answer or "—"), 60)),
        ("steps", str(a.steps), str(b.steps)),
        ("model calls", str(a.model_calls), str(b.model_calls)),
        ("tool calls", str(a.tool_calls), str(b.tool_calls)),
        ("tokens", tokens(a), tokens(b)),
        ("cost", fmt_cost(a.cost_usd), fmt_cost(b.cost_usd)),
    ]


STATE_TITLE = "State at the end"
"""The heading of the runs' own state keys that differ at the end."""


def _notes(diff: RunDiff) -> list[str]:
    note = unknown_tools_note(list(diff.unknown_tools))
    return [note] if note else []


# -- text ---------------------------------------------------------------------------------


def diff_to_text(diff: RunDiff, *, width: int = 100) -> str:
    """The diff for a terminal: verdict, totals side by side, then one line per step.

    Args:
        diff: from `diff_runs`.
        width: longest step body shown; longer ones end with "…".
    """
    lines = [f"diff {diff.a.name} {diff.b.name}: {diff.outcome}", diff.describe()]
    if diff.divergence is not None:
        lines += [f"  {change_line(c)}" for c in diff.divergence.changes]
    rows = [("", diff.a.name, diff.b.name), *_rows(diff)]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    lines.append("")
    lines += [f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]}".rstrip() for r in rows]
    if diff.state:
        lines += ["", STATE_TITLE.lower() + ":"]
        lines += [f"  {change_line(c)}" for c in diff.state]
        if diff.more_state:
            lines.append(f"  … and {diff.more_state} more fields")
    lines += ["", f"  {'A':<5} {'B':<5} step"]
    for pair in diff.pairs:
        lines.append(_text_pair(pair, width))
        lines += [f"      {change_line(c)}" for c in pair.changes]
        if pair.more_changes:
            lines.append(f"      … and {pair.more_changes} more fields")
    lines += [f"note: {note}" for note in _notes(diff)]
    return "\n".join(lines) + "\n"


def _text_pair(pair: StepPair, width: int) -> str:
    step = pair.b if pair.op == "inserted" else pair.a
    head = f"{MARKS[pair.op]} {_num(pair.a):<5} {_num(pair.b):<5} {pair.kind:<12}"
    return (head + _body(step, width)).rstrip()


# -- Markdown -----------------------------------------------------------------------------


def diff_to_markdown(diff: RunDiff, *, width: int = 100) -> str:
    """The diff as Markdown: verdict, a totals table, then a list of aligned steps.

    Run data is escaped or put in code spans, never into the page as markup.
    """
    a, b = escape_markdown(diff.a.name), escape_markdown(diff.b.name)
    lines = [f"# Diff: {a} → {b}: {diff.outcome}", "", escape_markdown(diff.describe()), ""]
    if diff.divergence is not None and diff.divergence.changes:
        lines += [
            f"- {_code_span(p)}: {_code_span(x)} → {_code_span(y)}"
            for p, x, y in map(_change, diff.divergence.changes)
        ]
        lines.append("")
    lines += [f"> **Note:** {escape_markdown(note)}\n" for note in _notes(diff)]
    lines += [f"| | {a} | {b} |", "|---|---|---|"]
    lines += [
        f"| {what} | {escape_markdown(x)} | {escape_markdown(y)} |" for what, x, y in _rows(diff)
    ]
    if diff.state:
        lines += ["", f"## {STATE_TITLE}", ""]
        lines += [
            f"- {_code_span(p)}: {_code_span(x)} → {_code_span(y)}"
            for p, x, y in map(_change, diff.state)
        ]
        if diff.more_state:
            lines.append(f"- … and {diff.more_state} more fields")
    lines += ["", "## Steps", ""]
    for pair in diff.pairs:
        step = pair.b if pair.op == "inserted" else pair.a
        nums = f"{_num(pair.a) or '—'} · {_num(pair.b) or '—'}"
        body = _body(step, width)
        entry = f"- {_code_span(MARKS[pair.op])} **{nums} {pair.kind}**"
        lines.append(entry + (f" · {_code_span(body)}" if body else ""))
        lines += [
            f"  - {_code_span(p)}: {_code_span(x)} → {_code_span(y)}"
            for p, x, y in map(_change, pair.changes)
        ]
        if pair.more_changes:
            lines.append(f"  - … and {pair.more_changes} more fields")
    return "\n".join(lines) + "\n"


# -- JSON ---------------------------------------------------------------------------------


def _step_json(step: BaseStep | None) -> dict[str, Any] | None:
    if step is None:
        return None
    data: dict[str, Any] = step.model_dump(mode="json", exclude={"graph"})
    return data


def _change_json(change: FieldChange) -> dict[str, Any]:
    data: dict[str, Any] = {"path": change.path}
    if change.in_a:
        data["a"] = change.a
    if change.in_b:
        data["b"] = change.b
    return data


def diff_to_json_dict(diff: RunDiff) -> dict[str, Any]:
    """The diff as a dict with fixed keys (see `diff_to_json`)."""
    d = diff.divergence
    divergence = None
    if d is not None:
        divergence = {
            "kind": d.kind,
            "node": d.node,
            "visit": d.visit,
            "where": d.where,
            "step_a": d.step_a,
            "step_b": d.step_b,
            "a": d.a,
            "b": d.b,
            "changes": [_change_json(c) for c in d.changes],
        }
    return {
        "format": DIFF_FORMAT_VERSION,
        "outcome": diff.outcome,
        "same": diff.same,
        "summary": diff.describe(),
        "a": {**asdict(diff.a), "tokens": diff.a.tokens},
        "b": {**asdict(diff.b), "tokens": diff.b.tokens},
        "divergence": divergence,
        "path_a": list(diff.path_a),
        "path_b": list(diff.path_b),
        "unknown_tools": list(diff.unknown_tools),
        "notes": _notes(diff),
        "state": [_change_json(c) for c in diff.state],
        "more_state": diff.more_state,
        "steps": [
            {
                "op": pair.op,
                "a": _step_json(pair.a),
                "b": _step_json(pair.b),
                "changes": [_change_json(c) for c in pair.changes],
                "more_changes": pair.more_changes,
            }
            for pair in diff.pairs
        ],
    }


def diff_to_json(diff: RunDiff, *, indent: int | None = 2) -> str:
    """The diff as one JSON document, for programs.

    Keys: `format` ("thinkgraph.diff/1"), `outcome` (same, diverged, changed), `same`,
    `summary` (the verdict in words), `a` and `b` (each run's totals), `divergence` (kind,
    node, visit, where, step_a, step_b, a, b, changes; or null), `path_a` and `path_b`
    (the nodes each run went through), `unknown_tools`, `notes`, `state` (the runs' own
    state keys that differ at the end, as changes) and `more_state` (how many more), and
    `steps`: the aligned pairs, each `op`, `a` and `b` (the masked step records, or null)
    and `changes` (`path`, and `a` / `b` where that run has the field).
    """
    return json.dumps(diff_to_json_dict(diff), indent=indent, ensure_ascii=False, default=repr)


# -- HTML ---------------------------------------------------------------------------------

_DIFF_CSS = """
table.steps{border-collapse:collapse;width:100%;background:var(--card)}
table.steps td,table.steps th{border:1px solid var(--line);padding:.25rem .45rem;
vertical-align:top;text-align:left}
table.steps td.num{white-space:nowrap;color:var(--muted)}
table.steps pre{margin:0}
tr.op-same td.mark{color:var(--muted)}
tr.op-changed{background:#fff8e1}tr.op-deleted{background:#fdecea}
tr.op-inserted{background:#e8f5e9}
ul.changes{margin:.3rem 0 0;padding-left:1.2rem;font-size:.9rem}
table.totals{border-collapse:collapse;margin:.8rem 0}
table.totals td,table.totals th{border:1px solid var(--line);padding:.2rem .6rem;
background:var(--card);text-align:left}
.verdict{font-weight:600}.diverged{color:#b42318}.same{color:#067647}.changed{color:#b54708}
"""


def _changes_html(changes: tuple[FieldChange, ...], more: int) -> str:
    if not changes:
        return ""
    items = "".join(
        f"<li><code>{_e(p)}</code>: <code>{_e(x)}</code> → <code>{_e(y)}</code></li>"
        for p, x, y in map(_change, changes)
    )
    if more:
        items += f"<li>… and {more} more fields</li>"
    return f'<ul class="changes">{items}</ul>'


def _pair_html(pair: StepPair, width: int) -> str:
    cells = ""
    for step in (pair.a, pair.b):
        body = "" if step is None else _e(_clip(step_body(step, limit=width), width))
        cells += f'<td class="num">{_e(_num(step))}</td><td><pre>{body}</pre></td>'
    row = (
        f'<tr class="op-{pair.op}"><td class="mark">{_e(MARKS[pair.op])}</td>'
        f"<td>{_e(pair.kind)}</td>{cells}</tr>"
    )
    changes = _changes_html(pair.changes, pair.more_changes)
    if changes:  # the fields that differ, under the two steps
        row += f'<tr class="op-{pair.op}"><td></td><td colspan="5">{changes}</td></tr>'
    return row


def diff_to_html(diff: RunDiff, *, diagram: str | None = None, width: int = 2000) -> str:
    """The diff as one self-contained HTML page: no script, nothing loaded from anywhere.

    Args:
        diff: from `diff_runs`.
        diagram: the graph with both runs' paths marked (`thinkgraph.viz.diff`): an SVG
            document (embedded) or Mermaid text (shown as text to copy).
        width: longest step body shown.
    """
    a, b = diff.a.name, diff.b.name
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>thinkgraph diff {_e(a)} {_e(b)}</title><style>{_CSS}{_DIFF_CSS}</style>"
        "</head><body><main>",
        f"<header><h1>Diff <code>{_e(a)}</code> → <code>{_e(b)}</code></h1>",
        f'<p class="verdict {_e(diff.outcome)}" id="verdict">{_e(diff.describe())}</p>',
    ]
    if diff.divergence is not None:
        parts.append(_changes_html(diff.divergence.changes, 0))
    parts += [f'<p class="note"><b>Note:</b> {_e(note)}</p>' for note in _notes(diff)]
    rows = "".join(
        f"<tr><th>{_e(what)}</th><td>{_e(x)}</td><td>{_e(y)}</td></tr>"
        for what, x, y in _rows(diff)
    )
    parts.append(
        f'<table class="totals" id="totals"><tr><th></th><th>{_e(a)}</th><th>{_e(b)}</th>'
        f"</tr>{rows}</table></header>"
    )
    if diff.state:
        parts.append(
            f'<section id="state"><h2>{STATE_TITLE}</h2>'
            f"{_changes_html(diff.state, diff.more_state)}</section>"
        )
    parts.append(_diagram(diagram, None))
    parts.append(
        '<section id="steps"><h2>Steps</h2><table class="steps"><tr><th></th><th>step</th>'
        f"<th>#</th><th>{_e(a)}</th><th>#</th><th>{_e(b)}</th></tr>"
    )
    parts += [_pair_html(pair, width) for pair in diff.pairs]
    parts.append("</table></section></main></body></html>")
    return "\n".join(p for p in parts if p) + "\n"
