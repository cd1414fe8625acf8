"""Where a graph comes from: the address of a graph builder, and the run that records it.

A graph builder is a function that takes the agent's `Deps` and returns an uncompiled
`StateGraph` (what ``Agent(build_graph=...)`` takes). Its address names it so that another
process can build the same graph again:

- ``module:function``: a function importable from a module (``myapp.graphs:build``);
- ``path/to/file.py:function``: a function in a Python file, imported from that file (the
  form ``langgraph.json`` uses; a relative path is taken from the current folder, or from
  the folder of the ``langgraph.json`` that names it).

An `Agent` built with a builder that has an address (or given ``graph="module:function"``)
writes the address into the metadata of every checkpoint of its runs (`GRAPH_KEY`), so
`recorded_address` reads it back from the store without building any graph, and a fork or
a resume made by that agent carries it on. Runs of the built-in graph record nothing.

**Trust.** An address read from a store is data: whoever can write one row of the store
could name any file. Reading a run imports nothing (`thinkgraph.graphs.recorded`). A graph is
imported only from an address the operator named (`check_trusted`): given on the command
line (``--graph``, or the ``--graph`` of ``serve`` and ``worker``), listed in the working
folder's ``langgraph.json``, or listed in ``THINKGRAPH_GRAPHS`` (comma-separated). The
driver compares a run's recorded address with its own graph's as text, without importing
either (`check_continues_on_its_graph`).

What has an address (`address_of`): a function defined at the top level of a module (or a
class attribute reached by its qualified name). A function of a script run as
``python my_script.py`` (module ``__main__``) is addressed by the script's file path, as
``/abs/path/my_script.py:build``: importing that file again must not start the script,
so keep its start under ``if __name__ == "__main__":``. A function defined inside another
function, a lambda or a partial has no address: its runs record ``<unnamed>:<its name>``,
which nothing imports, so the CLI refuses to continue them without ``--graph``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from thinkgraph.errors import ConfigError, first_line

if TYPE_CHECKING:
    # Only for the types: the CLI reads an address before it builds any graph, and
    # LangGraph's graph module is most of a command's start-up.
    from thinkgraph.graphs.build import GraphBuilder

__all__ = [
    "GRAPHS_ENV",
    "GRAPH_KEY",
    "LANGGRAPH_JSON",
    "UNNAMED",
    "GraphAddressError",
    "address_in",
    "address_of",
    "arecorded_address",
    "check_continues_on_its_graph",
    "check_trusted",
    "continues_on",
    "graph_metadata",
    "graph_source",
    "is_file_address",
    "is_gone",
    "langgraph_json_address",
    "load_attr",
    "load_builder",
    "normal_address",
    "recorded_address",
    "trusted_addresses",
]


GRAPH_KEY = "thinkgraph_graph"
"""The checkpoint metadata key that holds the address of the graph that wrote it."""

UNNAMED = "<unnamed>"
"""The module part recorded for a builder with no address (nothing can import it)."""

LANGGRAPH_JSON = "langgraph.json"
"""The file `langgraph dev` reads; its ``graphs`` map names graphs by file path."""

GRAPHS_ENV = "THINKGRAPH_GRAPHS"
"""The environment variable listing graph addresses the operator trusts, comma-separated."""

_FILE_MODULE = "_thinkgraph_graph_file_"
"""The prefix of the module names under which graph files are imported."""


class GraphAddressError(ConfigError):
    """A graph address that cannot be read or imported, or a builder that has none."""


def _split(address: str, what: str = "graph") -> tuple[str, str]:
    # rpartition: a Windows path has a colon of its own ("C:\\x\\g.py:build").
    where, sep, attr = address.strip().rpartition(":")
    if not sep or not where or not attr or not all(p.isidentifier() for p in attr.split(".")):
        if what == "graph":
            raise GraphAddressError(
                f"graph {address!r}: use module:function or path/to/file.py:function, naming "
                "a function that takes Deps and returns an uncompiled StateGraph"
            )
        raise GraphAddressError(
            f"{what} {address!r}: use module:attribute or path/to/file.py:attribute"
        )
    return where, attr


def is_file_address(where: str) -> bool:
    """Whether the part of an address before its ``:`` is a file path (else a module)."""
    return where.endswith(".py") or "/" in where or "\\" in where


def _module_from_file(address: str, where: str, base: Path | None, what: str) -> ModuleType:
    path = Path(where).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    path = path.resolve()
    if not path.is_file():
        raise GraphAddressError(f"{what} {address!r}: no file {path}; check the path")
    name = _FILE_MODULE + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise GraphAddressError(f"{what} {address!r}: {path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    # As `langgraph dev` does: the file's own imports find the modules beside it.
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise GraphAddressError(
            f"{what} {address!r}: importing {path} failed ({first_line(exc)})"
        ) from exc
    return module


def _module(address: str, where: str, base: Path | None, what: str) -> ModuleType:
    if is_file_address(where):
        return _module_from_file(address, where, base, what)
    if base is not None and str(base.resolve()) not in sys.path:
        sys.path.insert(0, str(base.resolve()))  # a module beside the caller's folder
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (where + ".").startswith(exc.name + "."):
            looked = f"{base.resolve()} or sys.path" if base is not None else "sys.path"
            raise GraphAddressError(
                f"{what} {address!r}: module {where!r} is not found from {looked}; run from "
                "the folder that holds it, or put that folder on PYTHONPATH"
            ) from exc
        raise GraphAddressError(  # the module is there; an import of its own failed
            f"{what} {address!r}: importing module {where!r} failed ({first_line(exc)})"
        ) from exc
    except Exception as exc:
        raise GraphAddressError(
            f"{what} {address!r}: importing module {where!r} failed ({first_line(exc)})"
        ) from exc


def normal_address(address: str, *, base: Path | None = None) -> str:
    """The address as a run records it: a file path made absolute (from `base`, default
    the current folder), so it names the same file from wherever the run is continued."""
    where, attr = _split(address)
    if not is_file_address(where) or where == UNNAMED:
        return f"{where}:{attr}"
    return f"{((base or Path.cwd()) / Path(where).expanduser()).resolve()}:{attr}"


def load_attr(address: str, what: str, *, base: Path | None = None) -> Any:
    """What an address names, imported now: the one importer of every ``module:attr``
    option (``--graph``, ``--tools``, ``--agent``, ``--validator``, an exported test's).

    Args:
        address: ``module:attr`` or ``path/to/file.py:attr`` (``attr`` may be dotted).
        what: what the address is for, as the messages name it ("graph", "--tools", …).
        base: the folder a relative file path is read from (default: the current one).

    Raises:
        GraphAddressError: the address is malformed, its module or file cannot be
            imported, or it has no such attribute (one line each, naming the fix).
    """
    where, attr = _split(address, what)
    value: Any = _module(address, where, base, what)
    for part in attr.split("."):
        if not hasattr(value, part):
            raise GraphAddressError(
                f"{what} {address!r}: {where!r} has no attribute {attr!r}; check the name"
            )
        value = getattr(value, part)
    return value


def load_builder(address: str, *, base: Path | None = None) -> GraphBuilder:
    """The graph builder an address names, imported now.

    Args:
        address: ``module:function`` or ``path/to/file.py:function``.
        base: the folder a relative file path is read from (default: the current one).

    Raises:
        GraphAddressError: the address is malformed, its module or file cannot be
            imported, it has no such attribute, or the attribute is not a function
            (one line each, naming the fix).
    """
    if address.startswith(f"{UNNAMED}:"):
        raise GraphAddressError(
            f"graph {address!r} has no address (a builder defined inside a function, a lambda "
            "or a partial); pass --graph module:function naming a module-level builder"
        )
    value = load_attr(address, "graph", base=base)
    if isinstance(value, type) or not callable(value):
        kind = "class" if isinstance(value, type) else type(value).__name__
        raise GraphAddressError(
            f"graph {address!r} is a {kind}, not a function: name a function that takes "
            "Deps and returns an uncompiled StateGraph"
        )
    return value  # type: ignore[no-any-return]


def address_of(builder: Callable[..., Any]) -> str | None:
    """The address another process imports `builder` by, or None when it has none.

    A module-level function (or class attribute) of an importable module is
    ``module:qualname``; one of a script run as ``__main__`` or of a file imported by path
    is ``/abs/path/file.py:qualname``. A nested function, a lambda, a partial or an object
    that is not reached again by that name has none.
    """
    module_name = getattr(builder, "__module__", None)
    qualname = getattr(builder, "__qualname__", None)
    if not isinstance(module_name, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    module = sys.modules.get(module_name)
    if module is None:
        return None
    value: Any = module
    for part in qualname.split("."):
        value = getattr(value, part, None)
    if value is not builder:
        return None
    if module_name == "__main__" or module_name.startswith(_FILE_MODULE):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not file.endswith(".py"):
            return None  # an interactive session or a notebook: nothing to import again
        return f"{Path(file).resolve()}:{qualname}"
    return f"{module_name}:{qualname}"


def graph_source(
    build_graph: GraphBuilder | None, graph: str | None
) -> tuple[GraphBuilder | None, str | None]:
    """The builder an agent uses and the address its runs record, from what it was given.

    ``graph="module:function"`` is imported (and recorded, a file path made absolute); a
    `build_graph` function records its own address, or ``<unnamed>:<its name>`` when it has
    none. Neither: the built-in graph, recorded as nothing.

    Raises:
        GraphAddressError: both were given, or `graph` cannot be imported.
    """
    if graph is not None and build_graph is not None:
        raise GraphAddressError("give build_graph=function or graph='module:function', not both")
    if graph is not None:
        return load_builder(graph), normal_address(graph)
    if build_graph is None:
        return None, None
    name = getattr(build_graph, "__qualname__", None) or type(build_graph).__name__
    return build_graph, address_of(build_graph) or f"{UNNAMED}:{name}"


def graph_metadata(
    metadata: Mapping[str, Any] | None, address: str | None
) -> Mapping[str, Any] | None:
    """An agent's run metadata with its graph's address added (as is for ours).

    LangGraph writes the metadata of a run's config into each checkpoint it stores, so
    every checkpoint of the run, and of its resumes and forks, names its graph.
    """
    return metadata if address is None else {**(metadata or {}), GRAPH_KEY: address}


def _langgraph_json_graphs(folder: Path | None = None) -> tuple[Path, dict[str, str]] | None:
    """The ``graphs`` map of the ``langgraph.json`` in `folder` (None: no such file)."""
    path = (folder or Path.cwd()) / LANGGRAPH_JSON
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GraphAddressError(f"{path}: cannot read it as JSON ({first_line(exc)})") from exc
    graphs = data.get("graphs") if isinstance(data, dict) else None
    if not graphs:
        return path, {}
    if not isinstance(graphs, dict) or not all(isinstance(v, str) for v in graphs.values()):
        raise GraphAddressError(f'{path}: "graphs" must map names to "path/to/file.py:function"')
    return path, graphs


def langgraph_json_address(folder: Path | None = None) -> str | None:
    """The graph a ``langgraph.json`` in `folder` (default: the current one) names.

    Follows `langgraph dev`'s convention: its ``graphs`` map names each graph as
    ``"./path/to/file.py:attr"`` (or ``module:attr``), a path taken from the file's folder;
    here `attr` must be a builder (a function taking Deps). The address is returned with an
    absolute path, so a run records where its graph is wherever it is continued from.

    Returns:
        The address, or None when there is no ``langgraph.json`` (or it names no graph).

    Raises:
        GraphAddressError: the file cannot be read, or it names several graphs (pick one
            with ``--graph``).
    """
    found = _langgraph_json_graphs(folder)
    if found is None or not found[1]:
        return None
    path, graphs = found
    if len(graphs) > 1:
        raise GraphAddressError(
            f"{path} names {len(graphs)} graphs ({', '.join(sorted(graphs))}); pick one with "
            "--graph path/to/file.py:function"
        )
    (address,) = graphs.values()
    return normal_address(address, base=path.parent)


def _normal_or_none(address: str, base: Path | None = None) -> str | None:
    try:
        return normal_address(address, base=base)
    except GraphAddressError:
        return None


def trusted_addresses(named: Iterable[str | None] = (), *, folder: Path | None = None) -> set[str]:
    """The graph addresses the operator named, as runs record them (file paths absolute).

    Those given here (`named`: ``--graph``, a server's or a worker's own graph), those the
    ``langgraph.json`` of `folder` (default: the current one) lists, and those listed in
    ``THINKGRAPH_GRAPHS``. Only these are ever imported for a run that recorded one.
    """
    found = {a for a in (_normal_or_none(n) for n in named if n) if a}
    try:
        listed = _langgraph_json_graphs(folder)
    except GraphAddressError:
        listed = None  # an unreadable file trusts nothing; `new_graph` reports it
    if listed is not None:
        path, graphs = listed
        found.update(a for a in (_normal_or_none(g, path.parent) for g in graphs.values()) if a)
    for item in os.environ.get(GRAPHS_ENV, "").split(","):
        normal = _normal_or_none(item) if item.strip() else None
        if normal:
            found.add(normal)
    return found


def check_trusted(
    address: str, thread_id: str, named: Iterable[str | None] = (), *, folder: Path | None = None
) -> str:
    """The recorded `address` of the run `thread_id`, if the operator trusts it.

    Raises:
        GraphAddressError: it is none of `trusted_addresses` — one line naming it and how
            to trust it; nothing is imported.
    """
    normal = _normal_or_none(address) or address
    if normal in trusted_addresses(named, folder=folder):
        return normal
    raise GraphAddressError(
        f"thread {thread_id!r} records graph {address!r}, which is not trusted here: nothing "
        f"was imported; to continue it on that graph pass --graph {address} (or list it in "
        f"{GRAPHS_ENV} or in ./{LANGGRAPH_JSON})"
    )


def is_gone(address: str) -> bool:
    """Whether nothing can be imported from `address` any more, found without importing.

    A file that no longer exists, or a module that no finder can find (its packages are
    looked up on the path, not imported): the builder has moved.
    """
    try:
        where, _attr = _split(address)
    except GraphAddressError:
        return True
    if where == UNNAMED:
        return True
    if is_file_address(where):
        return not Path(where).expanduser().is_file()
    locations: list[str] | None = None
    for part in where.split("."):
        if not part.isidentifier():
            return True
        if locations is None:
            # A top-level name is looked up by every finder (an editable install's too);
            # finding it runs none of its code (only a dotted name imports its parents).
            try:
                spec: Any = importlib.util.find_spec(part)
            except (ImportError, ValueError):
                return True
        else:
            spec = importlib.machinery.PathFinder.find_spec(part, locations)
        if spec is None:
            return True
        locations = list(getattr(spec, "submodule_search_locations", None) or [])
    return False


def continues_on(recorded: str, given: str) -> bool:
    """Whether a run that recorded graph `recorded` may go on on graph `given`, decided
    without importing either: the same address as text (a file path made absolute), or
    the recorded one names nothing any more (`is_gone`: the builder moved, and `given`
    says where to)."""
    normal = _normal_or_none(given)
    return (normal is not None and normal == _normal_or_none(recorded)) or is_gone(recorded)


def _latest(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def address_in(metadata: Any) -> str | None:
    """The graph address a run's (or a checkpoint's) metadata names; None for ours."""
    value = metadata.get(GRAPH_KEY) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value else None


def check_continues_on_its_graph(thread_id: str, recorded: str | None, mine: str | None) -> None:
    """Refuse to continue a run recorded on graph `recorded` with an agent on graph `mine`
    (None: the built-in graph), which would skip its nodes and misread its state.

    The one check of every driver of a run (library, server, worker, CLI): `Driver.resume`,
    `Driver.fork` and `Driver.check_resume` make it before anything of the run is changed.
    The addresses are compared as text (a file path made absolute): the recorded one is
    data from the store and is never imported. One case is let through: the agent names an
    address of its own and the recorded one no longer names anything (its file or module is
    gone, found without importing): its builder has moved, and the caller (``--graph`` on
    the command line) says where to.

    Raises:
        GraphAddressError: the agent is on another graph than the run's; one line naming
            the run's.
    """
    if recorded == mine:
        return
    if recorded and mine and continues_on(recorded, mine):
        return
    ran = recorded or "thinkgraph's built-in graph"
    how = f"--graph {recorded}" if recorded else "no --graph"
    raise GraphAddressError(
        f"thread {thread_id!r} runs on {ran}, not on this agent's graph "
        f"({mine or 'the built-in one'}); continue it with an agent on its graph "
        f"(a worker started with {how}, on a queue of its own)"
    )


def recorded_address(saver: Any, thread_id: str) -> str | None:
    """The address of the graph that wrote a thread's latest checkpoint, read from its
    metadata (no graph is built); None for the built-in graph, no run, or no saver."""
    if not callable(getattr(saver, "get_tuple", None)):
        return None
    latest = saver.get_tuple(_latest(thread_id))
    return None if latest is None else address_in(latest.metadata)


async def arecorded_address(saver: Any, thread_id: str) -> str | None:
    """`recorded_address` from async code."""
    if not callable(getattr(saver, "aget_tuple", None)):
        return None
    latest = await saver.aget_tuple(_latest(thread_id))
    return None if latest is None else address_in(latest.metadata)
