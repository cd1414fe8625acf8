"""The listing benchmark runs (tiny numbers): its copies of real runs read from their
checkpoints as their index rows say, and every page it times is the page it should be."""

from __future__ import annotations

from bench import listing_scale


def test_the_listing_benchmark_copies_faithful_runs_and_times_every_page() -> None:
    measured = listing_scale.sqlite(400)  # asserts the pages and the copies itself

    assert measured["runs"] == 400
    for key in ("first_page_s", "status_page_s", "task_search_s", "inbox_s", "count_s"):
        assert 0 < measured[key] < measured["from_checkpoints_first_page_s"] * 10
