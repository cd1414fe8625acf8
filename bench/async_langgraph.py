"""The baseline of the concurrency scenario: a plain async LangGraph agent.

What a LangGraph user writes by hand for the same job: a two-node `StateGraph` (a model
node that awaits `litellm.acompletion` and parses the ReAct text with a regex, a tools
node that runs `add`), a conditional edge between them, compiled with `AsyncSqliteSaver`
and run with `ainvoke`. No step records, no validation, no limits: the floor thinkgraph's
async core is compared against, on the same litellm and the same SQLite.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

from bench.workload import add

__all__ = ["SYSTEM_PROMPT", "AgentState", "open_agent", "run_one"]

SYSTEM_PROMPT = (
    "Answer the question. You can call one tool:\n"
    "add(a: int, b: int) -> int: Add two integers.\n"
    "Reply with 'Thought: ...' then either 'Action: <tool>' and 'Action Input: <JSON>', "
    "or 'Final Answer: <answer>'."
)
_ACTION = re.compile(r"Action:\s*(\w+)\s*Action Input:\s*(\{.*\})", re.DOTALL)
_FINAL = re.compile(r"Final Answer:\s*(.*)", re.DOTALL)
TOOLS = {"add": add}


class AgentState(TypedDict, total=False):
    messages: Annotated[list[dict[str, str]], operator.add]
    """The conversation sent to the model, appended to by both nodes."""
    action: dict[str, Any] | None
    """The tool call the last reply asked for, or None."""
    answer: str | None
    """The final answer, once given."""


def _build(model: str, api_base: str, api_key: str, timeout_s: float) -> Any:
    import litellm
    from langgraph.graph import END, START, StateGraph

    litellm.suppress_debug_info = True

    async def model_node(state: AgentState) -> AgentState:
        response = await litellm.acompletion(
            model=model,
            messages=state["messages"],
            api_base=api_base,
            api_key=api_key,
            timeout=timeout_s,
            num_retries=0,
            max_retries=0,
        )
        text = response.choices[0].message.content or ""
        reply = {"role": "assistant", "content": text}
        if found := _ACTION.search(text):
            action = {"name": found.group(1), "args": json.loads(found.group(2))}
            return {"messages": [reply], "action": action}
        final = _FINAL.search(text)
        return {
            "messages": [reply],
            "action": None,
            "answer": final.group(1).strip() if final else text,
        }

    async def tools_node(state: AgentState) -> AgentState:
        action = state["action"]
        assert action is not None
        result = TOOLS[action["name"]](**action["args"])
        return {"messages": [{"role": "user", "content": f"Observation: {result}"}], "action": None}

    def route(state: AgentState) -> str:
        return "tools" if state.get("action") else END

    graph = StateGraph(AgentState)
    graph.add_node("model", model_node)
    graph.add_node("tools", tools_node)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph


@asynccontextmanager
async def open_agent(
    db: Path, *, model: str, api_base: str, api_key: str, timeout_s: float
) -> AsyncIterator[Any]:
    """The compiled graph on an `AsyncSqliteSaver` over `db`, closed on exit."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
        yield _build(model, api_base, api_key, timeout_s).compile(checkpointer=saver)


async def run_one(graph: Any, task: str, thread_id: str) -> str | None:
    """One run to its end, checkpointed after every node as thinkgraph's are; its answer."""
    state = await graph.ainvoke(
        {
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": task},
            ]
        },
        {"configurable": {"thread_id": thread_id}},
        durability="sync",
    )
    return state.get("answer")
