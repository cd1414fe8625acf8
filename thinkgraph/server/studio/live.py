"""The one script of the studio: a run's page follows the run live, when scripts run.

It only enhances a page that works without it. On a run's page (``#live``, which names
the thread and the status the page was drawn with) it listens to the run's server-sent
events (``/runs/T/events``) and, on each, asks ``/studio/runs/T/live`` for what the
overlay marks now — per node its classes and visits, per edge whether it was taken — and
sets them on the SVG drawn once: no new layout. It sets the run's status (``#status``)
and the tokens and cost of each node (the table's ``data-node`` rows) as text. When the
run pauses where the page's forms do not answer (another checkpoint, or another pause at
the same one: what it waits for, ``waits``, differs), or moves on from a pause, it
asks ``/studio/runs/T/steer`` for the page's steer section as the server renders it (each
form with its CSRF token and the checkpoint it answers, every value escaped there) and
puts it in place of ``#steer``: no text of the run is ever turned into HTML here. When
the status changes, a notice says so with a link to reload for the steps.
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
    var status = document.getElementById("status");
    if (status && status.textContent !== live.status) {
      status.textContent = live.status;
      status.className = "status-" + live.status;
    }
    spent(live.usage || {});
    steer(live);
    if (live.status !== shown) {
      var note = document.getElementById("moved");
      if (!note) {
        note = document.createElement("p");
        note.id = "moved";
        note.setAttribute("role", "status");
        box.prepend(note);
      }
      note.textContent = "The run is " + live.status + " now. ";
      var reload = document.createElement("a");
      reload.href = base;
      reload.textContent = "Reload to see its steps";
      note.appendChild(reload);
    }
  }

  function spent(usage) {
    var table = document.querySelector('table[aria-label="tokens and cost per node"] tbody');
    if (!table) return;
    Object.keys(usage).forEach(function (node) {
      var row = null;
      table.querySelectorAll("tr[data-node]").forEach(function (tr) {
        if (tr.getAttribute("data-node") === node) row = tr;
      });
      if (!row) {
        row = document.createElement("tr");
        row.setAttribute("data-node", node);
        var name = document.createElement("td");
        name.textContent = node;
        row.appendChild(name);
        ["tokens", "cost_usd", "calls"].forEach(function (key) {
          var cell = document.createElement("td");
          cell.setAttribute("data-usage", key);
          row.appendChild(cell);
        });
        table.appendChild(row);
      }
      var got = usage[node];
      row.querySelector('[data-usage="tokens"]').textContent = String(got.tokens);
      row.querySelector('[data-usage="cost_usd"]').textContent =
        got.cost_usd === null ? "?" : "$" + got.cost_usd.toFixed(4);
      row.querySelector('[data-usage="calls"]').textContent = String(got.calls);
    });
  }

  var asked = null;

  function steer(live) {
    var section = document.getElementById("steer");
    if (!section) return;
    var pause = live.at + " " + live.waits;
    var stale = live.status === "paused"
      ? section.getAttribute("data-at") + " " + section.getAttribute("data-waits") !== pause
      : !section.hidden;
    if (!stale || asked === pause) return;
    asked = pause;
    fetch(base + "/steer", {headers: {"Accept": "text/html"}, credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (text) {
        if (text === null) { asked = null; return; }
        var got = new DOMParser().parseFromString(text, "text/html").getElementById("steer");
        var now = document.getElementById("steer");
        if (got && now) now.replaceWith(document.importNode(got, true));
      })
      .catch(function () { asked = null; });
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
