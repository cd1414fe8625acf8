"""The fleet benchmark runs (its quick form, tiny numbers): a real worker process takes a
batch from a fresh queue, every run ends done, the worker's connections are counted both
ways, and nothing of the batch is left in the shared database."""

from __future__ import annotations

import psycopg
import pytest

from bench import fleet
from tests.conftest import POSTGRES_URL


def test_the_quick_fleet_finishes_every_run_and_counts_the_workers_connections(
    capsys: pytest.CaptureFixture[str],
) -> None:
    [measured] = fleet.main(["--quick", "--runs", "4", "--store", POSTGRES_URL])

    assert (measured.workers, measured.runs) == (1, 4)
    assert 0 < measured.p50_s <= measured.p95_s <= measured.seconds
    # The worker named its connections after itself, and holds at most what it printed.
    assert measured.bound is not None
    assert 2 <= measured.named_peak <= measured.bound
    assert 2 <= measured.socket_peak <= measured.bound
    table = capsys.readouterr().out
    assert "| 1 × 4 |" in table and "runs/s" in table

    with psycopg.connect(POSTGRES_URL) as conn:
        left = conn.execute(
            "SELECT count(*) FROM procrastinate_jobs WHERE queue_name = %s", (measured.queue,)
        ).fetchone()
        workers = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE %s",
            (measured.queue + "%",),
        ).fetchone()
    assert left == (0,) and workers == (0,)


@pytest.mark.parametrize(
    ("text", "setting"), [("1x50", (1, 50)), ("4×10", (4, 10)), ("2X25", (2, 25))]
)
def test_a_setting_is_workers_by_concurrency(text: str, setting: tuple[int, int]) -> None:
    assert fleet.setting(text) == setting


def test_a_setting_that_is_not_workers_by_concurrency_is_refused() -> None:
    with pytest.raises(ValueError, match="WORKERSxCONCURRENCY"):
        fleet.setting("50")


def test_a_database_off_this_machine_is_refused() -> None:
    assert fleet.loopback("postgresql://postgres@127.0.0.1:5432/test")
    with pytest.raises(ValueError, match="loopback only"):
        fleet.loopback("postgresql://postgres@db.example.com/test")


def _measured(
    tree: str, workers: int, runs_per_s: float, p50_s: float, sockets: int
) -> fleet.Measured:
    return fleet.Measured(
        tree, workers, 10, 100, "q", seconds=100 / runs_per_s, submit_s=0.1, p50_s=p50_s,
        p95_s=p50_s + 1, named_peak=2, socket_peak=sockets, bound=None, load=1.0,
    )  # fmt: skip


def test_rounds_are_summed_up_per_tree_and_setting_by_medians_and_the_largest_peak() -> None:
    rounds = [
        _measured("after", 1, 20.0, 3.0, 14),
        _measured("before", 1, 10.0, 6.0, 50),
        _measured("after", 1, 10.0, 5.0, 13),
        _measured("before", 1, 16.0, 4.0, 56),
        _measured("after", 1, 16.0, 4.0, 12),
    ]
    lines = fleet.summary(rounds).splitlines()
    assert lines[2:] == [
        "| after | 1 × 10 | 3 | 16.0 (10.0–20.0) | 4.00 | 5.00 | 14 |",
        "| before | 1 × 10 | 2 | 13.0 (10.0–16.0) | 5.00 | 6.00 | 56 |",
    ]
