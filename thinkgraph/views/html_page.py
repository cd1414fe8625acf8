"""The chain as one self-contained HTML page: header, totals, diagram and a step timeline.

The page needs nothing but itself: inline CSS, no script, no font, no image, and a
Content-Security-Policy that forbids loading anything, so opening a run's page never
touches the network. Every piece of run data is escaped: chains hold model output.

Tool calls link to their result and observation and back, by call id (`#call-…`,
`#result-…`, `#obs-…`); every step is an element with the id `step-N`.
"""

from __future__ import annotations

import html
import re
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Unpack

from thinkgraph.state import ObservationStep, ToolCallStep, ToolResultStep
from thinkgraph.views._run import (
    RunView,
    build_run_view,
    describe_pending,
    fmt_cost,
    metric_parts,
    state_line,
)
from thinkgraph.views.text import step_body
from thinkgraph.views.visibility import ViewItem, ViewOptions

if TYPE_CHECKING:
    from thinkgraph.result import RunResult

__all__ = ["to_html"]

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_CSS = """
:root{--fg:#1d2330;--muted:#5f6b7a;--line:#d9dee5;--bg:#f6f7f9;--card:#fff}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
background:var(--bg)}
main{max-width:60rem;margin:0 auto;padding:1.5rem}
h1{font-size:1.4rem;margin:0 0 .5rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
code,pre{font:13px/1.4 ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace}
pre{margin:.4rem 0 0;white-space:pre-wrap;word-break:break-word}
.badge{display:inline-block;padding:.05rem .5rem;border-radius:1rem;font-size:.85rem;
background:#e4e7ec;vertical-align:middle}
.status-done{background:#d3f3dc}.status-failed{background:#fbd5d5}
.status-paused{background:#fdf0c4}.status-running{background:#dbe8fb}
.answer{font-size:1.05rem;background:var(--card);border:1px solid var(--line);
border-radius:.4rem;padding:.6rem .8rem}
.totals{display:grid;grid-template-columns:repeat(auto-fill,minmax(8.5rem,1fr));gap:.5rem;
margin:.8rem 0;padding:0}
.totals div{background:var(--card);border:1px solid var(--line);border-radius:.4rem;
padding:.4rem .6rem}
.totals dt{font-size:.75rem;color:var(--muted);text-transform:uppercase}
.totals dd{margin:0;font-weight:600}
.diagram{background:var(--card);border:1px solid var(--line);border-radius:.4rem;
padding:.6rem;overflow:auto}.diagram svg{max-width:100%;height:auto}
ol.timeline{list-style:none;margin:0;padding:0}
.step{background:var(--card);border:1px solid var(--line);border-left:4px solid #9aa5b4;
border-radius:.4rem;margin:.45rem 0;padding:.45rem .7rem}
.step:target,.step:has(>span:target){outline:2px solid #3d7bfd}
.head{display:flex;gap:.6rem;align-items:baseline;flex-wrap:wrap}
.num{font-weight:700}.type{font-weight:600}.meta{color:var(--muted);font-size:.85rem}
.links{font-size:.85rem;margin-top:.25rem}.links a{color:#2456c7}
.t-task{border-left-color:#6b7785}.t-llm_call{border-left-color:#b3bac4}
.t-thought{border-left-color:#7a5af8}.t-tool_call{border-left-color:#2e90fa}
.t-tool_result{border-left-color:#15b79e}.t-observation{border-left-color:#66c61c}
.t-error{border-left-color:#f04438}.t-validation{border-left-color:#ee46bc}
.t-reset{border-left-color:#f79009}.t-human{border-left-color:#eaaa08}.t-note{border-left-color:#7a5af8}
.t-final{border-left-color:#12b76a}.summary{border-left-style:dashed}
.failed{border-left-color:#f04438}
.note{background:#fdf0c4;border:1px solid #eaaa08;border-radius:.4rem;padding:.5rem .8rem}
summary h2{display:inline}details summary{cursor:pointer}
"""

_PROLOG = re.compile(r"^\s*(<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<!--.*?-->|\s)*", re.DOTALL)
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")

DiagramFormat = Literal["svg", "mermaid"]


def _anchor(call_id: str | None) -> str:
    # Call ids come from the model or the provider; keep ids and fragments plain.
    return _UNSAFE_ID.sub("_", call_id or "")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _links(item: ViewItem, present: set[str]) -> tuple[str, str]:
    """The element's extra anchor id and its links to the other steps of the same call."""
    call = _anchor(item.call_id)
    step = item.step
    ids = {"call": f"call-{call}", "result": f"result-{call}", "observation": f"obs-{call}"}
    if isinstance(step, ToolCallStep):
        own, others = ids["call"], ("result", "observation")
    elif isinstance(step, ToolResultStep):
        own, others = ids["result"], ("call", "observation")
    elif isinstance(step, ObservationStep):
        own, others = ids["observation"], ("call", "result")
    else:
        return "", ""
    targets = [(label, ids[label]) for label in others]
    links = [f'<a href="#{t}">{label}</a>' for label, t in targets if t in present]
    nav = f'<nav class="links">↔ {" · ".join(links)}</nav>' if links else ""
    return own, nav


def _own_anchors(items: list[ViewItem]) -> set[str]:
    present: set[str] = set()
    for item in items:
        if item.level == "full":
            own, _ = _links(item, set())
            if own:
                present.add(own)
    return present


def _meta(item: ViewItem, start: datetime | None) -> str:
    parts = []
    if start is not None:
        parts.append(f"+{(item.step.at - start).total_seconds():.3f}s")
    return " · ".join(parts + metric_parts(item.step, took="took "))


def _step(item: ViewItem, present: set[str], start: datetime | None) -> str:
    step = item.step
    kind = getattr(step, "type", "?")
    if item.level == "summary":
        failed = item.ok is False
        status = {True: "", False: " (failed)", None: " (no result yet)"}[item.ok]
        cls = f"step t-{kind} summary" + (" failed" if failed else "")
        return (
            f'<li id="step-{step.number}" class="{_e(cls)}"><div class="head">'
            f'<span class="num">#{step.number}</span><span class="type">tool</span>'
            f'<span class="meta">{_e(_meta(item, start))}</span></div>'
            f"<div>{_e(item.summary or '')}{_e(status)}</div></li>"
        )
    own, nav = _links(item, present)
    anchor = f'<span id="{own}"></span>' if own else ""
    return (
        f'<li id="step-{step.number}" class="step t-{_e(kind)}">{anchor}<div class="head">'
        f'<span class="num">#{step.number}</span><span class="type">{_e(kind)}</span>'
        f'<span class="meta">{_e(_meta(item, start))}</span></div>'
        f"<pre>{_e(step_body(step))}</pre>{nav}</li>"
    )


def _totals(view: RunView) -> str:
    t = view.totals
    cells = [
        ("steps", t["steps"]),
        ("think steps", t["think_steps"]),
        ("model calls", t["model_calls"]),
        ("tool calls", t["tool_calls"]),
        ("tokens", f"{t['tokens']} ({t['prompt_tokens']}+{t['completion_tokens']})"),
        ("cost", fmt_cost(t["cost_usd"])),
        ("model time", f"{t['model_time_s']:.3f}s"),
        ("tool time", f"{t['tool_time_s']:.3f}s"),
        ("elapsed", f"{t['elapsed_s']:.3f}s"),
    ]
    body = "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in cells)
    return f'<dl class="totals">{body}</dl>'


def _diagram(diagram: str | None, fmt: DiagramFormat | None) -> str:
    if not diagram:
        return ""
    if fmt is None:
        fmt = "svg" if "<svg" in diagram[:2000] else "mermaid"
    if fmt == "svg":
        # Inline SVG is markup by design; the page's CSP still forbids any script in it.
        inner, state = _PROLOG.sub("", diagram, count=1), " open"
    else:
        # Mermaid source is only useful to copy into a renderer: fold it away.
        inner, state = f'<pre class="mermaid">{_e(diagram)}</pre>', ""
    return (
        f'<section id="diagram"><details{state}><summary><h2>Graph</h2></summary>'
        f'<div class="diagram">{inner}</div></details></section>'
    )


def to_html(
    result: RunResult,
    *,
    diagram: str | None = None,
    diagram_format: DiagramFormat | None = None,
    **options: Unpack[ViewOptions],
) -> str:
    """A run as one self-contained HTML page.

    Args:
        result: the run, e.g. from `Agent.result(thread_id)`.
        **options: who sees the run, and with which tools (see `ViewOptions`).
        diagram: the graph with the run's overlay, pre-rendered: an SVG document (embedded
            as is) or Mermaid text (shown as text).
        diagram_format: "svg" or "mermaid"; guessed from `diagram` when left out.
    """
    view = build_run_view(result, **options)
    present = _own_anchors(view.items)
    start = view.items[0].step.at if view.items else None
    stop = f" ({view.stop_reason})" if view.stop_reason else ""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>thinkgraph run {_e(view.thread_id)}</title><style>{_CSS}</style></head>",
        "<body><main>",
        f'<header><h1>Run <code>{_e(view.thread_id)}</code> <span class="badge '
        f'status-{_e(view.status)}">{_e(view.status)}{_e(stop)}</span></h1>',
        f'<p class="meta">audience: {_e(view.audience)}</p>',
    ]
    if view.answer is not None:
        parts.append(f'<p class="answer" id="answer"><b>Answer:</b> {_e(view.answer)}</p>')
    if view.detail:
        parts.append(f"<p><b>Detail:</b> {_e(view.detail)}</p>")
    if view.pending:
        waits = "".join(f"<li>{_e(describe_pending(p))}</li>" for p in view.pending)
        parts.append(f'<div id="pending"><b>Waiting for:</b><ul>{waits}</ul></div>')
    parts += [f'<p class="note"><b>Note:</b> {_e(note)}</p>' for note in view.notes]
    if view.state:
        rows = "".join(
            f"<li><code>{_e(state_line(k, v))}</code></li>" for k, v in view.state.items()
        )
        parts.append(f'<div id="state"><b>State:</b><ul>{rows}</ul></div>')
    parts += [_totals(view), "</header>", _diagram(diagram, diagram_format)]
    parts.append('<section id="timeline"><h2>Steps</h2><ol class="timeline">')
    parts += [_step(item, present, start) for item in view.items]
    parts.append("</ol></section></main></body></html>")
    return "\n".join(p for p in parts if p) + "\n"
