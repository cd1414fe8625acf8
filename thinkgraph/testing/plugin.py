"""The pytest plugin: the ``thinkgraph_replay`` fixture and ``--thinkgraph-update``.

Registered as a ``pytest11`` entry point, so it loads in every pytest run of a project
that has thinkgraph installed: it imports nothing of thinkgraph until a test asks for
``thinkgraph_replay``, and adds one option.

Example:
    def test_refund_run(thinkgraph_replay):
        report = thinkgraph_replay("tests/regress/refund.json", tools=["shop.tools:tools"])
        assert report.outcome == "same"

A fixture is data: the graph and tools a replay runs on are those the test names, never
addresses read from the fixture.

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
        """Replay the fixture at `path` (options: `thinkgraph.testing.regress.areplay_fixture`:
        ``graph=``, ``tools=`` and ``root=`` name the code it replays on).

        With `check`, a replay that is not what the fixture expects fails the test (or,
        under ``--thinkgraph-update``, becomes its expectation), and so does a fixture
        recorded on another graph than ``graph=``.
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
    """Replay a fixture written by ``thinkgraph export-test``, offline; check it.

    The graph and tools are the ones the test names (``graph=``, ``tools=``, looked for
    from ``root=`` too), never addresses read from the fixture: with `check`, a fixture
    recorded on another graph than the test's fails the test in one line, and so does a
    graph or tool that cannot be loaded.
    """
    from thinkgraph.errors import ConfigError
    from thinkgraph.testing import regress

    update = bool(request.config.getoption(UPDATE_OPTION))

    def replay(path: str | Path, /, *, check: bool = True, **options: Any) -> ReplayReport:
        shown = _relative(Path(path))
        fixture = regress.Fixture.load(path)
        if check and options.get("build_graph") is None:
            other = regress.graph_mismatch(fixture, options.get("graph"))
            if other:
                pytest.fail(f"fixture {shown} {other}", pytrace=False)
        try:
            tools = regress.tools_for(fixture, options.pop("tools", None), options.get("root"))
            report = regress.replay_fixture(fixture, tools=tools, **options)
        except ConfigError as exc:
            pytest.fail(f"replay of {shown}: {exc}", pytrace=False)
        if not check:
            return report
        problem = regress.mismatch(report, fixture.expect)
        if problem and update:
            new = regress.updated(fixture, report, tools)
            new.dump(Path(path))
            done = request.config.stash.setdefault(_UPDATED, [])
            done.append(f"{shown}: now expects {new.expect.outcome}")
        elif problem:
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
