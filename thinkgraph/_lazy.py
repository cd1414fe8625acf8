"""A package's public names, loaded on first use (PEP 562).

``import thinkgraph`` and ``import thinkgraph.graphs`` import nothing heavy: LangGraph and
the engine load when a name that needs them is first read. A package lists where each
name lives, module by module, and takes the two module functions this makes.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, where: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of `package`, whose names live in `where`.

    Args:
        package: the package's name (its ``__name__``).
        where: each module and the public names it holds; a name that is a submodule of
            the package (``"parts"`` for ``thinkgraph.graphs.parts``) is listed under the
            package itself.
    """
    home = {name: module for module, names in where.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module == package:
            value = importlib.import_module(f"{package}.{name}")
        else:
            value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *home})

    return __getattr__, __dir__
