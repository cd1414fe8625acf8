"""Tamper with a stored run as whoever can write one row of the store can, and catch code run.

A run records the address of its graph in the metadata of each of its checkpoints
(`thinkgraph.graphs.address.GRAPH_KEY`). `retarget` rewrites that address in every
checkpoint of a thread, in SQLite (the ``metadata`` column holds JSON as a blob) or in
PostgreSQL (a ``jsonb`` column), as an attacker would; nothing else of the run changes.

`Marker` writes a graph module whose import leaves a file ``imported`` and whose ``build``
leaves a file ``built``, both beside it: if either exists after a command, that command
ran code named by the store. Its ``build`` returns a working graph (the sample graph with a
"reflect" node), so code that runs it goes on as if nothing were wrong; only the files
tell. `stored` is everything the store holds of a thread, to show a refusal changed
nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from thinkgraph.graphs.address import GRAPH_KEY

__all__ = ["Marker", "metadata_of", "retarget", "sqlite_path", "stored", "threads"]

_BODY = """\
from pathlib import Path

Path({imported!r}).write_text("imported at its import")


def build(deps):
    Path({built!r}).write_text("built")
    from tests.cli.sample_graphs import build as sample

    return sample(deps)
"""


@dataclass(frozen=True)
class Marker:
    """A graph module that leaves a file when it is imported and another when it builds.

    The same code is written twice under `folder`: as the file ``evil.py`` (addressed by
    its path) and as the module ``<package>.evil`` of a package in ``folder/pkgs`` (put
    `pythonpath` on the path of the process that should find it). The package's name is
    new for each marker, so no process has it imported already.
    """

    folder: Path
    package: str

    @classmethod
    def make(cls, folder: Path) -> Marker:
        """Write the marker's file and package under `folder` (which exists)."""
        marker = cls(folder.resolve(), f"tg_evil_{uuid.uuid4().hex[:10]}")
        body = _BODY.format(imported=str(marker.imported), built=str(marker.built))
        marker.file.write_text(body)
        package = marker.pythonpath / marker.package
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "evil.py").write_text(body)
        return marker

    @property
    def file(self) -> Path:
        return self.folder / "evil.py"

    @property
    def imported(self) -> Path:
        return self.folder / "imported"

    @property
    def built(self) -> Path:
        return self.folder / "built"

    @property
    def pythonpath(self) -> Path:
        """The folder to put on PYTHONPATH for `module_address` to import."""
        return self.folder / "pkgs"

    @property
    def file_address(self) -> str:
        """``/abs/path/evil.py:build``."""
        return f"{self.file}:build"

    @property
    def module_address(self) -> str:
        """``<package>.evil:build`` (found only with `pythonpath` on the path)."""
        return f"{self.package}.evil:build"

    def relative_address(self, cwd: Path) -> str:
        """The marker file's address relative to `cwd`: ``../../.../evil.py:build``."""
        return f"{os.path.relpath(self.file, cwd)}:build"

    def ran(self) -> list[str]:
        """Which of the marker's files exist: [] when none of its code ran."""
        return [p.name for p in (self.imported, self.built) if p.exists()]

    def clear(self) -> None:
        """Remove the marker's files (to look again after another command)."""
        for path in (self.imported, self.built):
            path.unlink(missing_ok=True)


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///path.db`` store."""
    assert url.startswith("sqlite:///"), url
    return Path(url[len("sqlite:///") :])


def retarget(url: str, thread: str, address: str) -> int:
    """Make every checkpoint of `thread` say it ran on the graph at `address`.

    Returns:
        How many checkpoints were rewritten (more than 0, or the test set-up is wrong).
    """
    if url.startswith("sqlite:///"):
        with sqlite3.connect(sqlite_path(url)) as conn:
            changed = conn.execute(
                "UPDATE checkpoints SET metadata = CAST(json_set(CAST(metadata AS TEXT), ?, ?) "
                "AS BLOB) WHERE thread_id = ?",
                (f"$.{GRAPH_KEY}", address, thread),
            ).rowcount
    else:
        with psycopg.connect(url) as conn:
            changed = conn.execute(
                "UPDATE checkpoints SET metadata = jsonb_set(metadata, %s, to_jsonb(%s::text)) "
                "WHERE thread_id = %s",
                ([GRAPH_KEY], address, thread),
            ).rowcount
    assert changed > 0, f"no checkpoint of thread {thread!r} in {url}"
    return changed


def stored(url: str, thread: str) -> dict[str, Any]:
    """Every row the store holds for `thread`: its checkpoints (in id order) and the
    writes pending on them; equal before and after a command that changed nothing."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(sqlite_path(url)) as conn:
            checkpoints = conn.execute(
                "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, "
                "CAST(metadata AS TEXT) FROM checkpoints WHERE thread_id = ? "
                "ORDER BY checkpoint_id",
                (thread,),
            ).fetchall()
            writes = conn.execute(
                "SELECT checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value "
                "FROM writes WHERE thread_id = ? ORDER BY checkpoint_id, task_id, idx",
                (thread,),
            ).fetchall()
        return {"checkpoints": checkpoints, "writes": writes}
    with psycopg.connect(url) as conn:
        checkpoints = conn.execute(
            "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint::text, "
            "metadata::text FROM checkpoints WHERE thread_id = %s ORDER BY checkpoint_id",
            (thread,),
        ).fetchall()
        writes = conn.execute(
            "SELECT checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob "
            "FROM checkpoint_writes WHERE thread_id = %s ORDER BY checkpoint_id, task_id, idx",
            (thread,),
        ).fetchall()
        blobs = conn.execute(
            "SELECT checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs "
            "WHERE thread_id = %s ORDER BY checkpoint_ns, channel, version",
            (thread,),
        ).fetchall()
    return {"checkpoints": checkpoints, "writes": writes, "blobs": blobs}


def threads(url: str) -> list[str]:
    """The thread ids of every run a SQLite store holds, sorted."""
    with sqlite3.connect(sqlite_path(url)) as conn:
        rows = conn.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall()
    return sorted(str(row[0]) for row in rows)


def metadata_of(url: str, thread: str) -> list[dict[str, Any]]:
    """The metadata of each checkpoint of `thread`, as stored (to check a tampering took)."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(sqlite_path(url)) as conn:
            rows = conn.execute(
                "SELECT CAST(metadata AS TEXT) FROM checkpoints WHERE thread_id = ?", (thread,)
            ).fetchall()
        return [json.loads(row[0]) for row in rows]
    with psycopg.connect(url) as conn:
        found = conn.execute(
            "SELECT metadata FROM checkpoints WHERE thread_id = %s", (thread,)
        ).fetchall()
    return [dict(row[0]) for row in found]
