"""A run's status has one home: a run whose last node finished is done everywhere.

A process killed after finalize's writes were stored and before the checkpoint after them
(the end of a worker's job, a CLI run) leaves the latest checkpoint with finalize's outcome
among its pending writes. A full read applies them (done); the listing, prune and the
worker's "nothing to do" check read the checkpoint alone. They must agree (issue 29, item 4).
"""

from __future__ import annotations

from pathlib import Path

from tests.runs.test_crash_boundaries import _child
from tests.support.crash_cycles import build_agent


def test_a_run_killed_after_finalize_wrote_its_outcome_is_done_in_every_view(
    store_url: str, thread_id: str, tmp_path: Path
) -> None:
    log = tmp_path / "effects.log"
    # The 10th task's writes are finalize's: the kill comes before its checkpoint.
    assert _child(store_url, thread_id, log, "run", "writes:10") == -9
    with build_agent(store_url, log) as agent:
        whole = agent.result(thread_id)
        listed = {r.thread_id: r.status for r in agent.runs()}
        alone = agent.reader.status(thread_id)
    assert (whole.status, whole.answer) == ("done", "recorded one and two")
    assert listed[thread_id] == "done"
    assert alone == "done"
