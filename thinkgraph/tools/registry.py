"""`ToolRegistry`: the tools of an agent, looked up by the name the model wrote."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType

from thinkgraph.errors import ToolDefinitionError
from thinkgraph.tools.base import Tool

__all__ = ["ToolRegistry", "calling_registry", "current_registry"]

_CURRENT: contextvars.ContextVar[ToolRegistry | None] = contextvars.ContextVar(
    "thinkgraph_tool_registry", default=None
)


class ToolRegistry:
    """The tools an agent may call, by name, in the order they were given.

    Every tool is checked when the registry is built, so a tool that cannot be described
    to a model fails at setup, not in the middle of a run.

    Example:
        >>> from thinkgraph.tools.builtin import calculator
        >>> registry = ToolRegistry([calculator])
        >>> registry.names, "calculator" in registry
        (['calculator'], True)

    Raises:
        ToolDefinitionError: two tools share a name, or a tool is badly defined.
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            if not isinstance(item, Tool):
                raise ToolDefinitionError(
                    f"{item!r} is not a Tool; decorate the function with @tool "
                    "or subclass thinkgraph.tools.Tool"
                )
            item.check_definition()
            other = self._tools.get(item.name)
            if other is item:
                continue  # the same tool listed twice is harmless
            if other is not None:
                raise ToolDefinitionError(
                    f"two tools are named {item.name!r}: {other!r} and {item!r}; "
                    f"give one another name, e.g. @tool(name='{item.name}_2')"
                )
            self._tools[item.name] = item
        # Computed once: the router asks on every tool round, and most agents cache nothing.
        self._cache_ttls: Mapping[str, float] = MappingProxyType(
            {t.name: t.cache_ttl_s for t in self._tools.values() if t.cache_ttl_s}
        )

    @property
    def cache_ttls(self) -> Mapping[str, float]:
        """The cache TTL of each tool that has one, by name; empty when no tool caches."""
        return self._cache_ttls

    def get(self, name: str) -> Tool | None:
        """The tool called `name`, or None."""
        return self._tools.get(name)

    def sensitive_fields(self, name: str) -> list[str] | None:
        """The sensitive names of the tool called `name`, sorted, for the run's record of
        its calls; None when no tool has that name."""
        tool = self._tools.get(name)
        return None if tool is None else sorted(tool.sensitive)

    @property
    def names(self) -> list[str]:
        """The tools' names, in registration order."""
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        """`"name" in registry`; a Tool object is in the registry if it is registered itself."""
        if isinstance(name, Tool):
            return self._tools.get(name.name) is name
        return name in self._tools

    def __repr__(self) -> str:
        return f"ToolRegistry({self.names!r})"


def current_registry() -> ToolRegistry | None:
    """The registry of the tool call running in this context, or None outside a call.

    A delegating tool (`agent_tool`) reads it to learn which agent is calling it.
    """
    return _CURRENT.get()


@contextlib.contextmanager
def calling_registry(registry: ToolRegistry) -> Iterator[None]:
    """Make `registry` the `current_registry()` while a tool from it runs."""
    token = _CURRENT.set(registry)
    try:
        yield
    finally:
        _CURRENT.reset(token)
