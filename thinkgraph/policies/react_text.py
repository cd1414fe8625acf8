"""ReActText: the default policy. Thought / Action / Action Input / Observation in plain text.

Works with any chat model, because tools are described in the system prompt and the reply
is parsed from text in whichever tool-call format the model wrote (see
`thinkgraph.policies.textcalls` for the formats the parser reads).

Example:
    >>> decision = ReActText().parse("Thought: easy\\nFinal Answer: 42")
    >>> decision.kind, decision.answer
    ('final', '42')
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from thinkgraph.policies._messages import append, user_text
from thinkgraph.policies._react_format import FINAL_FORMAT, REPLY_FORMAT
from thinkgraph.policies.base import BaseTextPolicy, Decision
from thinkgraph.policies.projection import (
    AssistantTurn,
    LessonTurn,
    ObservationTurn,
    Turn,
    UnparsedTurn,
    fold_turns,
)
from thinkgraph.policies.textcalls import parse_text
from thinkgraph.state import BaseStep, ToolCall

if TYPE_CHECKING:
    from thinkgraph.llm.base import Message
    from thinkgraph.tools.base import Tool

__all__ = ["DEFAULT_INTRO", "ReActText", "describe_tools", "parse"]

DEFAULT_INTRO = "You are an agent that solves a task step by step."
"""The first line of the system prompt: what the agent is."""

_WITH_TOOLS = (
    "{intro} You can use these tools:\n\n{tools}\n\n"
    "To use a tool, reply in exactly this format:\n\n{reply}\n\n"
    'Then stop: the tool\'s result comes back to you as "Observation: ...". '
    'Never write "Observation:" yourself. Use one tool per reply, and write '
    "Action Input: {{}} for a tool without arguments.\n\n"
    "When you know the answer, reply in exactly this format:\n\n{final}"
)
_WITHOUT_TOOLS = (
    "{intro} You have no tools: answer directly.\n\nReply in exactly this format:\n\n{final}"
)
_DEMAND_FINAL = "Stop using tools now. Give your final answer in exactly this format:\n\n{final}"


def parse(text: str) -> Decision:
    """Parse a reply into a `Decision`; never raises on a string.

    ReAct, or any tool-call text an open model writes (`thinkgraph.policies.textcalls`).
    The same as `ReActText().parse(text)`.
    """
    return parse_text(text)


class ReActText(BaseTextPolicy):
    """The ReAct text policy: tools in the system prompt, decisions parsed from the reply.

    ``ReActText(intro=...)`` changes the first sentence of the system prompt.

    Example:
        >>> ReActText().parse('Action: add\\nAction Input: {"a": 1, "b": 2}').tool_calls[0].args
        {'a': 1, 'b': 2}
    """

    default_intro = DEFAULT_INTRO

    def parse(self, text: str) -> Decision:
        """Parse a reply's text. Never raises on a string: failures are error decisions."""
        return parse_text(text)

    def system_prompt(self, tools: Sequence[Tool]) -> str:
        """The system message: what the agent is, its tools and the reply format."""
        if not tools:
            return _WITHOUT_TOOLS.format(intro=self.intro, final=FINAL_FORMAT)
        return _WITH_TOOLS.format(
            intro=self.intro, tools=describe_tools(tools), reply=REPLY_FORMAT, final=FINAL_FORMAT
        )

    def to_messages(
        self, chain: Sequence[BaseStep], tools: Sequence[Tool], *, final: bool = False
    ) -> list[Message]:
        """Project the chain into OpenAI-format messages.

        Args:
            chain: The run's steps; only those after the last reset are shown.
            tools: The tools the model may call.
            final: Demand the final answer now, with no more actions.

        Returns:
            A system message, then user and assistant messages; consecutive user messages
            are merged into one.
        """
        head: list[Message] = [{"role": "system", "content": self.system_prompt(tools)}]
        messages, _ = fold_turns(chain, "react_text", head, _fold)
        if final:
            append(messages, {"role": "user", "content": _DEMAND_FINAL.format(final=FINAL_FORMAT)})
        return messages


# -- rendering turns ------------------------------------------------------------------------


def _fold(messages: list[Message], state: dict[str, Any], turn: Turn) -> None:
    for role, content in _render(turn):
        append(messages, {"role": role, "content": content})


def _render(turn: Turn) -> list[tuple[str, str]]:
    """The (role, content) messages of one turn."""
    if isinstance(turn, LessonTurn):
        return [("user", _lessons(turn.lessons))]  # one lesson reads as such here
    if isinstance(turn, AssistantTurn):
        return [("assistant", _render_assistant(turn))]
    if isinstance(turn, UnparsedTurn):
        # The raw reply, so the model sees exactly what it wrote wrong; some providers
        # reject an empty assistant message.
        return [("assistant", turn.text or "(empty reply)"), ("user", turn.feedback)]
    if isinstance(turn, ObservationTurn):
        return [("user", f"Observation: {turn.text}")]
    text = user_text(turn)  # worded as in every text format
    if text is None:
        raise TypeError(f"no rendering for turn {turn!r}; add a case to react_text._render")
    return [("user", text)]


def _render_assistant(turn: AssistantTurn) -> str:
    """A parsed reply in canonical form, whatever the model's own spelling was.

    Showing the model its earlier replies in the exact format keeps it writing that format.
    """
    lines = [f"Thought: {turn.thought}"] if turn.thought else []
    for call in turn.calls:
        lines += [f"Action: {call.name}", f"Action Input: {_render_input(call)}"]
    if turn.answer is not None and not turn.calls:
        lines.append(f"Final Answer: {turn.answer}")
    return "\n".join(lines) or "Thought:"


def _render_input(call: ToolCall) -> str:
    if call.args is not None:
        return json.dumps(call.args, ensure_ascii=False)
    if call.raw_args is not None:
        return call.raw_args
    return "{}"


def _lessons(lessons: tuple[str, ...]) -> str:
    if not lessons:
        return "An earlier attempt was abandoned. Start again from the task."
    if len(lessons) == 1:
        return f"An earlier attempt was abandoned. Lesson: {lessons[0]}"
    listed = "\n".join(f"- {lesson}" for lesson in lessons)
    return f"Earlier attempts were abandoned. Lessons:\n{listed}"


# -- tools ------------------------------------------------------------------------------------


def describe_tools(tools: Sequence[Tool]) -> str:
    """The tool list for a prompt: one compact signature per tool, from its args model.

    Example:
        ``- add(a: integer, b: integer) — Add two integers.``, then one indented line per
        argument that has a description.
    """
    return "\n".join(_describe(tool) for tool in tools)


_DESCRIBED: weakref.WeakKeyDictionary[Tool, tuple[tuple[str, str, str], str]] = (
    weakref.WeakKeyDictionary()
)
"""Each tool's rendered description, with the name and texts it was rendered from: every
think step renders every tool, and a tool's schema does not change."""


def _describe(tool: Tool) -> str:
    key = (tool.name, tool.description, tool.returns)
    try:
        memo = _DESCRIBED.get(tool)
    except TypeError:  # a tool that cannot be weakly referenced is rendered each time
        return _render_tool(tool)
    if memo is None or memo[0] != key:
        memo = (key, _render_tool(tool))
        _DESCRIBED[tool] = memo
    return memo[1]


def _render_tool(tool: Tool) -> str:
    schema = tool.json_schema()  # the args model's schema, without pydantic's titles
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    defs: dict[str, Any] = schema.get("$defs", {})
    params = ", ".join(_param(n, p, n in required, defs) for n, p in props.items())
    summary = " ".join(tool.description.split())
    returns = " ".join(tool.returns.split())
    if returns:
        summary = f"{summary} Returns: {returns}".strip()
    lines = [f"- {tool.name}({params})" + (f" — {summary}" if summary else "")]
    lines += [
        f"    {n}: {' '.join(str(p['description']).split())}"
        for n, p in props.items()
        if p.get("description")
    ]
    if defs:
        # Nested models do not fit a one-line signature; their schema says what to send.
        lines.append(f"    JSON schema: {json.dumps(schema, separators=(',', ':'))}")
    return "\n".join(lines)


def _param(name: str, prop: dict[str, Any], required: bool, defs: dict[str, Any]) -> str:
    kind = _type_name(prop, defs)
    if required:
        return f"{name}: {kind}"
    if "default" in prop:
        return f"{name}: {kind} = {json.dumps(prop['default'], ensure_ascii=False)}"
    return f"{name}?: {kind}"


def _type_name(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    """A short readable type: string, integer | null, array[string], "a" | "b", Point."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        target = defs.get(name, {})
        return _type_name(target, defs) if "enum" in target else name
    if "enum" in schema:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(_type_name(s, defs) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"array[{_type_name(schema['items'], defs)}]"
    return str(kind) if kind else "any"
