"""`thinkgraph serve` on a port that is taken says so in one line and exits 2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")


def test_serve_on_a_port_in_use_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["Thought: done\nFinal Answer: 1"]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    env["PYTHONPATH"] = str(ROOT)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [THINKGRAPH, "serve", "--port", str(port), "--tools", "calculator",
             "--script", str(script), "--store", f"sqlite:///{tmp_path / 'runs.db'}"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: port {port} on 127.0.0.1 is in use; pick another with --port"
    ]
