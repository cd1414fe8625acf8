"""The benchmark's latency-bound report: a cell is the median of its rounds, never a lucky one."""

from __future__ import annotations

from bench.concurrency import ConcurrencyConfig, ConcurrencyResults
from bench.concurrency_report import concurrency_goals, concurrency_markdown
from bench.samples import ConcurrencySample


def _results(walls: dict[str, list[float | None]]) -> ConcurrencyResults:
    results = ConcurrencyResults(ConcurrencyConfig(runs=(200,), rounds=3, worker_runs=0))
    for system, times in walls.items():
        for round_, seconds in enumerate(times):
            done = 200 if seconds is not None else 0
            results.samples.append(
                ConcurrencySample(system, 200, 0.5, seconds, done, error=None, round=round_)
            )
    return results


def _goal(results: ConcurrencyResults, limit: str) -> tuple[str, str]:
    goal = next(
        g for g in concurrency_goals(results) if g.name.startswith("200") and limit in g.target
    )
    return goal.status, goal.measured


def test_the_ratio_is_of_the_median_rounds() -> None:
    # The first rounds alone would say 0.81× (thinkgraph's best, LangGraph's worst).
    results = _results({"thinkgraph": [2.9, 3.3, 3.4], "langgraph": [3.6, 3.1, 2.8]})
    status, measured = _goal(results, "1.0×")
    assert status == "MISS"
    assert measured.startswith("1.06× (3.30 s vs 3.10 s")
    assert _goal(results, "1.5×")[0] == "PASS"
    rows = [line for line in concurrency_markdown(results) if line.startswith("| thinkgraph")]
    assert rows == [
        "| thinkgraph (`Agent.arun`) | 200 | 0.5 | 3.30 (2.90–3.40, 3 rounds) | 1.06× | 3.3× "
        "| — | 200/200 |"
    ]


def test_a_failed_round_is_shown_and_fails_the_goal() -> None:
    results = _results({"thinkgraph": [2.0, None, 2.1], "langgraph": [3.1, 3.0, 3.2]})
    assert _goal(results, "1.0×")[0] == "MISS"
    rows = [line for line in concurrency_markdown(results) if line.startswith("| thinkgraph")]
    assert len(rows) == 1 and "failed" in rows[0] and "0/200" in rows[0]
