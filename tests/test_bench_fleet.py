"""The fleet benchmark's code runs (tiny numbers): a worker process takes a batch from a
fresh queue, every run finishes, its connections are counted."""

from __future__ import annotations

from bench.fleet import measure


def test_a_tiny_fleet_finishes_every_run_and_counts_its_connections() -> None:
    measured = measure(None, workers=1, concurrency=2, runs=2, latency_s=0.01)  # loopback model
    assert measured.runs == 2 and measured.seconds > 0
    assert 0 < measured.p50_s <= measured.p95_s
    assert 1 <= measured.connections <= 14  # the worker's bounded pools
