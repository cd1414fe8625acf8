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
   inside the value (`"token": "abc` and no closing quote; `views._pairs` finds them);
3. by value: every value removed in passes 1 and 2 is replaced wherever else it appears
   as text (as written and as JSON-escaped), which covers the model's reply, the thought,
   the observation and the answer; and so is the visible start of one where a text is cut
   (an observation cut at `max_observation_chars`, a quote that ends in "…"). One scan of
   each text finds them all, however many values there are (see `views._values`);
4. by pattern: strings shaped like credentials (`sk-…`, `Bearer …`, `ghp_…`, `AKIA…`).

The stored chain keeps the real values (the tool needs them); only copies are masked.
Each step is read once to learn what it holds and copied once to be shown, so the cost
is linear in the chain: a reply with 200,000 secret keys is shown in about a second.

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
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, filterfalse, repeat
from json.encoder import encode_basestring
from typing import Any, NamedTuple

from pydantic import BaseModel

from thinkgraph.state import (
    BaseStep,
    HumanStep,
    LLMCallStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
)
from thinkgraph.tools.base import Tool
from thinkgraph.views._pairs import KEY_VALUE, masked_pair, texts_with_pairs
from thinkgraph.views._values import KnownValues

__all__ = [
    "MASK",
    "SECRET_NAME",
    "SECRET_PATTERNS",
    "Redactor",
    "redact_chain",
    "unknown_tools_note",
    "unmasked",
]

MASK = "***"
"""What a redacted value is shown as."""

SECRET_NAME = re.compile(
    r"(?i)(^|_|-)(pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|auth(orization)?|"
    r"credentials?|private[_-]?key|session([_-]?(id|key|token))?|cookie)($|_|-)"
)
"""Field names redacted for every tool, known or not, at any depth."""


def unmasked(edited: Any, original: Any) -> Any:
    """`edited` with each value still shown as `MASK` given back from `original`, at any
    depth (the same key of an object, the same index of a list of the same length).

    For a person's edit of arguments that were shown masked: a field left as it was shown
    keeps its real value; only what the person changed is changed.
    """
    if edited == MASK and original is not None:
        return original
    if isinstance(edited, dict) and isinstance(original, dict):
        return {k: unmasked(v, original.get(k)) for k, v in edited.items()}
    if isinstance(edited, list) and isinstance(original, list) and len(edited) == len(original):
        return [unmasked(e, o) for e, o in zip(edited, original, strict=True)]
    return edited


class _Caseless(NamedTuple):
    """A hint in any case: `parts` lowercased, `pattern` for a text not all ASCII (whose
    other characters may be case variants of ASCII letters: the long "ſ" for "s", the
    dotless "ı" for "i"), as the credential shape itself matches them."""

    parts: tuple[str, ...]
    pattern: re.Pattern[str]


_Hint = tuple[str, ...] | _Caseless

_CREDENTIALS: tuple[tuple[_Hint, re.Pattern[str], str], ...] = (
    (("sk-",), re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), MASK),
    (
        _Caseless(("bearer", "basic"), re.compile(r"(?i)b(?:earer|asic)")),
        re.compile(r"(?i)\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}"),
        r"\1 " + MASK,
    ),
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "github_pat_"),
        re.compile(r"\b(ghp|gho|ghu|ghs|github_pat)_[A-Za-z0-9_]{20,}"),
        MASK,
    ),
    (("xox",), re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), MASK),
    (("AKIA",), re.compile(r"\bAKIA[0-9A-Z]{16}\b"), MASK),
)
"""Credential shapes, each after what every match of it holds (one of those strings): a
text without that is not scanned for the shape (a shape that starts with `\\b` is tried
at every position). "gh" alone would not do: every "Thought" holds it."""


def _holds(hint: _Hint, text: str, lowered: list[str]) -> bool:
    """Whether `text` holds what every match of a credential shape holds."""
    if not isinstance(hint, _Caseless):
        return any(part in text for part in hint)
    if not text.isascii():
        return hint.pattern.search(text) is not None
    # Lowered once per text, for every caseless hint: a string search at C speed rather
    # than a caseless pattern tried at every position.
    if not lowered:
        lowered.append(text.lower())
    return any(part in lowered[0] for part in hint.parts)


SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (pattern, replacement) for _, pattern, replacement in _CREDENTIALS
)
"""Credential shapes redacted in any text, whatever field they are in."""

MIN_SECRET_CHARS = 4
"""Shorter values are masked in their own field but not searched for elsewhere.

Replacing every "42" or "yes" across a chain would garble it while protecting nothing a
reader could not guess.
"""

_REMEMBERED_CHARS = 4096
"""A text at least this long keeps its pairs masked from when it is learned to when it is
shown (a model's reply that writes a call's arguments); a shorter one is scanned again."""

_JSON_ESCAPED = re.compile(r'[\x00-\x1f\\"]')
"""A character `encode_basestring` writes as an escape (a quote, a backslash, a control
character): a value without one is written in a JSON string as it is."""

_MEMO_KEYS = 64
"""An object with at least this many keys has which of them are secret kept, for the
next object with the same keys and the same names."""

_Names = frozenset[str] | None
"""The names masked in one tool's arguments and result; None masks every value."""


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

    Each step is read once to learn its secrets (`learn`) and copied once to show it
    (`step`): the copy replaces only the fields that change, so a step is never dumped
    and validated again, and a long text's `"name": value` pairs, masked while it is
    learned, are not scanned again to show it.

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
        self._text_names: set[str] = set()
        """The names whose `"name": value` pairs are masked in text (besides the
        secret-looking ones): the tools' sensitive names and those the run recorded."""
        self._added_names: list[str] = []
        """`_text_names` in the order they were added, so a text masked while learned is
        masked again to show it only if a name of one of its kept pairs came since."""
        self._add_text_names(
            name for t in self._tools.values() for name in getattr(t, "sensitive", ())
        )
        self._recorded: dict[str, frozenset[str] | None] = {}
        """Each called tool's sensitive names as the run recorded them (None: unknown)."""
        self._call_tools: dict[str, str] = {}
        self._unknown: set[str] = set()
        self._values = KnownValues()
        self._collected: set[str] = set()
        """Every value collected, as text: a value met again (in the call, the result
        and the reply that wrote it) is not taken again."""
        self._looks_secret: dict[str, bool] = {}
        self._keys_memo: dict[tuple[tuple[str, ...], frozenset[str]], list[bool]] = {}
        """`_secret_keys` of each big object's keys, by its keys and the names masked."""
        """Whether each key met so far looks secret: a reply with many keys asks about
        each key in its arguments, its result and its text."""
        self._learned: dict[str, BaseStep] = {}
        """The steps learned, by id: a step learned already (the same, or an equal copy
        read back from the store) is not read again. A live display learns a node's
        steps before it shows them (`shown`), and the run's outcome repeats them."""
        self._pairs_masked: dict[str, tuple[int, set[str], str]] = {}
        """Long texts learned, with their pairs masked: (`_added_names` then, the names
        of the pairs kept, the masked text), taken when the text is shown."""
        for step in chain:
            self.learn(step)

    @property
    def unknown_tools(self) -> list[str]:
        """The tools whose calls were masked in full (`mask_unknown`), sorted."""
        return sorted(self._unknown)

    # -- what is secret -------------------------------------------------------------------

    def _secret_name(self, name: str, names: _Names | set[str]) -> bool:
        """Whether a value under `name` is masked, given a tool's sensitive `names`."""
        if names is None or name in names:
            return True
        looks = self._looks_secret.get(name)
        if looks is None:
            looks = self._looks_secret[name] = SECRET_NAME.search(name) is not None
        return looks

    def _secret_keys(self, mapping: Mapping[Any, Any], names: _Names) -> list[bool]:
        """`_secret_name` of every key of `mapping`, in order, in a few passes over them
        rather than a call per key (an object may have 200,000 keys)."""
        if names is None:
            return [True] * len(mapping)
        keys = [key if isinstance(key, str) else str(key) for key in mapping]
        if len(keys) < _MEMO_KEYS:
            return self._secret_list(keys, names)
        # A big object's keys recur (a call's arguments are learned, then shown; a tool
        # may echo them): judged once per list of keys, which is compared in full.
        memo = (tuple(keys), names)
        secret = self._keys_memo.get(memo)
        if secret is None:
            secret = self._keys_memo[memo] = self._secret_list(keys, names)
        return secret

    def _secret_list(self, keys: list[str], names: frozenset[str] | set[str]) -> list[bool]:
        """`_secret_name` of every name in `keys`, in order, judged in one batch."""
        # `map` over C callables: no Python frame per name.
        looks = self._looks_secret
        secret: list[bool | None] = list(map(looks.get, keys))
        if None in secret:  # names not met before: judged once each
            new = list(dict.fromkeys(key for key in keys if key not in looks))
            found = [match is not None for match in map(SECRET_NAME.search, new)]
            looks.update(zip(new, found, strict=True))
            secret = list(map(looks.__getitem__, keys))
        if names:
            secret = list(map(operator.or_, secret, map(names.__contains__, keys)))
        return secret  # type: ignore[return-value]  # no None left: every name judged

    def _names(self, tool_name: str | None) -> _Names:
        """The names masked in the arguments and result of calls to `tool_name`."""
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

    def _raw_secret(self, tool_name: str | None, names: _Names) -> bool:
        """Whether a call's bare input is masked: it goes to the tool's one string
        parameter, masked if that is secret (and every input of an unknown tool)."""
        if names is None:
            return True
        tool = self._tools.get(tool_name or "")
        param = tool.single_str_param() if tool is not None else None
        return param is not None and self._secret_name(param, names)

    def _text_secret(self, key: str, value: str | None) -> bool:
        """Whether a `"name": value` pair written in text is masked (not one already);
        `value` is the quoted value (None for a number)."""
        return value != MASK and self._secret_name(key, self._text_names)

    def _add_text_names(self, names: Iterable[str]) -> None:
        for name in names:
            if name not in self._text_names:
                self._text_names.add(name)
                self._added_names.append(name)

    # -- learning a step ------------------------------------------------------------------

    def learn(self, step: BaseStep) -> None:
        """Take note of the secret values in one step, to mask them wherever they appear.

        A live display learns each step as it arrives, before showing it. A step is read
        once: learning it again (or an equal copy of it) does nothing.
        """
        known = self._learned.get(step.id)
        if known is not None and (known is step or known == step):
            return
        self._learned[step.id] = step
        if isinstance(step, ToolCallStep):
            self._record(step)
        for call in _calls_of(step):
            self._call_tools[call.id] = call.name
            names = self._names(call.name)
            if call.args is not None:
                self._gather(call.args, names)
            elif call.raw_args is not None and self._raw_secret(call.name, names):
                self._collect([call.raw_args])
        if isinstance(step, ToolResultStep):
            self._gather(step.output, self._names(step.tool))
        elif isinstance(step, HumanStep) and step.kind == "edit":
            self._edit(step, collect=True)
        for text in texts_with_pairs(step):
            self._learn_text(text)

    def _record(self, step: ToolCallStep) -> None:
        """Take note of the sensitive names the run recorded for the call's tool."""
        name = step.call.name
        names = None if step.sensitive is None else frozenset(step.sensitive)
        if name in self._recorded:  # calls of one name that disagree: mask all of them
            before = self._recorded[name]
            names = None if before is None or names is None else before | names
        self._recorded[name] = names
        self._add_text_names(sorted(names or ()))

    def _gather(self, value: Any, names: _Names) -> None:
        """Collect the values of secret names in `value`, at any depth."""
        found: list[Any] = []
        self._find(value, names, found)
        self._collect(found)

    def _find(self, value: Any, names: _Names, found: list[Any]) -> None:
        """Add the values of secret names in `value`, at any depth, to `found`."""
        if isinstance(value, Mapping):
            if names is None:  # an unknown tool's: every value
                found += [item for item in value.values() if item is not None]
                return
            items = list(value.values())
            secret = self._secret_keys(value, names)
            found += [item for item in compress(items, secret) if item is not None]
            if not all(secret):
                for item in compress(items, map(operator.not_, secret)):
                    if type(item) is not str and _is_container(item):
                        self._find(item, names, found)
        elif isinstance(value, list | tuple):
            for item in value:
                self._find(item, names, found)

    def _collect(self, values: Iterable[Any]) -> None:
        """Take note of secret values, to mask them wherever they appear as text.

        A list or an object is taken as its JSON and each of its items. All strings are
        taken at once: a reply with 200,000 secret keys gives as many.
        """
        # `map`, `compress` and `filterfalse` over C callables: no Python step per value.
        values = list(values)
        is_text = list(map(isinstance, values, repeat(str)))
        texts = list(compress(values, is_text))
        others = (
            list(compress(values, map(operator.not_, is_text))) if len(texts) < len(values) else []
        )
        for value in others:
            if isinstance(value, dict | list | tuple):
                self._collect(value.values() if isinstance(value, dict) else value)
                texts.append(json.dumps(value, ensure_ascii=False, default=repr))
            else:
                texts.append(str(value) if type(value) is int else json.dumps(value, default=repr))
        # In order, not as a set: values made one after another sit together in memory.
        collected = self._collected
        fresh = list(dict.fromkeys(filterfalse(collected.__contains__, texts)))
        collected.update(fresh)
        kept = [text for text in fresh if len(text) >= MIN_SECRET_CHARS]
        self._values.update(kept)
        # The same values as they appear inside a JSON string (an Action Input line):
        # those with a character JSON escapes, the others read the same.
        escapes = list(compress(kept, map(_JSON_ESCAPED.search, kept)))
        self._values.update([encode_basestring(text)[1:-1] for text in escapes])

    def _learn_text(self, text: str) -> None:
        """Collect the values of the secret pairs written in `text`; a long text keeps
        its pairs masked for when it is shown."""
        masked, kept, written, escaped = self._scan_pairs(text, learn=True)
        for value in escaped:
            with contextlib.suppress(ValueError):
                written.append(json.loads(f'"{value}"'))
        self._collect(written)
        if len(text) >= _REMEMBERED_CHARS:
            self._pairs_masked[text] = (len(self._added_names), kept, masked)

    def _scan_pairs(self, text: str, *, learn: bool) -> tuple[str, set[str], list[str], list[str]]:
        """`text` with its secret `"name": value` pairs masked, the names of the pairs
        kept, and (with `learn`) the values masked and those of them JSON-escaped.

        One `split` finds every pair at C speed (a reply may write 200,000): no Python
        call per match, and the names are judged in one batch.
        """
        parts = KEY_VALUE.split(text)
        kept: set[str] = set()
        written: list[str] = []
        escaped: list[str] = []
        if len(parts) == 1:
            return text, kept, written, escaped
        width = KEY_VALUE.groups + 1
        # The groups of each match, by number: open 1, q 2, key 3, dq 4, sq 5, num 6,
        # cq 7, cut 8; between two matches, the text that separates them.
        keys = parts[3::width]
        secret = self._secret_list(keys, self._text_names)
        out = [parts[0]]
        add = out.append
        for opening, key, dq, sq, num, cq, cut, masked, after in zip(
            parts[1::width],
            keys,
            parts[4::width],
            parts[5::width],
            parts[6::width],
            parts[7::width],
            parts[8::width],
            secret,
            parts[width::width],
            strict=True,
        ):
            quoted = dq if dq is not None else sq if sq is not None else cut
            if masked and quoted != MASK:
                add(masked_pair(opening, sq, cq, MASK))
                # A cut value is masked where it is, not hunted elsewhere: as a value of
                # its own it would unmask the rest of the whole value wherever it recurs.
                if learn and cut is None:
                    written.append(quoted if quoted is not None else num)
                    if dq is not None and "\\" in dq:  # JSON-escaped: also as it reads
                        escaped.append(dq)
            else:
                kept.add(key)
                if dq is not None:
                    add(f'{opening}"{dq}"')
                elif sq is not None:
                    add(f"{opening}'{sq}'")
                elif num is not None:
                    add(opening + num)
                else:
                    add(opening + cq + cut)
            add(after)
        return "".join(out), kept, written, escaped

    # -- showing a step -------------------------------------------------------------------

    def shown(self, step: BaseStep) -> BaseStep:
        """Learn a step as it arrives and return its redacted copy, for live output."""
        self.learn(step)
        return self.step(step)

    def step(self, step: BaseStep) -> BaseStep:
        """A redacted copy of one step (the stored chain is never changed)."""
        update: dict[str, Any] = {}
        for field, value in step.__dict__.items():
            if field in ("id", "type"):
                continue
            shown: Any
            if isinstance(step, ToolCallStep) and field == "call":
                shown = self._shown_call(value)
            elif isinstance(step, LLMCallStep) and field == "tool_calls":
                shown = [self._shown_call(call) for call in value]
            elif isinstance(step, ToolResultStep) and field == "output":
                shown = self._masked(value, self._names(step.tool), texts=True)
            elif isinstance(step, HumanStep) and field == "text" and step.kind == "edit":
                shown = self._text_kept(value, self._edit(step))
            else:
                shown = self._masked(value, frozenset(), texts=True)
            if shown is not value:
                update[field] = shown
        return step.model_copy(update=update)

    def _shown_call(self, call: ToolCall) -> ToolCall:
        """A call with its secret arguments masked and every string redacted."""
        names = self._names(call.name)
        update: dict[str, Any] = {}
        for field, value in call.__dict__.items():
            shown: Any
            if field == "args" and value is not None:
                shown = self._masked(value, names, texts=True)
            elif field == "raw_args" and value is not None and call.args is None:
                secret = self._raw_secret(call.name, names)
                shown = MASK if secret else self._text_kept(value, value)
            else:
                shown = self._masked(value, frozenset(), texts=True)
            if shown is not value:
                update[field] = shown
        return call.model_copy(update=update) if update else call

    def _masked(self, value: Any, names: _Names, *, texts: bool = False) -> Any:
        """`value` with the values of secret names masked, at any depth; with `texts`,
        every other string redacted too (`text`), and the fields of a model."""
        if isinstance(value, str):
            return self._text_kept(value, value) if texts else value
        if isinstance(value, Mapping):
            if names is None:  # an unknown tool's: every value
                return {key: None if item is None else MASK for key, item in value.items()}
            secret = self._secret_keys(value, names)
            return {
                key: MASK if item is not None and masked else self._masked(item, names, texts=texts)
                for (key, item), masked in zip(value.items(), secret, strict=True)
            }
        if isinstance(value, list | tuple):
            return [self._masked(item, names, texts=texts) for item in value]
        if texts and isinstance(value, BaseModel):  # a step's own part (a verdict)
            update = {
                field: self._masked(item, frozenset(), texts=True)
                for field, item in value.__dict__.items()
            }
            return value.model_copy(update=update)
        return value

    def _text_kept(self, value: str, text: str) -> str:
        """`text` redacted; `value` itself when that changes nothing (an enum's value)."""
        shown = self.text(text)
        return value if shown == value else shown

    def text(self, text: str) -> str:
        """A string with secret `"name": value` pairs, known secret values (whole, or the
        start of one where the text is cut) and credential patterns masked.

        Each pass is one scan of the text, whatever the number of known values.
        """
        if len(text) < MIN_SECRET_CHARS:  # too short to hold a pair, a value or a pattern
            return text
        text = self._values.mask(self._pairs(text), MASK)
        # Masking makes no new credential: what the text held before decides the scans.
        lowered: list[str] = []
        held = [
            (pattern, replacement)
            for hint, pattern, replacement in _CREDENTIALS
            if _holds(hint, text, lowered)
        ]
        for pattern, replacement in held:
            text = pattern.sub(replacement, text)
        return text

    def _pairs(self, text: str) -> str:
        """`text` with its secret `"name": value` pairs masked (as learned, if it was)."""
        if ":" not in text:  # no pair in it
            return text
        learned = self._pairs_masked.pop(text, None)
        if learned is not None:
            since, kept, masked = learned
            if kept.isdisjoint(self._added_names[since:]):
                return masked
        return self._scan_pairs(text, learn=False)[0]

    def value(self, value: Any) -> Any:
        """Any JSON-like value with secret-looking keys masked and every string redacted."""
        return self._masked(value, frozenset(), texts=True)

    def pending(self, item: Any) -> dict[str, Any]:
        """One thing a paused run waits for (a `Pending` or a dict), as a redacted dict."""
        data = item.model_dump(mode="json") if isinstance(item, BaseModel) else item
        if not isinstance(data, dict):
            data = {"value": data}
        args, raw_args = data.get("args"), data.get("raw_args")
        if args is not None or raw_args is not None:
            tool_name = data.get("tool")
            names = self._names(tool_name)
            # Learned first: without the chain (a run list), its thought may quote them.
            if args is not None:
                self._gather(args, names)
                args = self._masked(args, names)
            elif self._raw_secret(tool_name, names):
                self._collect([raw_args])
                raw_args = MASK
            data = {**data, "args": args, "raw_args": raw_args}
        redacted: dict[str, Any] = self.value(data)
        return redacted

    def _edit(self, step: HumanStep, *, collect: bool = False) -> str:
        """The text of a person's edit (the new arguments as JSON) with its secrets masked."""
        names = self._names(self._call_tools.get(step.call_id or ""))
        try:
            args = json.loads(step.text)
        except ValueError:
            args = None
        if isinstance(args, dict):
            if collect:
                self._gather(args, names)
            return json.dumps(self._masked(args, names), ensure_ascii=False)
        if names is None and step.text:  # not arguments we can read: all of it, unknown tool
            if collect:
                self._collect([step.text])
            return MASK
        return step.text


def _calls_of(step: BaseStep) -> Iterable[ToolCall]:
    if isinstance(step, ToolCallStep):
        yield step.call
    elif isinstance(step, LLMCallStep):
        yield from step.tool_calls


def _is_container(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple)


def redact_chain(
    chain: Sequence[BaseStep], tools: Mapping[str, Tool] | None = None
) -> list[BaseStep]:
    """Every step of a chain with its secrets masked (see the module docstring)."""
    redactor = Redactor(chain, tools, mask_unknown=True)
    return [redactor.step(step) for step in chain]
