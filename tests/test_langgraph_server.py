"""examples/langgraph under `langgraph dev`, driven with langgraph-sdk through an approval.

The server compiles the graph with its own checkpointer; a ScriptedModel plays the model,
so nothing leaves loopback. One server for the module: start-up takes a few seconds.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip(
    "langgraph_sdk", reason="langgraph-sdk is not installed (pip install -e '.[dev]')"
)
pytest.importorskip(
    "langgraph_runtime_inmem",
    reason="langgraph-cli[inmem] is not installed (pip install -e '.[dev]')",
)

from langgraph_sdk import get_client
from langgraph_sdk.schema import Command

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "langgraph"
START_WAIT_S = 40.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cli = shutil.which("langgraph", path=str(Path(sys.executable).parent))
    if cli is None:
        pytest.skip("the langgraph CLI is not installed (pip install 'langgraph-cli[inmem]')")
    port = _free_port()
    # A copy: the server reads paths from its working directory and writes .langgraph_api/
    work = tmp_path_factory.mktemp("lgdev")
    for name in ("langgraph.json", "agent.py"):
        shutil.copy(EXAMPLE / name, work / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THINKGRAPH_", "LANGSMITH_"))}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGSMITH_TRACING="false",
    )
    log = (work / "server.log").open("wb")
    proc = subprocess.Popen(
        [cli, "dev", "--config", "langgraph.json", "--host", "127.0.0.1",
         "--port", str(port), "--no-browser", "--no-reload"],
        cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_WAIT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited: {(work / 'server.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev did not answer within {START_WAIT_S:.0f} s")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


async def _paused(url: str) -> tuple[Any, str, dict[str, Any]]:
    client = get_client(url=url)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "agent", input={"task": "Add bread to my groceries note."})
    state = await client.threads.get_state(tid)
    assert state["next"] == ["approve"]
    (pause,) = state["interrupts"]
    return client, tid, pause["value"]


def test_a_run_pauses_for_approval_and_finishes_after_it(server: str) -> None:
    asyncio.run(_approve_through(server))


async def _approve_through(server: str) -> None:
    client, tid, pause = await _paused(server)
    # ours and LangChain's HITL request, side by side
    assert pause["kind"] == "approval"
    (request,) = pause["requests"]
    assert request["tool"] == "save_note"
    assert request["args"] == {"name": "groceries", "text": "milk, eggs, bread"}
    (action,) = pause["action_requests"]
    assert action["name"] == "save_note" and action["args"] == request["args"]
    assert "save_note" in action["description"]
    (review,) = pause["review_configs"]
    assert review["action_name"] == "save_note"
    assert review["allowed_decisions"] == ["approve", "edit", "reject"]
    assert set(review["args_schema"]["properties"]) == {"name", "text"}

    state = await client.threads.get_state(tid)
    assert [s["type"] for s in state["values"]["chain"]][:2] == ["task", "llm_call"]
    assert state["values"]["chain"][0]["text"] == "Add bread to my groceries note."
    history = await client.threads.get_history(tid)
    assert [h["next"] for h in reversed(history)][:3] == [["__start__"], ["start"], ["think"]]

    done = await client.runs.wait(
        tid, "agent", command=Command(resume={request["call_id"]: "approve"})
    )
    assert isinstance(done, dict)
    assert done["answer"] == "Your groceries note now says: milk, eggs, bread."
    assert done["run"]["status"] == "done"
    state = await client.threads.get_state(tid)
    assert state["next"] == [] and state["interrupts"] == []
    kinds = [(s["type"], s.get("kind")) for s in state["values"]["chain"]]
    assert ("human", "approve") in kinds and kinds[-1] == ("final", None)


def test_langchain_hitl_decisions_answer_the_pause(server: str) -> None:
    asyncio.run(_langchain_edit(server))


async def _langchain_edit(server: str) -> None:
    client, tid, _ = await _paused(server)
    edited = {"name": "groceries", "text": "milk, bread"}
    resume = {
        "decisions": [{"type": "edit", "edited_action": {"name": "save_note", "args": edited}}]
    }
    done = await client.runs.wait(tid, "agent", command=Command(resume=resume))
    assert isinstance(done, dict) and done["run"]["status"] == "done"
    human = [s for s in done["chain"] if s["type"] == "human"]
    assert [(h["kind"], h["text"]) for h in human] == [
        ("edit", '{"name": "groceries", "text": "milk, bread"}')
    ]


@pytest.mark.parametrize(
    ("resume", "says"),
    [
        ({"nope": "approve"}, "no call 'nope' waits for approval"),
        ({"decisions": []}, "one decision per action request"),
        (
            {"decisions": [{"type": "edit", "edited_action": {"name": "rm", "args": {}}}]},
            "an edit may change the arguments, not the tool",
        ),
    ],
)
def test_a_bad_resume_is_refused_and_the_run_stays_paused(
    server: str, resume: dict[str, Any], says: str
) -> None:
    asyncio.run(_refused(server, resume, says))


async def _refused(server: str, resume: dict[str, Any], says: str) -> None:
    client, tid, pause = await _paused(server)
    before = await client.threads.get_state(tid)
    out = await client.runs.wait(tid, "agent", command=Command(resume=resume), raise_error=False)
    assert isinstance(out, dict)
    assert out["__error__"]["error"] == "ResumeValueError"
    assert (
        says in out["__error__"]["message"]
        and "the run is still paused" in out["__error__"]["message"]
    )
    after = await client.threads.get_state(tid)
    assert after["next"] == ["approve"]
    assert after["checkpoint"] == before["checkpoint"]
    assert [i["value"] for i in after["interrupts"]] == [pause]
    # and a good answer is still taken
    call_id = pause["requests"][0]["call_id"]
    done = await client.runs.wait(
        tid, "agent", command=Command(resume={call_id: {"action": "approve"}})
    )
    assert isinstance(done, dict) and done["run"]["status"] == "done"
