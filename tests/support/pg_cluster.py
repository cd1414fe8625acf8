"""A PostgreSQL cluster of a test's own, which the test may stop and start at will.

The shared server of the test suite must never be restarted (other tests use it at the
same time), so a test of what a database restart does starts its own: `initdb` in a
temporary folder, a free port on 127.0.0.1, trust auth, started and stopped with `pg_ctl`
as the ``postgres`` user when the tests run as root. The fixture stops it and removes its
folder afterwards, whatever the test did.

    def test_x(pg_cluster: PgCluster) -> None:
        url = pg_cluster.url          # postgresql://postgres@127.0.0.1:<port>/postgres
        pg_cluster.restart()          # stop -m fast, then start
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["PgCluster", "pg_cluster"]

BIN = Path(os.environ.get("THINKGRAPH_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """A private PostgreSQL cluster: `start`, `stop`, `restart`, `remove`."""

    def __init__(self, max_connections: int = 100) -> None:
        if not (BIN / "initdb").exists():
            pytest.skip(f"no PostgreSQL server binaries in {BIN}")
        self.root = Path(tempfile.mkdtemp(prefix="tg-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(BIN / "initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8")
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.root}'\nmax_connections = {max_connections}\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
            )

    def _run(self, *command: object, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self._as_postgres, *map(str, command)],
            check=check,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def start(self) -> None:
        """Start the server and wait until it takes connections."""
        log = self.root / "server.log"
        self._run(BIN / "pg_ctl", "-D", self.data, "-l", log, "-w", "-t", "30", "start")
        deadline = time.monotonic() + 30
        while self._run(
            BIN / "pg_isready", "-h", "127.0.0.1", "-p", self.port, check=False
        ).returncode:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the private cluster did not start: {log.read_text()}")
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server as `pg_ctlcluster … stop -m fast` does: clients are cut off.

        On a loaded machine a fast stop can outlast pg_ctl's wait; the server is then
        stopped at once (`-m immediate`), which cuts the clients off the same way.
        """
        fast = self._run(
            BIN / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "-t", "20", "stop", check=False
        )
        if fast.returncode == 0:
            return
        import sys

        print(
            "fast stop failed:", fast.stdout, fast.stderr,
            (self.root / "server.log").read_text()[-3000:], file=sys.stderr,
        )  # fmt: skip
        now = self._run(
            BIN / "pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop", check=False
        )
        if (
            now.returncode != 0
            and self._run(BIN / "pg_ctl", "-D", self.data, "status", check=False).returncode != 3
        ):  # 3: not running
            raise RuntimeError(
                f"the private cluster did not stop: {fast.stderr.strip()} / {now.stderr.strip()}"
            )

    def restart(self, down_s: float = 0.0) -> None:
        """Stop, stay down `down_s` seconds, start again."""
        self.stop()
        time.sleep(down_s)
        self.start()

    def remove(self) -> None:
        """Stop the server if it runs, and remove its folder."""
        self._run(BIN / "pg_ctl", "-D", self.data, "-m", "immediate", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def pg_cluster() -> Iterator[PgCluster]:
    """A started private PostgreSQL cluster, removed after the test."""
    cluster = PgCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()
