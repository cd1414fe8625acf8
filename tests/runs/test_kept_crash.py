"""A long paused run keeps its chain at the pause; kill its resume anywhere, resume again.

The resumes after the kill rebuild the chain from the kept snapshot plus the writes since
it; the run must end exactly as an uninterrupted one, every side effect done once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.long_pause import BEFORE, build_agent
from thinkgraph import Approve
from thinkgraph.errors import ResumeValueError
from thinkgraph.state import BaseStep
from thinkgraph.storage.sqlite import KEEP_MIN_SIZE

ROOT = Path(__file__).resolve().parents[2]


def _content(chain: list[BaseStep]) -> list[tuple[str, str]]:
    drop = {"id", "at", "latency_s", "duration_s", "llm_call_id", "call", "call_id"}
    drop |= {"idempotency_key"}
    return [(s.type, repr(s.model_dump(exclude=drop))) for s in chain]


def _finish(store: str, log: Path, thread: str) -> list[BaseStep]:
    with build_agent(store, log) as agent:
        try:
            result = agent.resume(thread)
        except ResumeValueError:  # killed before the approval was stored: still paused
            pending = agent.result(thread).pending
            result = agent.resume(thread, {p.call_id: Approve() for p in pending})
        assert (result.status, result.answer) == ("done", "all recorded")
        return result.chain


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    where = tmp_path_factory.mktemp("reference")
    # In memory: that store keeps nothing at a pause, so the reference never reads a kept chain.
    with build_agent("memory://", where / "ref.log") as agent:
        paused = agent.run("record", thread_id="ref")
        done = agent.resume("ref", {p.call_id: Approve() for p in paused.pending})
    return _content(done.chain)


@pytest.mark.parametrize("kill", ["put:1", "put:2", "put:4", "tool:1", "tool:2"])
def test_a_killed_resume_of_a_kept_chain_ends_like_an_uninterrupted_run(
    kill: str, store_url: str, thread_id: str, tmp_path: Path, reference: list[tuple[str, str]]
) -> None:
    log = tmp_path / "effects.log"
    with build_agent(store_url, log) as agent:
        paused = agent.run("record", thread_id=thread_id)
    assert paused.status == "paused" and len(paused.chain) >= KEEP_MIN_SIZE

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.run(
        [sys.executable, "-m", "tests.support.long_pause", store_url, thread_id, str(log), kill],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert child.returncode == -9, child.stderr

    chain = _finish(store_url, log, thread_id)
    assert _content(chain) == reference
    keys = [line.split()[0] for line in log.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == BEFORE + 4  # every record and the publish, once
