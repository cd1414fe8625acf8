"""A time guard for tests of code that might hang, even inside C code holding the GIL.

A hung thread can be given up on, but a computation inside C (a huge `int` power, say)
holds the GIL, so no timer in the same process fires until it ends. `in_child` runs the
function in a forked child process instead and kills it at the deadline, so a hang fails
the test within seconds rather than blocking the suite.
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Callable
from typing import Any

__all__ = ["in_child"]


def _serve(fn: Callable[[], Any], conn: Any) -> None:
    try:
        conn.send(("ok", repr(fn())))
    except BaseException as exc:  # everything is reported to the parent, nothing escapes
        conn.send(("raised", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
    finally:
        conn.close()


def in_child(fn: Callable[[], Any], timeout_s: float = 5.0) -> tuple[str, str]:
    """Run `fn()` in a forked child: ("ok", repr(value)) or ("raised", "Type: message").

    Fails the test when the child has not finished within `timeout_s`.
    """
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_serve, args=(fn, child), daemon=True)
    process.start()
    child.close()
    try:
        if not parent.poll(timeout_s):
            raise AssertionError(f"still running after {timeout_s} s (killed)")
        outcome = parent.recv()
    finally:
        process.kill()
        process.join()
        parent.close()
    return outcome[0], outcome[1]
