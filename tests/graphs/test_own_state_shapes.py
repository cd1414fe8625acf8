"""Three shapes of a graph with nodes and state of its own — a critic loop routing on a
score, a planner keeping a plan list with a reducer, a router node — each with a tool gated
by a predicate and a breakpoint, run from Python and from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.cli import shape_graphs
from tests.cli.shape_graphs import CRITIC_LOOP, PLANNER, ROUTER, TOOLS, TOOLS_ADDRESS
from thinkgraph import Agent, Approve, ScriptedModel
from thinkgraph.cli import app

MAIL = 'Thought: mail them\nAction: mail\nAction Input: {"to": "x@them.com", "body": "hi"}'

SHAPES: list[tuple[str, Any, str, list[str], str, dict[str, Any]]] = [
    # address, builder, breakpoint, replies, task, the run's own state at the end
    (CRITIC_LOOP, shape_graphs.critic_loop, "before:critic",
     [MAIL, "Thought: done\nFinal Answer: short", "Thought: more\nFinal Answer: a longer one"],
     "mail them, then answer", {"score": 30}),
    (PLANNER, shape_graphs.planner, "after:plan",
     [MAIL, "Thought: done\nFinal Answer: mailed"],
     "mail them", {"plan": ["step 1", "step 2"]}),
    (ROUTER, shape_graphs.router, "before:think",
     [MAIL, "Thought: done\nFinal Answer: mailed"],
     "send a mail", {"route": "work"}),
]  # fmt: skip
IDS = ["critic_loop", "planner", "router"]


def _points(spec: str) -> dict[str, list[str]]:
    when, _, node = spec.partition(":")
    return {when: [node]}


@pytest.mark.parametrize(("address", "build", "point", "replies", "task", "end"), SHAPES, ids=IDS)
def test_from_python(
    address: str, build: Any, point: str, replies: list[str], task: str, end: dict[str, Any]
) -> None:
    agent = Agent(ScriptedModel(replies), TOOLS, build_graph=build, store="memory://",
                  breakpoints=_points(point))  # fmt: skip
    seen: list[str] = []
    with agent:
        result = agent.run(task, thread_id="t")
        while result.status == "paused" and len(seen) < 8:
            seen += [p.kind for p in result.pending]
            approvals = {p.call_id: Approve() for p in result.pending if p.kind == "approval"}
            assert [p.tool for p in result.pending if p.kind == "approval"] in ([], ["mail"])
            result = agent.resume("t", approvals or None)
    # It paused at its breakpoint and for the gated call, each where the graph says.
    assert "breakpoint" in seen and seen.count("approval") == 1, seen
    assert result.status == "done", result.detail
    assert result.state == end
    assert [s.output for s in result.chain if s.type == "tool_result"] == ["mailed x@them.com"]


@pytest.mark.parametrize(("address", "build", "point", "replies", "task", "end"), SHAPES, ids=IDS)
def test_from_the_command_line(
    tmp_path: Path,
    address: str,
    build: Any,
    point: str,
    replies: list[str],
    task: str,
    end: dict[str, Any],
) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(replies))
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    given = ["--store", store, "--graph", address, "--tools", TOOLS_ADDRESS]
    given += ["--script", str(script)]
    runner = CliRunner()

    def cli(*args: str) -> Any:
        return runner.invoke(app, [*args, *given])

    done = cli("run", task, "--thread", "t", "--no-input", "--breakpoint", point)
    seen: list[str] = []
    while done.exit_code == 3 and len(seen) < 8:  # paused: for what?
        listed = runner.invoke(app, ["show", "t", "--format", "json", "--store", store]).output
        kinds = [p["kind"] for p in json.loads(listed)["pending"]]
        seen += kinds
        done = cli("approve" if "approval" in kinds else "resume", "t", "--no-input")
    assert done.exit_code == 0, done.output
    assert "breakpoint" in seen and seen.count("approval") == 1, seen
    doc = json.loads(runner.invoke(app, ["show", "t", "--format", "json", "--store", store]).output)
    assert (doc["status"], doc["state"]) == ("done", end)


def test_the_router_node_sends_a_chat_past_think_through_validate() -> None:
    with Agent(ScriptedModel([]), TOOLS, build_graph=shape_graphs.router, store="memory://") as a:
        result = a.run("hello there", thread_id="h")
    assert (result.status, result.answer, result.state) == (
        "done",
        "hello to you too",
        {"route": "chat"},
    )
    assert "think" not in {s.node for s in result.chain}
