"""The public names other code relies on (DESIGN §9 and the issues' contracts)."""

from __future__ import annotations

import subprocess
import sys

import thinkgraph


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
