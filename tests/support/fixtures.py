"""Pytest fixtures for the test support parts.

Import them where needed, or re-export them from tests/conftest.py to share them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.openai_server import OpenAIServer

__all__ = ["openai_server"]


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A started OpenAI-compatible server on loopback; queue responses, then call it."""
    with OpenAIServer() as server:
        yield server
