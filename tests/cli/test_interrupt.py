"""Ctrl-C and a closed pipe, with the real `thinkgraph` script in a process of its own.

The run's tool (`sample_tools.nap`) is an async tool that sleeps $THINKGRAPH_TEST_NAP_S
seconds, so Ctrl-C (SIGINT) arrives while the run is inside it. What the other commands
say of the interrupted run, and the resume that finishes it, are called in this process.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.cli.sample_tools import NAP_S
from tests.support.cli import thinkgraph_here

ROOT = Path(__file__).resolve().parents[2]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
NAP = "tests.cli.sample_tools:nap"
REPLIES = [
    'Thought: rest first\nAction: nap\nAction Input: {"minutes": 5}',
    "Thought: rested\nFinal Answer: rested",
]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(REPLIES))
    return path


def _env(nap_s: float) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    return {**env, "PYTHONPATH": str(ROOT), NAP_S: str(nap_s)}


def _as_in_a_terminal() -> None:
    """Ctrl-C's default action, as a terminal's foreground command has it. A process
    started with SIGINT ignored keeps ignoring it (Python does, as `nohup` asks), and a
    suite started from a background job (``make test &``, a CI step) hands that on."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Started:
    """A `thinkgraph` command in the background, its stdout read line by line."""

    def __init__(self, *args: str, nap_s: float) -> None:
        self.process = subprocess.Popen(
            [THINKGRAPH, *args], cwd=ROOT, env=_env(nap_s), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, preexec_fn=_as_in_a_terminal,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + 60
        while not any(text in line for line in self.seen):
            assert time.monotonic() < deadline, f"never printed {text!r}: {self.seen}"
            try:
                self.seen.append(self.lines.get(timeout=0.1))
            except queue.Empty:
                assert self.process.poll() is None, (self.seen, self.process.stderr)

    def interrupt(self) -> tuple[int, str]:
        """Ctrl-C, as a terminal sends it: (exit code, stderr)."""
        assert self.process.poll() is None, "the command ended before it was interrupted"
        self.process.send_signal(signal.SIGINT)
        _, err = self.process.communicate(timeout=60)
        self.reader.join(timeout=10)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        # Its stdout, after stderr, says what the command did instead when it fails.
        return self.process.returncode, err + "\n--- stdout:\n" + "".join(self.seen)


def test_ctrl_c_says_how_to_continue_exits_130_and_resume_finishes_the_run(
    script: Path, sqlite_url: str
) -> None:
    flags = ["--store", sqlite_url, "--tools", NAP, "--script", str(script)]
    started = Started("run", "rest, then answer", "--thread", "nap1", *flags, nap_s=600)
    try:
        started.wait_for("tool_call   nap(")  # act has begun: the run is inside the tool
        time.sleep(0.5)
        busy = thinkgraph_here("runs", "--store", sqlite_url)
        assert busy.stdout.split()[:2] == ["nap1", "running"], busy.stdout
        code, err = started.interrupt()
    finally:
        started.process.kill()
    hint = f"thinkgraph resume nap1 --store {sqlite_url} --tools {NAP} --script {script}"
    assert code == 130, err
    assert f"interrupted at step 1; continue with: {hint}" in err.splitlines(), err
    assert "Traceback" not in err and "Task was destroyed" not in err, err

    listed = thinkgraph_here("runs", "--store", sqlite_url)
    assert "nap1             stopped (resume to continue)" in listed.stdout, listed.stdout
    said = thinkgraph_here("pending", "nap1", "--store", sqlite_url)
    assert said.stdout.startswith("thread nap1 is unfinished: no process advances it\n")

    again = Started("resume", "nap1", *flags, nap_s=600)  # interrupted again, while resumed
    try:
        again.wait_for("tool_call   nap(")
        time.sleep(0.5)
        code, err = again.interrupt()
    finally:
        again.process.kill()
    assert code == 130, err
    assert f"interrupted at step 1; continue with: {hint}" in err.splitlines(), err

    done = thinkgraph_here("resume", "nap1", *flags, cwd=ROOT, env={NAP_S: "0"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "observation slept 5 minutes" in done.stdout and "answer: rested" in done.stdout


def test_a_closed_pipe_ends_the_command_quietly(script: Path, sqlite_url: str) -> None:
    flags = ["--store", sqlite_url, "--tools", NAP, "--script", str(script)]
    process = subprocess.Popen(
        [THINKGRAPH, "run", "rest, then answer", *flags], cwd=ROOT, env=_env(1),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().startswith("#0")  # like `| head -1`: one line,
        process.stdout.close()  # then nobody reads
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode in (0, 141), err
    assert err == "", err
