"""A recorded run as a fixture file, replayed with no store, no model and no tools.

A fixture holds what `thinkgraph.runs.replay` serves from a run's record: its whole chain
(model replies, tool results, human decisions), with every secret masked exactly as the
views mask a run (`thinkgraph.views.redact.redact_chain`), the graph and tools addresses
when known, the limits, and the expectation: the outcome (`same`), the path (node visits)
and the answer.

Replaying one (`areplay_fixture`) opens an agent on an in-memory store and hands the
recorded run to the replay as its source, so the replay's own machinery serves it: no
second replay. Masking changes what the recorded calls were sent (a masked value in a
prompt), so each recorded request's digest is computed again from its masked messages:
a replay that sends the masked prompt again is `same`.

A fixture is data. The graph and tools addresses it holds say what the run was recorded
on; nothing imports them. A replay runs on the graph and tools its caller names (the test
`thinkgraph export-test` writes names those the operator confirmed at export), and the
pytest plugin compares the fixture's graph with the test's, as text (`graph_mismatch`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thinkgraph.agent import Agent
from thinkgraph.errors import ConfigError
from thinkgraph.graphs.address import load_attr, normal_address
from thinkgraph.llm.scripted import ScriptedModel
from thinkgraph.nodes.model import request_digest, sent_messages
from thinkgraph.result import RunResult
from thinkgraph.runs import replay as replaying
from thinkgraph.runs.replay import ReplayReport, replay_drivers
from thinkgraph.state import BaseStep, HumanStep, LLMCallStep, TaskStep, ToolCallStep, new_id
from thinkgraph.tools import Tool, as_tool
from thinkgraph.tools.builtin import calculator
from thinkgraph.types import StepLimits
from thinkgraph.views._run import shown_state
from thinkgraph.views.diff import node_visits
from thinkgraph.views.redact import Redactor
from thinkgraph.views.visibility import tool_map

__all__ = [
    "FIXTURE_FORMAT",
    "Expectation",
    "Fixture",
    "areplay_fixture",
    "expectation_of",
    "fixture_of",
    "graph_mismatch",
    "load_tools",
    "mismatch",
    "replay_fixture",
    "tools_for",
    "updated",
]

FIXTURE_FORMAT = "thinkgraph.regress/1"


@dataclass(frozen=True)
class Expectation:
    """What a replay of the fixture must give."""

    outcome: str = "same"
    path: tuple[str, ...] = ()
    """The node visits, in order."""
    answer: str | None = None
    divergence: str | None = None
    """The first divergence's headline, when a divergence is what is expected."""

    def to_dict(self) -> dict[str, Any]:
        """As the fixture stores it."""
        data = {"outcome": self.outcome, "path": list(self.path), "answer": self.answer}
        if self.divergence is not None:
            data["divergence"] = self.divergence
        return data


@dataclass(frozen=True)
class Fixture:
    """A fixture file's content (`fixture_of` makes one, `Fixture.load` reads one)."""

    source: RunResult
    """The recorded run, masked: what the replay serves."""
    expect: Expectation
    graph: str | None = None
    tools: tuple[str, ...] = ()
    approve: tuple[str, ...] = ()
    """The tools whose calls a person decided on: the replay pauses for them again."""
    limits: dict[str, Any] | None = None

    @property
    def task(self) -> str:
        """The run's task."""
        task = next((s for s in self.source.chain if isinstance(s, TaskStep)), None)
        return "" if task is None else task.text

    def to_dict(self) -> dict[str, Any]:
        """The fixture as JSON data."""
        return {
            "format": FIXTURE_FORMAT,
            "run": self.source.thread_id,
            "task": self.task,
            "graph": self.graph,
            "tools": list(self.tools),
            "approve": list(self.approve),
            "limits": self.limits,
            "expect": self.expect.to_dict(),
            "source": self.source.model_dump(mode="json"),
        }

    def dump(self, path: Path) -> None:
        """Write the fixture to `path`."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, indent=1) + "\n"
        path.write_text(text, encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Fixture:
        """Read a fixture file.

        Raises:
            ConfigError: not a fixture this version reads.
        """
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != FIXTURE_FORMAT:
            raise ConfigError(
                f"{path} is not a thinkgraph fixture ({FIXTURE_FORMAT}); "
                "write one with: thinkgraph export-test RUN"
            )
        expect = data.get("expect") or {}
        return cls(
            source=RunResult.model_validate(data["source"]),
            expect=Expectation(
                outcome=expect.get("outcome", "same"),
                path=tuple(expect.get("path") or ()),
                answer=expect.get("answer"),
                divergence=expect.get("divergence"),
            ),
            graph=data.get("graph"),
            tools=tuple(data.get("tools") or ()),
            approve=tuple(data.get("approve") or ()),
            limits=data.get("limits"),
        )

    def with_expectation(self, expect: Expectation) -> Fixture:
        """The same fixture expecting `expect` (after an intended change)."""
        return Fixture(self.source, expect, self.graph, self.tools, self.approve, self.limits)


def _redigested(chain: Sequence[BaseStep]) -> list[BaseStep]:
    """The masked chain with each request's digest computed from its masked messages.

    Each model call gets a new id: a request's messages are kept in memory by its step's
    id, and the masked copy must be read from its own (masked) record.
    """
    out: list[BaseStep] = []
    for step in chain:
        if isinstance(step, LLMCallStep) and step.request is not None:
            messages = sent_messages(out, step.model_copy(update={"id": new_id()}))
            if messages is not None:
                digest = request_digest(messages, step.request.tools_digest)
                request = step.request.model_copy(update={"digest": digest})
                step = step.model_copy(update={"request": request, "id": new_id()})
        out.append(step)
    return out


def expectation_of(result: RunResult, outcome: str = "same") -> Expectation:
    """What a replay that gives `result` is expected to give again."""
    return Expectation(outcome, tuple(node_visits(result.chain)), result.answer)


def fixture_of(
    source: RunResult,
    *,
    tools: Sequence[Any] = (),
    graph: str | None = None,
    tool_addresses: Sequence[str] = (),
    limits: StepLimits | None = None,
) -> Fixture:
    """A fixture of a finished run, masked as the views mask it.

    Args:
        source: the run, as read from its store.
        tools: the run's tools (their `sensitive` names; the run's record knows them too).
        graph: the run's graph address (module:function, or a file path as the test holds
            it), None for ours. Recorded as data: a replay never imports it.
        tool_addresses: where the tools are (module:attr), recorded as data too.
        limits: the run's limits.
    """
    redactor = Redactor(source.chain, tool_map(tools), mask_unknown=True)  # as the views
    masked = _redigested([redactor.step(step) for step in source.chain])
    calls = {s.call.id: s.call.name for s in masked if isinstance(s, ToolCallStep)}
    approve = sorted(
        {calls[s.call_id] for s in masked if isinstance(s, HumanStep) and s.call_id in calls}
    )
    shown = source.model_copy(
        update={
            "chain": masked,
            "answer": None if source.answer is None else redactor.text(source.answer),
            "detail": redactor.text(source.detail),
            "output": redactor.value(source.output),
            "state": shown_state(source.state, redactor),
            "pending": [],
        }
    )
    return Fixture(
        source=shown,
        expect=expectation_of(shown),
        graph=graph,
        tools=tuple(tool_addresses),
        approve=tuple(approve),
        limits=None if limits is None else limits.model_dump(mode="json"),
    )


def updated(fixture: Fixture, report: ReplayReport, tools: Sequence[Any]) -> Fixture:
    """The fixture after an intended change: what `report`'s replay gave is expected now.

    A replay that went to the end (a prompt edit: `request changed`) is the new record,
    masked again, and is expected `same`; so the next prompt edit shows up again. A
    replay that diverged has no record past the divergence: the divergence is expected.
    """
    if report.outcome == "diverged":
        replay = report.replay
        expect = Expectation("diverged", tuple(node_visits(replay.chain)), None, report.headline())
        return fixture.with_expectation(expect)
    record = report.replay.model_copy(update={"thread_id": fixture.source.thread_id})
    fresh = fixture_of(record, tools=tools, graph=fixture.graph, tool_addresses=fixture.tools)
    return Fixture(fresh.source, fresh.expect, fixture.graph, fixture.tools, fixture.approve,
                   fixture.limits)  # fmt: skip


def _on_path(root: str | Path | None) -> Path | None:
    """`root`, resolved and put first on sys.path (as the CLI puts its working folder)."""
    if root is None:
        return None
    folder = Path(root).resolve()
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return folder


def load_address(address: str, root: str | Path | None = None) -> Any:
    """What ``module:attr`` (or ``path/to/file.py:attr``) names (a tool or a list of
    tools), imported now by the one importer of addresses (`load_attr`).

    Args:
        address: ``module.sub:attr`` or ``path/to/file.py:attr``.
        root: the folder a module or a relative file is looked for in (put first on
            sys.path).

    Raises:
        ConfigError: one line: a malformed address, a module not found (naming where it
            was looked for and what to do), a module that fails to import, no such
            attribute.
    """
    return load_attr(address, "tools", base=None if root is None else Path(root))


def load_tools(tools: Sequence[Any], root: str | Path | None = None) -> list[Tool]:
    """The tools `tools` gives: tools as they are, and each address (``module:attr``, or
    ``calculator`` for ours) imported now, with module addresses looked for in `root` too.

    Raises:
        ConfigError: an address that cannot be imported (`load_address`).
    """
    found: list[Tool] = []
    for item in tools:
        if item == "calculator":
            found.append(calculator)
        elif isinstance(item, str):
            value = load_address(item, root)
            found.extend(
                as_tool(v) for v in (value if isinstance(value, list | tuple) else [value])
            )
        else:
            found.append(as_tool(item))
    return found


def tools_for(
    fixture: Fixture, tools: Sequence[Any] | None, root: str | Path | None = None
) -> list[Tool]:
    """The tools a replay of `fixture` runs with: `tools` (tools or addresses), loaded.

    The tools addresses a fixture holds are the record's: they are never imported, so a
    fixture that names some needs `tools` given.

    Raises:
        ConfigError: the fixture names tools and none are given; or one cannot be loaded.
    """
    if tools is None and fixture.tools:
        raise ConfigError(
            f"the run was recorded with tools {list(fixture.tools)}: pass tools= naming them "
            "(a fixture's addresses are never imported)"
        )
    return load_tools(tools or (), root)


def graph_mismatch(fixture: Fixture, graph: str | None) -> str:
    """Why replaying `fixture` on `graph` is not replaying it on its recorded graph, in one
    line ("" when it is): the two addresses are compared as text, and neither is imported."""
    if (graph or None) == fixture.graph:
        return ""
    recorded = f"graph {fixture.graph!r}" if fixture.graph else "thinkgraph's built-in graph"
    given = f"graph {graph!r}" if graph else "thinkgraph's built-in graph"
    return (
        f"was recorded on {recorded}, and the test replays it on {given}: export the run "
        "again (thinkgraph export-test), or name its graph in the test"
    )


class _Source:
    """The replay's source: the fixture's run, read from no store (as a `Driver` is read)."""

    holds_masked = True
    """The run is masked as the views mask it: a replay compares its own state masked."""

    def __init__(self, result: RunResult, store: Any) -> None:
        self.store = store
        self.reader = self
        self._result = result

    async def aresult(self, thread_id: str) -> RunResult:
        """The recorded run."""
        return self._result

    async def ahistory(self, thread_id: str) -> list[Any]:
        """No checkpoints: a fixture holds the run's end, so its own state is compared
        with the replay's at the end only."""
        return []


async def areplay_fixture(
    fixture: Fixture | str | Path,
    *,
    graph: str | None = None,
    build_graph: Callable[..., Any] | None = None,
    tools: Sequence[Any] | None = None,
    root: str | Path | None = None,
    **agent_options: Any,
) -> ReplayReport:
    """Replay a fixture on today's graph, policy and tools, in memory.

    Nothing the fixture holds is imported: the graph and tools a replay runs on are the
    ones given here (a test names them as `thinkgraph export-test` wrote them).

    Args:
        fixture: a `Fixture` or the path of its file.
        graph: the graph to replay on (``module:function`` or ``path/file.py:function``);
            None: ours, unless the fixture was recorded on another graph (then an error).
        build_graph: a graph builder, instead of an address.
        tools: the tools, or their addresses (``module:attr``, ``calculator``); needed when
            the fixture was recorded with tools.
        root: the folder a relative graph file path starts from and module addresses are
            looked for in too (default: the working folder and sys.path).
        **agent_options: more for `Agent` (a `policy`, `validators`, ...).

    Raises:
        ConfigError: the fixture was recorded on a graph or with tools and none is given,
            or a graph or tool that cannot be loaded (one line each).
    """
    if not isinstance(fixture, Fixture):
        fixture = Fixture.load(fixture)
    given = tools_for(fixture, tools, root)
    limits = StepLimits(**fixture.limits) if fixture.limits else None
    options: dict[str, Any] = {"approve": list(fixture.approve) or None, **agent_options}
    if build_graph is not None:
        options["build_graph"] = build_graph
    elif graph is not None:
        _on_path(root)
        options["graph"] = normal_address(graph, base=None if root is None else Path(root))
    elif fixture.graph is not None:
        raise ConfigError(
            f"the run was recorded on graph {fixture.graph!r}: pass graph= naming it "
            "(a fixture's addresses are never imported)"
        )
    # The model is never called: every reply is served from the record.
    agent = Agent(ScriptedModel([]), given, store="memory://", limits=limits, **options)
    with agent:
        make = replay_drivers(agent)
        source: Any = _Source(fixture.source, agent.driver.store)
        return await replaying.areplay(source, make, fixture.source.thread_id, limits=agent.limits)


def replay_fixture(fixture: Fixture | str | Path, **options: Any) -> ReplayReport:
    """`areplay_fixture`, for code that is not async."""
    import asyncio

    return asyncio.run(areplay_fixture(fixture, **options))


def mismatch(report: ReplayReport, expect: Expectation) -> str:
    """Why `report` is not what `expect` says ("" when it is)."""
    problems: list[str] = []
    if report.outcome != expect.outcome:
        problems.append(f"expected {expect.outcome}, got {report.headline()}")
    elif expect.divergence is not None and report.headline() != expect.divergence:
        problems.append(f"expected {expect.divergence}, got {report.headline()}")
    path = tuple(node_visits(report.replay.chain))
    if expect.path and path != expect.path:
        problems.append(f"path: expected {' > '.join(expect.path)}, got {' > '.join(path)}")
    if report.replay.answer != expect.answer and report.outcome != "diverged":
        problems.append(f"answer: expected {expect.answer!r}, got {report.replay.answer!r}")
    if not problems:
        return ""
    return "\n".join([*problems, report.to_text()])
