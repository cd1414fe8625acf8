"""The test module `thinkgraph export-test` writes: a fixed template, its few blanks checked.

Everything a run recorded (its thread id, task, the model's replies, tool results, the
answer) is data in the fixture file, read at test time. The module itself holds only:

- the fixture's file name, a checked name (`check_name`) plus ``.json``;
- the graph and tools addresses the operator confirmed at export (``--graph``/``--tools``,
  or the graph the command picked), each matched against a strict pattern
  (`check_graph_address`, `check_tools_address`);
- the folder the export ran in, relative to the test's own folder: module addresses import
  from it and a graph file's path starts there, so the test runs from any working folder.

Each blank is written with `repr`, and the module is compared with the template before it
is returned (`render` fails when anything but a string constant differs): nothing a run
holds can become code, whatever it contains.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from thinkgraph.errors import ConfigError
from thinkgraph.graphs.address import is_file_address

__all__ = [
    "TEMPLATE",
    "check_graph_address",
    "check_name",
    "check_tools_address",
    "name_of",
    "portable_graph",
    "render",
]

TEMPLATE = '''"""A recorded thinkgraph run, replayed offline: no model, no tool, no network.

Made by `thinkgraph export-test`. What the run recorded (its task, the model's replies,
the tool results, the answer it must give again) is data in the fixture file beside this
one, read when the test runs. After an intended change, accept what the replay gives
with `pytest --thinkgraph-update`.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / {fixture}
ROOT = HERE / {root}
"""The folder the export ran in: module addresses import from it, a graph file's path
starts there."""
GRAPH = {graph}
"""The graph the run replays on, as confirmed at export (None: thinkgraph's own)."""
TOOLS = {tools}
"""The run's tools, as confirmed at export."""


def test_replays_as_recorded(thinkgraph_replay):
    report = thinkgraph_replay(FIXTURE, graph=GRAPH, tools=TOOLS, root=ROOT)
    assert report.model_calls == 0 and report.tool_runs == 0
'''

MAX_NAME = 64
"""A name's length at most: it names two files (``NAME.json``, ``test_NAME.py``)."""

_NAME = re.compile(rf"[A-Za-z_][A-Za-z0-9_]{{0,{MAX_NAME - 1}}}", re.ASCII)
_IDENTIFIERS = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_MODULE_ADDRESS = re.compile(rf"{_IDENTIFIERS}:[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_GRAPH_MODULE = re.compile(rf"{_IDENTIFIERS}:{_IDENTIFIERS}", re.ASCII)
# A file path of plain characters (a Windows drive allowed), then the builder's name.
_GRAPH_FILE = re.compile(
    rf"(?:[A-Za-z]:)?[A-Za-z0-9_. /\\~+-]*[A-Za-z0-9_-]\.py:{_IDENTIFIERS}", re.ASCII
)
BUILTIN_TOOLS = frozenset({"calculator"})
"""The `--tools` values that name one of ours instead of an address."""


def name_of(thread_id: str) -> str:
    """The test's name for a run under `thread_id` when none is given: its ASCII letters
    and digits (accents dropped), or ``run_`` and a digest of the id when it has none."""
    folded = unicodedata.normalize("NFKD", thread_id).encode("ascii", "ignore").decode()
    name = re.sub(r"[^A-Za-z0-9]+", "_", folded).strip("_").lower()
    name = name[: MAX_NAME - len("run_")].rstrip("_")
    if not name:
        return "run_" + hashlib.sha256(thread_id.encode("utf-8", "replace")).hexdigest()[:8]
    return f"run_{name}" if name[0].isdigit() else name


def check_name(name: str) -> str:
    """`name`, when it can name the test's files and module.

    Raises:
        ConfigError: not ASCII letters, digits and _ (not starting with a digit), or longer
            than `MAX_NAME`.
    """
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"{name!r}: use ASCII letters, digits and _, not starting with a digit, at most "
            f"{MAX_NAME} characters (it names the test's files)"
        )
    return name


def check_tools_address(address: str) -> str:
    """`address`, when it is one a test may import: ``module.sub:attr`` or ``calculator``.

    Raises:
        ConfigError: anything else.
    """
    if address in BUILTIN_TOOLS or _MODULE_ADDRESS.fullmatch(address):
        return address
    raise ConfigError(
        f"{address!r} cannot be written into a test: use module:attr with ASCII "
        "identifiers (mytools:tools), or 'calculator'"
    )


def check_graph_address(address: str) -> str:
    """`address`, when it is one a test may import: ``module.sub:function`` or
    ``path/to/file.py:function`` with a path of plain characters.

    Raises:
        ConfigError: anything else.
    """
    if _GRAPH_MODULE.fullmatch(address) or _GRAPH_FILE.fullmatch(address):
        return address
    raise ConfigError(
        f"graph {address!r} cannot be written into a test: use module:function with ASCII "
        "identifiers, or path/to/file.py:function with a path of letters, digits, "
        "spaces and _ . - / \\ ~ +"
    )


def portable_graph(address: str, root: Path) -> str:
    """A graph address as a test holds it: a file path relative to `root` (the folder
    the export ran in) when it can be, with ``/``; a module address as it is."""
    where, _, attr = address.rpartition(":")
    if not is_file_address(where):
        return address
    path = Path(where)
    try:
        where = Path(os.path.relpath(path, root)).as_posix() if path.is_absolute() else where
    except ValueError:  # another drive: no relative path leads there
        where = path.as_posix()
    return f"{where}:{attr}"


def _folder(root: Path, test_folder: Path) -> str:
    """`root` from `test_folder`, relative when it can be (the project may move)."""
    try:
        return Path(os.path.relpath(root.resolve(), test_folder.resolve())).as_posix()
    except ValueError:
        return root.resolve().as_posix()


def render(
    fixture: str, *, graph: str | None, tools: Sequence[str], root: Path, test_folder: Path
) -> str:
    """The test module for the fixture file named `fixture`, written in `test_folder`.

    Args:
        fixture: the fixture's file name, ``NAME.json`` (beside the test).
        graph: the graph address (`check_graph_address`), a file path relative to `root`;
            None for ours.
        tools: the tools addresses (`check_tools_address`).
        root: the folder the export ran in.
        test_folder: the folder the test is written in.

    Raises:
        ConfigError: a blank that fails its check.
    """
    name = fixture.removesuffix(".json")
    if name == fixture:
        raise ConfigError(f"fixture {fixture!r}: a fixture file is NAME.json")
    check_name(name)
    if graph is not None:
        check_graph_address(graph)
    for address in tools:
        check_tools_address(address)
    blanks = {
        "fixture": repr(fixture),
        "root": repr(_folder(root, test_folder)),
        "graph": repr(graph),
        "tools": repr(tuple(tools)),
    }
    source = TEMPLATE.format(**blanks)
    _check_shape(source)
    return source


def _shape(source: str) -> str:
    """The module's syntax tree with every constant blanked: what code it is."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            node.value = None
        elif isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts):
            node.elts = []  # how many tools there are is not code either
    return ast.dump(tree)


_TEMPLATE_SHAPE = _shape(TEMPLATE.format(fixture="''", root="''", graph="None", tools="()"))


def _check_shape(source: str) -> None:
    # A blank that is not one string constant (or a tuple of them) would change the code.
    if _shape(source) != _TEMPLATE_SHAPE:
        raise ConfigError("the test module would hold more than its template's values")
