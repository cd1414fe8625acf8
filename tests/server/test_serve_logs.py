"""`thinkgraph serve`'s logs: no secret of a task, an edit or a token at DEBUG; levels and
JSON lines as on the worker."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from tests.server.support import Served

PASSWORD = "hunter2-in-a-task"
KEY = "sk-live0123456789abcdefABCDEF"
EDIT_KEY = "sk-edit9876543210zyxwvuTSRQ"
TOKEN = "s3cret-token-of-the-server"


def _wait_status(client: httpx.Client, thread: str, status: str) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        shown = client.get(f"/runs/{thread}").json()
        if shown.get("status") == status:
            return shown  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"run {thread} never reached {status}")


def _drive(served: Served) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.url, headers=headers) as client:
        task = f'add then publish {{"password": "{PASSWORD}"}} with key {KEY}'
        assert client.post("/runs", json={"task": task, "thread_id": "s1"}).status_code == 202
        paused = _wait_status(client, "s1", "paused")
        call_id = paused["pending"][0]["call_id"]
        edit = {"action": "edit", "args": {"report": f"key {EDIT_KEY}"}}
        answer = client.post("/runs/s1/resume", json={"decisions": {call_id: edit}})
        assert answer.status_code == 202, answer.text
        _wait_status(client, "s1", "done")
    httpx.get(served.url + f"/?token={TOKEN}", follow_redirects=False)


def test_serve_at_debug_logs_no_secret(tmp_path: Path) -> None:
    served = Served(tmp_path, ["--log-level", "debug"], token=TOKEN)
    try:
        _drive(served)
    finally:
        output = served.stop()
    assert '"POST /runs HTTP/1.1" 202' in output  # the access log is on
    for secret in (PASSWORD, KEY, EDIT_KEY, TOKEN, "hunter2"):
        assert secret not in output, f"{secret!r} is in the server's log:\n{output}"


def test_serve_logs_json_lines(tmp_path: Path) -> None:
    served = Served(tmp_path, ["--log-format", "json"], token=TOKEN)
    try:
        _drive(served)
    finally:
        output = served.stop()
    lines = [json.loads(line) for line in output.splitlines() if line.strip()]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines), output
    assert any(line["logger"] == "uvicorn.access" for line in lines)
    assert TOKEN not in output and KEY not in output
