"""The programs in examples/: each runs as a user runs it, and its graph checks and draws."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from thinkgraph import Agent, Approve, ScriptedModel
from thinkgraph.errors import GraphConfigError
from thinkgraph.graphs import check_graph
from thinkgraph.nodes.deps import Deps
from thinkgraph.policies import ReActText
from thinkgraph.tools import ToolRegistry
from thinkgraph.viz import approval_tools, overlay_from_result, to_ascii, to_graph_model, to_mermaid

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str) -> ModuleType:
    """Import an example by its path (examples/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered as a graph address's file is, so its annotations resolve (a state's keys).
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_example(name: str, tmp_path: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("name", "answer", "lines"),
    [
        (
            "critic",
            "answer: 391  (done, final_answer)",
            [
                "#3   validation  failed: critic: fail (no calculation backs this answer;",
                "#11  validation  passed: critic: pass",
                'validate -.->|"passed · ×2"| critic;',
                'critic -.->|"rejected · ×1"| think;',
            ],
        ),
        (
            "planner",
            "answer: 16.25  (done, final_answer)",
            ["#2   note        Plan:", '__start__ -->|"×1"| planner;'],
        ),
        (
            "reflect",
            "answer: 84  (done, final_answer)",
            [
                ">>> waits for approval: publish({'text': '12 * 7 = 84'})",
                "published: ['12 * 7 = 84']",
                "nodes run: start → start → plan → execute → observe → reflect → plan → approve "
                "→ execute → observe → reflect → plan → validate → finalize",
                'reflect -.->|"proceed · ×2"| plan;',
                'plan -.->|"continue · ×1"| execute;',
            ],
        ),
        (
            "approve_writes",
            "answer: Your groceries note now says: milk, eggs, bread.  (done, final_answer)",
            [
                ">>> waits for approval: save_note(",
                "#9   human       approve",
                "notes: {'groceries': 'milk, eggs, bread'}",
                'approve{{"approve<br/>approval gate<br/>×1"}}',
            ],
        ),
    ],
)
def test_each_example_runs_and_prints_its_answer_and_its_diagram(
    name: str, answer: str, lines: list[str], tmp_path: Path
) -> None:
    out = run_example(name, tmp_path)
    assert answer in out
    assert "graph TD;" in out and out.index(answer) < out.index("graph TD;")
    for line in lines:
        assert line in out


CUSTOM = [("critic", "critic"), ("planner", "planner"), ("reflect", "reflect")]
"""Each example built on the route table, and its node of the user's."""

LABELS = {
    "critic": [("validate", "critic", "passed"), ("critic", "think", "rejected"),
               ("critic", "finalize", "approved / abort / budget / max_steps")],
    "planner": [("planner", "think", "planned")],
    "reflect": [("observe", "reflect", "next"), ("reflect", "plan", "proceed"),
                ("reflect", "reset", "start_over"), ("plan", "execute", "continue")],
}  # fmt: skip
"""The labels of the user's routes, and of ours they re-targeted, by (source, target)."""


def example_deps(name: str) -> Deps:
    tools = getattr(load(name), "TOOLS", [])
    return Deps(model=ScriptedModel([]), policy=ReActText(), tools=ToolRegistry(tools))


@pytest.mark.parametrize(("name", "node"), CUSTOM)
def test_a_custom_graph_passes_the_static_checks_and_draws_its_node(name: str, node: str) -> None:
    graph = load(name).build(example_deps(name))
    model = check_graph(graph)
    assert model.nodes[node]["kind"] == "custom"
    assert f'\t{node}["{node}"]' in to_mermaid(to_graph_model(graph))


@pytest.mark.parametrize("name", [name for name, _ in CUSTOM])
def test_each_examples_mermaid_and_ascii_carry_the_users_labels(name: str) -> None:
    model = to_graph_model(load(name).build(example_deps(name)))
    mermaid, ascii_ = to_mermaid(model), to_ascii(model)
    for source, target, label in LABELS[name]:
        assert f'\t{source} -.->|"{label}"| {target};' in mermaid
        # a renamed node of ours shows its kind: "plan (think)"
        edge = rf"^  -\.-> {re.escape(target)}( \(\w+\))? +{re.escape(label)}$"
        assert re.search(edge, ascii_, re.MULTILINE), (source, target, label)


@pytest.mark.parametrize(("name", "node"), CUSTOM)
def test_each_examples_check_refuses_a_route_to_a_missing_node_in_one_line(
    name: str, node: str
) -> None:
    graph = load(name).build(example_deps(name))
    graph.add_edge(node, "audit")
    with pytest.raises(GraphConfigError) as info:
        check_graph(graph)
    assert str(info.value) == (
        f"the edge {node!r} goes to 'audit', which is not a node of the graph; add the node "
        "'audit' or send the route to one that is"
    )


def test_the_reflect_graph_is_importable_by_address_and_pauses_before_publishing() -> None:
    import importlib

    reflect = importlib.import_module("examples.reflect")
    agent = Agent(ScriptedModel(reflect.SCRIPT), reflect.TOOLS, store="memory://",
                  build_graph=reflect.build)  # fmt: skip
    paused = agent.run(reflect.TASK, thread_id="r")
    assert paused.status == "paused"
    assert [(p.kind, p.tool) for p in paused.pending] == [("approval", "publish")]
    done = agent.resume("r", decisions={p.call_id: Approve() for p in paused.pending})
    assert (done.status, done.answer) == ("done", "84")
    history = [h.node for h in agent.history("r")]
    assert {"plan", "execute", "reflect"} <= set(history)
    assert not {"think", "act"} & set(history)
    # the overlay counts each node as often as history has it run
    overlay = overlay_from_result(done, to_graph_model(agent.graph))
    ran = {n: history.count(n) for n in set(history) - {"start"}}
    assert {n: overlay.node_visits.get(n, 0) for n in ran} == ran


def test_the_critic_sends_a_rejected_answer_back_to_think_with_its_reason() -> None:
    critic = load("critic")
    prompts: list[str] = []
    replies = iter(critic.SCRIPT)

    def model(messages: list[dict[str, Any]]) -> str:
        prompts.append(json.dumps(messages))
        return next(replies)

    from thinkgraph.tools.builtin import calculator

    agent = Agent(ScriptedModel(model), [calculator], store="memory://", build_graph=critic.build)
    assert agent.run(critic.TASK, thread_id="c").answer == "391"
    assert "compute it with the calculator first" in prompts[1]


def test_the_planners_plan_is_in_every_think_prompt() -> None:
    planner = load("planner")
    prompts: list[str] = []
    replies = iter(planner.SCRIPT)

    def model(messages: list[dict[str, Any]]) -> str:
        prompts.append(json.dumps(messages))
        return next(replies)

    from thinkgraph.tools.builtin import calculator

    agent = Agent(ScriptedModel(model), [calculator], store="memory://", build_graph=planner.build)
    result = agent.run(planner.TASK, thread_id="p")
    assert result.answer == "16.25" and len(prompts) == 3
    assert "Evaluate it with the calculator" not in prompts[0]  # the planner's own request
    assert all("Evaluate it with the calculator" in p for p in prompts[1:])


def test_only_the_writing_tool_needs_approval_in_approve_writes() -> None:
    example = load("approve_writes")
    assert sorted(example.WRITES) == ["save_note"]
    assert approval_tools(example.TOOLS, example.WRITES) == ["save_note"]
    agent = Agent(ScriptedModel(example.SCRIPT), example.TOOLS, store="memory://",
                  approve=example.WRITES)  # fmt: skip
    paused = agent.run(example.TASK, thread_id="w")
    assert paused.status == "paused"
    assert [(p.kind, p.tool) for p in paused.pending] == [("approval", "save_note")]
    assert any(s.type == "tool_result" for s in paused.chain)  # type: ignore[attr-defined]


def test_the_workers_example_runs_its_task_through_the_queue(tmp_path: Path) -> None:
    from tests.conftest import POSTGRES_URL

    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "workers.py"), POSTGRES_URL],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert ">>> paused, waits for approval: post_summary({'summary': '5 words'})" in out
    assert "#10  tool_result post_summary → ok" in out
    assert "answer: The text has 5 words; the count is posted.  (done, final_answer)" in out
