"""Workers never continue a run on another graph than the one it recorded.

A run started on a user's graph records its address (`thinkgraph.graphs.address`); a
worker whose agent runs another graph refuses its jobs (the job fails saying which graph
the run needs) and the run is left as it was; so does a queue asked to resume it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli import sample_tools
from tests.cli.sample_graphs import REFLECT
from tests.conftest import POSTGRES_URL
from tests.support.cli import thinkgraph_here
from tests.worker.conftest import job_statuses
from thinkgraph import Agent, Approve, ScriptedModel
from thinkgraph.cli import app
from thinkgraph.graphs.address import GraphAddressError
from thinkgraph.worker import RunQueue, ThreadRunner, run_worker

ROOT = Path(__file__).resolve().parents[2]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
REPLIES = [
    'Thought: tell the ceo\nAction: send_email\nAction Input: {"to": "ceo@x.com", "body": "hi"}',
    "Thought: sent\nFinal Answer: emailed",
]


def _agent(graph: str | None = None) -> Agent:
    tools = [sample_tools.send_email]
    return Agent(ScriptedModel(REPLIES), tools, store=POSTGRES_URL, graph=graph)


def test_a_worker_on_another_graph_refuses_the_job_and_leaves_the_run(
    queue: str, thread_id: str
) -> None:
    with _agent(REFLECT) as custom, _agent() as ours:
        paused = custom.run("email the ceo", thread_id=thread_id)
        decisions = {paused.pending[0].call_id: Approve()}
        at = custom.checkpoint_id(thread_id)

        # The runner of a worker on our graph: refused before anything runs.
        runner = ThreadRunner(ours, POSTGRES_URL)
        with pytest.raises(GraphAddressError, match=f"runs on {REFLECT}.*--graph {REFLECT}"):
            asyncio.run(runner.advance(thread_id, decisions=decisions, at=at))
        assert custom.checkpoint_id(thread_id) == at

        # A queue on our graph refuses to queue it at all.
        with RunQueue(ours, queue) as runs, pytest.raises(GraphAddressError):
            runs.resume(thread_id, decisions)
        assert job_statuses(queue) == []

        # Queued by an agent on its graph, then taken by a worker on ours: the job fails.
        with RunQueue(custom, queue) as runs:
            runs.resume(thread_id, decisions)
        run_worker(ours, queue=queue, wait=False, install_signal_handlers=False)
        assert job_statuses(queue) == ["failed"]
        assert custom.checkpoint_id(thread_id) == at
        assert custom.result(thread_id).status == "paused"

        # A worker on the run's graph finishes it, through the user's node.
        with RunQueue(custom, queue) as runs:
            runs.resume(thread_id, decisions)
        run_worker(custom, queue=queue, wait=False, install_signal_handlers=False)
        done = custom.result(thread_id)
        assert done.status == "done" and "reflect" in [s.node for s in done.chain]


def test_a_worker_takes_a_graph_or_an_agent_not_both() -> None:
    done = CliRunner().invoke(
        app, ["worker", "--store", POSTGRES_URL, "--agent", "m:a", "--graph", REFLECT]
    )
    assert done.exit_code == 2
    assert "--agent brings its own tools, model and graph; leave out" in done.output
    bad = CliRunner().invoke(app, ["worker", "--store", POSTGRES_URL, "--graph", "nowhere:x"])
    assert bad.exit_code == 2 and "module 'nowhere' is not found" in bad.output


def test_the_cli_hands_a_custom_run_only_to_workers_on_its_graph(
    queue: str, thread_id: str, tmp_path: Path
) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(REPLIES))
    # The operator trusts the run's graph (`THINKGRAPH_GRAPHS`); a worker still runs only
    # its own `--graph`.
    env = {**os.environ, "THINKGRAPH_STORE": POSTGRES_URL, "PYTHONPATH": str(ROOT),
           "THINKGRAPH_GRAPHS": REFLECT}  # fmt: skip
    tools = ["--tools", "tests.cli.sample_tools:send_email", "--script", str(script)]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [THINKGRAPH, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )

    def worker(*graph: str) -> None:
        done = cli("worker", "--once", "--queue", queue, *tools, *graph)
        assert done.returncode == 0, done.stderr

    def queued(*args: str) -> subprocess.CompletedProcess[str]:
        """A command that queues a job, in this process; the workers are processes."""
        trusted = {"THINKGRAPH_STORE": POSTGRES_URL, "THINKGRAPH_GRAPHS": REFLECT}
        return thinkgraph_here(*args, cwd=ROOT, env=trusted)

    assert (
        queued("submit", "email the ceo", "--thread", thread_id, "--queue", queue).returncode == 0
    )
    worker("--graph", REFLECT)
    with _agent() as reader:
        assert reader.result(thread_id).status == "paused"
        at = reader.checkpoint_id(thread_id)

        # Queued with no --graph: the command checks the answer on the run's own graph.
        approved = queued("approve", thread_id, "--enqueue", "--queue", queue)
        assert approved.returncode == 0, approved.stderr
        worker()  # on our graph: the job fails, the run waits on
        assert job_statuses(queue)[-1] == "failed"
        assert reader.checkpoint_id(thread_id) == at

        assert queued("approve", thread_id, "--enqueue", "--queue", queue).returncode == 0
        worker("--graph", REFLECT)
        done = reader.result(thread_id)
    assert done.status == "done" and "reflect" in [s.node for s in done.chain]
