"""The studio's pages as HTML, from what the run reader gives and the views mask.

Every value shown comes from a masked document (`thinkgraph.views.to_json_dict`,
`run_summary_dict`, `shown_state`) and goes through `esc`; the graph is our own SVG
(`thinkgraph.viz.to_svg_layout`), whose names and labels are escaped where it is drawn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from thinkgraph.server.studio.csrf import FIELD
from thinkgraph.server.studio.forms import arg_schema, schema_types
from thinkgraph.server.studio.html import esc, link, page, thread_url
from thinkgraph.server.studio.usage import NodeUsage
from thinkgraph.state import LLMCallStep, as_step
from thinkgraph.views.text import step_body

__all__ = [
    "Filters",
    "checkpoint_page",
    "compare_page",
    "fork_form",
    "run_page",
    "runs_page",
    "steer_section",
    "waits_for",
]

STATUSES = ("paused", "running", "queued", "done", "failed")


class Filters:
    """The runs list's query: status, graph, search text, page."""

    def __init__(self, query: Mapping[str, str], page_size: int) -> None:
        status = query.get("status", "")
        self.status = status if status in STATUSES else ""
        self.graph = query.get("graph", "")[:200]
        self.q = query.get("q", "")[:200]
        try:
            self.offset = max(0, int(query.get("offset", "0")))
        except ValueError:
            self.offset = 0
        self.page_size = page_size

    def query(self, **changed: object) -> dict[str, object]:
        kept: dict[str, object] = {"status": self.status, "graph": self.graph, "q": self.q}
        kept.update(changed)
        return kept

    def matches(self, run: Mapping[str, Any], task_of: Callable[[str], str]) -> bool:
        """Whether `run` passes the filters: its status, its graph, and the search text in
        its thread id or, failing that, in its task (`task_of`, read only then)."""
        if self.status and run.get("status") != self.status:
            return False
        if self.graph and (run.get("graph") or "ours") != self.graph:
            return False
        if not self.q:
            return True
        thread, wanted = str(run.get("thread_id", "")), self.q.casefold()
        return wanted in thread.casefold() or wanted in task_of(thread).casefold()


def _age(at: str | None, now: datetime) -> str:
    if not at:
        return ""
    try:
        then = datetime.fromisoformat(at)
    except ValueError:
        return ""
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = max(0, int((now - then).total_seconds()))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def _short(text: str, most: int = 160) -> str:
    """A text on one line, cut at `most` characters (a list row is no place for a page)."""
    line = " ".join(text.split())
    return line if len(line) <= most else line[: most - 1] + "…"


def _status(run: Mapping[str, Any]) -> str:
    status = str(run.get("status", ""))
    return f'<span class="status-{esc(status)}">{esc(status)}</span>'


def _cost(value: Any) -> str:
    return "?" if value is None else f"${float(value):.4f}"


def _waits_for(pending: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for p in pending:
        kind = p.get("kind")
        if kind == "approval":
            args = json.dumps(p.get("args") or {}, ensure_ascii=False, sort_keys=True)
            parts.append(f"approval: <code>{esc(p.get('tool'))}({esc(args[:200])})</code>")
        elif kind == "breakpoint":
            parts.append(f"breakpoint {esc(p.get('when') or 'at')} {esc(p.get('node') or '')}")
        else:
            parts.append(f"a person's answer: {esc(p.get('question') or 'how to go on?')}")
    return "<br>".join(parts)


def runs_page(
    shown: Sequence[Mapping[str, Any]],
    waiting: Sequence[Mapping[str, Any]],
    filters: Filters,
    graphs: Sequence[str],
    has_next: bool,
    token: str = "",
    waiting_total: int | None = None,
) -> str:
    """The runs list with its filters and pages, the "Waiting for you" inbox (the newest
    `waiting` of `waiting_total` paused runs; None: all of them), and a form that starts a
    run."""
    now = datetime.now(UTC)
    start_form = (
        '<form method="post" action="/studio/runs" aria-label="start a run">'
        f"{_hidden(FIELD, token)}"
        '<label for="task">Task</label><textarea id="task" name="task" required></textarea>'
        '<label for="thread_id">Thread id (optional)</label>'
        '<input type="text" id="thread_id" name="thread_id">'
        '<button name="action" value="start">Start</button></form>'
    )
    inbox = "".join(
        f"<li>{link(thread_url(str(r['thread_id'])), str(r['thread_id']))} "
        f'<span class="muted">{esc(_age(r.get("updated_at"), now))}</span> '
        f"{esc(_short(str(r.get('task') or '')))}<br>"
        f"{_waits_for(r.get('pending') or [])}</li>"
        for r in waiting
    )
    options = "".join(
        f'<option value="{esc(s)}"{" selected" if s == filters.status else ""}>{esc(s)}</option>'
        for s in ("", *STATUSES)
    )
    graph_options = "".join(
        f'<option value="{esc(g)}"{" selected" if g == filters.graph else ""}>{esc(g)}</option>'
        for g in ("", *graphs)
    )
    rows = "".join(
        "<tr>"
        f"<td>{link(thread_url(str(r['thread_id'])), str(r['thread_id']))}</td>"
        f"<td>{esc(_short(str(r.get('task') or '')))}</td>"
        f"<td>{_status(r)}</td><td>{esc(r.get('graph') or 'ours')}</td>"
        f"<td>{esc(r.get('nodes', 0))}</td><td>{esc(r.get('tokens', 0))}</td>"
        f"<td>{esc(_cost(r.get('cost_usd')))}</td>"
        f"<td>{esc(_age(r.get('updated_at'), now))}</td></tr>"
        for r in shown
    )
    total = len(waiting) if waiting_total is None else max(waiting_total, len(waiting))
    if total > len(waiting):
        inbox += (
            f'<li class="muted">and {total - len(waiting)} more: '
            f"{link('/studio', 'all paused runs', {'status': 'paused'})}</li>"
        )
    pages = []
    if filters.offset:
        back = max(0, filters.offset - filters.page_size)
        pages.append(link("/studio", "Newer runs", filters.query(offset=back or None)))
    if has_next:
        nxt = filters.offset + filters.page_size
        pages.append(link("/studio", "Older runs", filters.query(offset=nxt)))
    body = (
        f'<h1>Runs</h1><section id="waiting" aria-labelledby="waiting-h">'
        f'<h2 id="waiting-h">Waiting for you ({total})</h2>'
        + (f"<ul>{inbox}</ul>" if inbox else '<p class="muted">No run waits for you.</p>')
        + "</section>"
        + start_form
        + '<form method="get" action="/studio" role="search">'
        f'<label for="q">Search runs</label><input type="text" id="q" name="q" '
        f'value="{esc(filters.q)}" placeholder="thread id or task">'
        f'<label for="status">Status</label><select id="status" name="status">{options}</select>'
        f'<label for="graph">Graph</label><select id="graph" name="graph">{graph_options}</select>'
        ' <button type="submit">Filter</button></form>'
        '<table><caption class="muted">newest first</caption><thead><tr><th>Run</th>'
        "<th>Task</th><th>Status</th><th>Graph</th><th>Steps</th><th>Tokens</th><th>Cost</th>"
        "<th>Updated</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
        + (f'<nav class="pages" aria-label="pages">{" ".join(pages)}</nav>' if pages else "")
    )
    return page("Runs", body)


def _state_rows(state: Mapping[str, Any]) -> str:
    """A run's own state keys (masked already) as table rows, ``key | JSON``."""
    return "".join(
        f"<tr><td>{esc(k)}</td><td><pre>{esc(json.dumps(v, ensure_ascii=False))}</pre></td></tr>"
        for k, v in sorted(state.items())
    )


def _hidden(name: str, value: str) -> str:
    return f'<input type="hidden" name="{esc(name)}" value="{esc(value)}">'


def _form(thread: str, token: str, at: str, inner: str, label: str) -> str:
    return (
        f'<form method="post" action="{esc(thread_url(thread, "answer"))}" '
        f'aria-label="{esc(label)}">'
        f"{_hidden(FIELD, token)}{_hidden('at', at)}{inner}</form>"
    )


def _arg_fields(
    call_id: str, args: Mapping[str, Any], schema: Mapping[str, Any], prefix: str = "arg."
) -> str:
    """One field per argument of the tool's schema (named `prefix` + the argument),
    holding its proposed value as JSON (a string as it is)."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    names = list(props) if isinstance(props, Mapping) else list(args)
    fields = []
    for name in names:
        field_id = f"arg-{call_id}-{name}"
        value = args.get(name, "")
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        kind = " or ".join(schema_types(arg_schema(schema, name)))
        fields.append(
            f'<label for="{esc(field_id)}">{esc(name)} '
            f'<span class="muted">({esc(kind or "any")})</span></label>'
            f'<input type="text" id="{esc(field_id)}" name="{esc(prefix + name)}" '
            f'value="{esc(shown)}">'
        )
    return "".join(fields)


def _approval(
    thread: str, token: str, at: str, p: Mapping[str, Any], schema: Mapping[str, Any]
) -> str:
    call_id = str(p.get("call_id") or "")
    args = p.get("args") or {}
    raw = json.dumps(args, ensure_ascii=False, indent=1, sort_keys=True)
    call = _hidden("call_id", call_id)
    return (
        f'<div class="waiting" role="group" aria-label="call {esc(call_id)}">'
        f"<strong>{esc(p.get('tool'))}</strong> waits for approval "
        f'<span class="muted">(call {esc(call_id)})</span>'
        + (f'<div class="muted">thought: {esc(p.get("thought"))}</div>' if p.get("thought") else "")
        + f"<pre>{esc(raw)}</pre>"
        + _form(thread, token, at, call + '<button name="action" value="approve">Approve</button>',
                f"approve call {call_id}")
        + _form(
            thread, token, at,
            call + _hidden("tool", str(p.get("tool") or "")) + _arg_fields(call_id, args, schema)
            + f'<label for="raw-{esc(call_id)}">or all arguments as JSON</label>'
            f'<textarea class="json" id="raw-{esc(call_id)}" name="args_json"></textarea>'
            '<button name="action" value="edit">Edit</button>',
            f"edit call {call_id}",
        )
        + _form(
            thread, token, at,
            call + f'<label for="respond-{esc(call_id)}">the result to give instead</label>'
            f'<textarea id="respond-{esc(call_id)}" name="text" required></textarea>'
            '<button name="action" value="respond">Respond</button>',
            f"respond to call {call_id}",
        )
        + _form(
            thread, token, at,
            call + f'<label for="reason-{esc(call_id)}">reason</label>'
            f'<input type="text" id="reason-{esc(call_id)}" name="reason">'
            '<button name="action" value="reject">Reject</button>',
            f"reject call {call_id}",
        )
        + "</div>"
    )  # fmt: skip


def _several(
    thread: str,
    token: str,
    at: str,
    calls: Sequence[Mapping[str, Any]],
    schemas: Mapping[str, Mapping[str, Any]],
) -> str:
    """Several calls wait: one form answers them all, as the gate takes them (approve,
    edit, respond or reject each; reject is chosen until a person chooses otherwise)."""
    rows = []
    for p in calls:
        call_id = str(p.get("call_id") or "")
        tool = str(p.get("tool") or "")
        args = p.get("args") or {}
        shown = json.dumps(args, ensure_ascii=False, sort_keys=True)
        choices = "".join(
            f'<label><input type="radio" name="decide.{esc(call_id)}" value="{choice}"'
            f"{' checked' if choice == 'reject' else ''}> {choice}</label>"
            for choice in ("approve", "edit", "respond", "reject")
        )
        rows.append(
            f'<fieldset><legend>{esc(tool)} <span class="muted">(call '
            f"{esc(call_id)})</span></legend><pre>{esc(shown)}</pre>{choices}"
            + _hidden(f"tool.{call_id}", tool)
            + "<details><summary>its arguments, if edited</summary>"
            + _arg_fields(call_id, args, schemas.get(tool, {}), prefix=f"arg.{call_id}.")
            + f'<label for="raw-{esc(call_id)}">or all arguments as JSON</label>'
            f'<textarea class="json" id="raw-{esc(call_id)}" name="args_json.{esc(call_id)}">'
            "</textarea></details>"
            f'<label for="give-{esc(call_id)}">the result to give instead, if responded</label>'
            f'<textarea id="give-{esc(call_id)}" name="text.{esc(call_id)}"></textarea>'
            f'<label for="why-{esc(call_id)}">reason, if rejected</label>'
            f'<input type="text" id="why-{esc(call_id)}" name="reason.{esc(call_id)}">'
            "</fieldset>"
        )
    inner = "".join(rows) + '<button name="action" value="decide">Answer all</button>'
    return (
        f'<div class="waiting">{len(calls)} calls wait for approval; answer them together.'
        f"{_form(thread, token, at, inner, 'answer the waiting calls')}</div>"
    )


def _other(thread: str, token: str, at: str, p: Mapping[str, Any]) -> str:
    if p.get("kind") == "breakpoint":
        where = f"{p.get('when') or 'at'} {p.get('node') or ''}"
        return (
            f'<div class="waiting">paused at a breakpoint ({esc(where)})'
            + _form(thread, token, at, '<button name="action" value="continue">Continue</button>',
                    "continue")
            + "</div>"
        )  # fmt: skip
    details = p.get("details") or {}
    shown = json.dumps(details, ensure_ascii=False, indent=1) if details else ""
    return (
        f'<div class="waiting">asks a person: {esc(p.get("question") or "how to go on?")}'
        + (f"<pre>{esc(shown)}</pre>" if shown else "")
        + _form(thread, token, at,
                '<button name="action" value="retry">Retry</button>'
                '<button name="action" value="abort">Abort</button>'
                '<label for="guidance">guidance for the model</label>'
                '<textarea id="guidance" name="text"></textarea>'
                '<button name="action" value="guidance">Send guidance</button>',
                "answer the question")
        + "</div>"
    )  # fmt: skip


def _step_text(step: Mapping[str, Any]) -> str:
    """What a step of a masked document says, in the words of every view (`step_body`);
    a model call with its reply, a summarized call with its summary."""
    if step.get("visibility") == "summary":
        return str(step.get("summary") or "")
    fields = {k: v for k, v in step.items() if k != "visibility"}
    try:
        revived = as_step(fields)
    except ValueError:  # a step this version cannot read: its fields as they are
        return json.dumps(fields, ensure_ascii=False, default=str)
    text = step_body(revived)
    if isinstance(revived, LLMCallStep) and revived.text:
        text += "\n" + revived.text
    return text


def _step(step: Mapping[str, Any]) -> str:
    shown = _step_text(step)
    return (
        f'<tr id="step-{esc(step.get("number"))}"><td>{esc(step.get("number"))}</td>'
        f"<td>{esc(step.get('node') or '')}</td><td>{esc(step.get('type', ''))}</td>"
        f"<td><pre>{esc(shown[:4000])}</pre></td></tr>"
    )


def _exports(thread: str) -> str:
    """Links to the run's drawing as Mermaid and DOT text, to paste into docs or Graphviz
    (exports only: the page draws its own SVG)."""
    diagram = f"/runs/{quote(thread, safe='')}/diagram"
    return (
        '<p class="muted">Export the drawing: '
        + " · ".join(link(diagram, name, {"format": fmt}) for name, fmt in _EXPORTS)
        + "</p>"
    )


_EXPORTS = (("Mermaid", "mermaid"), ("DOT", "dot"))


def steer_section(
    doc: Mapping[str, Any], *, token: str, at: str, schemas: Mapping[str, Mapping[str, Any]]
) -> str:
    """What a run waits for, with the forms that answer it (each carrying the CSRF `token`
    and the checkpoint `at` it answers): the page's ``#steer`` section, also served alone
    (``/studio/runs/T/steer``) for the page's script to put in place when the run pauses or
    moves on. Hidden and empty when nothing waits."""
    thread = str(doc.get("thread_id"))
    pending = list(doc.get("pending") or [])
    calls = [p for p in pending if p.get("kind") == "approval"]
    others = [p for p in pending if p.get("kind") != "approval"]
    steer = ""
    if len(calls) == 1:
        steer += _approval(thread, token, at, calls[0], schemas.get(str(calls[0].get("tool")), {}))
    elif calls:
        steer += _several(thread, token, at, calls, schemas)
    steer += "".join(_other(thread, token, at, p) for p in others)
    waits = waits_for((str(p.get("kind")), p.get("call_id")) for p in pending)
    return (
        f'<section id="steer" aria-label="waiting" data-at="{esc(at)}" data-waits="{esc(waits)}"'
        f"{'' if steer else ' hidden'}>{steer}</section>"
    )


def waits_for(pending: Iterable[tuple[str, str | None]]) -> str:
    """What a pause waits for as one string, from its (kind, call id) pairs: with the
    checkpoint, what tells the page's script that its forms answer the pause there is now.
    One checkpoint can hold two pauses: a breakpoint before approve, then the approval."""
    return " ".join(f"{kind}:{call or ''}" for kind, call in pending)


def _usage_table(usage: Mapping[str, NodeUsage]) -> str:
    """The tokens and cost of each node that spent any, one row a node (``data-node``, so
    the page's script can set its cells as the run goes on)."""
    rows = "".join(
        f'<tr data-node="{esc(node)}"><td>{esc(node)}</td>'
        f'<td data-usage="tokens">{esc(u["tokens"])}</td>'
        f'<td data-usage="cost_usd">{esc(_cost(u["cost_usd"]))}</td>'
        f'<td data-usage="calls">{esc(u["calls"])}</td></tr>'
        for node, u in usage.items()
    )
    return (
        '<table aria-label="tokens and cost per node"><thead><tr><th>Node</th><th>Tokens</th>'
        f"<th>Cost</th><th>Model calls</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _node_spent(node: str, usage: Mapping[str, NodeUsage]) -> str:
    spent = usage.get(node)
    if spent is None:
        return f'<p class="muted">{esc(node)} called no model.</p>'
    calls = spent["calls"]
    return (
        f"<p>{esc(node)} spent {esc(spent['tokens'])} tokens · {esc(_cost(spent['cost_usd']))}"
        f" in {esc(calls)} model call{'' if calls == 1 else 's'}</p>"
    )


def _lineage(thread: str, lineage: Mapping[str, Any]) -> str:
    """Where the run came from (the run and checkpoint it was forked from, or the run it
    replays) and the runs forked from it and replaying it, each a link; "" when it has
    none."""
    parts = []
    source = lineage.get("fork_of")
    if source:
        run, at = source
        parts.append(
            f"<p>forked from {link(thread_url(run), run)} at checkpoint "
            f"{link(thread_url(run, 'at', at), at)}</p>"
        )
    if lineage.get("replay_of"):
        run = str(lineage["replay_of"])
        parts.append(f"<p>replay of {link(thread_url(run), run)}</p>")
    forks = lineage.get("forks") or []
    if forks:
        items = "".join(
            f"<li>{link(thread_url(child), child)} "
            f'<span class="muted">from checkpoint</span> '
            f"{link(thread_url(thread, 'at', at), at)}</li>"
            for child, at in forks
        )
        parts.append(f"<p>Forks of this run:</p><ul>{items}</ul>")
    replays = lineage.get("replays") or []
    if replays:
        items = "".join(f"<li>{link(thread_url(run), run)}</li>" for run in replays)
        parts.append(f"<p>Replays of this run:</p><ul>{items}</ul>")
    if not parts:
        return ""
    return f'<section aria-label="lineage"><h2>Lineage</h2>{"".join(parts)}</section>'


def run_page(
    doc: Mapping[str, Any],
    svg: str,
    nodes: Sequence[str],
    history: Sequence[Mapping[str, Any]],
    *,
    token: str,
    at: str,
    schemas: Mapping[str, Mapping[str, Any]],
    usage: Mapping[str, NodeUsage] | None = None,
    lineage: Mapping[str, Any] | None = None,
    node: str = "",
    notice: str = "",
) -> str:
    """A run: what it waits for (with the forms that answer it), its graph (`svg`, of the
    graph's `nodes`) with the tokens and cost spent in each node (`usage`), its steps
    (those of `node` when one is chosen, with what that node spent), its checkpoints, its
    lineage (``fork_of``: (run, checkpoint); ``replay_of``: a run; ``forks``: (run,
    checkpoint) pairs; ``replays``: runs) and its own state keys."""
    thread = str(doc.get("thread_id"))
    usage = usage or {}
    steer = steer_section(doc, token=token, at=at, schemas=schemas)
    steps = [s for s in doc.get("steps") or [] if not node or s.get("node") == node]
    totals = doc.get("totals") or {}
    state = doc.get("state") or {}
    state_rows = _state_rows(state)
    timeline = "".join(
        f"<li>{link(thread_url(thread, 'at', str(h['checkpoint_id'])), str(h.get('node')))} "
        f'<span class="muted">step {esc(h.get("step"))}</span></li>'
        for h in history
    )
    answer = doc.get("answer")
    status = str(doc.get("status", ""))
    body = (
        f'<div id="live" data-thread="{esc(thread)}" data-status="{esc(status)}">'
        "</div>"
        f"<h1>Run {esc(thread)}</h1>"
        + (f'<p class="error" role="alert">{esc(notice)}</p>' if notice else "")
        + f'<p><span id="status" class="status-{esc(status)}">{esc(status)}</span> '
        f"{esc(doc.get('detail') or '')} · "
        f"{esc(totals.get('tokens', 0))} tokens · {esc(_cost(totals.get('cost_usd')))}</p>"
        + (f"<p>answer: <strong>{esc(answer)}</strong></p>" if answer is not None else "")
        + steer
        + _lineage(thread, lineage or {})
        + '<div class="cols"><section aria-label="graph"><h2>Graph</h2>'
        f'<div class="graph">{svg}</div>'
        + _usage_table(usage)
        + '<p class="muted">Steps of a node: '
        + " ".join(link(thread_url(thread), n, {"node": n}) for n in nodes)
        + (f" · {link(thread_url(thread), 'all steps')}" if node else "")
        + "</p>"
        + _exports(thread)
        + "</section>"
        f'<section aria-label="checkpoints"><h2>Checkpoints</h2><ol class="timeline">'
        f"{timeline}</ol>"
        f'<form method="post" action="{esc(thread_url(thread, "replay"))}" '
        f'aria-label="replay">{_hidden(FIELD, token)}'
        '<button name="action" value="replay">Replay</button> '
        '<span class="muted">on the graph served now, against this run</span></form>'
        '<form method="get" action="/studio/compare" aria-label="compare">'
        f"{_hidden('a', thread)}"
        '<label for="compare-b">another run</label>'
        '<input type="text" id="compare-b" name="b" required>'
        "<button>Compare</button></form></section></div>"
        + (f"<h2>State</h2><table><tbody>{state_rows}</tbody></table>" if state_rows else "")
        + f"<h2>Steps{' of ' + esc(node) if node else ''}</h2>"
        + (_node_spent(node, usage) if node else "")
        + "<table><thead><tr><th>#</th><th>Node</th><th>Type</th><th>Text</th></tr></thead>"
        f"<tbody>{''.join(_step(s) for s in steps)}</tbody></table>"
    )
    return page(f"Run {thread}", body, live=True)


def fork_form(
    thread: str,
    point: Mapping[str, Any],
    steps: Sequence[Mapping[str, Any]],
    state: Mapping[str, Any],
    editable: Mapping[int, str],
    schemas: Mapping[str, Mapping[str, Any]],
    *,
    token: str,
) -> str:
    """The form that forks a new run from the checkpoint `point`, with a field per part a
    fork from it may edit (`editable`, of the `steps` as shown, masked): an observation's
    text, a thought's answer, a call's arguments (a field per argument of the tool's
    schema, as the Edit form has); a field per own state key (JSON); and the steps' edits
    as raw JSON instead. The fields hold what the page shows: one left so is no edit."""
    fields = []
    for step in steps:
        number = int(step["number"])
        what = editable.get(number)
        where = f"step {number}"
        if what == "text":
            fields.append(
                f'<label for="fork-{number}-text">{where}: the observation the model is '
                f"shown</label>"
                f'<textarea id="fork-{number}-text" name="edit.{number}.text">\n'
                f"{esc(step.get('text') or '')}</textarea>"
            )
        elif what == "answer":
            fields.append(
                f'<label for="fork-{number}-answer">{where}: the thought\'s answer</label>'
                f'<input type="text" id="fork-{number}-answer" name="edit.{number}.answer" '
                f'value="{esc(step.get("answer") or "")}">'
            )
        elif what == "args":
            call = step.get("call") or {}
            tool = str(call.get("name") or "")
            fields.append(
                f"<fieldset><legend>{where}: the arguments of the call of {esc(tool)}</legend>"
                + _hidden(f"edit.{number}.tool", tool)
                + _arg_fields(
                    f"fork-{number}", call.get("args") or {}, schemas.get(tool, {}),
                    prefix=f"edit.{number}.arg.",
                )
                + "</fieldset>"
            )  # fmt: skip
    keys = "".join(
        f'<label for="state-{esc(k)}">{esc(k)} (JSON)</label>'
        f'<input type="text" id="state-{esc(k)}" name="state.{esc(k)}" '
        f'value="{esc(json.dumps(v, ensure_ascii=False))}">'
        for k, v in sorted(state.items())
    )
    return (
        f'<form method="post" action="{esc(thread_url(thread, "fork"))}" aria-label="fork">'
        f"{_hidden(FIELD, token)}{_hidden('checkpoint', str(point.get('checkpoint_id')))}"
        + "".join(fields)
        + keys
        + '<label for="edit">steps to edit, as JSON: {"STEP": {"FIELD": VALUE}} '
        "(an observation's text, a thought's answer, a call's args); when given, "
        "the fields above are not read</label>"
        '<textarea class="json" id="edit" name="edit"></textarea>'
        '<label for="new_thread">new thread id (optional)</label>'
        '<input type="text" id="new_thread" name="new_thread">'
        '<button name="action" value="fork">Fork from here</button></form>'
    )


def checkpoint_page(
    thread: str,
    point: Mapping[str, Any],
    doc: Mapping[str, Any],
    svg: str,
    steps: Sequence[Mapping[str, Any]],
    fork: str = "",
) -> str:
    """One checkpoint of a run: the run as it stood there (its status, totals and what it
    waited for, from `doc`; its graph `svg` with the path up to there; its `steps` up to
    there; its own state keys) and the form that forks a new run from it (`fork`, from
    `fork_form`)."""
    state = doc.get("state") or {}
    rows = _state_rows(state)
    totals = doc.get("totals") or {}
    pending = doc.get("pending") or []
    answer = doc.get("answer")
    body = (
        f"<h1>Run {link(thread_url(thread), thread)} at checkpoint "
        f"{esc(point.get('checkpoint_id'))}</h1>"
        f"<p>after node <strong>{esc(point.get('node'))}</strong> · step {esc(point.get('step'))}"
        f" · {esc(point.get('at') or '')}</p>"
        f"<p>then: {_status(doc)} · {esc(totals.get('tokens', 0))} tokens · "
        f"{esc(_cost(totals.get('cost_usd')))}</p>"
        + (f"<p>waiting for: {_waits_for(pending)}</p>" if pending else "")
        + (f"<p>answer: <strong>{esc(answer)}</strong></p>" if answer is not None else "")
        + '<div class="cols"><section aria-label="graph"><h2>Graph, as it stood</h2>'
        f'<div class="graph">{svg}</div></section>'
        + '<section aria-label="state"><h2>State</h2>'
        + (
            f"<table><tbody>{rows}</tbody></table>"
            if rows
            else '<p class="muted">The graph keeps no state keys of its own.</p>'
        )
        + f"<h2>Fork</h2>{fork}</section></div>"
        + "<h2>Steps up to here</h2>"
        "<table><thead><tr><th>#</th><th>Node</th><th>Type</th><th>Text</th></tr></thead>"
        f"<tbody>{''.join(_step(s) for s in steps)}</tbody></table>"
    )
    return page(f"Run {thread} at a checkpoint", body)


def compare_page(a: str, b: str, svg: str, verdict: str, steps: str, report: str = "") -> str:
    """Two runs on one graph (their paths coloured by difference) and step by step; when
    `b` replays `a`, the replay's `report` (HTML, `replay_section`) first."""
    body = (
        f"<h1>Compare {link(thread_url(a), a)} and {link(thread_url(b), b)}</h1>"
        + report
        + f"<p>{esc(verdict)}</p>"
        '<p class="muted">on the graph: <span class="only-a">only A</span>, '
        '<span class="only-b">only B</span>, both; the node where they part is marked</p>'
        f'<section aria-label="both paths"><div class="graph">{svg}</div></section>'
        f"<h2>Step by step</h2><pre>{esc(steps)}</pre>"
    )
    return page(f"Compare {a} and {b}", body)
