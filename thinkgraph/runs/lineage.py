"""Where a run came from, recorded where a store can find it by query.

A fork records its source in its first checkpoint's metadata, the one home of it:
`FORK_OF` names the run it was forked from and `FORK_AT` the checkpoint of that run. A
replay records the run it replays with its task (``replay_of``, `thinkgraph.runs.replay`),
and the same name under `REPLAY_OF` in its checkpoints' metadata, so the replays of a run
are found as its forks are: one query over checkpoint metadata (`RunReader.forks`,
`RunReader.replays`), no run read. Metadata values are strings, which every store (memory,
SQLite's ``json_extract``, PostgreSQL's ``@>``) can filter by.
"""

from __future__ import annotations

__all__ = ["FORK_AT", "FORK_OF", "REPLAY_OF"]

FORK_OF = "thinkgraph_fork_of"
"""The metadata key of a fork's first checkpoint naming the run it was forked from."""

FORK_AT = "thinkgraph_fork_at"
"""The metadata key of a fork's first checkpoint naming the checkpoint of the source run
it was forked at."""

REPLAY_OF = "thinkgraph_replay_of"
"""The metadata key of a replay's checkpoints naming the run it replays."""
