"""``python -m bench.fleet``: workers on PostgreSQL, as a platform engineer runs them.

A batch of runs is submitted to a fresh queue and real ``thinkgraph worker`` processes take
it: 1 worker × concurrency 50, 2 × 25 and 4 × 10. Each run asks the loopback model server
(`bench.model_server`, L = 0.5 s per answer) twice: a call to `add`, then the answer.
Printed per setting, as a markdown table:

- runs/s: the batch's runs over the time from its first submission to its last run done;
- p50 / p95: a run's time from its submission to its job's success (Procrastinate's event);
- connections per worker, the most one worker held at once, counted two ways every 50 ms:
  by the ``application_name`` its store URL gives it (``pg_stat_activity``), and by its own
  sockets to the server (``/proc``, Linux), which also counts a connection that renamed
  itself; and the bound the worker printed at its start, where it prints one.

``--tree PATH`` (repeatable) measures the thinkgraph checked out at PATH: the workers and
the submitter run with that tree first on their path, and use only the worker's command
line and `RunQueue.submit` (`bench.fleet_agent`), so any version with ``--concurrency``
can be compared; with several trees each setting alternates between them. Every run must
end done with the answer, or the scenario fails. Only loopback; at most 100 runs per
setting; every wait bounded; the batch's jobs and runs are deleted afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from bench.model_server import serve_model

__all__ = ["Measured", "loopback", "main", "measure", "setting", "summary"]

ROOT = Path(__file__).resolve().parent.parent
URL = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
SETTINGS = ((1, 50), (2, 25), (4, 10))
QUICK_SETTINGS = ((1, 4),)
MAX_RUNS = 100
READY_TIMEOUT_S = 120.0
"""How long workers and the submitter may take to import and connect."""
SAMPLE_EVERY_S = 0.05
HEARTBEAT_S = 0.5
"""Well under the stalled-after of any other worker on a shared database (the tests' are
1.5 s): a worker pruned by another as stalled fails its next job."""
ANSWER = "2"
_STARTED = "Starting worker on"
"""Procrastinate's log line once a worker's loop runs: it fetches jobs from then on."""
_BOUND = re.compile(r"at most (\d+) to PostgreSQL")


@dataclass(frozen=True, slots=True)
class Measured:
    """One batch through one fleet."""

    tree: str
    """The measured checkout: its commit, or its folder's name."""
    workers: int
    concurrency: int
    runs: int
    queue: str
    seconds: float
    """From the first submission to the last run done."""
    submit_s: float
    """Submitting the batch, one run after the other from one process."""
    p50_s: float
    p95_s: float
    named_peak: int
    """The most connections one worker held, by its application_name."""
    socket_peak: int
    """The most connections one worker held, by its own sockets to the server."""
    bound: int | None
    """The connections the worker said it holds at most, if it said."""
    load: float
    """The machine's load average (1 minute) when the batch was submitted."""


def setting(text: str) -> tuple[int, int]:
    """``2x25`` → (2 workers, concurrency 25)."""
    found = re.fullmatch(r"\s*(\d+)\s*[x×X]\s*(\d+)\s*", text)
    if not found or min(int(found[1]), int(found[2])) < 1:
        raise ValueError(f"{text!r}: give WORKERSxCONCURRENCY, e.g. 2x25")
    return int(found[1]), int(found[2])


def loopback(url: str) -> str:
    """`url` if its server is on this machine (loopback or a local socket), else refused."""
    host = str(conninfo_to_dict(url).get("host") or "")
    if host and host not in ("127.0.0.1", "localhost", "::1") and not host.startswith("/"):
        raise ValueError(f"the fleet bench runs on loopback only; {host!r} is not")
    return url


def tree_label(tree: Path) -> str:
    """A checkout's short commit (no machine path in a report), else its folder's name."""
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip() if done.returncode == 0 else tree.name


# -- counting connections ------------------------------------------------------------------


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    return inodes


def _server_sockets(port: int) -> set[str]:
    """Inodes of the established TCP connections to `port` (any process's)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                remote, state, inode = fields[2], fields[3], fields[9]
                if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port:
                    found.add(inode)
    return found


class Sampler:
    """Every `SAMPLE_EVERY_S`, each worker's connections: by name and by socket."""

    def __init__(self, url: str, names: Sequence[str], pids: Sequence[int]) -> None:
        self.url, self.names, self.pids = url, list(names), list(pids)
        self.port = conninfo_to_dict(url).get("port") or 5432
        self.named = dict.fromkeys(self.names, 0)
        self.sockets = dict.fromkeys(self.names, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        with psycopg.connect(self.url, autocommit=True, application_name="bench-fleet") as c:
            while not self._stop.is_set():
                rows = c.execute(
                    "SELECT application_name, count(*) FROM pg_stat_activity "
                    "WHERE application_name = ANY(%s) GROUP BY 1",
                    (self.names,),
                ).fetchall()
                for name, count in rows:
                    self.named[name] = max(self.named[name], int(count))
                server = _server_sockets(int(self.port))
                for name, pid in zip(self.names, self.pids, strict=True):
                    held = len(_socket_inodes(pid) & server)
                    self.sockets[name] = max(self.sockets[name], held)
                self._stop.wait(SAMPLE_EVERY_S)


# -- the children --------------------------------------------------------------------------


def _env(
    tree: Path, scratch: Path, store: str, latency_s: float, model_url: str | None
) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(scratch), str(tree)])}
    env.update(FLEET_STORE=store, FLEET_LATENCY_S=str(latency_s))
    env.pop("FLEET_MODEL_URL", None)
    if model_url:
        env["FLEET_MODEL_URL"] = model_url
    # Without it, importing litellm fetches its cost map from GitHub (with retries).
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return env


def _line(stream: IO[str], deadline: float, what: str) -> str:
    """The next line of a child's stdout, within the deadline."""
    ready, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
    line = stream.readline() if ready else ""
    if not line:
        raise RuntimeError(f"{what}: no answer from the submitter in time")
    return line.strip()


def _tail(path: Path, lines: int = 15) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def _wait_started(logs: Sequence[Path], workers: Sequence[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        texts = [log.read_text(errors="replace") if log.exists() else "" for log in logs]
        if all(_STARTED in text for text in texts):
            return
        for log, worker in zip(logs, workers, strict=True):
            if worker.poll() is not None:
                raise RuntimeError(f"a worker exited ({worker.returncode}):\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the workers did not start within {READY_TIMEOUT_S:.0f} s")
        time.sleep(0.1)


def _ends(url: str, queue: str) -> tuple[dict[str, float], list[str]]:
    """When each run's job succeeded (epoch seconds), and the threads whose job failed."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT j.lock, j.status::text, extract(epoch FROM max(e.at) "
            "FILTER (WHERE e.type = 'succeeded')) FROM procrastinate_jobs j "
            "LEFT JOIN procrastinate_events e ON e.job_id = j.id "
            "WHERE j.queue_name = %s GROUP BY j.id",
            (queue,),
        ).fetchall()
    ends = {str(lock): float(at) for lock, status, at in rows if status == "succeeded"}
    failed = [str(lock) for lock, status, _ in rows if status in ("failed", "aborted")]
    return ends, failed


def _clean(url: str, queue: str, threads: list[str]) -> None:
    """Delete the batch from the shared database: its jobs, and every row of its threads."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM procrastinate_jobs WHERE queue_name = %s", (queue,))
        tables = conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'thread_id' "
            "AND table_schema = current_schema() AND table_name IN (SELECT table_name FROM "
            "information_schema.tables WHERE table_type = 'BASE TABLE')"
        ).fetchall()
        for (table,) in tables:
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE thread_id = ANY(%s)").format(sql.Identifier(table)),
                (threads,),
            )


def _stop(processes: Sequence[subprocess.Popen[Any]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def measure(
    tree: Path,
    workers: int,
    concurrency: int,
    runs: int,
    latency_s: float,
    *,
    store: str = URL,
    model_url: str | None = None,
) -> Measured:
    """Submit `runs` runs to a fresh queue served by `workers` × `concurrency` workers of the
    thinkgraph checked out at `tree`; return once every run is done (or raise)."""
    scratch = Path(tempfile.mkdtemp(prefix="thinkgraph-fleet-"))
    shutil.copy(Path(__file__).with_name("fleet_agent.py"), scratch / "fleet_agent.py")
    env = _env(tree, scratch, store, latency_s, model_url)
    queue = f"fleet-{uuid.uuid4().hex[:8]}"
    names = [f"{queue}-w{i}" for i in range(workers)]
    threads = [f"{queue}-{i:03d}" for i in range(runs)]
    logs = [scratch / f"{name}.log" for name in names]
    sep = "&" if "?" in store else "?"
    started: list[subprocess.Popen[Any]] = []
    try:
        submitter = subprocess.Popen(
            [sys.executable, "fleet_agent.py", queue, ",".join(threads)],
            cwd=scratch, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        started.append(submitter)
        for name, log in zip(names, logs, strict=True):
            # The worker's queue and its agent's store both connect under its name.
            named = f"{store}{sep}application_name={name}"
            with open(log, "wb") as out:
                started.append(subprocess.Popen(
                    [sys.executable, "-c", "from thinkgraph.cli import main; main()", "worker",
                     "--agent", "fleet_agent:make_agent", "--store", named, "--queue", queue,
                     "--concurrency", str(concurrency), "--heartbeat", str(HEARTBEAT_S)],
                    cwd=scratch, env={**env, "FLEET_STORE": named}, stdout=out,
                    stderr=subprocess.STDOUT,
                ))  # fmt: skip
        assert submitter.stdin is not None and submitter.stdout is not None
        deadline = time.monotonic() + READY_TIMEOUT_S
        if _line(submitter.stdout, deadline, "opening the queue") != "ready":
            raise RuntimeError("the submitter did not open the queue")
        _wait_started(logs, started[1:])
        with Sampler(store, names, [w.pid for w in started[1:]]) as sampler:
            load = os.getloadavg()[0]
            submitter.stdin.write("go\n")
            submitter.stdin.flush()
            timeout = time.monotonic() + READY_TIMEOUT_S + runs * 2 * latency_s
            submitted = json.loads(_line(submitter.stdout, timeout, "submitting"))
            submit_s = max(submitted.values()) - min(submitted.values())
            ends: dict[str, float] = {}
            while len(ends) < runs:
                if time.monotonic() > timeout:
                    raise RuntimeError(f"only {len(ends)} of {runs} runs finished in time")
                time.sleep(0.1)
                ends, failed = _ends(store, queue)
                if failed:
                    tails = "\n".join(_tail(log) for log in logs)
                    raise RuntimeError(f"{len(failed)} jobs failed, e.g. {failed[0]}:\n{tails}")
        submitter.stdin.write("check\n")
        submitter.stdin.flush()
        deadline = time.monotonic() + READY_TIMEOUT_S
        outcomes = json.loads(_line(submitter.stdout, deadline, "reading the runs"))
        wrong = [f"{t}: {o}" for t, o in outcomes.items() if o != ["done", ANSWER]]
        if wrong:
            raise RuntimeError(
                f"{len(wrong)} runs did not end done with {ANSWER!r}, e.g. {'; '.join(wrong[:3])}"
            )
        bounds = [int(m[1]) for log in logs if (m := _BOUND.search(log.read_text()))]
    finally:
        _stop(started)
        with contextlib.suppress(psycopg.Error):
            _clean(store, queue, threads)
        shutil.rmtree(scratch, ignore_errors=True)
    latencies = sorted(ends[t] - submitted[t] for t in threads)
    return Measured(
        tree_label(tree), workers, concurrency, runs, queue,
        seconds=max(ends.values()) - min(submitted.values()), submit_s=submit_s,
        p50_s=statistics.median(latencies), p95_s=latencies[round(0.95 * (runs - 1))],
        named_peak=max(sampler.named.values()), socket_peak=max(sampler.sockets.values()),
        bound=max(bounds) if bounds else None, load=load,
    )  # fmt: skip


# -- the command line ----------------------------------------------------------------------

HEADER = (
    "| tree | workers × conc. | runs | runs/s | p50 s | p95 s | submit s "
    "| conns/worker (name) | conns/worker (sockets) | bound | load |\n"
    "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
)


def row(m: Measured) -> str:
    """One measurement as a row of `HEADER`'s table."""
    bound = "–" if m.bound is None else str(m.bound)
    return (
        f"| {m.tree} | {m.workers} × {m.concurrency} | {m.runs} | {m.runs / m.seconds:.1f} "
        f"| {m.p50_s:.2f} | {m.p95_s:.2f} | {m.submit_s:.2f} | {m.named_peak} "
        f"| {m.socket_peak} | {bound} | {m.load:.1f} |"
    )


SUMMARY_HEADER = (
    "| tree | workers × conc. | rounds | runs/s, median (range) | p50 s | p95 s "
    "| conns/worker, most |\n|---|---|--:|--:|--:|--:|--:|"
)


def summary(measured: Sequence[Measured]) -> str:
    """The rounds of each tree and setting in one row: the medians of runs/s (with their
    range), p50 and p95, and the most connections one worker held (by its sockets)."""
    groups: dict[tuple[str, int, int], list[Measured]] = {}
    for m in measured:
        groups.setdefault((m.tree, m.workers, m.concurrency), []).append(m)
    lines = [SUMMARY_HEADER]
    for (tree, workers, concurrency), ms in groups.items():
        rates = [m.runs / m.seconds for m in ms]
        lines.append(
            f"| {tree} | {workers} × {concurrency} | {len(ms)} "
            f"| {statistics.median(rates):.1f} ({min(rates):.1f}–{max(rates):.1f}) "
            f"| {statistics.median(m.p50_s for m in ms):.2f} "
            f"| {statistics.median(m.p95_s for m in ms):.2f} "
            f"| {max(m.socket_peak for m in ms)} |"
        )
    return "\n".join(lines)


@contextlib.contextmanager
def _model(use: bool, latency_s: float) -> Iterator[str | None]:
    if not use:
        yield None
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with serve_model(latency_s, env=env) as url:
        yield url


def main(argv: list[str] | None = None) -> list[Measured]:
    """Run the settings on every tree, print the table; return the measurements."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.fleet",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument(
        "--quick", action="store_true",
        help="a smoke run: 1 worker × 4, 8 runs, no model server (a scripted model and a "
        "tool that waits 0.1 s)",
    )  # fmt: skip
    parser.add_argument("--runs", type=int, help=f"runs per setting (100; at most {MAX_RUNS})")
    parser.add_argument("--latency", type=float, help="the model's seconds per answer (0.5)")
    parser.add_argument(
        "--settings", nargs="+", type=setting, metavar="WxC",
        help="workers × concurrency per setting (1x50 2x25 4x10)",
    )  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every setting (1)")
    parser.add_argument(
        "--tree", type=Path, action="append",
        help="a thinkgraph checkout to measure (repeatable; default this one)",
    )  # fmt: skip
    parser.add_argument(
        "--store", default=URL, type=loopback, help="the PostgreSQL database (loopback)"
    )
    args = parser.parse_args(argv)
    settings = args.settings or (QUICK_SETTINGS if args.quick else SETTINGS)
    runs = max(1, min(args.runs or (8 if args.quick else MAX_RUNS), MAX_RUNS))
    latency_s = args.latency if args.latency is not None else (0.1 if args.quick else 0.5)
    trees = [t.resolve() for t in args.tree or [ROOT]]
    print(HEADER, flush=True)
    measured = []
    with _model(not args.quick, latency_s) as model_url:
        for round_ in range(max(1, args.repeat)):
            for workers, concurrency in settings:
                order = trees if round_ % 2 == 0 else trees[::-1]
                for tree in order:
                    m = measure(
                        tree, workers, concurrency, runs, latency_s,
                        store=args.store, model_url=model_url,
                    )  # fmt: skip
                    measured.append(m)
                    print(row(m), flush=True)
    if len(measured) > len(settings):
        print(f"\n{summary(measured)}", flush=True)
    return measured


if __name__ == "__main__":
    main()
