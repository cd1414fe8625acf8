"""The `thinkgraph` CLI called in this process, answered as `subprocess.run` answers.

A new `thinkgraph` process pays a second or more of imports before it does anything; a
test whose point is what a command says and does (its output, its exit code, what it
stores) calls it here instead, with the same arguments and the same checks. A test about
the process itself — nothing imported, a kill, a signal, a terminal, a graph file read
afresh — runs the real script.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import traceback
from collections.abc import Mapping
from pathlib import Path

from typer.testing import CliRunner

from thinkgraph.cli import app

__all__ = ["thinkgraph_here"]


def thinkgraph_here(
    *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``thinkgraph ARGS`` in this process, from `cwd`, as a new process would be run.

    Only `env`'s ``THINKGRAPH_`` variables are set, as the tests' subprocess helpers do. An
    exception the command lets out is printed to stderr with its traceback and exits 1, as
    the script would.
    """
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("THINKGRAPH_")}
    here = contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()
    with here:
        result = CliRunner().invoke(app, list(args), env={**unset, **(env or {})})
    stderr = result.stderr
    if result.exc_info is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(
        ["thinkgraph", *args], result.exit_code, result.stdout, stderr
    )
