"""Google-style docstrings split into a tool's description, parameter docs and return doc."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Docstring", "parse_docstring"]

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns|Return|Yields|Raises|Examples?|Notes?|"
    r"Attributes|Warnings?|See Also|Todo):\s*$",
    re.IGNORECASE,
)
_HIDDEN = {"args", "arguments", "parameters", "params", "returns", "return", "yields", "raises"}
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class Docstring:
    """The parts of a docstring a tool uses."""

    description: str
    """Everything but the Args/Returns/Raises/Yields sections."""
    params: dict[str, str]
    """Parameter name → its description, from the Args section."""
    returns: str
    """The Returns section on one line."""


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring into description, parameter docs and return doc."""
    body: list[str] = []
    sections: dict[str, list[str]] = {}
    target = body
    for line in (doc or "").splitlines():
        header = _SECTION.match(line)
        if header and header.group(1).lower() in _HIDDEN:
            target = sections.setdefault(header.group(1).lower(), [])
            continue
        if header or (line and not line[0].isspace()):
            target = body  # a section ends at the next unindented line
        target.append(line)
    params: dict[str, str] = {}
    for key in ("args", "arguments", "parameters", "params"):
        params.update(_parse_params(sections.get(key, [])))
    returns = sections.get("returns") or sections.get("return") or []
    return Docstring(
        description=re.sub(r"\n{3,}", "\n\n", "\n".join(body)).strip(),
        params=params,
        returns=" ".join(line.strip() for line in returns if line.strip()),
    )


def _parse_params(lines: list[str]) -> dict[str, str]:
    indent = min((len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()), default=0)
    params: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        text = line[indent:]
        match = _ARG_LINE.match(text)
        if match and not text[:1].isspace():
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif current is not None and text.strip():
            params[current] = f"{params[current]} {text.strip()}".strip()
    return params
