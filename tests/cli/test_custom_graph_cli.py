"""A run of a custom graph is continued, listed and drawn by the CLI on its own graph.

The run records where its graph comes from (`thinkgraph.graphs.address`). Reading it
(`history`, `draw --thread`, `show`) imports nothing; a new process that answers its pause
runs the user's node when the operator trusts the recorded address (`--graph`,
`THINKGRAPH_GRAPHS`, a `langgraph.json` here), and is refused in one line otherwise; a
graph that cannot be imported, or a `--graph` that is not the run's, is refused with one
line and the run left as it was. A command that continues a run (`approve`, `resume`,
`fork`) is a new process, from the repo root unless a test says otherwise; the runs that
set a test up, the reads and the refusals are called in this process (`here`, which
imports a user's graph file or module afresh each time, as a new process does).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.cli.sample_graphs import OTHER, REFLECT
from tests.support.cli import thinkgraph_here
from thinkgraph import Agent, ScriptedModel
from thinkgraph.graphs.address import recorded_address

ROOT = Path(__file__).resolve().parents[2]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
EMAIL = "tests.cli.sample_tools:send_email"
REPLIES = [
    'Thought: tell the ceo\nAction: send_email\nAction Input: {"to": "ceo@x.com", "body": "hi"}',
    "Thought: sent\nFinal Answer: emailed",
]
GRAPH_FILE = """
from tests.cli.sample_graphs import build as _build


def build(deps):
    return _build(deps)
"""


def thinkgraph(
    *args: str, cwd: Path = ROOT, trust: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    env["PYTHONPATH"] = str(ROOT)
    if trust is not None:
        env["THINKGRAPH_GRAPHS"] = trust
    return subprocess.run(
        [THINKGRAPH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def here(
    *args: str, cwd: Path = ROOT, trust: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`thinkgraph` in this process, as `thinkgraph` runs it in a new one."""
    return thinkgraph_here(
        *args, cwd=cwd, env=None if trust is None else {"THINKGRAPH_GRAPHS": trust}
    )


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(REPLIES))
    return str(path)


def paused(store: str, script: str, *graph: str, cwd: Path = ROOT) -> None:
    """Start thread t1, which pauses for approval of one send_email call."""
    done = here(
        "run", "email the ceo", "--thread", "t1", "--no-input", "--store", store,
        "--tools", EMAIL, "--script", script, *graph, cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr


def state(store: str, thread: str = "t1") -> tuple[str, list[str], str | None]:
    """The run's status, the nodes of its chain's steps, and the graph it recorded."""
    with Agent(ScriptedModel([]), store=store) as agent:
        result = agent.result(thread)
        recorded = recorded_address(agent.graph.checkpointer, thread)
    return result.status, [s.node for s in result.chain], recorded


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def history_counts(out: str) -> Counter[str]:
    return Counter(line.split()[1] for line in out.splitlines() if line.strip())


def overlay_counts(ascii_diagram: str) -> dict[str, int]:
    """The `[xN]` of each node's own line in an ASCII drawing."""
    found = {}
    for line in ascii_diagram.splitlines():
        match = re.match(r"^\(?([a-z_]+)\)?\s.*?\[x(\d+)", line)
        if match:
            found[match.group(1)] = int(match.group(2))
    return found


def test_approve_from_a_new_process_continues_the_run_on_its_own_graph(
    store: str, script: str
) -> None:
    paused(store, script, "--graph", REFLECT)
    status, nodes, recorded = state(store)
    assert (status, recorded) == ("paused", REFLECT) and "reflect" not in nodes

    # The options a run of our graph needs, and no --graph: the recorded address is data
    # from the store, not imported until the operator trusts it.
    refused = here("approve", "t1", "--no-input", "--store", store, "--tools", EMAIL,
                   "--script", script)  # fmt: skip
    error = one_error(refused)
    assert f"records graph {REFLECT!r}, which is not trusted here" in error
    assert f"--graph {REFLECT}" in error and "THINKGRAPH_GRAPHS" in error
    assert state(store) == (status, nodes, recorded)
    done = thinkgraph("approve", "t1", "--no-input", "--store", store, "--tools", EMAIL,
                      "--script", script, trust=f"other.module:build, {REFLECT}")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answer: emailed" in done.stdout
    status, nodes, recorded = state(store)
    # The user's node ran: its note is in the chain, between observe and the next think.
    assert status == "done" and recorded == REFLECT
    assert nodes[nodes.index("observe") + 1] == "reflect"

    listed = here("history", "t1", "--store", store)
    assert listed.returncode == 0, listed.stderr
    history = history_counts(listed.stdout)
    assert history["reflect"] == 1 and history["act"] == 1

    drawn = here("draw", "--thread", "t1", "--format", "ascii", "--store", store)
    assert drawn.returncode == 0, drawn.stderr
    overlay = overlay_counts(drawn.stdout)
    assert "reflect" in overlay
    # Every node the run went through is drawn as often as `history` lists it ("start"
    # has two checkpoints, its input and its own, and is drawn once).
    assert {n: c for n, c in history.items() if n != "start"} == {
        n: c for n, c in overlay.items() if n not in ("start", "end")
    }

    # A fork runs on the run's graph too, and records it for the new thread.
    point = listed.stdout.splitlines()[2].split()[0]  # the first think
    forked = thinkgraph("fork", "t1", point, "--thread", "t2", "--no-input", "--store", store,
                        "--tools", EMAIL, "--script", script, "--graph", REFLECT)  # fmt: skip
    assert forked.returncode == 3, forked.stdout + forked.stderr  # paused at approval again
    assert state(store, "t2")[2] == REFLECT


def test_a_run_whose_graph_cannot_be_imported_is_refused_untouched_then_continued_with_graph(
    store: str, script: str, tmp_path: Path
) -> None:
    graph_file = tmp_path / "my_graph.py"
    graph_file.write_text(GRAPH_FILE)
    paused(store, script, "--graph", f"{graph_file}:build")
    before = state(store)
    assert before[2] == f"{graph_file.resolve()}:build"
    graph_file.unlink()

    for command in ("approve", "resume"):  # they run on: the run's tools and model
        done = here(command, "t1", "--tools", EMAIL, "--script", script, "--store", store)
        assert "which is not trusted here" in one_error(done)
        assert state(store) == before
        # Trusted, but gone: the import fails, in one line.
        done = here(command, "t1", "--tools", EMAIL, "--script", script, "--store", store,
                    trust=before[2])  # fmt: skip
        assert "no file" in one_error(done)
        assert state(store) == before
    # Reading it needs no graph: it is read and drawn from its record.
    for command in ("history", "draw", "show"):
        args = ["--thread", "t1", "--format", "ascii"] if command == "draw" else ["t1"]
        done = here(command, *args, "--store", store)
        assert done.returncode == 0, done.stdout + done.stderr
        assert command != "draw" or "reflect" in done.stdout
        assert state(store) == before

    # Where the builder is now: the run goes on on it.
    done = thinkgraph("approve", "t1", "--no-input", "--store", store, "--tools", EMAIL,
                      "--script", script, "--graph", REFLECT)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reflect" in state(store)[1]


HAND_WIRED_EDGES = [
    "__start__ --> think;",
    'think -.->|"min_steps / retry"| think;',
    'think -.->|"approve"| approve;',
    'think -.->|"continue"| act;',
    'think -.->|"validate"| validate;',
    'think -.->|"reset"| reset;',
    'think -.->|"abort / budget / max_steps"| finalize;',
    'think -.->|"failures"| ask_human;',
    'approve -.->|"approved"| act;',
    'approve -.->|"none_left"| observe;',
    "act --> observe;",
    'observe -.->|"next"| reflect;',
    'observe -.->|"abort / budget"| finalize;',
    'observe -.->|"failures"| ask_human;',
    "reflect --> think;",
    'validate -.->|"failed"| think;',
    'validate -.->|"reset"| reset;',
    'validate -.->|"passed / abort / budget / max_steps"| finalize;',
    'validate -.->|"failures"| ask_human;',
    "reset --> think;",
    'ask_human -.->|"retry"| think;',
    'ask_human -.->|"aborted / abort / budget / max_steps"| finalize;',
    "finalize --> __end__;",
]
"""The edges of `sample_graphs.build`, wired by hand: each labelled by the routes of the
router of ours that takes it, wherever its path map sends it (observe's "next" → reflect)."""


def mermaid_edges(diagram: str) -> list[str]:
    """A Mermaid drawing's edges, without the counts a run's path adds to them."""
    lines = [line.strip() for line in diagram.splitlines() if "->" in line]
    return [re.sub(r'\|"×\d+"\| ', " ", re.sub(r" · ×\d+", "", line)) for line in lines]


def test_a_graph_wired_by_hand_is_drawn_with_its_routers_labels_and_so_is_its_run(
    store: str, script: str
) -> None:
    drawn = thinkgraph("draw", "--graph", REFLECT)
    assert drawn.returncode == 0, drawn.stderr
    assert mermaid_edges(drawn.stdout) == HAND_WIRED_EDGES
    # A run records the shape it ran on; drawn from that record, it has the same labels.
    paused(store, script, "--graph", REFLECT)
    ran = thinkgraph("draw", "--thread", "t1", "--store", store)
    assert ran.returncode == 0, ran.stderr
    assert mermaid_edges(ran.stdout) == HAND_WIRED_EDGES
    assert 'think -.->|"approve · ×1"| approve;' in ran.stdout


def test_a_graph_that_is_not_the_runs_is_refused(store: str, script: str) -> None:
    paused(store, script, "--graph", REFLECT)
    before = state(store)
    done = here("approve", "t1", "--store", store, "--tools", EMAIL, "--script", script,
                "--graph", OTHER)  # fmt: skip
    error = one_error(done)
    assert f"--graph {OTHER} is not the graph thread 't1' ran ({REFLECT})" in error
    assert f"pass --graph {REFLECT}" in error
    assert state(store) == before

    # The same graph named again is no mismatch.
    same = here("history", "t1", "--store", store, "--graph", REFLECT)
    assert same.returncode == 0 and "reflect" not in same.stdout  # not run yet


def test_a_run_of_our_graph_refuses_a_graph(store: str, script: str) -> None:
    paused(store, script)
    assert state(store)[2] is None
    done = here("approve", "t1", "--store", store, "--tools", EMAIL, "--script", script,
                "--graph", REFLECT)  # fmt: skip
    assert "ran thinkgraph's built-in graph; leave out --graph" in one_error(done)


def test_draw_graph_draws_a_graph_with_no_run(tmp_path: Path) -> None:
    done = here("draw", "--graph", REFLECT, "--format", "ascii")
    assert done.returncode == 0, done.stderr
    assert "reflect" in done.stdout and "run:" not in done.stdout
    ours = here("draw", "--format", "ascii")
    assert ours.returncode == 0 and "reflect" not in ours.stdout
    for bad, why in [
        ("nowhere_at_all:build", "module 'nowhere_at_all' is not found"),
        ("tests.cli.sample_graphs:missing", "has no attribute 'missing'"),
        ("tests.cli.sample_graphs:REFLECT", "is a str, not a function"),
        ("no-colon", "use module:function"),
    ]:
        assert why in one_error(here("draw", "--graph", bad))


def test_the_graph_of_a_langgraph_json_here_is_used_and_recorded(
    store: str, script: str, tmp_path: Path
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "my_graph.py").write_text(GRAPH_FILE)
    (folder / "langgraph.json").write_text(json.dumps({"graphs": {"g": "./my_graph.py:build"}}))

    drawn = here("draw", "--format", "ascii", cwd=folder)
    assert drawn.returncode == 0 and "reflect" in drawn.stdout, drawn.stderr
    paused(store, script, cwd=folder)
    assert state(store)[2] == f"{(folder / 'my_graph.py').resolve()}:build"
    # From elsewhere the recorded address is not trusted; where its langgraph.json lists it,
    # it is.
    elsewhere = here("approve", "t1", "--no-input", "--store", store, "--tools", EMAIL,
                     "--script", script)  # fmt: skip
    assert "which is not trusted here" in one_error(elsewhere)
    done = thinkgraph("approve", "t1", "--no-input", "--store", store, "--tools", EMAIL,
                      "--script", script, cwd=folder)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reflect" in state(store)[1]

    # A run of ours goes on on ours, wherever it is continued from.
    ours = f"sqlite:///{tmp_path / 'ours.db'}"
    paused(ours, script)
    done = thinkgraph("approve", "t1", "--no-input", "--store", ours, "--tools", EMAIL,
                      "--script", script, cwd=folder)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert state(ours)[0] == "done" and "reflect" not in state(ours)[1]

    (folder / "langgraph.json").write_text(
        json.dumps({"graphs": {"a": "./my_graph.py:build", "b": "./my_graph.py:build"}})
    )
    error = one_error(here("draw", cwd=folder))
    assert "names 2 graphs (a, b); pick one with --graph" in error


def test_a_graph_module_in_the_current_folder_is_found_when_the_run_goes_on(
    store: str, script: str, tmp_path: Path
) -> None:
    (tmp_path / "my_graphs.py").write_text(GRAPH_FILE)
    paused(store, script, "--graph", "my_graphs:build", cwd=tmp_path)
    assert state(store)[2] == "my_graphs:build"
    done = thinkgraph("approve", "t1", "--no-input", "--store", store, "--tools", EMAIL,
                      "--script", script, "--graph", "my_graphs:build", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reflect" in state(store)[1]
    listed = here("history", "t1", "--store", store, cwd=tmp_path)
    assert listed.returncode == 0 and " reflect " in listed.stdout, listed.stderr
    # From another folder the module is not found, and reading needs none.
    elsewhere = here("history", "t1", "--store", store)
    assert elsewhere.returncode == 0 and " reflect " in elsewhere.stdout, elsewhere.stderr


def test_run_sets_breakpoints_and_validators_on_a_custom_graph(store: str, tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([*REPLIES[:1], "Thought: done\nFinal Answer: done", REPLIES[1]]))
    started = here(
        "run", "email the ceo", "--thread", "t1", "--no-input", "--store", store,
        "--tools", EMAIL, "--script", str(script), "--graph", REFLECT,
        "--breakpoint", "before:reflect", "--validator", "tests.cli.sample_graphs:needs_sent",
    )  # fmt: skip
    assert started.returncode == 3, started.stdout + started.stderr  # the approval first
    shown = here("pending", "t1", "--store", store)
    assert "send_email" in shown.stdout, shown.stderr
    # Validators are code, not stored with the run: each command that runs on takes them
    # (the printed commands carry them).
    check = ["--validator", "tests.cli.sample_graphs:needs_sent"]
    assert "--validator tests.cli.sample_graphs:needs_sent" in started.stdout
    approved = thinkgraph("approve", "t1", "--no-input", "--store", store, "--tools", EMAIL,
                          "--script", str(script), "--graph", REFLECT, *check)  # fmt: skip
    assert approved.returncode == 3, approved.stdout + approved.stderr
    pending = here("pending", "t1", "--store", store)
    assert "breakpoint before reflect" in pending.stdout, pending.stdout + pending.stderr
    assert "reflect" not in state(store)[1]
    # Past the breakpoint, the validator turns "done" back; the next answer passes it.
    done = thinkgraph("resume", "t1", "--no-input", "--store", store, "--tools", EMAIL,
                      "--script", str(script), "--graph", REFLECT, *check)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    status, nodes, _ = state(store)
    assert status == "done" and "reflect" in nodes and nodes.count("validate") == 2
    for bad, why in [
        (["--breakpoint", "before:nowhere"], "breakpoint on unknown node 'nowhere'"),
        (["--breakpoint", "during:reflect"], "use before:NODE or after:NODE"),
        (["--validator", "tests.cli.sample_graphs:REFLECT"], "not a validator"),
    ]:
        refused = here("run", "x", "--thread", "t9", "--store", store, "--script",
                       str(script), "--graph", REFLECT, *bad)  # fmt: skip
        assert why in one_error(refused)


def test_serve_and_worker_build_their_agent_with_breakpoints_and_validators(
    monkeypatch: pytest.MonkeyPatch, script: str
) -> None:
    from tests.cli.sample_graphs import needs_sent
    from thinkgraph.cli._options import AgentOptions
    from thinkgraph.cli.worker import agent_from_options

    monkeypatch.chdir(ROOT)
    options = AgentOptions(
        graph=REFLECT, script=Path(script), breakpoint=["before:reflect", "after:act"],
        validator=["tests.cli.sample_graphs:needs_sent"],
    )  # fmt: skip
    agent, _url = agent_from_options(options, "memory://")
    with agent:
        assert (agent.breakpoints.before, agent.breakpoints.after) == (("reflect",), ("act",))
        assert list(agent.deps.validators) == [needs_sent]
