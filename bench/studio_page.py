"""``python -m bench.studio_page``: how fast the studio's page of a 150-node graph's run
loads, and how fast it applies a live event, in a real browser.

Issue 28's goal: the page of a 150-node graph loads and applies a live event in well under
a second. `thinkgraph studio` serves (in a child process, as a user starts it) an agent on
`build`: 150 nodes of the user's own, the first leading to a layer of ten, then layers of
ten each routing on to two nodes of the next layer and some back up (~320 edges of
theirs); a run passes one node per layer (16), each taking `NODE_S`, then think answers.
Headless system Chromium (Playwright's sync API, `executable_path`; no browser is
downloaded) opens the page of a run just started, ``--repeat`` times (a new browser
context each: nothing cached), follows the run, then opens its page again once it is
done. It reads inside the page:

- **page load**: from the navigation's start to the HTML's last byte, to the load event,
  and to the drawing being visible (the first animation frame with the SVG laid out);
- **event → classes**: for each node the run passes once the page is open, from the
  step event naming it arriving (the page's `EventSource`) to its SVG group getting the
  class ``visited`` (a `MutationObserver`), both stamped by ``performance.now()``. That
  takes in what the page does for an event: it asks the server what the overlay marks now
  (``/studio/runs/T/live``) and sets the classes on the drawing already there.

Medians are printed as a table (with the fastest and slowest), written to
bench/results/studio_page.md (``--out``), and one JSON line ends the output.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from playwright.sync_api import sync_playwright

from thinkgraph.graphs import react_graph
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState, NoteStep

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "studio_page.md"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "no system Chromium (apt-get install chromium; `make bench` installs it as root)"

NODES = 150
WIDTH = 10
"""Nodes per layer after the first node: 15 layers of 10 (the last of 9)."""
NODE_S = 0.2
"""How long each node of the user's takes: a run passes 16 of them, so it is still going
when its page has loaded, and each step's event arrives apart from the next."""
ANSWER = "Thought: done\nFinal Answer: 42"
LAST = "finalize"
"""The node a run ends at: drawn as passed once the page has followed the run's end."""


# -- the graph ------------------------------------------------------------------------------


def layers() -> list[list[str]]:
    """The user's nodes by layer: n000 alone, then the rest `WIDTH` at a time."""
    names = [f"n{i:03d}" for i in range(NODES)]
    return [names[:1]] + [names[k : k + WIDTH] for k in range(1, NODES, WIDTH)]


def _node(name: str) -> Any:
    def node(state: AgentState) -> dict[str, Any]:
        time.sleep(NODE_S)  # a plain def runs in a worker thread: the server's loop goes on
        return {"chain": [NoteStep(text=f"passed {name}")]}

    node.__name__ = name
    return node


def first(state: AgentState) -> str:
    """The first node leads to every node of the layer below; the run takes "on"."""
    return "on"


def onward(state: AgentState) -> Literal["on", "aside"]:
    """Every other node goes on to the node below it: one node per layer."""
    return "on"


def onward_or_back(state: AgentState) -> Literal["on", "aside", "back"]:
    """A node with a route back up, never taken: drawn, as a loop of a real graph is."""
    return "on"


def build(deps: Deps) -> Any:
    """The graph: think's graph with `NODES` nodes of the user's before it (`layers`).

    n000 routes to every node of the layer below ("on" to the first). Each node after it
    routes "on" to the node below it and "aside" to the next one of the layer below; every
    fifth from the third layer down also routes "back" a layer or two up. The last layer
    goes on to think. Runs start at n000.
    """
    graph = react_graph(deps)
    shape = layers()
    for layer in shape:
        for name in layer:
            graph.add_node(name, _node(name))
    below = shape[1]
    fan = {"on": below[0]} | {f"to {name}": name for name in below[1:]}
    graph.add_routes(shape[0][0], first, fan, guards=False)
    for i, layer in enumerate(shape[1:], start=1):
        for column, name in enumerate(layer):
            if i == len(shape) - 1:
                graph.add_edge(name, "think")
                continue
            below = shape[i + 1]
            routes = {"on": below[column % len(below)], "aside": below[(column + 1) % len(below)]}
            if i >= 3 and column % 5 == i % 5:
                up = shape[i - 1 - column % 2]
                routes["back"] = up[(column + 3) % len(up)]
                graph.add_routes(name, onward_or_back, routes)  # a loop: guarded
            else:
                graph.add_routes(name, onward, routes, guards=False)
    graph.set_entry(shape[0][0])
    return graph.build()


# -- the server -----------------------------------------------------------------------------


@dataclass
class Studio:
    """`thinkgraph studio` on a free loopback port, serving an agent on `build`."""

    url: str
    token: str
    process: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)

    def api(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )


@contextmanager
def studio(workdir: Path) -> Iterator[Studio]:
    """Start `thinkgraph studio` and wait for the URL it prints; stop it after."""
    script = workdir / "replies.json"
    script.write_text(json.dumps([ANSWER] * 4))
    command = [
        sys.executable, "-c", "import sys; from thinkgraph.cli import main; sys.exit(main())",
        "studio", "--graph", "bench.studio_page:build", "--script", str(script),
        "--store", f"sqlite:///{workdir / 'runs.db'}", "--port", "0", "--no-open",
        "--log-level", "warning",
    ]  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("THINKGRAPH_TOKEN", None)
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    output: list[str] = []
    found = threading.Event()
    address: list[tuple[str, str]] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            url = re.search(r"(http://127\.0\.0\.1:\d+)/studio\?token=(\S+)", line)
            if url and not address:
                address.append((url.group(1), url.group(2)))
                found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not found.wait(60):
            raise RuntimeError("thinkgraph studio printed no URL:\n" + "".join(output))
        (url, token) = address[0]
        yield Studio(url, token, process, output)
    finally:
        process.terminate()
        process.wait(timeout=30)
        reader.join(timeout=10)


# -- the page -------------------------------------------------------------------------------

STAMPS = r"""
(() => {
  const marks = {events: {}, applied: {}, drawn: null};
  window.__bench = marks;
  const Source = window.EventSource;
  if (Source) {
    window.EventSource = class extends Source {
      constructor(url, options) {
        super(url, options);
        this.addEventListener("step", (e) => {  // added first: stamped before the page's
          const node = JSON.parse(e.data).node;
          if (node && !(node in marks.events)) marks.events[node] = performance.now();
        });
      }
    };
  }
  new MutationObserver((changes) => {
    const now = performance.now();
    for (const change of changes) {
      const g = change.target;
      if (!g.matches || !g.matches("g.node.visited")) continue;
      const node = g.getAttribute("data-node");
      if (!(node in marks.applied)) marks.applied[node] = now;
    }
  }).observe(document, {subtree: true, attributes: true, attributeFilter: ["class"]});
  const drawn = () => {
    const svg = document.querySelector(".graph svg");
    if (svg && svg.getBoundingClientRect().height > 0) marks.drawn = performance.now();
    else requestAnimationFrame(drawn);
  };
  requestAnimationFrame(drawn);
})();
"""
"""Installed before the page's own script: stamps each node's first step event, the first
time its group gets the class ``visited``, and the first frame with the drawing laid out."""

READ = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  return {server_ms: nav.responseStart - nav.requestStart, html_ms: nav.responseEnd,
          load_ms: nav.loadEventEnd, drawn_ms: window.__bench.drawn,
          html_bytes: nav.encodedBodySize,
          nodes: document.querySelectorAll(".graph svg g.node").length,
          edges: document.querySelectorAll(".graph svg g.edge").length};
}"""
LOADED = """() => window.__bench.drawn !== null
  && performance.getEntriesByType("navigation")[0].loadEventEnd > 0"""


@dataclass
class Load:
    """One page load, in ms from the navigation's start (the server's time: from the
    request sent to the first byte), and what the page held."""

    server_ms: float
    html_ms: float
    load_ms: float
    drawn_ms: float
    html_bytes: int
    nodes: int
    edges: int


@dataclass
class Sample:
    """One run: its page opened as it started and followed to its end, then opened again."""

    live: Load
    done: Load
    event_ms: list[float]


def _open(browser: Any, served: Studio) -> Any:
    """A new browser context (nothing cached) that sends the token, with the stamps."""
    context = browser.new_context(
        extra_http_headers={"Authorization": f"Bearer {served.token}"},
        viewport={"width": 1280, "height": 900},
    )
    context.add_init_script(STAMPS)
    return context


def _load(page: Any, url: str) -> Load:
    page.goto(url, wait_until="load")
    page.wait_for_function(LOADED)
    return Load(**page.evaluate(READ))


def one_run(browser: Any, served: Studio, thread: str) -> Sample:
    """Start a run, open its page at once, follow it to its end; then open it again."""
    url = f"{served.url}/studio/runs/{thread}"
    context = _open(browser, served)
    try:
        page = context.new_page()
        with served.api() as api:
            started = api.post("/runs", json={"task": "walk the graph", "thread_id": thread})
            if started.status_code != 202:
                raise RuntimeError(f"the run did not start: {started.status_code} {started.text}")
            live = _load(page, url)
            deadline = time.monotonic() + 60
            while api.get(f"/runs/{thread}").json().get("status") != "done":
                if time.monotonic() > deadline:
                    raise RuntimeError(f"run {thread} did not finish")
                time.sleep(0.1)
        # The run's end reaches the page: its last node drawn as passed.
        page.wait_for_selector(f'.graph svg g.node.visited[data-node="{LAST}"]', timeout=30_000)
        marks = page.evaluate("() => window.__bench")
    finally:
        context.close()
    events, applied = marks["events"], marks["applied"]
    # A node whose classes came with an earlier event's answer waited for nothing: 0.
    event_ms = [max(0.0, applied[n] - events[n]) for n in events if n in applied]
    if not event_ms:
        raise RuntimeError(f"run {thread} ended before its page followed any of its events")
    context = _open(browser, served)
    try:
        done = _load(context.new_page(), url)
    finally:
        context.close()
    return Sample(live, done, event_ms)


# -- the report -----------------------------------------------------------------------------


@dataclass
class Measured:
    """Every sample of a run of the benchmark, and per measure its values in ms."""

    samples: list[Sample]
    chromium: str
    load: tuple[float, float]
    """The 1-minute load average at the start and at the end."""

    def series(self) -> dict[str, list[float]]:
        live = [s.live for s in self.samples]
        done = [s.done for s in self.samples]
        return {
            "server, run going": [x.server_ms for x in live],
            "HTML received, run going": [x.html_ms for x in live],
            "load event, run going": [x.load_ms for x in live],
            "drawing visible, run going": [x.drawn_ms for x in live],
            "server, run done": [x.server_ms for x in done],
            "HTML received, run done": [x.html_ms for x in done],
            "load event, run done": [x.load_ms for x in done],
            "drawing visible, run done": [x.drawn_ms for x in done],
            "event → classes": [ms for s in self.samples for ms in s.event_ms],
        }

    def medians(self) -> dict[str, float]:
        return {name: statistics.median(values) for name, values in self.series().items()}


def table(measured: Measured) -> str:
    """The Markdown table: per measure its median, fastest, slowest and sample count."""
    lines = ["| measure | median ms | fastest | slowest | samples |", "|---|---:|---:|---:|---:|"]
    for name, values in measured.series().items():
        lines.append(
            f"| {name} | {statistics.median(values):.0f} | {min(values):.0f} "
            f"| {max(values):.0f} | {len(values)} |"
        )
    return "\n".join(lines)


def report(measured: Measured, repeat: int) -> str:
    """The results page: what was measured, on what, the table and the goal."""
    drawn = measured.samples[0].done
    medians = measured.medians()
    events = len(measured.series()["event → classes"])
    verdict = " ".join(
        f"{name.capitalize()}: {medians[name]:.0f} ms, "
        f"{'under' if medians[name] < 1000 else 'over'} a second."
        for name in ("load event, run going", "load event, run done", "event → classes")
    )
    return f"""# The studio's page of a 150-node graph: load and live events

`python -m bench.studio_page --repeat {repeat}`: `thinkgraph studio` serves an agent on
`bench.studio_page:build` ({NODES} nodes of the user's: one, then layers of {WIDTH}; ~320
edges of theirs). The drawing has {drawn.nodes} nodes and {drawn.edges} edges (thinkgraph's
own nodes and the guards' routes included); the page is {drawn.html_bytes // 1024} KiB, most
of it the SVG. Headless Chromium {measured.chromium} opens the page of a run just started,
{repeat} times, each in a new context (nothing cached), and follows the run (16 nodes of
{NODE_S * 1000:.0f} ms each, then think answers); once the run is done, its page is opened
again in a new context. Times are read in the page (`performance.now()`, from the
navigation's start):

- **server**: from the request sent to the page's first byte (the server reads the run,
  lays out and draws the SVG, and writes the page);
- **HTML received**: the page's last byte;
- **load event**: the document, its stylesheet and its one script loaded;
- **drawing visible**: the first animation frame with the SVG laid out;
- **event → classes**: per node the run passed with the page open, from its step event
  arriving to its SVG group getting the class `visited` (the page asks
  `/studio/runs/T/live` and sets the classes on the drawing; {events} events in all).

{table(measured)}

Goal (issue 28): well under a second for both. {verdict}

Machine: {os.cpu_count()} cores ({platform.machine()}), shared with other work (1-minute
load average {measured.load[0]:.1f} at the start, {measured.load[1]:.1f} at the end), Python
{platform.python_version()}.
"""


def measure(repeat: int) -> Measured:
    """Serve the graph, and open `repeat` runs' pages in headless system Chromium."""
    if CHROMIUM is None:
        raise RuntimeError(NO_CHROMIUM)
    load = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="studio-page-") as work,
        studio(Path(work)) as served,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            samples = [one_run(browser, served, f"page-{k}") for k in range(repeat)]
            return Measured(samples, browser.version, (load, os.getloadavg()[0]))
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> Measured:
    parser = argparse.ArgumentParser(prog="python -m bench.studio_page", description=__doc__)
    parser.add_argument("--repeat", type=int, default=7, metavar="K", help="runs (default 7)")
    parser.add_argument("--quick", action="store_true", help="one run: a smoke run")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the results page goes")
    args = parser.parse_args(argv)
    if CHROMIUM is None:
        parser.exit(2, NO_CHROMIUM + "\n")
    repeat = 1 if args.quick else max(1, args.repeat)
    measured = measure(repeat)
    print(table(measured))
    args.out.write_text(report(measured, repeat))
    print(json.dumps({"studio_page": measured.medians()}))
    return measured


if __name__ == "__main__":
    main()
