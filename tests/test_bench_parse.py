"""The benchmark's parse-cost section: replies of the asked size, numbers out, the goal judged."""

from __future__ import annotations

import pytest

from bench.parse_formats import FORMATS, KB, ParseSample, markdown, measure, reply
from bench.report import build_goals, to_json, to_markdown
from bench.suite import SuiteConfig, SuiteResults


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_each_reply_is_exactly_the_size_asked(fmt: str) -> None:
    assert len(reply(fmt, 3)) == 3 * KB


def test_a_small_measurement_gives_a_time_for_every_format_and_size() -> None:
    sample = measure(sizes_kb=(1, 2), repeat=1, per_sample_kb=4)

    assert sample.sizes_kb == (1, 2)
    assert set(sample.seconds) == set(FORMATS)
    for fmt, times in sample.seconds.items():
        assert set(times) == {1, 2} and all(t > 0 for t in times.values()), fmt
        ratio = sample.ratio(fmt)
        assert ratio is not None and ratio > 0
    assert sample.kinds["react"] == "tool_calls"
    assert {sample.kinds[f] for f in FORMATS if f.startswith("hostile")} == {"error"}


def _results(seconds: dict[str, dict[int, float]]) -> SuiteResults:
    config = SuiteConfig(cycles=(), storage_cycles=(), resume_cycles=(), concurrency=None)
    results = SuiteResults(config)
    results.parse = ParseSample((10, 100), seconds, {fmt: "error" for fmt in seconds})
    return results


def _goal(results: SuiteResults) -> tuple[str, str]:
    goal = next(g for g in build_goals(results, []) if g.name.startswith("parse cost"))
    return goal.status, goal.measured


def test_linear_growth_passes_and_the_worst_format_is_named() -> None:
    results = _results({"react": {10: 0.001, 100: 0.010}, "hermes": {10: 0.001, 100: 0.015}})
    assert _goal(results) == ("PASS", "worst: hermes 1.50× per KB at 100 KB vs 10 KB")
    lines = markdown(results.parse)  # type: ignore[arg-type]
    assert "| react | 1.000 | 10.000 | 1.00× | error |" in lines
    assert "| parse cost per reply |" in to_markdown(results, [], build_goals(results, []))
    assert to_json(results, [], [])["parse"]["seconds"]["hermes"][100] == 0.015


def test_growth_worse_than_twice_linear_misses() -> None:
    results = _results({"hostile brackets": {10: 0.001, 100: 0.1}})
    assert _goal(results)[0] == "MISS"


def test_not_measured_is_not_applicable() -> None:
    results = _results({})
    results.parse = None
    assert _goal(results)[0] == "n/a"
