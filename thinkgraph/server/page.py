"""The page `thinkgraph serve` shows at /: start a task, page through runs, watch one, answer it.

One self-contained HTML document (no external scripts, styles or fonts; nothing from the
network). Text from runs is set with `textContent`, never parsed as HTML; the run's
diagram (`GET /runs/{thread}/diagram`) is shown as an image, so an SVG can run nothing, or
as plain Mermaid text when the server has no Graphviz. Every request it makes carries
`Content-Type: application/json` (the server takes changes only as JSON). A paused run's
event stream ends after its status: the page stops there, and follows the run again once
it has sent an answer.

A waiting tool call can be approved, edited (its arguments as JSON, checked by the server
against the tool's schema; a refusal is shown next to the call and the run stays paused),
answered with text instead of running it, or rejected with a reason. An ask_human pause
takes retry, abort or guidance; a breakpoint, continue. The keys of the graph's own state
(beyond `AgentState`), masked by the server, are listed as ``key = JSON`` as they change.
The page carries no inline event handler: `PAGE_CSP` allows only its own script and style,
by hash.
"""

from __future__ import annotations

import base64
import hashlib
import re

__all__ = ["PAGE", "PAGE_CSP"]

_STYLE = """
  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; display: flex; height: 100vh;
         color: #1d2330; }
  #side { width: 300px; border-right: 1px solid #ddd; padding: 12px; overflow: auto;
          flex: none; }
  #main { flex: 1; padding: 12px 20px; overflow: auto; }
  h1 { font-size: 18px; margin: 0 0 10px; }
  h2 { font-size: 15px; margin: 16px 0 4px; }
  textarea { width: 100%; box-sizing: border-box; height: 60px; font: inherit; }
  textarea.args { height: 90px; font: 13px/1.4 ui-monospace, Menlo, Consolas, monospace; }
  ul { list-style: none; padding: 0; margin: 4px 0; }
  li.run { padding: 4px 6px; cursor: pointer; border-radius: 4px; overflow-wrap: anywhere; }
  li.run:hover, li.run.on { background: #eef3ff; }
  #pager { display: flex; gap: 6px; align-items: center; }
  .muted { color: #777; }
  .step { border-left: 3px solid #ccc; margin: 6px 0; padding: 2px 8px; white-space: pre-wrap;
          overflow-wrap: anywhere; }
  .step .kind { font-weight: 600; margin-right: 6px; }
  .thought { border-color: #6f42c1; } .tool_call { border-color: #0d6efd; }
  .tool_result, .observation { border-color: #198754; } .error { border-color: #dc3545; }
  .final { border-color: #000; } .human { border-color: #fd7e14; }
  #status { font-weight: 600; margin: 8px 0; }
  #state li { font: 13px/1.4 ui-monospace, Menlo, Consolas, monospace; white-space: pre-wrap;
              overflow-wrap: anywhere; }
  .pending { background: #fff8e6; border: 1px solid #f0c36d; padding: 8px; margin: 8px 0;
             border-radius: 4px; }
  .pending .what { font-weight: 600; overflow-wrap: anywhere; }
  .pending .why { color: #555; margin: 2px 0 6px; white-space: pre-wrap; }
  .form { margin-top: 6px; }
  .form input { width: 100%; box-sizing: border-box; font: inherit; }
  .fault { color: #b42318; white-space: pre-wrap; margin-top: 4px; overflow-wrap: anywhere; }
  .chosen { color: #0a6640; margin-top: 4px; }
  button { margin: 4px 6px 0 0; }
  #diagram { margin: 8px 0; }
  #diagram summary { cursor: pointer; font-weight: 600; }
  #drawing { border: 1px solid #ddd; border-radius: 4px; padding: 6px; margin-top: 4px;
             overflow: auto; max-height: 420px; background: #fff; }
  #drawing img { max-width: 100%; height: auto; display: block; }
  #drawing pre { margin: 0; font: 12px/1.35 ui-monospace, Menlo, Consolas, monospace; }
  [hidden] { display: none !important; }
"""

_SCRIPT = r"""
"use strict";
const PER_PAGE = 10;  // runs listed at once
const DIAGRAM_EVERY_MS = 1000;  // the diagram is drawn again at most this often
let source = null, current = null, shown = 0, lastStatus = "", runsOffset = 0;
let decided = {};  // call_id -> decision, sent once every waiting call has one
let diagramTimer = null, diagramAt = 0, diagramText = "", diagramUrl = null, diagramDrawn = 0;
const $ = (id) => document.getElementById(id);
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function button(text, onClick) {
  const b = el("button", "", text);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}
const runUrl = (thread) => "/runs/" + encodeURIComponent(thread);
async function call(method, url, body) {
  const r = await fetch(url, {method, headers: {"Content-Type": "application/json"},
                              body: body === undefined ? undefined : JSON.stringify(body)});
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) throw new Error((data && data.error) || r.status + " " + r.statusText);
  return {data, response: r};
}

// The run list, PER_PAGE at a time; the server says with a Link header when more follow.
async function listRuns() {
  let got;
  try { got = await call("GET", "/runs?limit=" + PER_PAGE + "&offset=" + runsOffset); }
  catch (e) { $("runsNote").textContent = e.message; return; }
  const runs = got.data, more = /rel="next"/.test(got.response.headers.get("Link") || "");
  if (!runs.length && runsOffset > 0) { runsOffset = Math.max(0, runsOffset - PER_PAGE);
                                        return listRuns(); }
  const ul = $("runs"); ul.replaceChildren();
  for (const run of runs) {
    const li = el("li", "run", run.thread_id + " · " + run.status);
    li.dataset.thread = run.thread_id;
    li.classList.toggle("on", run.thread_id === current);
    li.addEventListener("click", () => watch(run.thread_id));
    ul.appendChild(li);
  }
  $("runsNote").textContent = runs.length
    ? "runs " + (runsOffset + 1) + "–" + (runsOffset + runs.length) : "no runs yet";
  $("prev").disabled = runsOffset === 0;
  $("next").disabled = !more;
}

function describe(step) {
  if (step.visibility === "summary") return step.summary || "";
  switch (step.type) {
    case "task": return step.text;
    case "thought": return step.text + (step.answer ? "\n→ " + step.answer : "");
    case "tool_call": return step.call.name + "(" + JSON.stringify(step.call.args) + ")";
    case "tool_result": return step.tool + (step.ok ? " → ok" : " → " + (step.error || "failed"));
    case "observation": return step.text;
    case "llm_call": return step.purpose + " call to " + step.model;
    case "human": return step.kind + (step.text ? ": " + step.text : "");
    case "final": return step.answer || "";
    case "error": return step.message || "";
    default: return step.text || "";
  }
}

// A form under a pending call: a field, a send button, cancel; only one open at a time.
function openForm(div, field, sendText, send) {
  const form = div.querySelector(".form");
  form.replaceChildren(field, el("br"), button(sendText, send),
                       button("Cancel", () => form.replaceChildren()));
  field.focus();
}
function fault(div, message) { div.querySelector(".fault").textContent = message; }

function approvalBox(thread, p, count) {
  const div = el("div", "pending");
  div.dataset.call = p.call_id;
  div.appendChild(el("div", "what",
    "waits for approval: " + p.tool + "(" + JSON.stringify(p.args) + ")"));
  if (p.thought) div.appendChild(el("div", "why", p.thought));
  const decide = (decision) => {
    decided[p.call_id] = decision;
    fault(div, "");  // the form stays open: a refused answer is corrected in place
    div.querySelector(".chosen").textContent = count > 1 ? "decided: " + decision.action : "";
    if (Object.keys(decided).length >= count) answer(thread, {decisions: decided});
  };
  div.append(
    button("Approve", () => decide({action: "approve"})),
    button("Edit", () => {
      const field = el("textarea", "args");
      field.value = JSON.stringify(p.args || {}, null, 2);
      openForm(div, field, "Run with these arguments", () => {
        let args;
        try { args = JSON.parse(field.value); }
        catch (e) { fault(div, "the arguments are not JSON: " + e.message); return; }
        if (args === null || typeof args !== "object" || Array.isArray(args)) {
          fault(div, "the arguments must be a JSON object"); return;
        }
        if (JSON.stringify(args).includes('"***"')) {
          fault(div, "*** hides a secret the page is not shown; type the real value, " +
                     "or approve the call as it is"); return;
        }
        decide({action: "edit", args});
      });
    }),
    button("Respond", () => {
      const field = el("textarea");
      field.placeholder = "The answer the model gets instead of running the call";
      openForm(div, field, "Send response", () => {
        if (!field.value.trim()) { fault(div, "write the response first"); return; }
        decide({action: "respond", text: field.value});
      });
    }),
    button("Reject", () => {
      const field = el("input");
      field.placeholder = "Why not? (the model is told)";
      openForm(div, field, "Reject", () =>
        decide({action: "reject", reason: field.value.trim() || "rejected by a person"}));
    }),
    el("div", "form"), el("div", "chosen"), el("div", "fault"));
  return div;
}

function askHumanBox(thread, p) {
  const div = el("div", "pending");
  div.appendChild(el("div", "what", "asks a person: " + (p.question || "how to go on?")));
  if (p.details && Object.keys(p.details).length)
    div.appendChild(el("div", "why", JSON.stringify(p.details, null, 2)));
  div.append(
    button("Retry", () => answer(thread, {answer: "retry"}, div)),
    button("Abort", () => answer(thread, {answer: "abort"}, div)),
    button("Guide", () => {
      const field = el("textarea");
      field.placeholder = "Guidance for the model";
      openForm(div, field, "Send guidance", () => {
        if (!field.value.trim()) { fault(div, "write the guidance first"); return; }
        answer(thread, {answer: {action: "guidance", text: field.value}}, div);
      });
    }),
    el("div", "form"), el("div", "fault"));
  return div;
}

function breakpointBox(thread, p) {
  const div = el("div", "pending");
  div.appendChild(el("div", "what",
    "paused (breakpoint " + (p.when || "at") + " " + (p.node || "") + ")"));
  div.append(button("Continue", () => answer(thread, {}, div)), el("div", "fault"));
  return div;
}

// The keys of the graph's own state, as the server masked them, one `key = JSON` a line.
function showState(state) {
  const keys = Object.keys(state || {});
  $("stateKeys").replaceChildren(
    ...keys.map((key) => el("li", "", key + " = " + JSON.stringify(state[key]))));
  $("state").hidden = keys.length === 0;
}

function showPending(thread, status) {
  const box = $("pending"); box.replaceChildren();
  decided = {};
  const pending = status.pending || [];
  const approvals = pending.filter((p) => p.kind === "approval").length;
  for (const p of pending) {
    if (p.kind === "approval") box.appendChild(approvalBox(thread, p, approvals));
    else if (p.kind === "ask_human") box.appendChild(askHumanBox(thread, p));
    else box.appendChild(breakpointBox(thread, p));
  }
  box.appendChild(el("div", "fault"));
}

// A refusal goes next to the call it names (or the box it came from); the run stays
// paused, so the answer can be corrected and sent again.
async function answer(thread, body, from) {
  try { await call("POST", runUrl(thread) + "/resume", body); }
  catch (e) {
    let target = from || null;
    for (const div of document.querySelectorAll("#pending .pending[data-call]")) {
      if (e.message.includes("'" + div.dataset.call + "'")) {
        target = div; delete decided[div.dataset.call];
        div.querySelector(".chosen").textContent = "";
      }
    }
    if (!target) { decided = {}; target = $("pending"); }
    target.querySelector(".fault").textContent = e.message;
    return;
  }
  watch(thread);  // its stream ended at the pause: follow the run again
}

// The diagram: asked for again at most every DIAGRAM_EVERY_MS, and once more after the
// last change, so the drawing always ends on the run's latest state.
function refreshDiagram() {
  if (diagramTimer !== null) return;
  const wait = Math.max(0, diagramAt + DIAGRAM_EVERY_MS - Date.now());
  diagramTimer = setTimeout(drawDiagram, wait);
}
async function drawDiagram() {
  diagramTimer = null; diagramAt = Date.now();
  const thread = current;
  if (thread === null) return;
  let r, text;
  try { r = await fetch(runUrl(thread) + "/diagram"); text = await r.text(); }
  catch (e) { return; }
  if (thread !== current) return;
  const box = $("drawing");
  if (!r.ok) { box.replaceChildren(el("div", "muted", "no diagram: " + r.status)); return; }
  diagramText = text; diagramDrawn += 1;
  if ((r.headers.get("Content-Type") || "").startsWith("image/svg+xml")) {
    // As an image an SVG is only drawn: nothing in it can run or reach the page.
    if (diagramUrl) URL.revokeObjectURL(diagramUrl);
    diagramUrl = URL.createObjectURL(new Blob([text], {type: "image/svg+xml"}));
    const img = el("img");
    img.alt = "the graph, with the path this run took";
    img.src = diagramUrl;
    box.replaceChildren(img);
  } else {
    box.replaceChildren(el("pre", "", text));  // Mermaid, as text: no renderer offline
  }
  $("diagram").hidden = false;
}

function watch(thread) {
  if (source) source.close();
  current = thread;
  for (const li of document.querySelectorAll("li.run"))
    li.classList.toggle("on", li.dataset.thread === thread);
  $("title").textContent = "thread " + thread;
  $("steps").replaceChildren(); $("pending").replaceChildren(); $("status").textContent = "";
  showState({});
  shown = 0; lastStatus = ""; decided = {};
  refreshDiagram();
  const stream = new EventSource(runUrl(thread) + "/events");
  source = stream;
  // The server ends a paused run's stream; do not reconnect then (only after a drop).
  stream.addEventListener("error", () => { if (lastStatus === "paused") stream.close(); });
  stream.addEventListener("step", (e) => {
    const step = JSON.parse(e.data);
    if (step.number < shown) return;  // sent again after a reconnect
    shown = step.number + 1;
    const div = el("div", "step " + step.type);
    div.appendChild(el("span", "kind", "#" + step.number + " " + step.type));
    div.appendChild(document.createTextNode(describe(step)));
    $("steps").appendChild(div);
    refreshDiagram();
  });
  stream.addEventListener("status", (e) => {
    const s = JSON.parse(e.data);
    lastStatus = s.status;
    $("status").textContent = s.status + (s.stop_reason ? " (" + s.stop_reason + ")" : "")
      + (s.answer ? " · answer: " + s.answer : "");
    showState(s.state);
    showPending(thread, s);
    refreshDiagram();
    listRuns();
  });
  stream.addEventListener("end", () => { stream.close(); refreshDiagram(); });
}

$("start").addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    const started = (await call("POST", "/runs", {task: $("task").value})).data;
    $("said").textContent = "started " + started.thread_id;
    runsOffset = 0;
    await listRuns(); watch(started.thread_id);
  } catch (err) { $("said").textContent = err.message; }
});
$("prev").addEventListener("click", () => {
  runsOffset = Math.max(0, runsOffset - PER_PAGE); listRuns();
});
$("next").addEventListener("click", () => { runsOffset += PER_PAGE; listRuns(); });
listRuns();
const linked = location.hash.match(/thread=([^&]+)/);  // /#thread=ID opens that run
if (linked) watch(decodeURIComponent(linked[1]));
"""

PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>thinkgraph</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_STYLE}</style>
</head>
<body>
<div id="side">
  <h1>thinkgraph</h1>
  <form id="start">
    <textarea id="task" placeholder="What should the agent do?"></textarea>
    <button type="submit">Start</button> <span id="said" class="muted"></span>
  </form>
  <h2>Runs</h2>
  <ul id="runs"></ul>
  <div id="pager">
    <button type="button" id="prev" disabled>‹ Newer</button>
    <button type="button" id="next" disabled>Older ›</button>
    <span id="runsNote" class="muted"></span>
  </div>
</div>
<div id="main">
  <div id="title" class="muted">Pick a run, or start one.</div>
  <div id="status"></div>
  <div id="pending"></div>
  <section id="state" hidden><h2>State</h2><ul id="stateKeys"></ul></section>
  <details id="diagram" open hidden><summary>Diagram</summary><div id="drawing"></div></details>
  <div id="steps"></div>
</div>
<script>{_SCRIPT}</script>
</body>
</html>
"""


def _digest(block: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(block.encode()).digest()).decode() + "'"


def _only(tag: str) -> str:
    found = re.search(rf"<{tag}>(.*?)</{tag}>", PAGE, re.DOTALL)
    assert found is not None
    return found.group(1)


PAGE_CSP = (
    "default-src 'none'; "
    f"script-src {_digest(_only('script'))}; style-src {_digest(_only('style'))}; "
    "img-src blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
"""The page's Content-Security-Policy: its own script and style (by hash), the diagram as
a blob image, requests to this server only; no inline handler, nothing from elsewhere."""
