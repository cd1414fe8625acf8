"""The page `thinkgraph serve` shows at /: start a task, pick a run, watch it, answer it.

One self-contained HTML document (no external scripts or styles). Text from runs is set
with `textContent`, never parsed as HTML. Every request it makes carries
`Content-Type: application/json` (the server takes changes only as JSON). A paused run's
event stream ends after its status: the page stops there, and follows the run again once
it has sent an answer.
"""

from __future__ import annotations

__all__ = ["PAGE"]

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>thinkgraph</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; display: flex; height: 100vh; }
  #side { width: 300px; border-right: 1px solid #ddd; padding: 12px; overflow: auto; }
  #main { flex: 1; padding: 12px 20px; overflow: auto; }
  h1 { font-size: 18px; margin: 0 0 10px; }
  textarea { width: 100%; box-sizing: border-box; height: 60px; }
  ul { list-style: none; padding: 0; }
  li.run { padding: 4px 6px; cursor: pointer; border-radius: 4px; }
  li.run:hover, li.run.on { background: #eef3ff; }
  .muted { color: #777; }
  .step { border-left: 3px solid #ccc; margin: 6px 0; padding: 2px 8px; white-space: pre-wrap; }
  .step .kind { font-weight: 600; margin-right: 6px; }
  .thought { border-color: #6f42c1; } .tool_call { border-color: #0d6efd; }
  .tool_result, .observation { border-color: #198754; } .error { border-color: #dc3545; }
  .final { border-color: #000; } .human { border-color: #fd7e14; }
  #status { font-weight: 600; margin: 8px 0; }
  .pending { background: #fff8e6; border: 1px solid #f0c36d; padding: 8px; margin: 8px 0; }
  button { margin-right: 6px; }
</style>
</head>
<body>
<div id="side">
  <h1>thinkgraph</h1>
  <form id="start">
    <textarea id="task" placeholder="What should the agent do?"></textarea>
    <button type="submit">Start</button> <span id="said" class="muted"></span>
  </form>
  <h2 style="font-size:15px">Runs</h2>
  <ul id="runs"></ul>
</div>
<div id="main">
  <div id="title" class="muted">Pick a run, or start one.</div>
  <div id="status"></div>
  <div id="pending"></div>
  <div id="steps"></div>
</div>
<script>
"use strict";
let source = null, shown = 0, lastStatus = "";
const $ = (id) => document.getElementById(id);
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
async function call(method, url, body) {
  const r = await fetch(url, {method, headers: {"Content-Type": "application/json"},
                              body: body === undefined ? undefined : JSON.stringify(body)});
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}
async function listRuns() {
  const runs = await call("GET", "/runs");
  const ul = $("runs"); ul.replaceChildren();
  for (const run of runs) {
    const li = el("li", "run", run.thread_id + " · " + run.status);
    li.dataset.thread = run.thread_id;
    li.onclick = () => watch(run.thread_id);
    ul.appendChild(li);
  }
}
function describe(step) {
  if (step.visibility === "summary") return step.summary || "";
  switch (step.type) {
    case "task": return step.text;
    case "thought": return step.text + (step.answer ? "\\n→ " + step.answer : "");
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
function showPending(thread, status) {
  const box = $("pending"); box.replaceChildren();
  for (const p of status.pending || []) {
    const div = el("div", "pending");
    if (p.kind === "approval") {
      const call = p.tool + "(" + JSON.stringify(p.args) + ")";
      div.appendChild(el("div", "", "waits for approval: " + call));
      const ok = el("button", "", "Approve"), no = el("button", "", "Reject");
      ok.onclick = () => answer(thread, {[p.call_id]: {action: "approve"}});
      no.onclick = () => answer(thread, {[p.call_id]: {action: "reject",
                                  reason: prompt("Why not?") || "rejected by a person"}});
      div.append(ok, no);
    } else {
      div.appendChild(el("div", "", p.kind + (p.question ? ": " + p.question : "")));
    }
    box.appendChild(div);
  }
}
async function answer(thread, decisions) {
  try { await call("POST", "/runs/" + encodeURIComponent(thread) + "/resume", {decisions}); }
  catch (e) { alert(e.message); return; }
  watch(thread);  // its stream ended at the pause: follow the run again
}
function watch(thread) {
  if (source) source.close();
  for (const li of document.querySelectorAll("li.run"))
    li.classList.toggle("on", li.dataset.thread === thread);
  $("title").textContent = "thread " + thread;
  $("steps").replaceChildren(); $("pending").replaceChildren(); $("status").textContent = "";
  shown = 0; lastStatus = "";
  const stream = new EventSource("/runs/" + encodeURIComponent(thread) + "/events");
  source = stream;
  // The server ends a paused run's stream; do not reconnect then (only after a drop).
  stream.onerror = () => { if (lastStatus === "paused") stream.close(); };
  stream.addEventListener("step", (e) => {
    const step = JSON.parse(e.data);
    if (step.number < shown) return;  // sent again after a reconnect
    shown = step.number + 1;
    const div = el("div", "step " + step.type);
    div.appendChild(el("span", "kind", "#" + step.number + " " + step.type));
    div.appendChild(document.createTextNode(describe(step)));
    $("steps").appendChild(div);
  });
  stream.addEventListener("status", (e) => {
    const s = JSON.parse(e.data);
    lastStatus = s.status;
    $("status").textContent = s.status + (s.stop_reason ? " (" + s.stop_reason + ")" : "")
      + (s.answer ? " · answer: " + s.answer : "");
    showPending(thread, s);
    listRuns();
  });
  stream.addEventListener("end", () => { stream.close(); });
}
$("start").onsubmit = async (e) => {
  e.preventDefault();
  try {
    const started = await call("POST", "/runs", {task: $("task").value});
    $("said").textContent = "started " + started.thread_id;
    await listRuns(); watch(started.thread_id);
  } catch (err) { $("said").textContent = err.message; }
};
listRuns();
const linked = location.hash.match(/thread=([^&]+)/);  // /#thread=ID opens that run
if (linked) watch(decodeURIComponent(linked[1]));
</script>
</body>
</html>
"""
