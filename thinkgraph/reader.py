"""Reading an agent's runs from its store: each call reads a run once.

`Agent` is the front; what it says of stored runs — a result, the listing, the history,
the latest checkpoint — comes from here. A read takes what it needs and no more: a
resume's decision reads only the latest checkpoint's small channels (the chain, the costly
part, left packed), a listing never rebuilds a chain, and a result is one state read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.constants import INTERRUPT
from langgraph.types import Interrupt, StateSnapshot

from thinkgraph.errors import ThreadNotFoundError
from thinkgraph.result import RunResult
from thinkgraph.snapshots import CheckpointInfo, checkpoints, pending_of, status_of
from thinkgraph.state import BaseStep, Counters, PackedSteps, RunInfo, as_step, numbered
from thinkgraph.storage.checkpointers import steps_left_packed, unpack_steps
from thinkgraph.storage.threads import RunSummary, list_threads, summarize
from thinkgraph.types import Breakpoints, RunStatus, StepLimits, thread_id_problem
from thinkgraph.validators import structured_output

if TYPE_CHECKING:
    from thinkgraph.agent import Agent

__all__ = ["RunReader", "no_run"]

HELD_OVERLAP = 256
"""How far back `steps_since` looks in the held chain for steps it has already: more than
one round of nodes writes."""


class RunReader:
    """Reads the runs of one agent's store (its graph, its config, its validators)."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    def checkpoint_id(self, thread_id: str) -> str | None:
        """The id of a run's latest checkpoint, or None when the thread holds no run."""
        with steps_left_packed():  # a paused run's checkpoint may hold the whole chain
            found = self._agent._opened().get_tuple(self._agent._config(thread_id))
        return None if found is None else str(found.config["configurable"]["checkpoint_id"])

    async def acheckpoint_id(self, thread_id: str) -> str | None:
        """`checkpoint_id` from async code."""
        found = await self.latest_tuple(thread_id)
        return None if found is None else str(found.config["configurable"]["checkpoint_id"])

    async def latest_tuple(self, thread_id: str) -> CheckpointTuple | None:
        """The run's latest checkpoint as stored, its steps left packed (never revived)."""
        with steps_left_packed():  # a paused run's checkpoint may hold the whole chain
            return await self._agent._opened().aget_tuple(self._agent._config(thread_id))

    def history(self, thread_id: str) -> list[CheckpointInfo]:
        """The checkpoints of a run, oldest first: one per node that completed."""
        self.snapshot(thread_id)
        return list(reversed(list(checkpoints(self._agent._opened(), thread_id))))

    async def latest(self, thread_id: str) -> StateSnapshot:
        """The latest checkpoint's small channels and open interrupts, without the chain.

        Enough to decide how to resume, and much cheaper than `get_state`, which rebuilds
        the whole chain. `values` lacks the chain; `next` is not computed.
        """
        found = await self.latest_tuple(thread_id)
        if found is None:
            raise no_run(thread_id)
        return without_chain(found)

    async def steps_since(
        self, thread_id: str, checkpoint_id: str, held: Sequence[BaseStep]
    ) -> tuple[StateSnapshot, list[BaseStep]] | None:
        """What a run added after the checkpoint `checkpoint_id`, reading only that.

        For a reader that holds the chain `held` read at that checkpoint (an event stream
        of a run another process advances): the latest checkpoint without its chain (see
        `latest`), and the chain steps written since, in order and numbered after `held`.
        Only the newest checkpoints and their writes are read, their steps revived; the
        chain before them is not touched. A step `held` has already is left out: a state
        read includes the writes of nodes that finished after its checkpoint was stored.

        Returns:
            None when `checkpoint_id` is not among the run's latest checkpoints (the run
            was forked over, or moved on by thousands): read it whole instead.
        """
        saver = self._agent._opened()
        config = self._agent._config(thread_id)
        limit = 8
        while True:
            with steps_left_packed():  # a snapshot of the chain in a checkpoint stays packed
                found = [t async for t in saver.alist(config, limit=limit)]
            ids = [str(t.config["configurable"]["checkpoint_id"]) for t in found]
            if checkpoint_id in ids:
                break
            if len(found) < limit or limit >= 4096:
                return None
            limit *= 8
        newer = found[: ids.index(checkpoint_id) + 1]  # newest first, down to the one held
        # A checkpoint's writes are what the nodes that ran from it wrote: they are in the
        # next checkpoint's chain, or, under the latest, in the state a read gives now (as
        # `get_state` applies them). So the new steps are the writes of the held checkpoint
        # and of every later one, oldest first.
        steps: list[BaseStep] = []
        for tup in reversed(newer):
            written = [v for _, ch, v in tup.pending_writes or () if ch == "chain"]
            batch = [s for w in written for s in _revived(w)]
            # Parallel act tasks store their writes in any order; our nodes number their
            # steps as the chain will, a user's raw node's come unnumbered (-1, kept last).
            batch.sort(key=lambda s: s.number if s.number >= 0 else 1 << 62)
            steps.extend(batch)
        have = {s.id for s in held[-HELD_OVERLAP:]}
        fresh = [s for s in steps if s.id not in have]
        return without_chain(newer[0]), [numbered(s, len(held) + i) for i, s in enumerate(fresh)]

    def snapshot(self, thread_id: str) -> StateSnapshot:
        snapshot = self._agent.graph.get_state(self._agent._config(thread_id))
        if not _exists(snapshot):
            raise no_run(thread_id)
        return snapshot

    def result(self, thread_id: str) -> RunResult:
        """The current result of a run, read from the store."""
        return self.result_of(thread_id, self.snapshot(thread_id))

    async def aresult(self, thread_id: str) -> RunResult:
        """`result` from async code: the store is read off the event loop."""
        snapshot = await self._agent.graph.aget_state(self._agent._config(thread_id))
        if not _exists(snapshot):
            raise no_run(thread_id)
        return self.result_of(thread_id, snapshot)

    def result_of(self, thread_id: str, snapshot: StateSnapshot) -> RunResult:
        values: Mapping[str, Any] = snapshot.values
        run = values.get("run")
        return RunResult(
            thread_id=thread_id,
            status=status_of(snapshot),
            answer=values.get("answer"),
            stop_reason=run.stop_reason if isinstance(run, RunInfo) else None,
            detail=run.detail if isinstance(run, RunInfo) else "",
            chain=list(values.get("chain", [])),
            pending=pending_of(snapshot),
            counters=values.get("counters") or Counters(),
            output=structured_output(values.get("chain", []), self._agent.deps.validators),
        )

    def chain(self, thread_id: str) -> list[BaseStep]:
        """Every step of a run, in order."""
        return self.result(thread_id).chain

    def runs(self, status: RunStatus | None = None, limit: int | None = None) -> list[RunSummary]:
        """The runs in this agent's store, the most recently updated first.

        Args:
            status: only runs with this status ("running", "paused", "done", "failed").
            limit: at most this many runs.

        Raises:
            StorageError: the store cannot be read.
        """
        saver = self._agent._opened()
        found: list[RunSummary] = []
        for thread_id in list_threads(saver):
            if thread_id_problem(thread_id) is not None:
                # Stored by another door (a raw LangGraph call, an older version): no
                # command takes the id, and a listing must not break lines on it.
                continue
            # The latest checkpoint's small channels say where a run stands; its chain,
            # the costly part of a read, is never rebuilt for a listing.
            with steps_left_packed():
                latest = saver.get_tuple(self._agent._config(thread_id))
            if latest is None:
                continue
            snapshot = without_chain(latest)
            if not isinstance(snapshot.values.get("limits"), StepLimits):
                continue  # a thread some other LangGraph program wrote: not a thinkgraph run
            points = snapshot.values.get("breakpoints")
            if isinstance(points, Breakpoints) and (points.before or points.after):
                # Whether it stands at a breakpoint depends on the next node, which only a
                # full read computes; only runs with breakpoints pay for it.
                snapshot = self._agent.graph.get_state(self._agent._config(thread_id))
            summary = summarize(thread_id, snapshot, status_of(snapshot), pending_of(snapshot))
            if status is None or summary.status == status:
                found.append(summary)
                if limit is not None and len(found) >= limit:
                    break
        return found


def without_chain(found: CheckpointTuple) -> StateSnapshot:
    """A checkpoint's small channels and open interrupts as a snapshot, the chain left out.

    `next` is not computed (an empty tuple), so a static breakpoint is not seen.
    """
    interrupts: list[Interrupt] = []
    for _task, channel, value in found.pending_writes or ():
        if channel == INTERRUPT:
            interrupts.extend(value if isinstance(value, list | tuple) else [value])
    values = dict(found.checkpoint.get("channel_values", {}))
    values.pop("chain", None)
    created = found.checkpoint.get("ts")
    return StateSnapshot(values, (), found.config, None, created, None, (), tuple(interrupts))


def _revived(written: Any) -> list[BaseStep]:
    """A chain write as stored (packed steps, a list of steps or of plain dicts) as steps."""
    if isinstance(written, PackedSteps):
        return unpack_steps(written)
    return [as_step(s) for s in written]


def no_run(thread_id: str) -> ThreadNotFoundError:
    return ThreadNotFoundError(
        f"no run is stored under thread {thread_id!r}; list runs with `thinkgraph runs` "
        "or check --store"
    )


def _exists(snapshot: StateSnapshot) -> bool:
    # A run killed right after its input was saved has a checkpoint but no values yet; it
    # exists (and resumes), so existence is "has a checkpoint", not "has values".
    return bool(snapshot.values) or snapshot.created_at is not None
