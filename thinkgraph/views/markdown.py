"""The chain as Markdown: a header with the outcome and totals, then one entry per step.

Model output goes into fenced blocks (or is escaped), never into the page as markup: a
reply holding `<script>`, a table or a stray fence must not change how the page renders.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Unpack

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

__all__ = ["to_markdown"]

INLINE_CHARS = 100
"""Step bodies up to this long, on one line, are shown inline; longer ones get a block."""

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#|~>])")
_LINE_START = re.compile(r"^(\s*\d*)([-+=.)])", re.MULTILINE)


def escape_markdown(text: str) -> str:
    """Text shown as itself in Markdown: markup escaped, `<` and `&` as entities.

    `-`, `+` and `1.` only make lists at the start of a line, so only there are they
    escaped: "t-views" stays readable in the Markdown source.
    """
    text = text.replace("&", "&amp;").replace("<", "&lt;")
    text = _LINE_START.sub(r"\1\\\2", _MD_SPECIAL.sub(r"\\\1", text))
    return text.replace("\n", "  \n")


def _fence(text: str, lang: str = "text") -> str:
    # A fence longer than any run of tildes inside, so the content cannot close it.
    longest = max((len(m) for m in re.findall(r"~+", text)), default=0)
    fence = "~" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _code_span(text: str) -> str:
    # More backticks than any run inside; a space keeps an edge backtick off the delimiter.
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _meta(item: ViewItem) -> str:
    return "".join(f" · {p}" for p in metric_parts(item.step))


def _entry(item: ViewItem) -> str:
    step = item.step
    kind = getattr(step, "type", "?")
    if item.level == "summary":
        status = {True: "", False: " (failed)", None: " (no result yet)"}[item.ok]
        return f"**#{step.number} tool** · {escape_markdown(item.summary or '')}{status}"
    head = f"**#{step.number} {kind}**{_meta(item)}"
    body = step_body(step)
    if "\n" not in body and len(body) <= INLINE_CHARS:
        return f"{head} · {_code_span(body)}"
    return f"{head}\n\n{_fence(body)}"


def _totals(view: RunView) -> str:
    t = view.totals
    cells = [
        str(t["steps"]),
        str(t["think_steps"]),
        str(t["model_calls"]),
        str(t["tool_calls"]),
        str(t["tokens"]),
        fmt_cost(t["cost_usd"]),
        f"{t['model_time_s']:.3f}s",
        f"{t['tool_time_s']:.3f}s",
        f"{t['elapsed_s']:.3f}s",
    ]
    names = "steps | think steps | model calls | tool calls | tokens | cost | model time | "
    names += "tool time | elapsed"
    return f"| {names} |\n|{'---:|' * len(cells)}\n| {' | '.join(cells)} |"


def to_markdown(result: RunResult, **options: Unpack[ViewOptions]) -> str:
    """A run as Markdown: outcome, totals, then every step this audience may see.

    Args:
        result: the run, e.g. from `Agent.result(thread_id)`.
        **options: who sees the run, and with which tools (see `ViewOptions`).
    """
    view = build_run_view(result, **options)
    stop = f" ({view.stop_reason})" if view.stop_reason else ""
    lines = [f"# Run {escape_markdown(view.thread_id)}: {view.status}{stop}", ""]
    if view.answer is not None:
        lines += [f"**Answer:** {escape_markdown(view.answer)}", ""]
    if view.detail:
        lines += [f"**Detail:** {escape_markdown(view.detail)}", ""]
    if view.pending:
        waits = "; ".join(describe_pending(p) for p in view.pending)
        lines += [f"**Waiting for:** {escape_markdown(waits)}", ""]
    lines += [f"> **Note:** {escape_markdown(note)}\n" for note in view.notes]
    if view.state:
        lines += ["## State", ""]
        lines += [f"- `{escape_markdown(state_line(k, v))}`" for k, v in view.state.items()]
        lines += [""]
    lines += [_totals(view), "", "## Steps", ""]
    # One list item per step; multi-line bodies are fenced blocks indented under their item.
    lines += [
        "- " + _entry(item).replace("\n", "\n  ").replace("\n  \n", "\n\n") for item in view.items
    ]
    return "\n".join(lines) + "\n"
