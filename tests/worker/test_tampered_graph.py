"""A worker never imports the graph address a run's record names; it runs only its own.

`thinkgraph worker --graph ADDR` runs the graph its operator named. A job for a run whose
recorded graph address was rewritten in the store (`tests.support.tamper`, the jsonb
metadata of PostgreSQL's checkpoints) to a module that leaves a file when imported is
refused: the worker compares the recorded address with its own as text, imports nothing,
and the job fails (it is not "succeeded" with the tool run); the run stays as it was. The
CLI does not queue a continuation of such a run either.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import sample_tools
from tests.cli.sample_graphs import REFLECT
from tests.conftest import POSTGRES_URL
from tests.support.tamper import Marker, metadata_of, retarget, stored
from tests.worker.conftest import job_statuses
from thinkgraph import Agent, Approve, ScriptedModel
from thinkgraph.graphs.address import GRAPH_KEY
from thinkgraph.worker import RunQueue

ROOT = Path(__file__).resolve().parents[2]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
EMAIL = "tests.cli.sample_tools:send_email"
REPLIES = [
    'Thought: tell the ceo\nAction: send_email\nAction Input: {"to": "ceo@x.com", "body": "hi"}',
    "Thought: sent\nFinal Answer: emailed",
]


def _cli(marker: Marker, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI on PostgreSQL, with the run's tools and replies and the marker's package on
    its PYTHONPATH (so a module address from the store would import if anything tried)."""
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(REPLIES))
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    env["THINKGRAPH_STORE"] = POSTGRES_URL
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(marker.pythonpath)])
    return subprocess.run(
        [THINKGRAPH, *args, "--tools", EMAIL, "--script", str(script)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _paused(thread_id: str) -> str:
    """Start a run on the user's graph until it waits for approval; return the call id."""
    tools = [sample_tools.send_email]
    with Agent(ScriptedModel(REPLIES), tools, store=POSTGRES_URL, graph=REFLECT) as custom:
        paused = custom.run("email the ceo", thread_id=thread_id)
    call = paused.pending[0].call_id
    assert paused.status == "paused" and call is not None
    return call


def _status(thread_id: str) -> str:
    with Agent(ScriptedModel([]), store=POSTGRES_URL) as reader:
        return reader.result(thread_id).status


@pytest.mark.parametrize("form", ["file", "module"])
def test_a_worker_takes_a_job_for_a_tampered_run_and_imports_nothing(
    queue: str, thread_id: str, tmp_path: Path, form: str
) -> None:
    marker = Marker.make(tmp_path)
    call = _paused(thread_id)
    # Queued by an agent on the run's graph, before the store was tampered with.
    custom = Agent(ScriptedModel(REPLIES), [sample_tools.send_email], store=POSTGRES_URL,
                   graph=REFLECT)  # fmt: skip
    with custom, RunQueue(custom, queue) as runs:
        runs.resume(thread_id, {call: Approve()})
    assert job_statuses(queue) == ["todo"]
    address = marker.file_address if form == "file" else marker.module_address
    retarget(POSTGRES_URL, thread_id, address)
    assert {m[GRAPH_KEY] for m in metadata_of(POSTGRES_URL, thread_id)} == {address}
    before = stored(POSTGRES_URL, thread_id)

    done = _cli(marker, tmp_path, "worker", "--once", "--queue", queue, "--graph", REFLECT)
    assert marker.ran() == [], done.stdout + done.stderr
    assert job_statuses(queue) == ["failed"], done.stdout + done.stderr
    assert stored(POSTGRES_URL, thread_id) == before
    assert _status(thread_id) == "paused"


def test_the_cli_queues_no_continuation_of_a_tampered_run(
    queue: str, thread_id: str, tmp_path: Path
) -> None:
    marker = Marker.make(tmp_path)
    _paused(thread_id)
    retarget(POSTGRES_URL, thread_id, marker.file_address)
    before = stored(POSTGRES_URL, thread_id)

    done = _cli(marker, tmp_path, "approve", thread_id, "--enqueue", "--queue", queue)
    assert marker.ran() == [], done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stdout + done.stderr
    assert lines[0].startswith("error: ") and marker.file_address in lines[0], lines
    assert "--graph" in lines[0] and "THINKGRAPH_GRAPHS" in lines[0], lines
    assert job_statuses(queue) == []
    assert stored(POSTGRES_URL, thread_id) == before
