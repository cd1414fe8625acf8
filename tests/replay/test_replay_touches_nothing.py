"""A replay touches nothing: the real `thinkgraph` script in processes of its own, real tools
that write to a file (`tests.replay.world`), a real SQLite store.

What a replay may do with a tool call is decided where every tool execution passes, so
neither a run that died inside an approved tool nor a graph builder that copies the
agent's parts makes a replay run a tool; and the report counts what really ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.replay.world import DIE_IN_TOOL, OUTBOX

ROOT = Path(__file__).resolve().parents[2]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
MAIL = [
    'Thought: mail it\nAction: send_email\nAction Input: {"to": "ann@example.com", "body": "hi"}',
    "Thought: done\nFinal Answer: sent",
]
NOTE = [
    'Thought: note it\nAction: write_note\nAction Input: {"text": "standup at 10"}',
    "Thought: done\nFinal Answer: noted",
]


class World:
    """A folder with a store, an outbox every tool run writes a line to, and the CLI."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.store = f"sqlite:///{folder / 'runs.db'}"
        self.outbox = folder / "outbox.txt"

    def script(self, name: str, replies: list[str]) -> str:
        path = self.folder / name
        path.write_text(json.dumps(replies))
        return str(path)

    def sent(self) -> list[str]:
        """What the tools did, one line per run of a tool."""
        return self.outbox.read_text().splitlines() if self.outbox.exists() else []

    def cli(self, *args: str, die_in_tool: bool = False) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
        env.update(PYTHONPATH=str(ROOT), **{OUTBOX: str(self.outbox)})
        if die_in_tool:
            env[DIE_IN_TOOL] = "1"
        return subprocess.run(
            [THINKGRAPH, *args, "--store", self.store], cwd=ROOT, env=env,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_a_replay_of_a_run_that_died_inside_an_approved_tool_runs_it_zero_times(
    world: World,
) -> None:
    tools = "tests.replay.world:send_email"
    script = world.script("mail.json", MAIL)
    paused = world.cli("run", "mail ann", "--tools", tools, "--script", script, "-t", "L1")
    assert paused.returncode == 3, paused.stderr  # waits for the approval of send_email
    died = world.cli("approve", "L1", "--tools", tools, "--script", script, die_in_tool=True)
    assert died.returncode == -9, died.stderr  # killed inside the tool, after its effect
    assert world.sent() == ["email to ann@example.com"]

    # Live past a divergence, with a real call allowed: the approved call is still not run.
    live = world.cli(
        "replay", "L1", "--tools", tools, "--script", script,
        "--live-from-divergence", "--max-calls", "1",
    )  # fmt: skip

    assert world.sent() == ["email to ann@example.com"], live.stdout
    assert "Traceback" not in live.stderr, live.stderr
    lines = live.stdout.splitlines()
    assert lines[1].endswith("made 0 model calls, 0 tool runs"), live.stdout
    assert lines[2] == (
        "stopped: the run recorded the approval of send_email at think step 1 but no "
        "result (it stopped inside the tool): a replay never runs a call that needs approval"
    )
    offline = world.cli("replay", "L1", "--tools", tools, "--json")
    assert world.sent() == ["email to ann@example.com"]
    report = json.loads(offline.stdout)
    assert (report["tool_runs"], report["served"]["tool_results"]) == (0, 0)
    assert report["stopped"].startswith("the run recorded the approval of send_email")


def test_a_graph_builder_that_copies_the_agents_parts_cannot_make_a_replay_run_a_tool(
    world: World,
) -> None:
    args = ["--tools", "tests.replay.world:write_note"]
    graph = ["--graph", "tests.replay.world:with_validator"]
    script = world.script("note.json", NOTE)
    done = world.cli("run", "note the standup", *args, *graph, "--script", script, "-t", "C1")
    assert done.returncode == 0, done.stderr
    assert world.sent() == ["note standup at 10"]

    replayed = world.cli("replay", "C1", *args, *graph)  # the graph the operator names

    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert world.sent() == ["note standup at 10"]  # the tool did not run again
    assert replayed.stdout.splitlines() == [
        "replay replay-C1 of C1: same",
        "served 2 model replies, 1 tool result, 0 decisions; made 0 model calls, 0 tool runs",
    ]


def test_a_tool_a_users_node_runs_itself_is_refused_in_a_replay_not_run(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.replay.world import notes_after_observe, write_note
    from thinkgraph import Agent, ScriptedModel

    monkeypatch.setenv(OUTBOX, str(world.outbox))
    parts: dict[str, Any] = {"build_graph": notes_after_observe, "store": world.store}
    with Agent(ScriptedModel(NOTE), [write_note], **parts) as agent:
        assert agent.run("note the standup", "M1").answer == "noted"
    assert world.sent() == ["note standup at 10", "note round 1"]

    with Agent(ScriptedModel([]), [write_note], **parts) as agent:
        report = agent.replay("M1")

    assert world.sent() == ["note standup at 10", "note round 1"]
    assert (report.tool_runs, report.served_results) == (0, 1), report.to_text()
    refused = [s for s in report.replay.chain if "not run (replay)" in str(getattr(s, "text", ""))]
    assert refused, report.to_text()  # the node saw a refusal, not the tool's answer


def test_a_replay_killed_before_it_recorded_its_outcome_is_finished_and_pruned(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.replay.world import write_note
    from thinkgraph import Agent, ScriptedModel

    monkeypatch.setenv(OUTBOX, str(world.outbox))
    with Agent(ScriptedModel(NOTE), [write_note], store=world.store) as agent:
        assert agent.run("note the standup", "K1").answer == "noted"
    graph = ["--graph", "tests.replay.world:killed_validating"]  # its validator kills it

    killed = world.cli("replay", "K1", "--tools", "tests.replay.world:write_note", *graph)

    assert killed.returncode == -9, killed.stdout + killed.stderr
    with Agent(ScriptedModel([]), store=world.store) as agent:
        listed = {r.thread_id: r for r in agent.runs()}

    pruned = world.cli("prune", "--older-than", "0s")

    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    rows = {line.split()[0]: line.split()[1] for line in pruned.stdout.splitlines()[1:3]}
    assert rows == {"replay-K1": "delete", "K1": "delete"}, pruned.stdout
    # Listed as a replay that stopped (`thinkgraph runs`: "replay: stopped"), finished: it
    # recorded no outcome and no stop reason, and nothing will continue it.
    assert (listed["replay-K1"].status, listed["replay-K1"].replay) == ("done", "stopped")
    assert listed["replay-K1"].stop_reason is None


def test_a_replay_being_compared_is_held_so_a_prune_from_another_process_skips_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    import thinkgraph.runs.replay as replaying
    from tests.replay.world import write_note
    from thinkgraph import Agent, Retention, ScriptedModel

    monkeypatch.setenv(OUTBOX, str(world.outbox))
    pruned: list[subprocess.CompletedProcess[str]] = []
    compare = replaying.diff_runs

    def prune_then_compare(*args: Any, **kwargs: Any) -> Any:
        # Its run has stopped and no outcome is recorded yet: it reads as finished now.
        pruned.append(world.cli("prune", "--thread", "replay-H1"))
        return compare(*args, **kwargs)

    monkeypatch.setattr(replaying, "diff_runs", prune_then_compare)
    # The agent's retention, applied as each of its runs ends, leaves the replay alone.
    parts: dict[str, Any] = {"store": world.store, "retention": Retention(keep_last=1)}
    with Agent(ScriptedModel(NOTE), [write_note], **parts) as agent:
        assert agent.run("note the standup", "H1").answer == "noted"
        report = agent.replay("H1")
        listed = {r.thread_id: r.replay for r in agent.runs()}

    assert pruned[0].returncode == 1, pruned[0].stdout + pruned[0].stderr
    assert pruned[0].stdout.splitlines()[1].split() == ["replay-H1", "skip:", "leased"]
    assert report.outcome == "same", report.to_text()
    assert listed["replay-H1"] == "same"
