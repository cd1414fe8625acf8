"""A replay's report on the comparison page: its verdict, a changed request's prompt diff,
the first divergence.

A replay records its source on its own run (the task step's ``replay_of``, the
``replay_of`` channel) and its outcome once it is compared (`RunInfo.replay`). The rest of
its report is read again from the two stored runs by the functions that make the CLI's
(`thinkgraph replay`): `diff_runs` for the divergence and `request_changes` for the
prompt diffs, masked as every view masks a run; `ReplayReport.headline` says it in one
line. What only the replay's process saw (how many replies and results it served) is not
shown; why it stopped is, as its run recorded it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from thinkgraph.result import RunResult
from thinkgraph.runs.replay import ReplayReport, request_changes
from thinkgraph.server.studio.html import compare_url, esc, link, thread_url
from thinkgraph.state import TaskStep
from thinkgraph.views.diff import RunDiff
from thinkgraph.views.diff_render import change_line

__all__ = ["ReplayShown", "replay_of", "replay_section", "replay_shown"]


def replay_of(run: RunResult) -> str | None:
    """The run `run` replays, or None when it is no replay."""
    first = run.chain[0] if run.chain else None
    return first.replay_of if isinstance(first, TaskStep) else None


@dataclass(frozen=True)
class ReplayShown:
    """What the comparison shows of a replay's report."""

    outcome: str
    """Its verdict as the replay recorded it (same, request changed, changed, diverged)."""
    headline: str
    """The verdict in one line, as the CLI says it (`ReplayReport.headline`)."""
    changes: tuple[str, ...]
    """At a divergence, each field that differs, as `thinkgraph diff` lists them."""
    prompt_diff: str
    """For a changed request, the first one's prompt diff (unified, masked)."""
    tools_changed: bool
    """For a changed request, whether the tool schemas sent changed."""
    stopped: str
    """Why the replay stopped short, as its run recorded it ("" when it did not)."""


def replay_shown(
    source: RunResult, replay: RunResult, diff: RunDiff, outcome: str, tools: Sequence[Any]
) -> ReplayShown:
    """The report of `replay`, a replay of `source` that recorded `outcome`, with `diff`
    the comparison of the two (`diff_runs`)."""
    names = (source.thread_id, replay.thread_id)
    report = ReplayReport(
        source=source,
        replay=replay,
        diff=diff,
        requests=request_changes(source.chain, replay.chain, names, tools),
    )
    first = report.requests[0] if report.requests else None
    divergence = diff.divergence
    stop = "replay stopped: "  # how a replay that stopped short records it (`areplay`)
    detail = replay.detail or ""
    return ReplayShown(
        outcome=outcome,
        headline=report.headline(),
        changes=tuple(change_line(c) for c in divergence.changes) if divergence else (),
        prompt_diff=first.diff if first is not None and outcome == "request changed" else "",
        tools_changed=first is not None and first.tools_changed,
        stopped=detail.removeprefix(stop) if detail.startswith(stop) else "",
    )


def _diff_lines(text: str) -> str:
    """A unified diff as escaped lines, each a span whose class says what it is."""
    kinds = {"+": "add", "-": "del", "@": "hunk"}
    lines = []
    for line in text.splitlines():
        head = line.startswith(("+++", "---"))
        kind = "file" if head else kinds.get(line[:1], "same")
        lines.append(f'<span class="diff-line {kind}">{esc(line)}</span>')
    return "\n".join(lines)


def replay_section(source: str, replay: str, shown: ReplayShown | None, *, running: bool) -> str:
    """The report's section of the comparison of `source` and its replay `replay`: that
    the replay runs (the page is sent again until it ends), or its report."""
    if shown is None and not running:
        return (
            '<section aria-label="replay report"><h2>Replay</h2>'
            f"<p>{esc(replay)} replays {esc(source)} but has recorded no report: it runs "
            "in another process, or it stopped before it was compared.</p></section>"
        )
    if running or shown is None:
        return (
            '<section aria-label="replay report"><h2>Replay</h2>'
            f'<p role="status">The replay is running: {esc(replay)} replays {esc(source)} '
            "on the graph served now. This page reloads until its report is made; "
            f"{link(compare_url(source, replay), 'reload')} "
            f"or see {link(thread_url(replay), 'the replay')} go.</p></section>"
        )
    parts = [f"<p>replay: <strong>{esc(shown.outcome)}</strong> · {esc(shown.headline)}</p>"]
    if shown.changes:
        parts.append("<ul>" + "".join(f"<li>{esc(c)}</li>" for c in shown.changes) + "</ul>")
    if shown.tools_changed:
        parts.append("<p>The tool schemas sent changed.</p>")
    if shown.prompt_diff:
        parts.append(
            "<h3>The prompt, as the run sent it (-) and as the replay did (+)</h3>"
            f'<pre class="prompt-diff">{_diff_lines(shown.prompt_diff)}</pre>'
        )
    if shown.stopped:
        parts.append(f'<p class="muted">stopped: {esc(shown.stopped)}</p>')
    return f'<section aria-label="replay report"><h2>Replay</h2>{"".join(parts)}</section>'
