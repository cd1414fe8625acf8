"""Compare a rendering with its expected file; THINKGRAPH_UPDATE_EXPECTED=1 rewrites it."""

from __future__ import annotations

import os
from pathlib import Path

EXPECTED = Path(__file__).parent / "expected"


def assert_expected(name: str, text: str) -> None:
    """Assert `text` equals tests/viz/expected/<name> (review a rewritten file by eye)."""
    path = EXPECTED / name
    if os.environ.get("THINKGRAPH_UPDATE_EXPECTED") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing; run with THINKGRAPH_UPDATE_EXPECTED=1"
    assert text == path.read_text(encoding="utf-8")
