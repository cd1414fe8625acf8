"""A loopback OpenAI chat-completions server that answers after a fixed latency.

The concurrency scenario needs a model that is slow the way a real one is (each answer
takes L seconds) but costs nothing while it waits, so a thousand requests can wait at
once. Each request sleeps L seconds on the event loop, then answers the workload's
two-call ReAct script: a call to `add` when the conversation has no assistant turn yet,
the final answer once it has one.

It runs in its own process (``python -m bench.model_server --latency L``), so its CPU is
not charged to the system being measured; `serve_model` starts it and stops it.

Example:
    >>> with serve_model(latency_s=0.5) as url:  # doctest: +SKIP
    ...     api_base = url + "/v1"
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

__all__ = ["FINAL_ANSWER", "FIRST_REPLY", "LAST_REPLY", "serve_model"]

FIRST_REPLY = 'Thought: add one and one\nAction: add\nAction Input: {"a": 1, "b": 1}'
"""The answer to a conversation with no assistant turn: a call to `add`."""
FINAL_ANSWER = "2"
LAST_REPLY = f"Thought: done\nFinal Answer: {FINAL_ANSWER}"
"""The answer once the conversation holds the call: the end of the run."""

READY_TIMEOUT_S = 60.0
"""How long the server process may take to start (importing Starlette and uvicorn)."""


def reply_for(messages: list[dict[str, Any]]) -> str:
    """The scripted reply: two model calls per run, whatever the agent's prompt looks like."""
    if any(m.get("role") == "assistant" for m in messages):
        return LAST_REPLY
    return FIRST_REPLY


def _completion(model: str, text: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    prompt_chars = sum(len(str(m.get("content") or "")) for m in messages)
    prompt_tokens, completion_tokens = max(1, prompt_chars // 4), max(1, len(text) // 4)
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def build_app(latency_s: float) -> Any:
    """The Starlette app: POST /v1/chat/completions (and /chat/completions)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        if body.get("stream"):
            return JSONResponse(
                {"error": {"message": "this bench server does not stream", "type": "bench"}},
                status_code=400,
            )
        messages = body.get("messages") or []
        await asyncio.sleep(latency_s)
        text = reply_for(messages)
        return JSONResponse(_completion(body.get("model", "bench-model"), text, messages))

    paths = ("/v1/chat/completions", "/chat/completions")
    return Starlette(routes=[Route(p, chat, methods=["POST"]) for p in paths])


def _serve(latency_s: float) -> None:
    """Bind a free loopback port, print its URL on stdout, and serve until SIGTERM."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before the URL is printed: a client that connects before uvicorn is up
    # waits in the backlog instead of being refused.
    sock.listen(4096)
    config = uvicorn.Config(
        build_app(latency_s),
        log_level="warning",
        access_log=False,
        # A thousand clients connect at once; keep them all queued and alive.
        backlog=4096,
        timeout_keep_alive=120,
    )
    server = uvicorn.Server(config)
    port = sock.getsockname()[1]
    print(f"http://127.0.0.1:{port}", flush=True)
    server.run(sockets=[sock])


@contextlib.contextmanager
def serve_model(latency_s: float, *, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run the server in a child process for the duration of the block; yield its URL.

    Raises:
        RuntimeError: the server did not print its URL within `READY_TIMEOUT_S`.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.model_server", "--latency", str(latency_s)],
        stdout=subprocess.PIPE,
        text=True,
        env=env or os.environ.copy(),
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], READY_TIMEOUT_S)
        url = process.stdout.readline().strip() if ready else ""
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(
                f"the bench model server did not start within {READY_TIMEOUT_S:.0f} s "
                f"(exit code {process.poll()}); run `python -m bench.model_server` to see why"
            )
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.model_server", description=__doc__)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per answer")
    args = parser.parse_args(argv)
    _serve(args.latency)


if __name__ == "__main__":
    main()
