"""LangGraph's strict serializer (``LANGGRAPH_STRICT_MSGPACK=true``, its announced default)
loads only the record types a graph's state schema names: every type a run of ours stores
is named there, so a run pauses, resumes and finishes under it with nothing blocked."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = textwrap.dedent(
    """
    import asyncio, logging
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command
    from thinkgraph import ScriptedModel, tool
    from thinkgraph.graphs.server import build_server_graph
    from thinkgraph.nodes.deps import Deps
    from thinkgraph.policies import ReActText
    from thinkgraph.tools import ToolRegistry

    blocked = []

    class Catch(logging.Handler):
        def emit(self, record):
            blocked.append(record.getMessage())

    logging.getLogger("langgraph").addHandler(Catch(level=logging.WARNING))

    @tool(requires_approval=True)
    def add(a: int, b: int) -> int:
        '''Add two integers.'''
        return a + b

    model = ScriptedModel([
        'Thought: add\\nAction: add\\nAction Input: {"a": 2, "b": 40}',
        "Thought: done\\nFinal Answer: 42",
    ])
    deps = Deps(model=model, policy=ReActText(), tools=ToolRegistry([add]))
    graph = build_server_graph(deps).compile(checkpointer=InMemorySaver())

    async def main():
        config = {"configurable": {"thread_id": "strict"}}
        paused = await graph.ainvoke({"task": "What is 2 + 40?"}, config)
        (waiting,) = paused["__interrupt__"]
        call_id = waiting.value["requests"][0]["call_id"]
        done = await graph.ainvoke(Command(resume={call_id: "approve"}), config)
        state = await graph.aget_state(config)
        history = [s async for s in graph.aget_state_history(config)]
        types = sorted({type(s).__name__ for s in state.values["chain"]})
        print(done["answer"], state.values["run"].status, len(history), ",".join(types))

    asyncio.run(main())
    assert not blocked, blocked
    """
)


def test_a_run_pauses_resumes_and_finishes_under_langgraphs_strict_serializer() -> None:
    env = {
        **os.environ,
        "LANGGRAPH_STRICT_MSGPACK": "true",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer, status, checkpoints, types = done.stdout.split()
    assert (answer, status) == ("42", "done")
    assert int(checkpoints) > 5
    # Every kind of step this run made came back as its own record, not as a blocked dict.
    assert set(types.split(",")) >= {
        "TaskStep",
        "LLMCallStep",
        "ToolCallStep",
        "HumanStep",
        "ToolResultStep",
        "ObservationStep",
        "FinalStep",
    }
