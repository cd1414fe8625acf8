"""``python -m bench.masking [N]``: how long each view takes to mask and show a huge reply.

Issue 18: a run whose model reply, tool call and tool result hold N secret-looking keys
(``{"token_0": "…", …}``) is shown in about a second at N = 200,000, in every view:
``thinkgraph show`` in each format, the JSON document the server sends
(`to_json_dict`), and the live display of ``thinkgraph run`` with the outcome printed
after it. The chain is made first (not timed), then each view is timed `REPEAT` times in
this process; prints one JSON line: wall-clock and CPU seconds per view, one per repeat.
`measure` runs this module in a child process, so the suite's own heap is not charged.
"""

from __future__ import annotations

import io
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import redirect_stdout, suppress
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KEYS", "MaskingSample", "measure"]

KEYS = 200_000
"""Secret keys in the reply the suite masks."""
REPEAT = 3
TIMEOUT_S = 300.0
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class MaskingSample:
    """Seconds each view took to show the reply (the medians of its repeats)."""

    keys: int
    seconds: dict[str, float]
    """Wall-clock seconds by view: text, markdown, json, html (``thinkgraph show``),
    server (the run's JSON document), live (``thinkgraph run``'s display and outcome)."""
    cpu_seconds: dict[str, float]
    """The process's CPU seconds by view: on a loaded machine, the part that was its own."""


def measure(keys: int, log: Callable[[str], None]) -> MaskingSample | None:
    """Time every view in a child process; None (and a line in the log) if it fails."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.masking", str(keys)],
            cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        log(f"  masking: timed out after {TIMEOUT_S:.0f} s")
        return None
    if done.returncode != 0:
        log(f"  masking: failed: {done.stderr.strip().splitlines()[-1:]}")
        return None
    times: dict[str, dict[str, list[float]]] = json.loads(done.stdout.strip().splitlines()[-1])
    wall, cpu = ({view: statistics.median(s) for view, s in times[k].items()} for k in times)
    log(f"  masking {keys:,} keys: " + ", ".join(f"{v} {s:.2f} s" for v, s in wall.items()))
    return MaskingSample(keys, wall, cpu)


def _views(keys: int) -> dict[str, Callable[[], object]]:
    import typer

    from thinkgraph.cli._progress import finished, follow
    from thinkgraph.result import RunResult
    from thinkgraph.state import LLMCallStep, ThoughtStep, ToolCall, ToolCallStep, ToolResultStep
    from thinkgraph.views import to_html, to_json, to_json_dict, to_markdown, to_text

    args = {f"token_{i}": f"value-{i:06d}-x" for i in range(keys)}
    reply = f"Thought: keep them\nAction: keep\nAction Input: {json.dumps(args)}"
    chain = [
        LLMCallStep(number=0, text=reply),
        ThoughtStep(number=1, text="keep them"),
        ToolCallStep(number=2, call=ToolCall(name="keep", args=args, id="c1"), sensitive=[]),
        ToolResultStep(number=3, call_id="c1", tool="keep", ok=True, output=args),
    ]
    run = RunResult(thread_id="huge", status="done", answer="kept", chain=chain)

    def live() -> None:
        # As `thinkgraph run` shows it in a terminal: the lines, then the outcome.
        with suppress(typer.Exit):
            follow(None, "huge", finished(run), "", mode="live", no_input=True, tools=[])

    return {
        "text": lambda: to_text(run.chain),
        "markdown": lambda: to_markdown(run),
        "json": lambda: to_json(run),
        "html": lambda: to_html(run),
        "server": lambda: to_json_dict(run),
        "live": live,
    }


def main(keys: int) -> None:
    views = _views(keys)
    wall: dict[str, list[float]] = {name: [] for name in views}
    cpu: dict[str, list[float]] = {name: [] for name in views}
    for _ in range(REPEAT):
        for name, view in views.items():
            with redirect_stdout(io.StringIO()):
                started, used = time.perf_counter(), time.process_time()
                view()
                wall[name].append(time.perf_counter() - started)
                cpu[name].append(time.process_time() - used)
    print(json.dumps({"wall": wall, "cpu": cpu}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else KEYS)
