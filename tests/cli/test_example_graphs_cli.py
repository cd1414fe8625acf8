"""The examples' custom graphs from the command line, each approval a new process.

`examples/reflect.py` (plan → execute → reflect, our think and act renamed, `publish`
gated by approval) is started with `--graph examples.reflect:build`, paused at the
approval, and continued by `thinkgraph approve` with the options a run of our graph needs
and the graph trusted (`--graph` or `THINKGRAPH_GRAPHS`): the user's nodes run, `history`
names them, and the drawing's counts are history's (the run that pauses and the reads
are called in this process).
The critic's and the planner's graphs are taken through the same steps, with reflect's
gated `publish` among their tools.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from examples import critic, planner, reflect
from tests.cli.test_custom_graph_cli import here, overlay_counts, state, thinkgraph

GRAPH = "examples.reflect:build"
TOOLS = "examples.reflect:TOOLS"


def test_a_reflect_run_paused_at_approval_is_continued_by_the_cli_on_its_graph(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(reflect.SCRIPT))
    options = ["--store", store, "--tools", TOOLS, "--script", str(script)]

    started = here("run", reflect.TASK, "--thread", "r1", "--no-input", "--graph", GRAPH,
                         *options)  # fmt: skip
    assert started.returncode == 3, started.stdout + started.stderr
    assert state(store, "r1")[0] == "paused" and state(store, "r1")[2] == GRAPH

    done = thinkgraph("approve", "r1", "--no-input", "--graph", GRAPH, *options)
    assert done.returncode == 0, done.stdout + done.stderr
    status, nodes, _ = state(store, "r1")
    assert status == "done" and {"plan", "execute", "reflect"} <= set(nodes)

    listed = here("history", "r1", "--store", store)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    # One line per checkpoint; under it, indented, the keys of the run's own state it set.
    history = Counter(line.split()[1] for line in lines if line.strip() and line[0] != " ")
    assert history["reflect"] == 2 and history["execute"] == 2 and "think" not in history
    assert sum(line.strip() == 'verdict = "proceed"' for line in lines) == 1  # where it changed
    drawn = here("draw", "--thread", "r1", "--format", "ascii", "--store", store)
    assert drawn.returncode == 0, drawn.stderr
    overlay = overlay_counts(drawn.stdout)
    assert {n: c for n, c in history.items() if n != "start"} == {
        n: c for n, c in overlay.items() if n not in ("start", "end")
    }


GATED_SCRIPTS = {
    "critic": [
        'Thought: say what I do.\nAction: publish\nAction Input: {"text": "computing 17 * 23"}',
        'Thought: compute it.\nAction: calculator\nAction Input: {"expression": "17 * 23"}',
        "Thought: the calculator says 391.\nFinal Answer: 391",
    ],
    "planner": [
        "1. Publish that the total is on its way.\n2. Answer with the total.",
        'Thought: step 1.\nAction: publish\nAction Input: {"text": "the total is coming"}',
        "Thought: step 2.\nFinal Answer: 16.25",
    ],
}
"""Replies that take each example's graph through an approval of reflect's `publish`."""


@pytest.mark.parametrize(("example", "own_node"), [(critic, "critic"), (planner, "planner")])
def test_each_example_paused_at_approval_is_continued_by_the_cli_on_its_graph(
    tmp_path: Path, example: object, own_node: str
) -> None:
    graph = f"examples.{own_node}:build"
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(GATED_SCRIPTS[own_node]))
    options = ["--store", store, "--tools", TOOLS, "--script", str(script)]
    task = example.TASK  # type: ignore[attr-defined]

    started = here("run", task, "--thread", "g1", "--no-input", "--graph", graph, *options)
    assert started.returncode == 3, started.stdout + started.stderr
    assert state(store, "g1")[0] == "paused" and state(store, "g1")[2] == graph

    # No --graph: the run knows its graph, which the operator trusts.
    done = thinkgraph("approve", "g1", "--no-input", *options, trust=graph)
    assert done.returncode == 0, done.stdout + done.stderr
    status, nodes, _ = state(store, "g1")
    assert status == "done" and own_node in nodes and "publish" not in nodes

    listed = here("history", "g1", "--store", store)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    history = Counter(line.split()[1] for line in lines if line.strip() and line[0] != " ")
    assert history[own_node] == 1 and history["approve"] >= 1
    drawn = here("draw", "--thread", "g1", "--format", "ascii", "--store", store)
    assert drawn.returncode == 0, drawn.stderr
    overlay = overlay_counts(drawn.stdout)
    assert {n: c for n, c in history.items() if n != "start"} == {
        n: c for n, c in overlay.items() if n not in ("start", "end")
    }
