"""Every driver of a run continues it on its own graph: the library refuses another.

The CLI reads the graph a run recorded to pick the graph of the agent it builds; the
check itself is the run driver's alone, made for everything that continues a run (a
script, the HTTP server, a worker and its queue), so an agent on our graph never continues
a custom run, skipping its nodes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.sample_graphs import REFLECT, build
from tests.cli.sample_tools import send_email
from thinkgraph import Agent, Approve, ScriptedModel
from thinkgraph.graphs.address import GraphAddressError

REPLIES = [
    'Thought: tell the ceo\nAction: send_email\nAction Input: {"to": "ceo@x.com", "body": "hi"}',
    "Thought: sent\nFinal Answer: emailed",
]


@pytest.fixture
def paused(tmp_path: Path) -> str:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with Agent(ScriptedModel(REPLIES), [send_email], store=store, graph=REFLECT) as agent:
        assert agent.run("email the ceo", thread_id="t1").status == "paused"
    return store


def _waiting(agent: Agent) -> dict[str, Approve]:
    return {p.call_id: Approve() for p in agent.result("t1").pending}


def test_an_agent_on_our_graph_refuses_to_continue_a_custom_run(paused: str) -> None:
    with Agent(ScriptedModel(REPLIES), [send_email], store=paused) as ours:
        before = ours.checkpoint_id("t1")
        with pytest.raises(GraphAddressError, match=r"runs on tests\.cli\.sample_graphs:build"):
            ours.resume("t1", _waiting(ours))
        with pytest.raises(GraphAddressError):
            ours.fork("t1", before or "")
        assert ours.checkpoint_id("t1") == before and ours.result("t1").status == "paused"


def test_an_agent_on_the_runs_graph_continues_it_through_its_own_node(paused: str) -> None:
    with Agent(ScriptedModel(REPLIES), [send_email], store=paused, build_graph=build) as mine:
        result = mine.resume("t1", _waiting(mine))
    assert result.status == "done" and "reflect" in [s.node for s in result.chain]
