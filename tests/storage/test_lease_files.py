"""Where a SQLite store keeps its leases: `runs.db-lease-…` files beside the database,
there only while a thread is held, so `rm runs.db*` removes all a store is.

One file per thread (not one folder of them) and removed when let go; one holder at a
time all the same, for threads of one process and for processes racing on one thread
while files come and go.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.errors import ThreadBusyError
from thinkgraph.storage import close_checkpointer, open_checkpointer
from thinkgraph.storage.lease import FileLeases, is_held, leases_for, thread_lease

ROOT = Path(__file__).resolve().parents[2]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


REPLIES = [
    'Thought: add\nAction: add\nAction Input: {"a": 1, "b": 2}',
    "Thought: done\nFinal Answer: 3",
]


def store_files(folder: Path) -> list[str]:
    return sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())


def test_a_held_thread_has_one_lease_file_beside_the_database_gone_once_let_go(
    tmp_path: Path,
) -> None:
    saver = open_checkpointer(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        with thread_lease(saver, "t1"):
            held = [name for name in store_files(tmp_path) if "lease" in name]
            assert len(held) == 1 and held[0].startswith("runs.db-lease-"), held
            assert is_held(saver, "t1")
        assert [name for name in store_files(tmp_path) if "lease" in name] == []
        assert not is_held(saver, "t1")
    finally:
        close_checkpointer(saver)


def test_rm_runs_db_star_removes_everything_a_store_made(tmp_path: Path) -> None:
    with Agent(ScriptedModel(REPLIES), [add], store=f"sqlite:///{tmp_path / 'runs.db'}") as agent:
        assert agent.run("add", thread_id="t1").answer == "3"
        assert all(not p.is_dir() for p in tmp_path.iterdir()), store_files(tmp_path)
    for path in tmp_path.glob("runs.db*"):  # what `rm runs.db*` does: files only
        if not path.is_dir():
            path.unlink()
    assert store_files(tmp_path) == []


def test_a_lease_file_left_by_a_killed_holder_is_taken_over(tmp_path: Path) -> None:
    saver = open_checkpointer(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        leases = leases_for(saver)
        assert isinstance(leases, FileLeases)
        # What a holder killed mid-run leaves: its file, with its note, and no lock.
        leases.path("t1").write_text('{"pid": 1, "since": 1.0, "thread_id": "t1"}')
        assert not is_held(saver, "t1")
        with thread_lease(saver, "t1"):
            assert is_held(saver, "t1")
        assert not leases.path("t1").exists()
    finally:
        close_checkpointer(saver)


@pytest.mark.timeout(60)
def test_threads_racing_for_one_lease_hold_it_one_at_a_time(tmp_path: Path) -> None:
    saver = open_checkpointer(f"sqlite:///{tmp_path / 'runs.db'}")
    inside = 0
    most = 0
    taken = 0
    guard = threading.Lock()
    stop = time.monotonic() + 2.0

    def contend() -> None:
        nonlocal inside, most, taken
        while time.monotonic() < stop:
            try:
                with thread_lease(saver, "t1", nested=False):
                    with guard:
                        inside += 1
                        most = max(most, inside)
                        taken += 1
                    time.sleep(0.0005)
                    with guard:
                        inside -= 1
            except ThreadBusyError:
                pass

    try:
        workers = [threading.Thread(target=contend) for _ in range(6)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(30)
        assert most == 1
        assert taken > 50  # the lease did change hands, many times
    finally:
        close_checkpointer(saver)


RACE = textwrap.dedent(
    """
    import os, sys, time
    from thinkgraph.errors import ThreadBusyError
    from thinkgraph.storage import open_checkpointer
    from thinkgraph.storage.lease import thread_lease

    url, log = sys.argv[1], sys.argv[2]
    saver = open_checkpointer(url)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    me = str(os.getpid()).encode()
    print("ready", flush=True)
    until = time.time() + float(sys.stdin.readline())  # all start together
    while time.time() < until:
        try:
            with thread_lease(saver, "t1"):
                os.write(fd, b"in " + me + b"\\n")
                time.sleep(0.001)
                os.write(fd, b"out " + me + b"\\n")
        except ThreadBusyError:
            pass
    """
)


@pytest.mark.timeout(120)
def test_processes_racing_for_one_lease_hold_it_one_at_a_time(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    close_checkpointer(open_checkpointer(url))  # made once, before the race
    log = tmp_path / "log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    command = [sys.executable, "-c", RACE, url, str(log)]
    racers = [subprocess.Popen(command, env=env, **pipes) for _ in range(3)]
    for racer in racers:
        assert racer.stdout is not None and racer.stdout.readline() == "ready\n"
    for racer in racers:
        racer.communicate("2.0\n", timeout=60)
        assert racer.returncode == 0
    lines = log.read_text().splitlines()
    assert len(lines) > 20  # held many times
    holder = None
    for line in lines:  # every "in" is followed by the same holder's "out"
        kind, pid = line.split()
        if kind == "in":
            assert holder is None, "two processes held the lease at once"
            holder = pid
        else:
            assert holder == pid
            holder = None
    assert holder is None
    assert [name for name in store_files(tmp_path) if "lease" in name] == []
