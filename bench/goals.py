"""A goal of DESIGN.md §10 and how one is judged: PASS, MISS, or n/a when not measured."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Goal", "judge"]


@dataclass(frozen=True, slots=True)
class Goal:
    """A goal of DESIGN.md §10 and whether this run met it."""

    name: str
    target: str
    measured: str
    status: str
    """PASS, MISS or "n/a" (not measured in this run, e.g. with --quick)."""


def judge(name: str, target: str, measured: float | None, text: str, ok: bool) -> Goal:
    """The goal, PASS when `ok`; n/a when `measured` is None."""
    if measured is None:
        return Goal(name, target, "not measured in this run", "n/a")
    return Goal(name, target, text, "PASS" if ok else "MISS")
