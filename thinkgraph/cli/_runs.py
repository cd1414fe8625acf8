"""What a command reads before it builds its agent: the run's graph, the run, the model.

A run records the graph it runs on (`thinkgraph.graphs.address`). A command that only
reads a run (`show`, `history`, `pending`, `draw --thread`, `diff`) imports no graph: the
run is read and drawn from its record (`read_graph`). A command that continues a run builds
its agent on the run's graph, imported only from an address the operator trusts
(`run_graph`); a command that starts a run or draws a graph with no run takes `--graph`,
else the one graph of a `langgraph.json` in the current folder, else ours (`new_graph`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thinkgraph.cli._app import existing_store, fail, guarded, load_validators
from thinkgraph.graphs.address import (
    LANGGRAPH_JSON,
    UNNAMED,
    GraphAddressError,
    check_trusted,
    continues_on,
    langgraph_json_address,
    load_builder,
    normal_address,
    recorded_address,
)

if TYPE_CHECKING:
    from thinkgraph.agent import Agent

__all__ = [
    "continuing_agent",
    "make_model",
    "new_graph",
    "queued_message",
    "read_graph",
    "run_graph",
    "stopped_runs",
    "stored_thread",
    "untrusted_graph",
]


def _from_here() -> None:
    # As --tools: a graph's module is found from the current folder.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


def _importable(address: str, source: str = "") -> str:
    """The address, made absolute when it is a file path, once its builder imports."""
    _from_here()
    try:
        load_builder(address)
    except GraphAddressError as exc:
        fail(f"{source} {exc}".strip())
    return normal_address(address)


def new_graph(given: str | None) -> str | None:
    """The graph a new run (or a drawing with no run) is built on: `--graph`, else the one
    graph a `langgraph.json` in the current folder names, else None (ours)."""
    if given is not None:
        return _importable(given)
    try:
        found = langgraph_json_address()
    except GraphAddressError as exc:
        fail(str(exc))
    return None if found is None else _importable(found, "langgraph.json:")


def _recorded(store: str, thread: str, saver: Any = None) -> tuple[str, str | None]:
    """The store's URL and the address the run under `thread` records (read, not imported),
    from `saver` when the command opened the store already."""
    from thinkgraph.storage import close_checkpointer, open_checkpointer

    url = existing_store(store)
    if saver is not None:
        return url, recorded_address(saver, thread)
    saver = open_checkpointer(url)
    try:
        return url, recorded_address(saver, thread)
    finally:
        close_checkpointer(saver)


@contextmanager
def continuing_agent(
    store: str,
    thread: str,
    graph: str | None,
    model: Any,
    tools: Any,
    validators: Sequence[str] | None = None,
    **options: Any,
) -> Iterator[Agent]:
    """The agent that continues the run under `thread` on its own graph (`run_graph`),
    over the store opened once: the graph's address is read from the saver the agent
    then uses. `options` go to `Agent` (breakpoints, …)."""
    from thinkgraph.agent import Agent
    from thinkgraph.storage import close_checkpointer, open_checkpointer

    url = existing_store(store)
    saver = open_checkpointer(url)
    try:
        address = run_graph(store, thread, graph, saver=saver)
        checks = load_validators(validators)
        with Agent(model, tools, store=saver, graph=address, validators=checks, **options) as agent:
            yield agent
    finally:
        close_checkpointer(saver)


def read_graph(store: str, thread: str, given: str | None) -> None:
    """Check `--graph` of a command that only reads the run under `thread`, importing nothing.

    The run is read and drawn from its record (`thinkgraph.graphs.recorded`, and the shape
    its task step holds), so no graph is built; a `--graph` that is not the address the run
    records is refused, as for a command that continues it.
    """
    if given is None:
        return
    _url, recorded = _recorded(store, thread)
    if recorded is not None and not continues_on(recorded, given):
        fail(
            f"--graph {given} is not the graph thread {thread!r} ran ({recorded}); leave out "
            "--graph: reading a run needs none"
        )


def untrusted_graph(store: str, thread: str) -> str | None:
    """The address the run under `thread` records when the operator does not trust it
    (`check_trusted`), else None; nothing is imported."""
    _url, recorded = _recorded(store, thread)
    if recorded is None:
        return None
    try:
        check_trusted(recorded, thread)
    except GraphAddressError:
        return recorded
    return None


def run_graph(store: str, thread: str, given: str | None, saver: Any = None) -> str | None:
    """The graph the run under `thread` runs on, for a command that continues it.

    The address the run recorded is data from the store: it is imported only when the
    operator trusts it (`check_trusted`: this `--graph`, the current folder's
    `langgraph.json`, or `THINKGRAPH_GRAPHS`); else the command is refused in one line
    naming it, and nothing is imported. A `--graph` that is not the recorded address is
    refused too, unless the recorded one names nothing any more (its builder moved). For a
    run that recorded none and did not run ours, the graph of a `langgraph.json` here.
    None: the run is on our graph.
    """
    _from_here()
    url, recorded = _recorded(store, thread, saver)
    if recorded is None and given is None:
        # Ours, or a run from before graphs were recorded: its task step then holds a graph
        # of its own, which a langgraph.json here may name.
        if not (Path.cwd() / LANGGRAPH_JSON).is_file() or _ran_ours(saver or url, thread):
            return None
        return new_graph(None)
    if recorded is None:
        if _ran_ours(saver or url, thread):
            fail(
                f"--graph {given}: thread {thread!r} ran thinkgraph's built-in graph; leave "
                "out --graph to continue it on that graph"
            )
        return _importable(str(given))
    if given is not None:
        if not continues_on(recorded, given):
            fail(
                f"--graph {given} is not the graph thread {thread!r} ran ({recorded}); pass "
                f"--graph {recorded} to continue it on its own graph"
            )
        return _importable(given)
    if recorded.startswith(f"{UNNAMED}:"):
        fail(
            f"thread {thread!r} ran a graph with no address ({recorded}: a builder defined "
            "inside a function, a lambda or a partial); pass --graph module:function naming "
            "where that builder is now"
        )
    try:
        trusted = check_trusted(recorded, thread)
    except GraphAddressError as exc:
        fail(str(exc))
    return _importable(trusted, f"thread {thread!r}:")


def _ran_ours(store: Any, thread: str) -> bool:
    """Whether the run under `thread` ran our graph: its task step holds no graph of its
    own (a run of a custom graph made before graphs were recorded holds one)."""
    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel

    ours = True

    def read() -> None:
        nonlocal ours
        with Agent(ScriptedModel([]), store=store) as agent:
            chain = agent.result(thread).chain
        ours = not chain or getattr(chain[0], "graph", None) is None

    guarded(read)
    return ours


def make_model(
    model: str | None,
    api_base: str | None,
    script: Path | None,
    *,
    needed: bool = True,
    thread: tuple[str, str] | None = None,
) -> Any:
    """The model the options name; without one, a fail (or, when not `needed` because a
    worker will run the model, a ScriptedModel with no replies).

    `thread` is the (store, thread id) a command continues: without a model, a thread that
    holds no run is the mistake to report first.
    """
    from thinkgraph.llm import ScriptedModel

    if not needed and script is None and not model:
        return ScriptedModel([])
    if script is not None:
        try:
            replies = json.loads(script.read_text())
        except (OSError, ValueError) as exc:
            fail(f"--script {script}: cannot read a JSON list of replies ({exc})")
        if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
            fail(f"--script {script}: expected a JSON list of strings")
        return ScriptedModel(replies)
    if not model:
        if thread is not None:
            guarded(lambda: stored_thread(*thread))
        fail(
            "no model: pass --model openai/gpt-4o-mini (any litellm model string) or set "
            "THINKGRAPH_MODEL; `thinkgraph demo` runs without one"
        )
    if api_base is None:
        return model
    from thinkgraph.llm import LiteLLMModel

    return LiteLLMModel(model, api_base=api_base)


def stored_thread(store: str, thread: str) -> None:
    """Fail unless the store holds a run under `thread` (saying why when its start still
    waits for a worker)."""
    from thinkgraph.agent import Agent
    from thinkgraph.llm import ScriptedModel

    url = existing_store(store)
    with Agent(ScriptedModel([]), store=url) as agent:
        found = agent.checkpoint_id(thread)
        waiting = None if found is not None else queued_message(agent, thread)
    if found is None:
        fail(
            waiting
            or f"no run is stored under thread {thread!r}; list runs with `thinkgraph runs` "
            "or check --store"
        )


def stopped_runs(agent: Any, unfinished: list[str]) -> set[str]:
    """The unfinished runs that no process advances: their lease is free (a run whose
    process was interrupted or died looks "running" in the store until it is resumed)."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from thinkgraph.storage.lease import is_held

    saver = agent.graph.checkpointer
    if not isinstance(saver, BaseCheckpointSaver):
        return set()
    return {thread for thread in unfinished if not is_held(saver, thread)}


def queued_message(agent: Any, thread: str) -> str | None:
    """Why a thread holds no run yet when it was handed to the workers (its job waits, runs,
    or failed before the run began: `RunReader.not_started`), else None."""
    waiting = agent.reader.not_started(thread)
    return None if waiting is None else str(waiting)
