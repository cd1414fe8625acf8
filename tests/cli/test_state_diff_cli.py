"""`thinkgraph diff` and `thinkgraph replay` on runs of a graph with state of its own, each
command a new process: the keys the runs leave otherwise are named, node and values,
masked, and make the exit code 1; the same graph replays `same`, exit 0."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.state_graphs import ANSWER, DOUBLED, SCORED, TOKEN
from tests.support.cli import thinkgraph_here
from thinkgraph import Agent, ScriptedModel

ROOT = Path(__file__).resolve().parents[2]


def thinkgraph(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI, run here from the repo root as a new process would run it."""
    return thinkgraph_here(*args, cwd=ROOT)


@pytest.fixture
def store(sqlite_url: str) -> str:
    """Runs `ten` and `ten-again` of the scored graph and `twenty` of the doubled one."""
    for thread, graph in (("ten", SCORED), ("ten-again", SCORED), ("twenty", DOUBLED)):
        with Agent(ScriptedModel([ANSWER]), store=sqlite_url, graph=graph) as agent:
            assert agent.run("plan it", thread_id=thread).status == "done"
    return sqlite_url


def test_diff_names_the_node_and_the_keys_masked_and_exits_one(store: str) -> None:
    done = thinkgraph("diff", "ten", "twenty", "--store", store)

    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        "diff ten twenty: diverged",
        "first divergence: state at critic#1: score is 10 in ten, 20 in twenty (and 1 more field)",
        "  score: 10 → 20",
        '  session_token: "***" → "***"',
    ]
    at_end = lines.index("state at the end:")
    assert lines[at_end + 1 : at_end + 3] == ["  score: 10 → 20", '  session_token: "***" → "***"']
    assert TOKEN not in done.stdout and done.stderr == ""

    as_json = thinkgraph("diff", "ten", "twenty", "--store", store, "-f", "json")
    doc = json.loads(as_json.stdout)
    assert as_json.returncode == 1
    assert (doc["outcome"], doc["divergence"]["kind"]) == ("diverged", "state")
    assert doc["state"] == [
        {"path": "score", "a": 10, "b": 20},
        {"path": "session_token", "a": "***", "b": "***"},
    ]
    assert TOKEN not in as_json.stdout

    same = thinkgraph("diff", "ten", "ten-again", "--store", store)
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.startswith("diff ten ten-again: same\n")


def test_replay_on_the_same_graph_is_same_and_on_another_names_the_state_divergence(
    store: str,
) -> None:
    same = thinkgraph("replay", "ten", "--graph", SCORED, "--store", store)
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.splitlines()[0] == "replay replay-ten of ten: same"

    other = thinkgraph("replay", "ten", "--graph", DOUBLED, "--store", store)

    assert other.returncode == 1, other.stdout + other.stderr
    assert other.stdout.splitlines()[:3] == [
        "replay replay-ten-2 of ten: first divergence: state at critic#1: score is 10 in ten, "
        "20 in replay-ten-2 (and 1 more field)",
        "  score: 10 → 20",
        '  session_token: "***" → "***"',
    ]
    assert TOKEN not in other.stdout and "Traceback" not in other.stderr
    listed = thinkgraph("runs", "--store", store)
    rows = {line.split()[0]: line for line in listed.stdout.splitlines() if line.strip()}
    assert "replay: diverged" in rows["replay-ten-2"], listed.stdout
