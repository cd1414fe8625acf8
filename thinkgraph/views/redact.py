"""Secrets out of every view: sensitive fields, their values wherever they recur, and patterns.

A secret reaches a chain in several copies: the tool call's arguments, the model's reply
that proposed the call (its `Action Input` line), the tool's output, the observation made
from the output, a human's edit. Redacting one field is not enough, so redaction works in
three passes over every step:

1. by name: a tool's `sensitive` argument names and top-level result keys, plus names that
   look secret for any tool (`password`, `api_key`, `token`, …), become "***";
2. by value: every value removed in pass 1 is replaced wherever else it appears as text
   (as written and as JSON-escaped), which covers the model's reply and the observation;
3. by pattern: strings shaped like credentials (`sk-…`, `Bearer …`, `ghp_…`, `AKIA…`).

Example:
    >>> from thinkgraph.state import ToolCall, ToolCallStep
    >>> call = ToolCall(name="login", args={"user": "ann", "password": "hunter22"})
    >>> step = ToolCallStep(call=call)
    >>> redact_chain([step])[0].call.args
    {'user': 'ann', 'password': '***'}
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from thinkgraph.state import BaseStep, LLMCallStep, ObservationStep, ToolCallStep, ToolResultStep
from thinkgraph.tools.base import Tool

__all__ = ["MASK", "SECRET_NAME", "SECRET_PATTERNS", "Redactor", "redact_chain"]

MASK = "***"
"""What a redacted value is shown as."""

SECRET_NAME = re.compile(
    r"(?i)(^|_|-)(pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|auth(orization)?|"
    r"credentials?|private[_-]?key|session([_-]?(id|key|token))?|cookie)($|_|-)"
)
"""Field names redacted for every tool, known or not (the CLI's `show` has no tools loaded)."""

SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), MASK),
    (re.compile(r"(?i)\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + MASK),
    (re.compile(r"\b(ghp|gho|ghu|ghs|github_pat)_[A-Za-z0-9_]{20,}"), MASK),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), MASK),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), MASK),
)
"""Credential shapes redacted in any text, whatever field they are in."""

MIN_SECRET_CHARS = 4
"""Shorter values are masked in their own field but not searched for elsewhere.

Replacing every "42" or "yes" across a chain would garble it while protecting nothing a
reader could not guess.
"""


def _is_secret_name(name: str, sensitive: frozenset[str]) -> bool:
    return name in sensitive or bool(SECRET_NAME.search(name))


class Redactor:
    """Redacts the steps of one chain; built from the whole chain so values are known.

    Args:
        chain: every step of the run (values found anywhere are redacted everywhere).
        tools: the run's tools by name, for their `sensitive` fields; may be empty.
    """

    def __init__(self, chain: Sequence[BaseStep], tools: Mapping[str, Tool] | None = None) -> None:
        self._tools = dict(tools or {})
        self._values: set[str] = set()
        self._ordered: list[str] = []
        for step in chain:
            self.learn(step)

    def learn(self, step: BaseStep) -> None:
        """Take note of the secret values in one step, to mask them wherever they appear.

        A live display learns each step as it arrives, before showing it.
        """
        known = len(self._values)
        for name, args in _calls_of(step):
            self._mask_fields(args, self._sensitive(name), collect=True)
        if isinstance(step, ToolResultStep) and isinstance(step.output, dict):
            self._mask_fields(step.output, self._sensitive(step.tool), collect=True)
        if len(self._values) != known:
            # Longest first, so a secret that contains another is replaced whole.
            self._ordered = sorted(self._values, key=len, reverse=True)

    def shown(self, step: BaseStep) -> BaseStep:
        """Learn a step as it arrives and return its redacted copy, for live output."""
        self.learn(step)
        return self.step(step)

    def _sensitive(self, tool_name: str) -> frozenset[str]:
        tool = self._tools.get(tool_name)
        return frozenset(getattr(tool, "sensitive", ())) if tool is not None else frozenset()

    def _mask_fields(
        self, fields: Mapping[str, Any], sensitive: frozenset[str], *, collect: bool = False
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in fields.items():
            if _is_secret_name(str(key), sensitive) and value is not None:
                out[key] = MASK
                if collect:
                    self._collect(value)
            else:
                out[key] = value
        return out

    def _collect(self, value: Any) -> None:
        if isinstance(value, dict | list | tuple):
            items = value.values() if isinstance(value, dict) else value
            for item in items:
                self._collect(item)
            text = json.dumps(value, ensure_ascii=False, default=repr)
        else:
            text = value if isinstance(value, str) else json.dumps(value, default=repr)
        if len(text) >= MIN_SECRET_CHARS:
            self._values.add(text)
            # The same value as it appears inside a JSON string (an Action Input line).
            self._values.add(json.dumps(text, ensure_ascii=False)[1:-1])

    def text(self, text: str) -> str:
        """A string with every known secret value and every credential pattern masked."""
        for value in self._ordered:
            if value in text:
                text = text.replace(value, MASK)
        for pattern, replacement in SECRET_PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    def value(self, value: Any) -> Any:
        """Any JSON-like value with secret-looking keys masked and every string redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            masked = self._mask_fields(value, frozenset())
            return {k: self.value(v) for k, v in masked.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def pending(self, item: Any) -> dict[str, Any]:
        """One thing a paused run waits for (a `Pending` or a dict), as a redacted dict."""
        data = item.model_dump(mode="json") if isinstance(item, BaseModel) else item
        if not isinstance(data, dict):
            data = {"value": data}
        if isinstance(data.get("args"), dict):
            sensitive = self._sensitive(str(data.get("tool") or ""))
            data = {**data, "args": self._mask_fields(data["args"], sensitive)}
        redacted: dict[str, Any] = self.value(data)
        return redacted

    def step(self, step: BaseStep) -> BaseStep:
        """A redacted copy of one step (the stored chain is never changed)."""
        data = step.model_dump()
        if isinstance(step, ToolCallStep):
            data["call"] = self._call(step.call.name, data["call"])
        elif isinstance(step, LLMCallStep):
            data["tool_calls"] = [self._call(c["name"], c) for c in data["tool_calls"]]
        elif isinstance(step, ToolResultStep) and isinstance(step.output, dict):
            data["output"] = self._mask_fields(step.output, self._sensitive(step.tool))
        elif isinstance(step, ObservationStep):
            data["text"] = self.text(step.text)
        data = {k: (v if k in ("id", "type") else self.value(v)) for k, v in data.items()}
        return type(step).model_validate(data)

    def _call(self, name: str, call: dict[str, Any]) -> dict[str, Any]:
        if call.get("args") is not None:
            call = {**call, "args": self._mask_fields(call["args"], self._sensitive(name))}
        return call


def _calls_of(step: BaseStep) -> Iterable[tuple[str, Mapping[str, Any]]]:
    if isinstance(step, ToolCallStep) and step.call.args is not None:
        yield step.call.name, step.call.args
    elif isinstance(step, LLMCallStep):
        for call in step.tool_calls:
            if call.args is not None:
                yield call.name, call.args


def redact_chain(
    chain: Sequence[BaseStep], tools: Mapping[str, Tool] | None = None
) -> list[BaseStep]:
    """Every step of a chain with its secrets masked (see the module docstring)."""
    redactor = Redactor(chain, tools)
    return [redactor.step(step) for step in chain]
