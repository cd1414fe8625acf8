"""Real `thinkgraph` commands started at the same moment, to race them.

`slow_append` is the tool raced over: approval needed, one line per call appended to the
file named by $THINKGRAPH_TEST_EFFECTS, then a sleep ($THINKGRAPH_TEST_TOOL_SLEEP seconds)
so a second process arrives while the first is inside the tool.

Started as ``python -m tests.support.race``, this module is a fork server: it imports the
CLI once, then for each line of JSON on stdin (a list of commands, each
``{"argv": [...], "env": {...}, "out": "path"}``) forks one process per command, starts
them together, and answers with one line of JSON: each one's exit code. Every child runs
`thinkgraph.cli.main` as the `thinkgraph` script does, in a process of its own, without
paying for the imports again (a race of 40 commands would otherwise be mostly imports).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from thinkgraph import tool

EFFECTS = "THINKGRAPH_TEST_EFFECTS"
SLEEP = "THINKGRAPH_TEST_TOOL_SLEEP"


@tool(requires_approval=True, side_effects=True)
def slow_append(text: str) -> str:
    """Append a line to the effects file, then take a while."""
    with open(os.environ[EFFECTS], "a") as f:
        f.write(f"{text} {os.getpid()}\n")
    time.sleep(float(os.environ.get(SLEEP, "0.6")))
    return f"appended {text}"


REPLIES = [
    'Thought: record it\nAction: slow_append\nAction Input: {"text": "once"}',
    "Thought: recorded\nFinal Answer: recorded",
]


_ROOT = Path(__file__).resolve().parents[2]


class Racer:
    """Starts commands together in fresh processes forked by this module's server."""

    def __init__(self, tmp: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(_ROOT)}
        env.pop("THINKGRAPH_INTERACTIVE", None)
        self.tmp = tmp
        self.server = subprocess.Popen(
            [sys.executable, "-m", "tests.support.race"],
            cwd=_ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def start(self, commands: list[tuple[list[str], dict[str, str]]]) -> list[tuple[int, str]]:
        """Run `commands` (argv, extra env) at the same moment: (exit code, output) each."""
        assert self.server.stdin is not None and self.server.stdout is not None
        outs = [self.tmp / f"out-{uuid.uuid4().hex}" for _ in commands]
        pairs = zip(commands, outs, strict=True)
        line = [{"argv": a, "env": e, "out": str(o)} for (a, e), o in pairs]
        self.server.stdin.write(json.dumps(line) + "\n")
        self.server.stdin.flush()
        codes = json.loads(self.server.stdout.readline())
        return [(code, out.read_text()) for code, out in zip(codes, outs, strict=True)]

    def close(self) -> None:
        if self.server.stdin is not None:
            self.server.stdin.close()
        self.server.wait(timeout=10)


def _child(command: dict[str, object], start_at: float) -> None:
    from thinkgraph.cli import main

    out = os.open(str(command["out"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.environ.update(command.get("env") or {})  # type: ignore[call-overload]
    sys.argv = ["thinkgraph", *command["argv"]]  # type: ignore[misc]
    time.sleep(max(0.0, start_at - time.time()))
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve() -> None:
    """Answer each line of commands on stdin with their exit codes, in order."""
    import thinkgraph.agent
    import thinkgraph.cli
    import thinkgraph.cli._progress
    import thinkgraph.graphs.react
    import thinkgraph.storage.lease
    import thinkgraph.views  # noqa: F401

    for line in sys.stdin:
        commands = json.loads(line)
        start_at = time.time() + 0.05
        children = []
        for command in commands:
            pid = os.fork()
            if pid == 0:
                _child(command, start_at)
            children.append(pid)
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
        print(json.dumps(codes), flush=True)


if __name__ == "__main__":
    serve()
