"""The one script of the studio: a run's page follows the run live, when scripts run.

It only enhances a page that works without it. On a run's page (``#live``, which names
the thread and the status the page was drawn with) it listens to the run's server-sent
events (``/runs/T/events``) and, on each, asks ``/studio/runs/T/live`` for what the
overlay marks now — per node its classes and visits, per edge whether it was taken — and
sets them on the SVG drawn once: no new layout, nothing parsed as HTML. When the run's
status changes (it paused, finished, failed), a notice says so with a link to reload.
Where ``EventSource`` is missing or the stream fails, it asks every 2 seconds instead.
Served as a file of this server (`STUDIO_CSP` allows ``script-src 'self'``), never inline.
"""

from __future__ import annotations

__all__ = ["LIVE_JS"]

LIVE_JS = r"""
(function () {
  "use strict";
  var box = document.getElementById("live");
  if (!box) return;
  var thread = box.getAttribute("data-thread");
  var shown = box.getAttribute("data-status");
  var base = "/studio/runs/" + encodeURIComponent(thread);
  var OVERLAY = ["visited", "current", "paused", "done", "stopped"];
  var busy = false, again = false, timer = null;

  function apply(live) {
    var svg = document.querySelector(".graph svg");
    if (svg) {
      svg.querySelectorAll("g.node").forEach(function (g) {
        var got = live.nodes[g.getAttribute("data-node")];
        if (!got) return;
        OVERLAY.forEach(function (c) { g.classList.toggle(c, got.classes.indexOf(c) >= 0); });
        if (got.visits) g.setAttribute("data-visits", String(got.visits));
      });
      svg.querySelectorAll("g.edge").forEach(function (g) {
        var from = g.getAttribute("data-from"), to = g.getAttribute("data-to");
        live.edges.forEach(function (e) {
          if (e.from !== from || e.to !== to) return;
          g.classList.toggle("taken", e.taken);
          if (e.visits) g.setAttribute("data-visits", String(e.visits));
        });
      });
    }
    box.setAttribute("data-steps", String(live.steps));
    if (live.status !== shown) {
      var note = document.getElementById("moved");
      if (!note) {
        note = document.createElement("p");
        note.id = "moved";
        note.setAttribute("role", "status");
        box.prepend(note);
      }
      note.textContent = "The run is " + live.status + " now. ";
      var again = document.createElement("a");
      again.href = base;
      again.textContent = "Reload to see it";
      note.appendChild(again);
    }
  }

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(base + "/live", {headers: {"Accept": "application/json"}})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (live) { if (live) apply(live); })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }

  function poll() { if (!timer) timer = setInterval(refresh, 2000); }

  if (!window.EventSource) { poll(); return; }
  var events = new EventSource("/runs/" + encodeURIComponent(thread) + "/events");
  ["step", "status", "end"].forEach(function (kind) {
    events.addEventListener(kind, refresh);
  });
  events.onerror = function () { events.close(); refresh(); poll(); };
})();
"""
