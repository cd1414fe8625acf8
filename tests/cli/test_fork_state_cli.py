"""`thinkgraph fork --set KEY=JSON` and `thinkgraph history` with a graph's own state, each
CLI call a new process from the repo root.

The graph (`tests.cli.state_graphs:planned`): a planner appends to its plan, a critic scores
it, and the critic's router goes round again until the score is 20. A fork that sets the
score at the first critic takes the other route; `history` shows under each checkpoint the
keys its node changed, masked as `show` masks them; a refused key or value is one line
naming the key and the fix, and leaves no new thread.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.state_graphs import PLANNED
from tests.support.cli import thinkgraph_here
from thinkgraph import Agent, ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-proj-abcdefghijklmnop1234"


def thinkgraph(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI, run here from the repo root as a new process would run it."""
    return thinkgraph_here(*args, cwd=ROOT)


def start(store: str, script: str) -> str:
    """Thread t1, done: planner, critic (10: again), planner, critic (20: go), think.
    Returns the checkpoint of the first critic."""
    done = thinkgraph("run", "plan it", "--thread", "t1", "--no-input", "--store", store,
                      "--script", script, "--graph", PLANNED)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with Agent(ScriptedModel([]), store=store) as agent:
        points = agent.history("t1")
    assert [c.node for c in points if c.node != "start"][:5] == [
        "planner", "critic", "planner", "critic", "think"
    ]  # fmt: skip
    return next(c.checkpoint_id for c in points if c.node == "critic")


def replies(folder: Path) -> str:
    path = folder / "replies.json"
    path.write_text(json.dumps(["Thought: done\nFinal Answer: 42"] * 3))
    return str(path)


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture
def script(tmp_path: Path) -> str:
    return replies(tmp_path)


@pytest.fixture
def planned(store: str, script: str) -> str:
    return start(store, script)


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """One finished t1 for every refusal (a refusal writes nothing): store, script, the
    first critic's checkpoint."""
    folder = tmp_path_factory.mktemp("refusing")
    store, script = f"sqlite:///{folder / 'runs.db'}", replies(folder)
    return store, script, start(store, script)


def nodes(store: str, thread: str) -> list[str]:
    """The nodes of a run's history that the route decides between."""
    listed = thinkgraph("history", thread, "--store", store)
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[1] for line in listed.stdout.splitlines() if line[:1].strip()]
    return [n for n in names if n in ("planner", "critic", "think")]


def fork(store: str, script: str, at: str, *sets: str) -> subprocess.CompletedProcess[str]:
    pairs = [arg for item in sets for arg in ("--set", item)]
    return thinkgraph("fork", "t1", at, *pairs, "--thread", "f1", "--no-input", "--store",
                      store, "--script", script, "--graph", PLANNED)  # fmt: skip


def test_a_fork_with_set_changes_a_route(store: str, script: str, planned: str) -> None:
    forked = fork(store, script, planned, "score=20")
    assert forked.returncode == 0, forked.stdout + forked.stderr
    assert "fork: forked from t1@" in forked.stdout and "; set score" in forked.stdout
    assert "state: score = 20" in forked.stdout
    assert 'state: plan = ["step 1"]' in forked.stdout
    # The router read the score the fork set: on to think, never back to the planner.
    assert nodes(store, "f1") == ["critic", "think"]
    assert nodes(store, "t1") == ["planner", "critic", "planner", "critic", "think"]


def test_history_shows_the_keys_each_checkpoint_changed_masked(
    store: str, script: str, planned: str
) -> None:
    listed = thinkgraph("history", "t1", "--store", store)
    assert listed.returncode == 0, listed.stderr
    entries: list[tuple[str, list[str]]] = []  # each checkpoint's node, the lines under it
    for line in listed.stdout.splitlines():
        if line[:1].strip():
            entries.append((line.split()[1], []))
        else:
            entries[-1][1].append(line)
    assert [entry for entry in entries if entry[0] != "start"][:5] == [
        ("planner", ['  plan = ["step 1"]']),
        ("critic", ["  score = 10"]),
        ("planner", ['  plan = ["step 1", "step 2"]']),
        ("critic", ["  score = 20"]),
        ("think", []),
    ]

    forked = fork(store, script, planned, f'plan=["call {SECRET}"]')
    assert forked.returncode == 0, forked.stdout + forked.stderr
    listed = thinkgraph("history", "f1", "--store", store)
    assert listed.returncode == 0, listed.stderr
    assert '  plan = ["call ***"]' in listed.stdout.splitlines()
    assert SECRET not in listed.stdout and SECRET not in forked.stdout


@pytest.mark.parametrize(
    ("item", "error"),
    [
        (
            'verdict="ok"',
            "error: cannot set 'verdict': the graph's state does not declare it (its own keys: "
            "plan, score); set a declared key, or declare it in the graph's state class, "
            "class MyState(AgentState): verdict: ..., built with state=MyState",
        ),
        (
            'answer="42"',
            "error: cannot set 'answer': it is one of AgentState's keys, which the run's steps "
            "decide; a fork sets the graph's own keys (its own keys: plan, score), and "
            "changes a step by editing it",
        ),
        (
            "score=high",
            "error: --set 'score=high': the value of 'score' is not JSON; quote text as a "
            "JSON string, e.g. --set 'score=\"high\"'",
        ),
        (
            'score="high"',
            "error: cannot set 'score' to 'high': the graph's state declares it int (Input "
            "should be a valid integer, unable to parse string as an integer); give a value "
            "of that type",
        ),
        (
            "score",
            "error: --set 'score': use KEY=JSON, e.g. --set score=20 or --set 'plan=[\"a\"]'",
        ),
    ],
    ids=["unknown key", "key of ours", "bad JSON", "wrong type", "no value"],
)
def test_a_refused_set_is_one_line_and_leaves_no_thread(
    refusing: tuple[str, str, str], item: str, error: str
) -> None:
    store, script, at = refusing
    refused = fork(store, script, at, item)
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert lines == [error] and refused.stdout == ""
    with Agent(ScriptedModel([]), store=store) as agent:
        assert [r.thread_id for r in agent.runs()] == ["t1"]
