"""The `thinkgraph` CLI called in this process, answered as `subprocess.run` answers.

A new `thinkgraph` process pays a second or more of imports before it does anything; a
test whose point is what a command says and does (its output, its exit code, what it
stores) calls it here instead, with the same arguments and the same checks. A test about
the process itself — nothing imported, a kill, a signal, a terminal, a graph file read
again after it changed — runs the real script.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path

from typer.testing import CliRunner

from thinkgraph.cli import app

__all__ = ["thinkgraph_here"]

REPO = Path(__file__).resolve().parents[2]


def thinkgraph_here(
    *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``thinkgraph ARGS`` in this process, from `cwd`, as a new process would run it.

    Only `env`'s ``THINKGRAPH_`` variables are set, as the tests' subprocess helpers do. An
    exception the command lets out is printed to stderr with its traceback and exits 1, as
    the script would. What the command imported from `cwd`, when that is a user's folder
    outside the repo (their tools module, their graph file), is forgotten afterwards and
    `sys.path` is left as it was: the next command imports them afresh, as a new process
    would.
    """
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("THINKGRAPH_")}
    here = contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()
    modules, path = set(sys.modules), list(sys.path)
    try:
        with here:
            result = CliRunner().invoke(app, list(args), env={**unset, **(env or {})})
    finally:
        sys.path[:] = path
        if cwd is not None and not Path(cwd).resolve().is_relative_to(REPO):
            for name in set(sys.modules) - modules:
                file = getattr(sys.modules[name], "__file__", None)
                if file and Path(file).resolve().is_relative_to(Path(cwd).resolve()):
                    del sys.modules[name]
    stderr = result.stderr
    if result.exc_info is not None and not isinstance(result.exc_info[1], SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(
        ["thinkgraph", *args], result.exit_code, result.stdout, stderr
    )
