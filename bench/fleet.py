"""``python -m bench.fleet``: workers on PostgreSQL, as a platform engineer runs them.

A batch of runs is submitted to a fresh queue and real ``thinkgraph worker`` processes
take it: 1 worker × concurrency 50, 2 × 25 and 4 × 10. Each run asks the loopback model
(`bench.model_server`, an OpenAI chat-completions server answering after `--latency`
seconds) twice, through litellm: one call to a tool, then the answer. Printed per setting:
runs per second from submission to the last run done, the p50 and p95 time from a run's
submission to its end, and the most PostgreSQL connections one worker held (its sockets
to the server's port, sampled from /proc every 50 ms: Linux only).

``--tree PATH`` measures the thinkgraph checked out at PATH (its package first on the
path): the same batch on another version. Only loopback; bounded; stops by itself.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench.model_server import serve_model

URL = os.environ.get("THINKGRAPH_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
SETTINGS = ((1, 50), (2, 25), (4, 10))

AGENT = '''
import os
from thinkgraph import Agent, StepLimits, tool
from thinkgraph.llm.litellm import LiteLLMModel

@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

def make_agent():
    model = LiteLLMModel("openai/bench-model", api_base=os.environ["FLEET_API_BASE"],
                         api_key="bench", num_retries=0, timeout=300.0)
    return Agent(model, [add], limits=StepLimits(max_steps=4), store=os.environ["FLEET_STORE"])
'''


@dataclass
class Measured:
    workers: int
    concurrency: int
    runs: int
    seconds: float
    p50_s: float
    p95_s: float
    connections: int


def _connections(pid: int, port: int = 5432) -> int:
    """The TCP connections process `pid` holds open to `port` (Linux: its sockets in
    /proc, matched against the established connections), whatever names them."""
    try:
        inodes = {
            os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1]
            for fd in os.listdir(f"/proc/{pid}/fd")
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")
        }
    except OSError:
        return 0
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                remote, state, inode = fields[2], fields[3], fields[9]
                if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port:
                    count += inode in inodes
    return count


def _workers_now() -> int:
    with psycopg.connect(URL) as conn:
        row = conn.execute("SELECT count(*) FROM procrastinate_workers").fetchone()
    return int(row[0]) if row else 0


def _registered(count: int, before: int, timeout_s: float = 60.0) -> None:
    """Wait until `count` more workers registered with Procrastinate than `before`."""
    deadline = time.monotonic() + timeout_s
    while _workers_now() < before + count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{count} workers did not start within {timeout_s:.0f} s")
        time.sleep(0.1)


def _submit(env: dict[str, str], queue: str, threads: list[str]) -> dict[str, float]:
    """Submit the batch from a child process (on the measured tree): submission times."""
    code = (
        "import sys, time, json\n"
        "from fleet_agent import make_agent\n"
        "from thinkgraph.worker import RunQueue\n"
        "queue, threads = sys.argv[1], sys.argv[2].split(',')\n"
        "at = {}\n"
        "with make_agent() as agent, RunQueue(agent, queue) as runs:\n"
        "    for t in threads:\n"
        "        at[t] = time.time(); runs.submit('wait, then answer', t)\n"
        "print(json.dumps(at))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, queue, ",".join(threads)],
        env=env, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    import json

    return {k: float(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def _ends(threads: list[str]) -> dict[str, float]:
    """When each run's job succeeded (epoch seconds), by Procrastinate's own events."""
    with psycopg.connect(URL) as conn:
        rows = conn.execute(
            "SELECT j.lock, extract(epoch FROM max(e.at)) FROM procrastinate_jobs j "
            "JOIN procrastinate_events e ON e.job_id = j.id "
            "WHERE j.lock = ANY(%s) AND e.type = 'succeeded' GROUP BY j.lock",
            (threads,),
        ).fetchall()
    return {str(r[0]): float(r[1]) for r in rows}


def measure(
    tree: Path | None, workers: int, concurrency: int, runs: int, latency_s: float
) -> Measured:
    here = Path(tempfile.mkdtemp(prefix="fleet-"))
    (here / "fleet_agent.py").write_text(AGENT)
    paths = [str(here), *([str(tree)] if tree else [])]
    queue = f"fleet-{uuid.uuid4().hex[:8]}"
    names = [f"{queue}-w{i}" for i in range(workers)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "FLEET_STORE": URL}
    threads = [f"{queue}-{i:04d}" for i in range(runs)]
    started: list[subprocess.Popen[bytes]] = []
    peak: dict[str, int] = dict.fromkeys(names, 0)
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            for name, process in zip(names, started, strict=True):
                peak[name] = max(peak[name], _connections(process.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    before = _workers_now()
    bench_root = str(Path(__file__).resolve().parents[1])
    held = contextlib.ExitStack()  # the model server, closed after the workers
    url = held.enter_context(serve_model(latency_s, env={**os.environ, "PYTHONPATH": bench_root}))
    env["FLEET_API_BASE"] = f"{url}/v1"
    thinkgraph = [sys.executable, "-c", "from thinkgraph.cli import main; main()"]
    try:
        for name in names:
            store = f"{URL}?application_name={name}"
            started.append(subprocess.Popen(
                [*thinkgraph, "worker", "--agent", "fleet_agent:make_agent", "--store", store,
                 "--queue", queue, "--concurrency", str(concurrency), "--heartbeat", "2"],
                env={**env, "FLEET_STORE": store}, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ))  # fmt: skip
        _registered(len(names), before)  # the workers imported, connected, and listen
        sampler.start()
        begun = time.time()
        submitted = _submit(env, queue, threads)
        deadline = time.monotonic() + 120 + runs * latency_s
        ends: dict[str, float] = {}
        while len(ends) < runs:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(ends)} of {runs} runs finished in time")
            time.sleep(0.2)
            ends = _ends(threads)
        took = max(ends.values()) - begun
        latencies = sorted(ends[t] - submitted[t] for t in threads)
    finally:
        stop.set()
        for process in started:
            process.terminate()
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        held.close()
    return Measured(
        workers, concurrency, runs, took, statistics.median(latencies),
        latencies[int(0.95 * (len(latencies) - 1))], max(peak.values()),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__)
    parser.add_argument("--runs", type=int, default=100, help="runs per setting (100)")
    parser.add_argument("--latency", type=float, default=0.5, help="the tool's wait, s")
    parser.add_argument("--quick", action="store_true", help="1 worker × 4, 8 runs")
    parser.add_argument("--tree", type=Path, help="measure the thinkgraph checked out here")
    args = parser.parse_args(argv)
    settings = ((1, 4),) if args.quick else SETTINGS
    runs = 8 if args.quick else max(1, min(args.runs, 500))
    print(f"{'workers':>7} {'conc.':>5} {'runs':>5} {'runs/s':>7} {'p50 s':>6} {'p95 s':>6} "
          f"{'conns/worker':>12}")  # fmt: skip
    for workers, concurrency in settings:
        m = measure(args.tree, workers, concurrency, runs, args.latency)
        print(f"{m.workers:>7} {m.concurrency:>5} {m.runs:>5} {m.runs / m.seconds:>7.1f} "
              f"{m.p50_s:>6.2f} {m.p95_s:>6.2f} {m.connections:>12}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
