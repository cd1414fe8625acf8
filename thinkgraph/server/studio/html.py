"""The studio's HTML: one page shell, escaping, and the stylesheet its CSP allows by hash.

Every value from a run goes through `esc` (text and attribute values alike), so a task,
an answer or a tool's argument that holds markup is shown as text. Forms and links do
everything, so the studio works without JavaScript and by keyboard; one script file only
enhances a run's page (it follows the run live), and `STUDIO_CSP` allows nothing inline.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Mapping
from urllib.parse import quote, urlencode

from thinkgraph.viz import SVG_CSS

__all__ = ["STUDIO_CSP", "compare_url", "esc", "link", "node_url", "page", "thread_url"]

_STYLE = (
    """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2330; }
header { background: #1d2330; color: #fff; padding: 8px 16px; display: flex; gap: 16px;
         align-items: center; }
header a { color: #fff; }
main { padding: 12px 20px; max-width: 1200px; }
h1 { font-size: 18px; margin: 4px 0 12px; } h2 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e3e6ee;
         vertical-align: top; overflow-wrap: anywhere; }
th { font-weight: 600; background: #f5f7fb; }
.status-paused { color: #9a5b00; font-weight: 600; } .status-failed { color: #b3261e; }
.status-done { color: #1e7b34; } .status-running, .status-queued { color: #2a5bd7; }
pre, code, textarea.json { font: 12px/1.4 ui-monospace, Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f5f7fb; padding: 6px;
      margin: 2px 0; max-height: 24em; overflow: auto; }
form.inline { display: inline; }
.waiting { border: 1px solid #e0c080; background: #fffaf0; padding: 8px 12px; margin: 8px 0;
           border-radius: 6px; }
.waiting form { margin: 6px 0; }
label { display: block; margin: 4px 0 2px; font-weight: 600; }
input[type=text], textarea { width: 100%; box-sizing: border-box; font: inherit; }
textarea { height: 4em; }
button { font: inherit; padding: 3px 12px; margin: 2px 4px 2px 0; cursor: pointer; }
button:focus-visible, a:focus-visible { outline: 3px solid #2a5bd7; outline-offset: 2px; }
.graph { overflow: auto; border: 1px solid #e3e6ee; padding: 6px; margin: 8px 0; }
.graph svg { max-width: 100%; height: auto; }
.cols { display: flex; gap: 24px; flex-wrap: wrap; } .cols > * { flex: 1 1 420px; min-width: 0; }
.muted { color: #5b6478; } .error { color: #b3261e; font-weight: 600; }
nav.pages a { margin-right: 12px; }
ol.timeline { padding-left: 22px; } ol.timeline li { margin: 2px 0; }
.diff-line.add { background: #e6f4ea; color: #1e7b34; }
.diff-line.del { background: #fce8e6; color: #b3261e; }
.diff-line.hunk, .diff-line.file { color: #5b6478; }
"""
    + SVG_CSS
)

STUDIO_CSP = (
    "default-src 'none'; "
    f"style-src 'sha256-{base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()}'; "
    "script-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
"""The studio pages' Content-Security-Policy: their stylesheet, one script file of this
server (`thinkgraph.server.studio.live`; nothing inline runs, so an injected script could
not), requests and forms to this server only, no frame of them elsewhere."""


def esc(value: object) -> str:
    """`value` as HTML text or an attribute value: nothing in it is markup."""
    return html.escape(str(value), quote=True)


def thread_url(thread: str, *parts: str) -> str:
    """The studio URL of a run (and below it), the thread id quoted."""
    tail = "".join(f"/{quote(p, safe='')}" for p in parts)
    return f"/studio/runs/{quote(thread, safe='')}{tail}"


def node_url(thread: str, node: str) -> str:
    """The URL of a run's page showing the steps of one node (``?node=NAME``)."""
    return f"{thread_url(thread)}?{urlencode({'node': node})}"


def compare_url(a: str, b: str) -> str:
    """The URL of the comparison of the runs `a` and `b`."""
    return f"/studio/compare?{urlencode({'a': a, 'b': b})}"


def link(path: str, text: str, query: Mapping[str, object] | None = None) -> str:
    """An ``<a>`` to `path` (with `query`), its text escaped."""
    kept = {k: v for k, v in (query or {}).items() if v not in (None, "")}
    href = path + ("?" + urlencode(kept) if kept else "")
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def page(title: str, body: str, *, live: bool = False) -> str:
    """A whole studio page around `body` (already HTML), titled `title` (text); `live`:
    with the script that follows a run (`thinkgraph.server.studio.live`)."""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · thinkgraph studio</title><style>{_STYLE}</style>"
        + ('<script src="/studio/live.js" defer></script>' if live else "")
        + "</head>"
        "<body><header><strong>thinkgraph studio</strong>"
        '<a href="/studio">Runs</a><a href="/studio#waiting">Waiting for you</a></header>'
        f"<main>{body}</main></body></html>"
    )
