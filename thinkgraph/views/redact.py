"""Secrets out of every view: sensitive fields, their values wherever they recur, and patterns.

A secret reaches a chain in several copies: the tool call's arguments, the model's reply
that proposed the call (its `Action Input` line) and the thought that quotes it, the
tool's output, the observation made from the output, a human's edit of the call, the
answer. Redacting one field is not enough, so redaction works in four passes over every
step:

1. by name: a tool's `sensitive` names, plus names that look secret for any tool
   (`password`, `api_key`, `token`, …), become "***" at any depth of the arguments, of the
   result and of a person's edit. A tool's names are those of the tools the view is
   given, and those the run recorded on each `tool_call` step (`ToolCallStep.sensitive`),
   so a view without the tools masks exactly the same fields. A call with neither (a run
   from before that record, a tool the run did not have) has every argument and result
   value masked: which of them are secret cannot be checked (`Redactor(mask_unknown=True)`,
   which every view uses). `unknown_tools` names those tools and `unknown_tools_note`
   tells the reader;
2. by name in text: `"name": value` pairs with those names, in any text (a model's reply
   whose input did not parse, a thought that quotes JSON), also when the text is cut
   inside the value (`"token": "abc` and no closing quote);
3. by value: every value removed in passes 1 and 2 is replaced wherever else it appears
   as text (as written and as JSON-escaped), which covers the model's reply, the thought,
   the observation and the answer; and so is the visible start of one where a text is cut
   (an observation cut at `max_observation_chars`, a quote that ends in "…"). One scan of
   each text finds them all, however many values there are (see `views._values`);
4. by pattern: strings shaped like credentials (`sk-…`, `Bearer …`, `ghp_…`, `AKIA…`).

The stored chain keeps the real values (the tool needs them); only copies are masked.

Example:
    >>> from thinkgraph import tool
    >>> from thinkgraph.state import ToolCall, ToolCallStep
    >>> @tool(sensitive={"pin"})
    ... def unlock(door: str, pin: str) -> str:
    ...     "Unlock a door."
    ...     return "open"
    >>> step = ToolCallStep(call=ToolCall(name="unlock", args={"door": "back", "pin": "4821"}))
    >>> redact_chain([step], {"unlock": unlock})[0].call.args
    {'door': 'back', 'pin': '***'}
    >>> redact_chain([step])[0].call.args  # the view does not know `unlock`
    {'door': '***', 'pin': '***'}
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any

from pydantic import BaseModel

from thinkgraph.state import (
    BaseStep,
    HumanStep,
    LLMCallStep,
    ToolCallStep,
    ToolResultStep,
)
from thinkgraph.tools.base import Tool
from thinkgraph.views._values import KnownValues

__all__ = [
    "MASK",
    "SECRET_NAME",
    "SECRET_PATTERNS",
    "Redactor",
    "redact_chain",
    "unknown_tools_note",
]

MASK = "***"
"""What a redacted value is shown as."""

SECRET_NAME = re.compile(
    r"(?i)(^|_|-)(pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|auth(orization)?|"
    r"credentials?|private[_-]?key|session([_-]?(id|key|token))?|cookie)($|_|-)"
)
"""Field names redacted for every tool, known or not, at any depth."""

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

_KEY_VALUE = re.compile(
    r"""(?P<open>(?P<q>["'])(?P<key>[^"'\s:,{}\[\]]{1,64})(?P=q)\s*:\s*)"""
    r"""(?:"(?P<dq>(?:[^"\\]|\\.)*)"|'(?P<sq>(?:[^'\\]|\\.)*)'|(?P<num>-?\d[\w.+-]*)"""
    r"""|(?P<cq>["'])(?P<cut>(?:(?!(?P=cq))[^\\\n]|\\.)*)(?=\n|\Z))"""
)
"""A `"name": value` pair written in text: JSON, or a Python dict's repr; `cut` is a
quoted value that a cut ended before its closing quote (up to the line's or text's end)."""

_Names = frozenset[str] | None
"""The names masked in one tool's arguments and result; None masks every value."""


def _is_secret_name(name: str, sensitive: frozenset[str] | set[str]) -> bool:
    return name in sensitive or bool(SECRET_NAME.search(name))


def unknown_tools_note(names: Sequence[str]) -> str | None:
    """What a view says when it masked whole calls because it did not know their tools."""
    if not names:
        return None
    which = ", ".join(names)
    those = "that tool" if len(names) == 1 else "those tools"
    return (
        f"every argument and result value of {which} is masked: this view was not given "
        f"{those}, so which of their values are secret could not be checked. Give the run's "
        "tools to show the rest (thinkgraph show --tools module:attr; tools=... in Python)."
    )


class Redactor:
    """Redacts the steps of one chain; built from the whole chain so values are known.

    Args:
        chain: every step of the run (values found anywhere are redacted everywhere).
        tools: the run's tools by name, for their `sensitive` fields.
        mask_unknown: mask every argument and result value of calls to tools not in
            `tools` (all calls, without tools), as the views do: they may be shown a run
            without its tools. Off, those calls lose only their secret-looking fields;
            for live output whose caller passes the tools the run is made with.
    """

    def __init__(
        self,
        chain: Sequence[BaseStep],
        tools: Mapping[str, Tool] | None = None,
        *,
        mask_unknown: bool = False,
    ) -> None:
        self._tools = dict(tools or {})
        self._mask_unknown = mask_unknown
        self._text_names = {
            name for t in self._tools.values() for name in getattr(t, "sensitive", ())
        }
        self._recorded: dict[str, frozenset[str] | None] = {}
        """Each called tool's sensitive names as the run recorded them (None: unknown)."""
        self._call_tools: dict[str, str] = {}
        self._unknown: set[str] = set()
        self._values = KnownValues()
        self._looks_secret: dict[str, bool] = {}
        """Whether each key met so far looks secret: a reply with many keys is read in
        several passes, each asking about every key."""
        for step in chain:
            self.learn(step)

    @property
    def unknown_tools(self) -> list[str]:
        """The tools whose calls were masked in full (`mask_unknown`), sorted."""
        return sorted(self._unknown)

    def learn(self, step: BaseStep) -> None:
        """Take note of the secret values in one step, to mask them wherever they appear.

        A live display learns each step as it arrives, before showing it.
        """
        if isinstance(step, ToolCallStep):
            self._record(step)
        for call in _calls_of(step):
            self._call_tools[call.id] = call.name
            self._call(call.model_dump(), collect=True)
        if isinstance(step, ToolResultStep):
            self._masked(step.output, self._names(step.tool), collect=True)
        elif isinstance(step, HumanStep) and step.kind == "edit":
            self._edit(step, collect=True)
        for text in _strings(step.model_dump(mode="json")):
            if ":" not in text:  # no `"name": value` pair in it
                continue
            for match in _KEY_VALUE.finditer(text):
                # A cut value is masked where it is, not hunted elsewhere: as a value of
                # its own it would unmask the rest of the whole value wherever that recurs.
                if match["cut"] is None and self._text_secret(match):
                    self._collect_written(match)

    def _record(self, step: ToolCallStep) -> None:
        """Take note of the sensitive names the run recorded for the call's tool."""
        name = step.call.name
        names = None if step.sensitive is None else frozenset(step.sensitive)
        if name in self._recorded:  # calls of one name that disagree: mask all of them
            before = self._recorded[name]
            names = None if before is None or names is None else before | names
        self._recorded[name] = names
        self._text_names.update(names or ())

    def shown(self, step: BaseStep) -> BaseStep:
        """Learn a step as it arrives and return its redacted copy, for live output."""
        self.learn(step)
        return self.step(step)

    def _names(self, tool_name: str | None) -> _Names:
        tool = self._tools.get(tool_name) if tool_name else None
        recorded = self._recorded.get(tool_name) if tool_name else None
        if tool is not None:
            return frozenset(getattr(tool, "sensitive", ())) | (recorded or frozenset())
        if recorded is not None:
            return recorded
        if not self._mask_unknown:
            return frozenset()
        if tool_name:
            self._unknown.add(tool_name)
        return None

    def _masked(self, value: Any, names: _Names, *, collect: bool = False) -> Any:
        """`value` with the values of secret names masked, at any depth."""
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            looks = self._looks_secret
            for key, item in value.items():
                name = key if isinstance(key, str) else str(key)
                secret = names is None or name in names or looks.get(name)
                if secret is None:
                    secret = looks[name] = bool(SECRET_NAME.search(name))
                if item is not None and secret:
                    out[key] = MASK
                    if collect:
                        self._collect(item)
                else:
                    out[key] = self._masked(item, names, collect=collect)
            return out
        if isinstance(value, list | tuple):
            return [self._masked(item, names, collect=collect) for item in value]
        return value

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
            self._values.add(encode_basestring(text)[1:-1])

    def _collect_written(self, match: re.Match[str]) -> None:
        # A value as written in text: JSON-escaped inside double quotes, so also decoded.
        written = next(g for g in (match["dq"], match["sq"], match["num"]) if g is not None)
        self._collect(written)
        if match["dq"] is not None and "\\" in written:
            with contextlib.suppress(ValueError):
                self._collect(json.loads(f'"{written}"'))

    def _text_secret(self, match: re.Match[str]) -> bool:
        value = next((match[g] for g in ("dq", "sq", "cut") if match[g] is not None), None)
        return value != MASK and _is_secret_name(match["key"], self._text_names)

    def text(self, text: str) -> str:
        """A string with secret `"name": value` pairs, known secret values (whole, or the
        start of one where the text is cut) and credential patterns masked.

        Each pass is one scan of the text, whatever the number of known values.
        """
        if len(text) < MIN_SECRET_CHARS:  # too short to hold a pair, a value or a pattern
            return text
        text = _KEY_VALUE.sub(self._mask_written, text)
        text = self._values.mask(text, MASK)
        for pattern, replacement in SECRET_PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    def _mask_written(self, match: re.Match[str]) -> str:
        if not self._text_secret(match):
            return match[0]
        if match["cut"] is not None:  # no closing quote to put back
            return f"{match['open']}{match['cq']}{MASK}"
        quote = "'" if match["sq"] is not None else '"'
        return f"{match['open']}{quote}{MASK}{quote}"

    def value(self, value: Any) -> Any:
        """Any JSON-like value with secret-looking keys masked and every string redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            masked = self._masked(value, frozenset())
            return {k: self.value(v) for k, v in masked.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def pending(self, item: Any) -> dict[str, Any]:
        """One thing a paused run waits for (a `Pending` or a dict), as a redacted dict."""
        data = item.model_dump(mode="json") if isinstance(item, BaseModel) else item
        if not isinstance(data, dict):
            data = {"value": data}
        if data.get("args") is not None or data.get("raw_args") is not None:
            call = {
                "name": data.get("tool"),
                "args": data.get("args"),
                "raw_args": data.get("raw_args"),
            }
            # Learned first: without the chain (a run list), its thought may quote them.
            masked = self._call(call, collect=True)
            data = {**data, "args": masked["args"], "raw_args": masked["raw_args"]}
        redacted: dict[str, Any] = self.value(data)
        return redacted

    def step(self, step: BaseStep) -> BaseStep:
        """A redacted copy of one step (the stored chain is never changed)."""
        data = step.model_dump()
        if isinstance(step, ToolCallStep):
            data["call"] = self._call(data["call"])
        elif isinstance(step, LLMCallStep):
            data["tool_calls"] = [self._call(c) for c in data["tool_calls"]]
        elif isinstance(step, ToolResultStep):
            data["output"] = self._masked(step.output, self._names(step.tool))
        elif isinstance(step, HumanStep) and step.kind == "edit":
            data["text"] = self._edit(step)
        data = {k: (v if k in ("id", "type") else self.value(v)) for k, v in data.items()}
        return type(step).model_validate(data)

    def _call(self, call: dict[str, Any], *, collect: bool = False) -> dict[str, Any]:
        """A call (a dict with `name`, `args` and `raw_args`) with its secrets masked."""
        names = self._names(call.get("name"))
        if call.get("args") is not None:
            call = {**call, "args": self._masked(call["args"], names, collect=collect)}
        elif call.get("raw_args") is not None:
            # A bare input goes to the tool's one string parameter: masked if that is secret.
            tool = self._tools.get(call.get("name") or "")
            param = tool.single_str_param() if tool is not None else None
            if names is None or (param is not None and _is_secret_name(param, names)):
                if collect:
                    self._collect(call["raw_args"])
                call = {**call, "raw_args": MASK}
        return call

    def _edit(self, step: HumanStep, *, collect: bool = False) -> str:
        """The text of a person's edit (the new arguments as JSON) with its secrets masked."""
        names = self._names(self._call_tools.get(step.call_id or ""))
        try:
            args = json.loads(step.text)
        except ValueError:
            args = None
        if isinstance(args, dict):
            return json.dumps(self._masked(args, names, collect=collect), ensure_ascii=False)
        if names is None and step.text:  # not arguments we can read: all of it, unknown tool
            if collect:
                self._collect(step.text)
            return MASK
        return step.text


def _calls_of(step: BaseStep) -> Iterable[Any]:
    if isinstance(step, ToolCallStep):
        yield step.call
    elif isinstance(step, LLMCallStep):
        yield from step.tool_calls


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def redact_chain(
    chain: Sequence[BaseStep], tools: Mapping[str, Tool] | None = None
) -> list[BaseStep]:
    """Every step of a chain with its secrets masked (see the module docstring)."""
    redactor = Redactor(chain, tools, mask_unknown=True)
    return [redactor.step(step) for step in chain]
