"""The examples' custom graphs from the command line, each step a new process.

`examples/reflect.py` (plan → execute → reflect, our think and act renamed, `publish`
gated by approval) is started with `--graph examples.reflect:build`, paused at the
approval, and continued by `thinkgraph approve` with only the options a run of our graph
needs: the user's nodes run, `history` names them, and the drawing's counts are history's.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.cli.test_custom_graph_cli import overlay_counts, state, thinkgraph

reflect = pytest.importorskip("examples.reflect", reason="examples/reflect.py not here yet")

GRAPH = "examples.reflect:build"
TOOLS = "examples.reflect:TOOLS"


def test_a_reflect_run_paused_at_approval_is_continued_by_the_cli_on_its_graph(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(reflect.SCRIPT))
    options = ["--store", store, "--tools", TOOLS, "--script", str(script)]

    started = thinkgraph("run", reflect.TASK, "--thread", "r1", "--no-input", "--graph", GRAPH,
                         *options)  # fmt: skip
    assert started.returncode == 3, started.stdout + started.stderr
    assert state(store, "r1")[0] == "paused" and state(store, "r1")[2] == GRAPH

    done = thinkgraph("approve", "r1", "--no-input", *options)
    assert done.returncode == 0, done.stdout + done.stderr
    status, nodes, _ = state(store, "r1")
    assert status == "done" and {"plan", "execute", "reflect"} <= set(nodes)

    listed = thinkgraph("history", "r1", "--store", store)
    assert listed.returncode == 0, listed.stderr
    history = Counter(line.split()[1] for line in listed.stdout.splitlines() if line.strip())
    assert history["reflect"] == 2 and history["execute"] == 2 and "think" not in history
    drawn = thinkgraph("draw", "--thread", "r1", "--format", "ascii", "--store", store)
    assert drawn.returncode == 0, drawn.stderr
    overlay = overlay_counts(drawn.stdout)
    assert {n: c for n, c in history.items() if n != "start"} == {
        n: c for n, c in overlay.items() if n not in ("start", "end")
    }
