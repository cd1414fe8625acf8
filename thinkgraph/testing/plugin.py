"""The pytest plugin: the ``thinkgraph_replay`` fixture and ``--thinkgraph-update``.

Registered as a ``pytest11`` entry point, so it loads in every pytest run of a project
that has thinkgraph installed: it imports nothing of thinkgraph until a test asks for
``thinkgraph_replay``, and adds one option.

Example:
    def test_refund_run(thinkgraph_replay):
        report = thinkgraph_replay("tests/regress/refund.json")
        assert report.outcome == "same"

A replay that is not what the fixture expects fails the test with the first divergence;
``pytest --thinkgraph-update`` writes what the replay gave as the new expectation instead
(after an intended change, as snapshot tests are updated).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from thinkgraph.runs.replay import ReplayReport

__all__ = ["ReplayFixture", "pytest_addoption", "pytest_terminal_summary", "thinkgraph_replay"]

UPDATE_OPTION = "--thinkgraph-update"
_UPDATED = pytest.StashKey[list[str]]()
"""The fixtures rewritten in this session, for the summary."""


class ReplayFixture(Protocol):
    """What ``thinkgraph_replay`` is: replay a fixture file, check it, return the report."""

    def __call__(self, path: str | Path, /, *, check: bool = True, **options: Any) -> ReplayReport:
        """Replay the fixture at `path` (options: `thinkgraph.testing.regress.areplay_fixture`).

        With `check`, a replay that is not what the fixture expects fails the test (or,
        under ``--thinkgraph-update``, becomes its expectation).
        """


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--thinkgraph-update``."""
    parser.getgroup("thinkgraph").addoption(
        UPDATE_OPTION,
        action="store_true",
        default=False,
        help="rewrite the expectation of each replayed thinkgraph fixture with what the "
        "replay gave (after an intended change)",
    )


@pytest.fixture
def thinkgraph_replay(request: pytest.FixtureRequest) -> ReplayFixture:
    """Replay a fixture written by ``thinkgraph export-test``, offline; check it."""
    from thinkgraph.testing import regress

    update = bool(request.config.getoption(UPDATE_OPTION))

    def replay(path: str | Path, /, *, check: bool = True, **options: Any) -> ReplayReport:
        fixture = regress.Fixture.load(path)
        report = regress.replay_fixture(fixture, **options)
        if not check:
            return report
        problem = regress.mismatch(report, fixture.expect)
        if problem and update:
            tools = options.get("tools")
            given = regress.fixture_tools(fixture) if tools is None else tools
            new = regress.updated(fixture, report, given)
            new.dump(Path(path))
            done = request.config.stash.setdefault(_UPDATED, [])
            done.append(f"{_relative(Path(path))}: now expects {new.expect.outcome}")
        elif problem:
            shown = _relative(Path(path))
            pytest.fail(f"replay of {shown} is not what it expects:\n{problem}", pytrace=False)
        return report

    return replay


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Name the fixtures ``--thinkgraph-update`` rewrote (nothing when none was)."""
    done = config.stash.get(_UPDATED, [])
    if done:
        terminalreporter.section("thinkgraph fixtures updated")
        for line in done:
            terminalreporter.write_line(line)


def _relative(path: Path) -> Path:
    """`path` from the working folder when it is under it (as pytest names test files)."""
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path
