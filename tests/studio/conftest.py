"""Browser tests drive the system Chromium through Playwright, never a downloaded browser;
without Chromium they skip, saying why (`tests.support.chromium`).

One browser per module, every test in its own context: every test of the browser module
uses it, so it is started once and stopped with the module's tests (Playwright's sync API
keeps an event loop running while it is started; pytest-playwright's session-long one
made later tests' `asyncio.run` fail).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from tests.support.chromium import launched


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched() as made:
        yield made
