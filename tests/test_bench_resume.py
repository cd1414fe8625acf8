"""The benchmark's resume figure times a resume of a stopped run, for both agents."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bench import prebuilt_run, thinkgraph_run
from bench.sqlite_files import stopped_at


@pytest.mark.parametrize("module", [thinkgraph_run, prebuilt_run], ids=["thinkgraph", "prebuilt"])
def test_a_copy_cut_back_to_the_last_tool_cycle_resumes_to_the_final_answer(
    module: object, tmp_path: Path
) -> None:
    run, find, resume = module.run, module.find_fork_point, module.resume  # type: ignore[attr-defined]
    db = tmp_path / module.DB_NAME  # type: ignore[attr-defined]
    run(3, tmp_path)
    point = find(db, 3)
    before = _checkpoints(db)
    # resume() raises unless the resumed model node gives the run's final answer.
    sample = resume(db, 3, point)
    assert sample.load_first_node_s > 0
    assert _checkpoints(db) == before  # the stored run itself is left as it was

    copy = stopped_at(db, point, tmp_path / "copy.db")
    kept = _checkpoints(copy)
    assert kept and max(kept) == point and set(kept) < set(before)


def _checkpoints(db: Path) -> list[str]:
    conn = sqlite3.connect(str(db))
    try:
        return [row[0] for row in conn.execute("SELECT checkpoint_id FROM checkpoints")]
    finally:
        conn.close()
