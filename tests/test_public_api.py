"""The public names other code relies on (DESIGN §9 and the issues' contracts)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import thinkgraph
import thinkgraph.graphs.build
import thinkgraph.runs.driver


def test_the_package_exports_exactly_its_public_names() -> None:
    assert sorted(thinkgraph.__all__) == sorted(
        [
            "Agent",
            "Approve",
            "ChatModel",
            "Edit",
            "NextAction",
            "Pending",
            "Reject",
            "Respond",
            "Retention",
            "RunResult",
            "ScriptedModel",
            "StepLimits",
            "ThinkgraphError",
            "Tool",
            "Verdict",
            "tool",
        ]
    )


def test_every_exported_name_resolves() -> None:
    for name in thinkgraph.__all__:
        assert getattr(thinkgraph, name) is not None, name


def test_the_contract_imports_work() -> None:
    from thinkgraph import Agent, Approve, Edit, NextAction, Reject, Respond, StepLimits
    from thinkgraph.policies import ReActText

    decision = ReActText().parse('Thought: t\nAction: add\nAction Input: {"a": 1}')
    assert decision.kind == "tool_calls" and decision.tool_calls[0].args == {"a": 1}
    assert [a.value for a in NextAction] == ["continue", "validate", "final_answer", "reset"]
    assert Edit(args={"x": 1}).args == {"x": 1} and Reject(reason="r").reason == "r"
    assert Respond(text="t").text == "t" and Approve().action == "approve"
    assert StepLimits(max_steps=3).max_steps == 3 and callable(Agent)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        thinkgraph.Nope  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "Nope" in str(exc)
    else:
        raise AssertionError("thinkgraph.Nope did not raise")


def test_importing_the_types_does_not_load_langgraph() -> None:
    code = "import sys, thinkgraph.types; print('langgraph' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_reading_a_runs_graph_address_starts_without_langgraphs_graph() -> None:
    # The CLI reads a run's graph address before it builds any graph: the command starts
    # without LangGraph's graph module or our driver (most of its start-up otherwise).
    code = (
        "import sys, thinkgraph.cli, thinkgraph.graphs.address, thinkgraph.runs.events; "
        "print(sorted(m for m in ('langgraph.graph', 'thinkgraph.runs.driver', "
        "'thinkgraph.graphs.build') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_graphs_and_runs_packages_load_their_names_on_first_use() -> None:
    import thinkgraph.graphs as graphs
    import thinkgraph.runs as runs

    assert graphs.parts.think_node.__name__ == "think_node"
    assert graphs.react_graph is thinkgraph.graphs.build.react_graph
    assert runs.Driver is thinkgraph.runs.driver.Driver
    assert set(graphs.__all__) <= set(dir(graphs)) and set(runs.__all__) <= set(dir(runs))
    with pytest.raises(AttributeError, match=r"'thinkgraph\.graphs' has no attribute 'nope'"):
        graphs.nope  # noqa: B018
