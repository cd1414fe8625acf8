"""The fleet benchmark's agent and submitter, copied next to the measured tree and run there.

`bench.fleet` copies this file into a scratch folder and puts that folder and the measured
thinkgraph checkout on the children's path, so the workers (``thinkgraph worker --agent
fleet_agent:make_agent``) and the submitter run the measured version. It uses only what
every measured version has: `Agent`, `ScriptedModel`, `StepLimits`, `tool`, `LiteLLMModel`,
`RunQueue.submit` and `Agent.result`.

Every run asks the model twice: a call to `add`, then the final answer "2" — the loopback
model server's script (`bench.model_server`). With ``FLEET_MODEL_URL`` unset, a scripted
model gives the same two replies at once and `add` waits ``FLEET_LATENCY_S`` instead: no
model server and no LiteLLM (a smoke run in seconds).

As a program (``python fleet_agent.py QUEUE THREAD,THREAD,…``) it is the submitter, driven
by lines on stdin: it opens the queue and prints ``ready``; on the next line it submits the
batch and prints the submission time of every thread (JSON); on the next it prints every
thread's status and answer (JSON).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from thinkgraph import Agent, ScriptedModel, StepLimits, tool

TASK = "What is 1 + 1? Use the add tool."
FIRST_REPLY = 'Thought: add one and one\nAction: add\nAction Input: {"a": 1, "b": 1}'
LAST_REPLY = "Thought: done\nFinal Answer: 2"
ANSWER = "2"
MODEL = "openai/bench-model"


@tool
async def add(a: int, b: int) -> int:
    """Add two integers (after the bench's latency when no model server is used)."""
    if not os.environ.get("FLEET_MODEL_URL"):
        await asyncio.sleep(float(os.environ.get("FLEET_LATENCY_S", "0")))
    return a + b


def make_agent() -> Agent:
    """The workers' agent: the loopback model server through LiteLLM, or the script."""
    url = os.environ.get("FLEET_MODEL_URL")
    model: Any
    if url:
        # Imported now, before the worker takes jobs (thinkgraph imports it at the first
        # call): a long-running worker has it loaded, its first runs do not wait for it.
        import litellm  # noqa: F401

        from thinkgraph.llm.litellm import LiteLLMModel

        model = LiteLLMModel(
            MODEL, api_base=f"{url}/v1", api_key="bench", num_retries=0, timeout=300.0
        )
    else:
        model = ScriptedModel([FIRST_REPLY, LAST_REPLY])
    return Agent(model, [add], limits=StepLimits(max_steps=4), store=os.environ["FLEET_STORE"])


def submit(queue: str, threads: list[str]) -> None:
    """The submitter's protocol on stdin and stdout (see the module's docstring)."""
    from thinkgraph.worker import RunQueue

    # As `thinkgraph submit` does: an agent with no model of its own, on the same store.
    with Agent(ScriptedModel([]), store=os.environ["FLEET_STORE"]) as agent:
        with RunQueue(agent, queue) as runs:
            # Connected before the clock starts: the store, and the queue (its private
            # opener, there in every measured version), as a long-lived submitter is.
            agent.checkpoint_id(f"{queue}-warm-up")
            runs._opened()
            print("ready", flush=True)
            sys.stdin.readline()
            at: dict[str, float] = {}
            for thread in threads:
                at[thread] = time.time()
                runs.submit(TASK, thread)
            print(json.dumps(at), flush=True)
        sys.stdin.readline()
        outcomes = {}
        for thread in threads:
            result = agent.result(thread)
            outcomes[thread] = [str(result.status), str(result.answer)]
        print(json.dumps(outcomes), flush=True)


if __name__ == "__main__":
    submit(sys.argv[1], sys.argv[2].split(","))
